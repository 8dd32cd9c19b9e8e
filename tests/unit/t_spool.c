/* The node-local spool (common/spool.c): the names every stage shares, where a node's
 * spools go when the site names none or an unusable one, the user's directory under a
 * shared root (never through a link, never another user's or one open to others), the
 * entry's files, and the only shape of dest salvage believes. */
#include "config.h"
#include "spool.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void names(void)
{
	char out[64];
	static const struct {
		const char *attempt, *want;
	} steps[] = {
	    {NULL, "/j/step0"}, {"", "/j/step0"}, {"0", "/j/step0"}, {"2", "/j/step0.attempt2"}};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ok(gp_spool_step_dir(out, sizeof(out), "/j", "0", steps[i].attempt) == 0,
		   "step dir, attempt %s", steps[i].attempt ? steps[i].attempt : "NULL");
		is_str(out, steps[i].want, "step dir of attempt %s",
		       steps[i].attempt ? steps[i].attempt : "NULL");
	}
	errno = 0;
	ok(gp_spool_step_dir(out, 8, "/a/long/jobdir", "0", NULL) == -1 && errno == ENAMETOOLONG,
	   "a step dir cut is ENAMETOOLONG");
	ok(gp_spool_task_dir(out, sizeof(out), "/s/gpuprof-1", "42", "batch", "3", 77) == 0,
	   "task dir");
	is_str(out, "/s/gpuprof-1/job42.batch.3.77", "task dir: job<J>.<S>.<R>.<pid>");
	gp_spool_task_dir(out, sizeof(out), "/s/u", NULL, "0", "0", 5);
	is_str(out, "/s/u/joblocal.0.0.5", "task dir outside Slurm: job 'local'");
	gp_spool_launcher_dest("/j/step0/rank3.gpr", out, sizeof(out));
	is_str(out, "/j/step0/launcher3.gpr", "a launcher's file beside its ranks'");
}

static void root_fallback(void)
{
	char out[4096], why[256], host[256] = "", shortname[256];
	gethostname(host, sizeof(host) - 1);
	snprintf(shortname, sizeof(shortname), "%.*s", (int)strcspn(host, "."), host);

	ok(gp_spool_root(out, sizeof(out), NULL, "/scratch/job1", NULL, 0) == out,
	   "no site spool_dir: a fallback");
	is_str(out, "/scratch/job1", "no site spool_dir: the job's absolute $TMPDIR");
	gp_spool_root(out, sizeof(out), "", "/scratch/job1", NULL, 0);
	is_str(out, "/scratch/job1", "an empty spool_dir is none");
	gp_spool_root(out, sizeof(out), NULL, "relative/tmp", NULL, 0);
	is_str(out, "/tmp", "a relative $TMPDIR is not used: /tmp");
	gp_spool_root(out, sizeof(out), NULL, NULL, NULL, 0);
	is_str(out, "/tmp", "no $TMPDIR: /tmp");

	char want[600];
	ok(gp_spool_root(out, sizeof(out), "/var/spool/gp-%h", "/scratch", NULL, 0) == out,
	   "spool_dir with %%h");
	snprintf(want, sizeof(want), "/var/spool/gp-%s", shortname);
	is_str(out, want, "spool_dir's %%h is the host's short name");
	gp_spool_root(out, sizeof(out), "/s/%n/%%", "/scratch", NULL, 0);
	snprintf(want, sizeof(want), "/s/%s/%%", host);
	is_str(out, want, "spool_dir's %%n is the host name, %%%% a '%%'");

	static const struct {
		const char *site, *msg;
	} bad[] = {
	    {"/s/%j", "job escape '%j' at position 4"},
	    {"/s/%u", "job escape '%u'"},
	    {"/s/%q", "unknown escape '%q'"},
	    {"/s/%", "trailing '%'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ok(gp_spool_root(out, sizeof(out), bad[i].site, "/scratch", why, sizeof(why)) ==
		       NULL,
		   "spool_dir '%s' refused", bad[i].site);
		if (!ok(strstr(why, bad[i].msg) != NULL, "... saying %s", bad[i].msg))
			diag("got '%s'", why);
		is_str(out, "/scratch", "... and the fallback in its place");
	}
	ok(gp_spool_root(out, 8, "/a-very-long-%h", "/tmp", why, sizeof(why)) == NULL &&
	       strstr(why, "too long"),
	   "a spool_dir too long once expanded is refused");
}

static int mode_of(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* base/NAME, a new spool root, with want its gpuprof-<uid> (made when make_dir) */
static void new_root(const char *base, const char *name, bool make_dir, char *root, char *want)
{
	snprintf(root, PATH_MAX, "%s/%s", base, name);
	mkdir(root, 0755);
	snprintf(want, PATH_MAX, "%s/gpuprof-%u", root, (unsigned)getuid());
	if (make_dir)
		mkdir(want, 0700);
}

/* what gp_spool_userdir picks under root, is gpuprof-<uid>.1 */
static void passed_over(const char *root, const char *what)
{
	char out[PATH_MAX], want[PATH_MAX + 32];
	gp_spool_userdir(root, out, sizeof(out));
	snprintf(want, sizeof(want), "%s/gpuprof-%u.1", root, (unsigned)getuid());
	is_str(out, want, "%s is passed over for gpuprof-<uid>.1", what);
}

static void userdir(const char *base)
{
	char root[PATH_MAX], out[PATH_MAX], want[PATH_MAX], p[PATH_MAX + 64];
	unsigned uid = (unsigned)getuid();
	snprintf(root, sizeof(root), "%s/root1", base);
	mkdir(root, 0755);
	ok(gp_spool_userdir(root, out, sizeof(out)) == 0, "user dir made");
	snprintf(want, sizeof(want), "%s/gpuprof-%u", root, uid);
	is_str(out, want, "user dir gpuprof-<uid>");
	ok(mode_of(want) == 0700, "user dir is 0700 (%o)", mode_of(want));
	ok(gp_spool_userdir(root, out, sizeof(out)) == 0 && !strcmp(out, want),
	   "user dir reused when it is ours");

	/* planted: a link to a directory of ours, which would lead elsewhere */
	new_root(base, "root2", false, root, want);
	snprintf(p, sizeof(p), "%s/elsewhere", base);
	mkdir(p, 0700);
	ok(symlink(p, want) == 0, "a link planted at gpuprof-%u", uid);
	passed_over(root, "a link");

	/* open to others: another user could put files into it */
	new_root(base, "root3", true, root, want);
	chmod(want, 0777);
	passed_over(root, "a directory open to others");

	/* another user's (only root can make one for the test) */
	new_root(base, "root4", true, root, want);
	if (geteuid() == 0 && chown(want, 65534, 65534) == 0) {
		passed_over(root, "another user's directory");
	} else {
		skip("another user's directory needs root to make");
	}

	/* every candidate taken: refused, not used */
	snprintf(root, sizeof(root), "%s/root5", base);
	mkdir(root, 0755);
	for (int i = 0; i < 10; i++) {
		if (i)
			snprintf(want, sizeof(want), "%s/gpuprof-%u.%d", root, uid, i);
		else
			snprintf(want, sizeof(want), "%s/gpuprof-%u", root, uid);
		ok(symlink(p, want) == 0, "planted %s", want);
	}
	/* every fixed name planted (anyone can make them for any uid): one of ours of an
	 * unpredictable name, not a refusal (a task left unprofiled, a required job failed) */
	char out2[PATH_MAX], pre[PATH_MAX + 32];
	snprintf(pre, sizeof(pre), "%s/gpuprof-%u.r", root, uid);
	ok(gp_spool_userdir(root, out, sizeof(out)) == 0 && !strncmp(out, pre, strlen(pre)) &&
	       strlen(out) == strlen(pre) + 6 && mode_of(out) == 0700,
	   "every name planted: gpuprof-<uid>.rXXXXXX of ours, 0700 (%s)", out);
	ok(gp_spool_userdir(root, out2, sizeof(out2)) == 0 && !strcmp(out, out2),
	   "the next task finds the same one");
	/* salvage finds what a task left in it */
	snprintf(p, sizeof(p), "%s/job77.0.0.123", out);
	ok(gp_spool_entry_make(p) == 0, "a task's entry in it");
	int failed = 0;
	gp_spool_salvage_all(root, "77", base, false, &failed);
	ok(failed == 1, "salvage walks it (the entry, holding no rank file, counted: %d)", failed);
	/* one of that name not ours (planted by another user, or a link) is passed over */
	snprintf(root, sizeof(root), "%s/root6", base);
	mkdir(root, 0755);
	int planted = 0;
	for (int i = 0; i < 10; i++) {
		if (i)
			snprintf(want, sizeof(want), "%s/gpuprof-%u.%d", root, uid, i);
		else
			snprintf(want, sizeof(want), "%s/gpuprof-%u", root, uid);
		planted += symlink(p, want) == 0;
	}
	ok(planted == 10, "the ten names planted again");
	snprintf(want, sizeof(want), "%s/gpuprof-%u.rAAAAAA", root, uid);
	ok(symlink(base, want) == 0, "a link planted at gpuprof-<uid>.rAAAAAA");
	ok(gp_spool_userdir(root, out, sizeof(out)) == 0 && strcmp(out, want),
	   "passed over for a new one (%s)", out);
	ok(gp_spool_userdir("/nonexistent/spool", out, sizeof(out)) == -1,
	   "a root that does not exist: -1");
}

static void entry(const char *base)
{
	char dir[PATH_MAX], p[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/entry", base);
	ok(gp_spool_entry_make(dir) == 0 && mode_of(dir) == 0700, "entry made 0700");
	ok(gp_spool_entry_make(dir) == -1 && errno == EEXIST, "an entry is never reused");
	int fd = gp_spool_entry_create_rank(dir, 0600);
	ok(fd >= 0, "rank file created");
	if (fd >= 0)
		close(fd);
	ok(gp_spool_entry_create_rank(dir, 0600) == -1, "rank file never opened twice");
	ok(gp_spool_entry_set_dest(dir, "/j/step0/rank0.gpr") == 0, "dest written");
	ok(gp_spool_entry_set_dest(dir, "/j/step0/launcher0.gpr") == 0, "dest rewritten");
	snprintf(p, sizeof(p), "%s/" GP_SPOOL_DEST, dir);
	FILE *f = fopen(p, "r");
	char got[128] = "";
	if (f) {
		if (!fgets(got, sizeof(got), f))
			got[0] = '\0';
		fclose(f);
	}
	is_str(got, "/j/step0/launcher0.gpr", "dest holds the last");
	gp_spool_entry_remove(dir);
	ok(access(dir, F_OK) != 0, "entry removed");

	/* a link planted where the rank file goes is never followed */
	snprintf(dir, sizeof(dir), "%s/entry2", base);
	gp_spool_entry_make(dir);
	snprintf(p, sizeof(p), "%s/" GP_SPOOL_RANK, dir);
	ok(symlink("/etc/passwd", p) == 0, "a link planted at rank.gpr");
	ok(gp_spool_entry_create_rank(dir, 0600) == -1, "a link at rank.gpr is refused");
}

static void dest_shapes(void)
{
	char out[256];
	static const char *good[] = {"/j/step0/rank3.gpr", "/a/b-c/step12.attempt2/launcher0.gpr",
	                             "/j/stepbatch/rank10.gpr", "/j/step0/rank3.pid4711.gpr"};
	static const char *bad[] = {
	    "j/step0/rank3.gpr",     "/j/../step0/rank3.gpr", "/j/step0/rank3.pid.gpr",
	    "/j/step0/rank3.txt",    "/j/step0/rankx.gpr",    "/j/step0/rank3a.gpr",
	    "/j/steps/../rank1.gpr", "/j/foo/rank1.gpr",      "/j/step0/rank3.pidx.gpr",
	    "/j/step0/other1.gpr",   "/etc/step0/../passwd",  "/j/step0/launcher3.pid4.gpr",
	    "./j/step0/rank1.gpr",   "/j/step0/rank3.pid4",   "/j/step0/rank3.pid4.gpr.x"};
	/* what an agent before issue 51 wrote for a job directory given as /j/ or /j/./ */
	static const struct {
		const char *dest, *want;
	} spelled[] = {{"/j//step0/rank1.gpr", "/j/step0/rank1.gpr"},
	               {"/j/./step0/rank3.gpr", "/j/step0/rank3.gpr"},
	               {"//j///x//step0/rank0.pid9.gpr", "/j/x/step0/rank0.pid9.gpr"}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ok(gp_spool_dest_check(good[i], NULL, out, sizeof(out)) == 0 &&
		       !strcmp(out, good[i]),
		   "dest '%s' believed", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(gp_spool_dest_check(bad[i], NULL, out, sizeof(out)) == -1 && errno == EINVAL,
		   "dest '%s' refused", bad[i]);
	for (size_t i = 0; i < sizeof(spelled) / sizeof(spelled[0]); i++)
		ok(gp_spool_dest_check(spelled[i].dest, NULL, out, sizeof(out)) == 0 &&
		       !strcmp(out, spelled[i].want),
		   "dest '%s' is %s", spelled[i].dest, spelled[i].want);
	/* with --into only step<S>/<file> is used: the job directory's spelling is not */
	ok(gp_spool_dest_check("./j/../k//step0/rank3.pid5.gpr", "/into", out, sizeof(out)) == 0 &&
	       !strcmp(out, "/into/step0/rank3.pid5.gpr"),
	   "--into: a relative dest with .. keeps step<S>/<file> only (%s)", out);
	ok(gp_spool_dest_check("/j/step0/../rank3.gpr", "/into", out, sizeof(out)) == -1,
	   "--into: '..' as the step refused");
	ok(gp_spool_dest_check("/j/step0/rank3.gpr", "/into", out, sizeof(out)) == 0, "into");
	is_str(out, "/into/step0/rank3.gpr", "--into keeps step<S>/<file> only");
}

int main(void)
{
	char base[] = "/tmp/t_spool.XXXXXX";
	if (!mkdtemp(base))
		return 1;
	names();
	root_fallback();
	userdir(base);
	entry(base);
	dest_shapes();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		diag("could not remove %s", base);
	return done_testing();
}
