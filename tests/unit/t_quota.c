/* The site's quota at a step's start (spank/site.c, spank/quota.c), as root as
 * slurmstepd runs it: the user's directory walked as the user, the walk kept by the node
 * for site_quota_cache seconds with every cap granted since added, a walk again once that
 * bound leaves too little room. A walk that cannot run (the directory made unreadable to
 * its user) shows which steps walked. Skips where it is not root. */
#include "config.h"
#include "plugin.h"
#include "tap.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gp_plugin_t p;
static char top[64], cfgpath[128], state[128], udir[160];

static int config(const char *extra)
{
	char err[600];
	FILE *f = fopen(cfgpath, "w");
	if (!f)
		return -1;
	fprintf(f, "profile_all_jobs: true\nsite_output: %s/root/%%u/%%j\n%s", top, extra);
	fclose(f);
	gp_config_free(&p.cfg);
	return gp_config_load(&p.cfg, cfgpath, false, err, sizeof(err));
}

/* a file of mib MiB at path */
static void fill(const char *path, int mib)
{
	static char mb[1 << 20];
	FILE *f = fopen(path, "w");
	if (!f) {
		diag("cannot make %s", path);
		return;
	}
	for (int i = 0; i < mib; i++)
		fwrite(mb, 1, sizeof(mb), f);
	fclose(f);
}

static int step(const char *user)
{
	p.job_id++;
	int rc = gp_site_prepare(&p, user, 1);
	diag("step %u: %d, cap %lld", p.job_id, rc, p.site_rank_cap);
	return rc;
}

int main(void)
{
	struct passwd *pw = getpwnam("nobody");
	if (getuid() != 0 || !pw) {
		skip("not root, or no user nobody");
		return done_testing();
	}
	snprintf(top, sizeof(top), "/var/tmp/gp-t-quota.%d", (int)getpid());
	snprintf(cfgpath, sizeof(cfgpath), "%s/gpuprof.yaml", top);
	snprintf(state, sizeof(state), "%s/state", top);
	snprintf(udir, sizeof(udir), "%s/root/nobody", top);
	char root[96];
	snprintf(root, sizeof(root), "%s/root", top);
	mkdir(top, 0755);
	mkdir(root, 0755);
	mkdir(state, 0700);
	p.config_ok = true;
	p.state_dir = state;
	p.uid = pw->pw_uid;
	p.gid = pw->pw_gid;
	p.ngroups = -1;

	/* 1 GiB, 512 MiB a rank: two steps' caps fit the bound, a third's does not */
	ok(config("site_quota_per_user: 1G\nmax_bytes_per_rank: 512M\n") == 0, "config");
	ok(step("nobody") == 0 && p.site_rank_cap == 512ll << 20,
	   "a first step walks the user's directory: cap 512 MiB");
	chmod(udir, 0); /* from now on a walk as the user fails */
	ok(step("nobody") == 0 && p.site_rank_cap > 500ll << 20,
	   "a second step within site_quota_cache does not walk: admitted from the node's record");
	ok(step("nobody") == -1,
	   "a third, whose cap the bound (walk + 1 GiB granted) no longer leaves: walks, and "
	   "the failed walk refuses it");
	chmod(udir, 0700);
	ok(step("nobody") == 0, "the walk again: room, admitted");

	ok(config("site_quota_per_user: 1G\nmax_bytes_per_rank: 64M\nsite_quota_cache: 0\n") == 0,
	   "config with site_quota_cache 0");
	chmod(udir, 0);
	ok(step("nobody") == -1, "site_quota_cache 0: every step walks (refused here)");
	chmod(udir, 0700);

	ok(config("site_quota_per_user: 100M\nmax_bytes_per_rank: 64M\n") == 0, "a small quota");
	char big[200];
	snprintf(big, sizeof(big), "%s/41", udir); /* a job's directory of the template's */
	mkdir(big, 0700);
	if (chown(big, p.uid, p.gid) != 0)
		diag("chown %s failed", big);
	snprintf(big, sizeof(big), "%s/41/step0", udir); /* ... that the agent wrote */
	mkdir(big, 0700);
	if (chown(big, p.uid, p.gid) != 0)
		diag("chown %s failed", big);
	snprintf(big, sizeof(big), "%s/41/step0/fill", udir);
	fill(big, 60);
	ok(step("nobody") == -1, "60 MiB in a 100 MiB quota: no room for a 64 MiB rank");
	unlink(big);
	ok(step("nobody") == 0,
	   "a refusal is never taken from the record: freed, walked, admitted");
	/* 60 MiB in a directory its user made unreadable: before, the walk left it out */
	snprintf(big, sizeof(big), "%s/42", udir);
	mkdir(big, 0700);
	if (chown(big, p.uid, p.gid) != 0)
		diag("chown %s failed", big);
	snprintf(big, sizeof(big), "%s/42/fill", udir);
	fill(big, 60);
	snprintf(big, sizeof(big), "%s/42", udir);
	chmod(big, 0);
	ok(config("site_quota_per_user: 100M\nmax_bytes_per_rank: 64M\nsite_quota_cache: 0\n") ==
	           0 &&
	       step("nobody") == -1,
	   "60 MiB hidden in a directory its user made unreadable: not measured, refused");
	chmod(big, 0700);
	snprintf(big, sizeof(big), "%s/42/fill", udir);
	unlink(big);

	/* a template in the user's home: the user's own files beside the template's directory
	 * are theirs, not the site's (session 29's admin tester: 100 MiB of thesis, a 64 MiB
	 * quota, no profile) */
	char home[160], cfg2[300];
	snprintf(home, sizeof(home), "%s/home/nobody", top);
	snprintf(big, sizeof(big), "%s/home", top);
	mkdir(big, 0755);
	mkdir(home, 0700);
	if (chown(home, p.uid, p.gid) != 0)
		diag("chown %s failed", home);
	snprintf(big, sizeof(big), "%s/thesis", home);
	fill(big, 80);
	snprintf(cfg2, sizeof(cfg2),
	         "site_output: %s/home/%%u/gpuprof/%%j\nsite_quota_per_user: 100M\n"
	         "max_bytes_per_rank: 64M\nsite_quota_cache: 0\n",
	         top);
	FILE *c = fopen(cfgpath, "w");
	char err[600];
	if (c) {
		fprintf(c, "profile_all_jobs: true\n%s", cfg2);
		fclose(c);
	}
	gp_config_free(&p.cfg);
	ok(gp_config_load(&p.cfg, cfgpath, false, err, sizeof(err)) == 0, "a home template");
	ok(step("nobody") == 0 && p.site_rank_cap == 64ll << 20,
	   "80 MiB of the user's own beside ~/gpuprof: not measured, admitted (cap 64 MiB)");
	snprintf(big, sizeof(big), "%s/gpuprof", home);
	mkdir(big, 0700);
	snprintf(big, sizeof(big), "%s/gpuprof/77", home);
	mkdir(big, 0700);
	snprintf(big, sizeof(big), "%s/gpuprof/77/fill", home);
	fill(big, 60);
	snprintf(big, sizeof(big), "chown -R %u %s/gpuprof", (unsigned)p.uid, home);
	if (system(big) != 0)
		diag("chown -R failed");
	ok(step("nobody") == 0,
	   "60 MiB in ~/gpuprof/77 that holds no step's directory: the user's, not measured "
	   "(prune leaves it too)");
	snprintf(big, sizeof(big), "%s/gpuprof/77/stepbatch", home);
	mkdir(big, 0700);
	snprintf(big, sizeof(big), "chown -R %u %s/gpuprof", (unsigned)p.uid, home);
	if (system(big) != 0)
		diag("chown -R failed");
	ok(step("nobody") == -1,
	   "60 MiB in ~/gpuprof/77 beside its stepbatch, a job's directory: measured, refused");

	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
	gp_config_free(&p.cfg);
	return done_testing();
}
