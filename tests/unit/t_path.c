/* Path templates and link-safe creation. */
#include "config.h"
#include "cgroup.h"
#include "path.h"
#include "spool.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* the pid written into dir/cgroup.procs, -1 when nothing was */
static long procs_of(const char *root, const char *dir)
{
	char p[1024];
	long v = -1;
	snprintf(p, sizeof(p), "%s%s/cgroup.procs", root, dir);
	FILE *f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* gp_cgroup_leave_jobs on a fake /proc/self/cgroup and cgroup tree */
static void cgroup_cases(const char *base)
{
	char root[512], pc[600], p[1024];
	static const char *dirs[] = {"",
	                             "/system.slice",
	                             "/system.slice/slurmstepd.scope",
	                             "/system.slice/slurmstepd.scope/system",
	                             "/other.scope",
	                             "/freezer",
	                             "/cpu,cpuacct",
	                             "/etc"};
	snprintf(root, sizeof(root), "%s/cg", base);
	snprintf(pc, sizeof(pc), "%s/proc-cgroup", base);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", root, dirs[i]);
		mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s%s/cgroup.procs", root, dirs[i]);
		put(p, "");
	}
	put(pc, "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n");
	ok(gp_cgroup_leave_jobs(pc, root, 4242) == 1 &&
	       procs_of(root, "/system.slice/slurmstepd.scope/system") == 4242 &&
	       procs_of(root, "/system.slice/slurmstepd.scope") == -1,
	   "cgroup v2: into the scope's system cgroup, where slurmstepd waits");
	put(pc, "0::/other.scope/job_7/step_batch/user\n");
	ok(gp_cgroup_leave_jobs(pc, root, 77) == 1 && procs_of(root, "/other.scope") == 77,
	   "cgroup v2 without a system cgroup: the job directory's parent");
	put(pc, "12:freezer:/slurm/uid_0/job_42/step_0/task_0\n"
	        "4:cpu,cpuacct:/slurm/uid_0/job_42/step_0\n"
	        "1:name=systemd:/user.slice/session-1.scope\n");
	ok(gp_cgroup_leave_jobs(pc, root, 99) == 2 && procs_of(root, "/freezer") == 99 &&
	       procs_of(root, "/cpu,cpuacct") == 99,
	   "cgroup v1: each job hierarchy's root; a cgroup of no job is left alone");
	put(pc, "3:../etc:/slurm/job_1\n0::/../etc/job_1\n");
	ok(gp_cgroup_leave_jobs(pc, root, 5) == 0 && procs_of(root, "/etc") == -1 &&
	       procs_of(root, "") == -1,
	   "a line climbing out of the cgroup tree is refused");
	snprintf(p, sizeof(p), "%s/none", base);
	ok(gp_cgroup_leave_jobs(p, root, 5) == -1, "an unreadable cgroup list: -1");
}

/* One spelling of a job directory (issue 51: "./DIR", "DIR/", "DIR//x" reached the
 * spool's dest as typed and salvage refused them) */
static void normalise_cases(const char *base)
{
	char out[4096], want[4096], cwd[4096], p[4096];
	static const struct {
		const char *in, *want;
	} abs[] = {{"/a/b", "/a/b"},
	           {"/a/b/", "/a/b"},
	           {"//a//b//", "/a/b"},
	           {"/a/./b/.", "/a/b"},
	           {"/", "/"},
	           {"/a/../../b", "/b"},
	           {"/nonexistent-gp/x/../y", "/nonexistent-gp/y"}};
	for (size_t i = 0; i < sizeof(abs) / sizeof(abs[0]); i++)
		ok(gp_path_normalise(abs[i].in, out, sizeof(out)) == 0 && !strcmp(out, abs[i].want),
		   "normalise '%s' -> '%s' (%s)", abs[i].in, abs[i].want, out);
	ok(getcwd(cwd, sizeof(cwd)) != NULL, "cwd");
	ok(gp_path_normalise("./x//y/", out, sizeof(out)) == 0 &&
	       snprintf(want, sizeof(want), "%s/x/y", strcmp(cwd, "/") ? cwd : "") > 0 &&
	       !strcmp(out, want),
	   "a relative directory is the current directory's (%s)", out);
	/* ".." of a link is the parent of where it leads, as mkdir -p goes */
	snprintf(p, sizeof(p), "%s/real/deep", base);
	gp_mkdir_p(p, 0700);
	snprintf(p, sizeof(p), "%s/real/deep", base);
	snprintf(want, sizeof(want), "%s/ln", base);
	ok(symlink(p, want) == 0, "a link to real/deep");
	snprintf(p, sizeof(p), "%s/ln/../x", base);
	snprintf(want, sizeof(want), "%s/real/x", base);
	char rb[4096];
	ok(gp_path_normalise(p, out, sizeof(out)) == 0 && realpath(base, rb) &&
	       snprintf(want, sizeof(want), "%s/real/x", rb) > 0 && !strcmp(out, want),
	   "'ln/..' is the link target's parent (%s)", out);
	ok(gp_path_normalise("/a/b", out, 4) == -1 && errno == ENAMETOOLONG, "too long: -1");
}

/* Job names are the user's (sbatch -J): through %x no name leaves the directory that the
 * template's own text names (ROOT/USER of site_output), whatever it holds. */
static void hostile_names(void)
{
	char out[1024], longname[600];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	static const struct {
		const char *name, *tmpl, *want;
	} cases[] = {
	    {"..", "/srv/gp/alice/%x", "/srv/gp/alice/_."},
	    {"..", "/srv/gp/alice/%x/%j", "/srv/gp/alice/_./42"},
	    {".", "/srv/gp/alice/%x/%j", "/srv/gp/alice/_/42"},
	    {".", "/srv/gp/alice/%x.", "/srv/gp/alice/_."},
	    {"..", "/srv/gp/alice/a%x", "/srv/gp/alice/a.."},
	    {"../../etc", "/srv/gp/alice/%x", "/srv/gp/alice/.._.._etc"},
	    {"/etc/cron.d", "/srv/gp/alice/%x", "/srv/gp/alice/_etc_cron.d"},
	    {"a\nb\tc\x7f", "/srv/gp/alice/%x", "/srv/gp/alice/a_b_c_"},
	    {"", "/srv/gp/alice/%x-%j", "/srv/gp/alice/unknown-42"},
	    {"\xc3\xa9t\xc3\xa9", "/srv/gp/alice/%x", "/srv/gp/alice/\xc3\xa9t\xc3\xa9"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gp_tmpl_vars_t v = {.job = "42", .name = cases[i].name};
		ok(gp_tmpl_expand(cases[i].tmpl, &v, out, sizeof(out)) == 0 &&
		       !strcmp(out, cases[i].want),
		   "hostile job name %zu through '%s': '%s'", i, cases[i].tmpl, out);
	}
	gp_tmpl_vars_t v = {.job = "42", .name = longname};
	ok(gp_tmpl_expand("/srv/gp/alice/%x", &v, out, sizeof(out)) == 0 &&
	       strlen(out) == strlen("/srv/gp/alice/") + 128,
	   "a 599-byte job name is cut to 128 bytes (%zu)", strlen(out));
	/* 127 ASCII bytes then a 2-byte character: cut before it, never inside it */
	memset(longname, 'n', 127);
	memcpy(longname + 127, "\xc3\xa9z", 4);
	ok(gp_tmpl_expand("%x", &v, out, sizeof(out)) == 0 && strlen(out) == 127,
	   "the cut falls between UTF-8 characters (%zu bytes)", strlen(out));
}

int main(void)
{
	char out[256], err[256];
	gp_tmpl_vars_t v = {.job = "42",
	                    .user = "alice",
	                    .name = "../../etc",
	                    .step = "0",
	                    .node = "n1",
	                    .task = "3",
	                    .rank = "3",
	                    .host = "h1"};
	static const struct {
		const char *tmpl, *want;
	} good[] = {
	    {"gpuprof-%j", "gpuprof-42"},
	    {"/scratch/%u/%j/%s.%n.%t", "/scratch/alice/42/0.n1.3"},
	    {"%x-%%-%r", ".._.._etc-%-3"},
	    {"/spool/%h", "/spool/h1"},
	    {"plain", "plain"},
	};
	static const struct {
		const char *tmpl, *msg;
	} bad[] = {
	    {"out-%q", "unknown escape '%q' at position 5"},
	    {"out-%", "trailing '%'"},
	    {"", "empty directory"},
	    {"a\nb", "control character"},
	    {"\xfe", "not valid UTF-8"},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ok(gp_tmpl_check(good[i].tmpl, err, sizeof(err)) == 0, "check '%s'", good[i].tmpl);
		ok(gp_tmpl_expand(good[i].tmpl, &v, out, sizeof(out)) == 0, "expand '%s'",
		   good[i].tmpl);
		is_str(out, good[i].want, "expansion of '%s'", good[i].tmpl);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(gp_tmpl_check(bad[i].tmpl, err, sizeof(err)) == -1, "reject template %zu", i);
		if (!ok(strstr(err, bad[i].msg) != NULL, "message %zu", i))
			diag("got %s", err);
	}
	hostile_names();
	ok(gp_tmpl_expand("%j%j%j", &v, out, 5) == -1 && errno == ENAMETOOLONG, "overflow");
	gp_tmpl_vars_t none = {0};
	ok(gp_tmpl_expand("d-%j-%h", &none, out, sizeof(out)) == 0, "expand with no values");
	is_str(out, "d-unknown-unknown", "a value not known is 'unknown'");
	/* a node's directory (spool_dir, state_dir): the node's escapes alone */
	static const struct {
		const char *tmpl, *msg; /* NULL: accepted */
	} node[] = {
	    {"/var/spool/gp-%h", NULL},
	    {"/run/gp/%n/%%", NULL},
	    {"/s/%j", "job escape '%j' at position 4 (escapes of a node's directory: %n %h %%)"},
	    {"/s/%r", "job escape '%r'"},
	    {"/s/%z", "unknown escape '%z'"},
	};
	for (size_t i = 0; i < sizeof(node) / sizeof(node[0]); i++) {
		err[0] = '\0';
		int rc = gp_tmpl_check_kind(node[i].tmpl, GP_TMPL_NODE, err, sizeof(err));
		if (!node[i].msg) {
			ok(rc == 0, "a node's directory '%s' accepted", node[i].tmpl);
			continue;
		}
		ok(rc == -1, "a node's directory '%s' refused", node[i].tmpl);
		if (!ok(strstr(err, node[i].msg) != NULL, "... saying %s", node[i].msg))
			diag("got %s", err);
	}
	ok(gp_tmpl_check("/s/%j-%h", err, sizeof(err)) == 0, "a job directory takes every escape");
	gp_tmpl_hostbuf_t hb;
	gp_tmpl_vars_t here = {0};
	gp_tmpl_this_host(&here, &hb);
	ok(here.node && here.host && !strchr(here.host, '.') &&
	       !strncmp(here.node, here.host, strlen(here.host)),
	   "this host: %%n %s, %%h %s", here.node ? here.node : "-", here.host ? here.host : "-");

	/* the job directory without the plugin: GPUPROF_JOBDIR, else the output template in
	 * force expanded (spool.c), never a default of its own; one absolute spelling (a
	 * relative template is the current directory's) */
	static const struct {
		const char *jobdir, *output, *job, *want;
	} jd[] = {
	    {"/given/dir", "ignored-%j", "7", "/given/dir"},
	    {"/given//dir/./", "ignored-%j", "7", "/given/dir"},
	    {NULL, NULL, NULL, "gpuprof-local"},
	    {NULL, NULL, "1234", "gpuprof-1234"},
	    {"", "", "1234", "gpuprof-1234"}, /* empty is unset */
	    {NULL, "out/%j.%x", "5", "out/5.train_job"},
	    {NULL, "bad-%q", "5", "gpuprof-5"}, /* a bad template: the table's, said once */
	};
	setenv("SLURM_JOB_NAME", "train/job", 1);
	for (size_t i = 0; i < sizeof(jd) / sizeof(jd[0]); i++) {
		jd[i].jobdir ? setenv("GPUPROF_JOBDIR", jd[i].jobdir, 1)
		             : unsetenv("GPUPROF_JOBDIR");
		jd[i].output ? setenv("GPUPROF_OUTPUT", jd[i].output, 1)
		             : unsetenv("GPUPROF_OUTPUT");
		jd[i].job ? setenv("SLURM_JOB_ID", jd[i].job, 1) : unsetenv("SLURM_JOB_ID");
		out[0] = '\0';
		char want[4200], cwd[4096];
		snprintf(want, sizeof(want), "%s%s%s",
		         jd[i].want[0] == '/' ? "" : getcwd(cwd, sizeof(cwd)),
		         jd[i].want[0] == '/' ? "" : "/", jd[i].want);
		ok(gp_spool_jobdir(out, sizeof(out)) == 0, "job directory %zu", i);
		is_str(out, want, "job directory %zu", i);
	}
	unsetenv("GPUPROF_JOBDIR");
	ok(setenv("GPUPROF_OUTPUT", "gpuprof-%j", 1) == 0 && gp_spool_jobdir(out, 5) == -1 &&
	       errno == ENAMETOOLONG,
	   "a job directory too long for the buffer: ENAMETOOLONG");
	unsetenv("GPUPROF_OUTPUT");
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_JOB_NAME");

	char base[] = "/tmp/gp-t-path.XXXXXX";
	ok(mkdtemp(base) != NULL, "tmpdir");
	char p[512];
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	int fd = gp_mkdir_p(p, 0700);
	ok(fd >= 0, "mkdir -p");
	struct stat st;
	ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "mode 0700");
	ok(gp_write_file_at(fd, "x.json", "{}", 2, 0600, true) == 0, "atomic write");
	int fd2 = gp_open_at(fd, "x.json", O_CREAT | O_EXCL, 0600);
	ok(fd2 < 0 && errno == EEXIST, "O_EXCL refuses an existing file");
	close(fd);
	/* a planted symlink in the middle of the path is refused */
	char link[512], target[512];
	snprintf(target, sizeof(target), "%s/target", base);
	mkdir(target, 0700);
	snprintf(link, sizeof(link), "%s/evil", base);
	ok(symlink(target, link) == 0, "plant symlink");
	/* one of our own (or root's: an admin's /scratch -> /lustre/scratch) is followed */
	snprintf(p, sizeof(p), "%s/evil/own", base);
	fd = gp_mkdir_p(p, 0700);
	snprintf(p, sizeof(p), "%s/target/own", base);
	ok(fd >= 0 && access(p, F_OK) == 0, "a link of our own is followed");
	if (fd >= 0)
		close(fd);
	/* one planted by another user is not (needs root to plant it for someone else) */
	if (geteuid() == 0 && lchown(link, 65534, 65534) == 0) {
		snprintf(p, sizeof(p), "%s/evil/sub", base);
		errno = 0;
		ok(gp_mkdir_p(p, 0700) == -1 && errno == ELOOP,
		   "another user's symlink component refused (ELOOP)");
		snprintf(p, sizeof(p), "%s/target/sub", base);
		ok(access(p, F_OK) != 0, "nothing created through the link");
	} else {
		skip("not root: cannot plant a link owned by another user");
		skip("not root: cannot plant a link owned by another user");
	}
	/* a symlink as the final file is refused too */
	fd = open(base, O_RDONLY | O_DIRECTORY);
	ok(symlinkat("/etc/passwd", fd, "f") == 0, "plant file symlink");
	ok(gp_open_at(fd, "f", O_CREAT, 0600) == -1 && errno == ELOOP, "file symlink refused");
	close(fd);
	/* not durable: the same atomic replace, without the fsync */
	fd = open(base, O_RDONLY | O_DIRECTORY);
	ok(gp_write_file_at(fd, "y.json", "[1]", 3, 0600, false) == 0 &&
	       gp_write_file_at(fd, "y.json", "[2]", 3, 0600, false) == 0,
	   "atomic write without fsync, twice");
	char got[8] = "";
	int yfd = openat(fd, "y.json", O_RDONLY);
	ok(yfd >= 0 && read(yfd, got, sizeof(got) - 1) == 3 && !strcmp(got, "[2]"),
	   "the second write replaced the first");
	if (yfd >= 0)
		close(yfd);
	close(fd);
	normalise_cases(base);
	cgroup_cases(base);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	ok(system(cmd) == 0, "cleanup");
	return done_testing();
}
