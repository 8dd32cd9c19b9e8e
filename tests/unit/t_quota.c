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
	snprintf(big, sizeof(big), "%s/fill", udir);
	FILE *f = fopen(big, "w");
	if (f) {
		static char mb[1 << 20];
		for (int i = 0; i < 60; i++)
			fwrite(mb, 1, sizeof(mb), f);
		fclose(f);
	}
	ok(step("nobody") == -1, "60 MiB in a 100 MiB quota: no room for a 64 MiB rank");
	unlink(big);
	ok(step("nobody") == 0,
	   "a refusal is never taken from the record: freed, walked, admitted");
	/* 60 MiB in a directory its user made unreadable: before, the walk left it out */
	snprintf(big, sizeof(big), "%s/hidden", udir);
	mkdir(big, 0700);
	snprintf(big, sizeof(big), "%s/hidden/fill", udir);
	if ((f = fopen(big, "w"))) {
		static char mb[1 << 20];
		for (int i = 0; i < 60; i++)
			fwrite(mb, 1, sizeof(mb), f);
		fclose(f);
	}
	snprintf(big, sizeof(big), "%s/hidden", udir);
	chmod(big, 0);
	ok(config("site_quota_per_user: 100M\nmax_bytes_per_rank: 64M\nsite_quota_cache: 0\n") ==
	           0 &&
	       step("nobody") == -1,
	   "60 MiB hidden in a directory its user made unreadable: not measured, refused");

	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
	gp_config_free(&p.cfg);
	return done_testing();
}
