/* gpuprof prune: remove the job directories under the site's directory (site_output,
 * ROOT/USER/JOB...) in which nothing was written for longer than --older-than. Run by
 * root (cron, a systemd timer) over every user's directory, it removes each user's as
 * that user (a child that dropped to the directory's owner), never following a link and
 * never leaving the file system (common/tree.h); a user may run it over their own. */
#include "config.h"
#include "prune.h"
#include "log.h"
#include "modes.h"
#include "siteconf.h"
#include "sitedir.h"
#include "spool.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { OPT_OLDER = 400, OPT_DRY_RUN, OPT_DEPTH, OPT_CONFIG, OPT_TIMEOUT };

#define USER_TIMEOUT_DEFAULT "1h"
#define REAP_GRACE_MS        2000 /* a killed child that has not ended by then is left */

static const gp_cli_opt_t prune_opts[] = {
    {"older-than", OPT_OLDER, "AGE",
     "remove a job directory when nothing in it was written for AGE: a whole number with s, "
     "m, h, d or w (30d); needed"},
    {"dry-run", 'n', NULL, "say what would be removed, and remove nothing"},
    {"depth", OPT_DEPTH, "N",
     "a job directory's depth below ROOT/USER (default: site_output's, else 1)"},
    {"config", OPT_CONFIG, "FILE",
     "the site's gpuprof.yaml, for site_output (default: the installed one)"},
    {"timeout", OPT_TIMEOUT, "AGE",
     "the longest one user's directory may take (default " USER_TIMEOUT_DEFAULT
     "): its child is then killed, said, and the next user's goes on"},
    {NULL, 0, NULL, NULL}};

const gp_cli_cmd_t gp_cmd_prune_doc = {
    "prune",
    "--older-than=AGE [OPTION]... [ROOT]",
    "Remove the job directories under the site's directory (site_output: ROOT/USER/JOB) in "
    "which nothing was written for AGE, so that profiling every GPU job stays bounded.",
    prune_opts,
    "ROOT defaults to site_output's root in the site's gpuprof.yaml. Run as root (a daily "
    "timer), each user's directory is pruned by a child that dropped to its owner; a link "
    "is removed as a link and never followed, and nothing on another file system than ROOT's "
    "(a user's bind mount, NFS or FUSE file system) is entered or removed: it is named and "
    "left alone. Each user's directory is walked by a child given --timeout: one that is "
    "stopped (SIGSTOP) or waits on a file system that does not answer is killed and named, "
    "and the next user's directory goes on. The age of a job directory is the newest "
    "modification time of a file or an empty directory in it (of its other directories only "
    "where it holds neither: a removal that could not finish makes them new).\n\n"
    "Exit status: 0 done, 1 something could not be removed or read, 2 a usage error.",
    false};

typedef struct prune {
	time_t cutoff;
	unsigned depth;
	bool dry;
	const char *root;
	dev_t dev;                  /* ROOT's file system: nothing on another is entered */
	const gp_site_tmpl_t *tmpl; /* site_output's levels below USER; NULL: not known */
	long long limit;            /* seconds a user's directory may take */
	uint64_t bytes, jobs, kept, failed, mounts;
} prune_t;

/* A path for messages only (the walk uses the directory's descriptor and the name): a
 * name is the user's choosing, so its control bytes (C0, DEL, C1 such as U+009B) and
 * bytes that are no UTF-8 are shown as '?', never sent to root's terminal or cron's mail
 * as escape sequences. */
static void shown(char *path)
{
	unsigned char *p = (unsigned char *)path;
	while (*p) {
		size_t n = gp_utf8_char(p);
		if (!n)
			*p++ = '?';
		else
			p += n;
	}
}

/* A mount point met where a level or a job directory was: named, never entered. */
static void mount_point(prune_t *pr, const char *path)
{
	printf("left alone %s: another file system (a mount point)\n", path);
	pr->mounts++;
}

long long gp_prune_age(const char *v)
{
	static const struct {
		char unit;
		long long s;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *v < '0' || *v > '9' || n <= 0 || !end[0] || end[1])
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (*end == units[i].unit)
			return n > (1ll << 40) ? -1 : n * units[i].s;
	return -1;
}

static void said(const prune_t *pr, const char *path, const gp_tree_usage_t *u, bool gone)
{
	char when[32] = "?";
	struct tm tm;
	if (localtime_r(&u->newest, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	printf("%s %s (%.1f MiB, last written %s)\n",
	       pr->dry ? "would remove"
	       : gone  ? "removed"
	               : "could not remove all of",
	       path, u->bytes / 1048576.0, when);
}

/* Whether dfd/name is a job directory gpuprof wrote: a directory that holds a step's
 * directory (step0, stepbatch, step3.attempt1: what the agent makes), or nothing at all
 * where site_output's template named it.
 * A user's own directory at a job directory's depth (ROOT is their home, or a template
 * with an escape at that level) holds none and is never removed. One on another file
 * system is taken as one, for prune_job to name and leave alone. */
static bool job_dir(const prune_t *pr, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat top;
	if (fd >= 0 && fstat(fd, &top) == 0 && top.st_dev != pr->dev) {
		close(fd);
		return true;
	}
	if (fd < 0)
		return false;
	bool empty, step = gp_site_holds_step(fd, &empty);
	close(fd);
	/* an empty one is the agent's only where the template says a job's directory has that
	 * name: without it, an old empty ~/Documents at the job's depth was "a job directory"
	 * (the hostile admin of session 30) */
	return step || (empty && pr->tmpl);
}

/* One job directory dfd/name (path for messages): removed when it is old enough. */
static void prune_job(prune_t *pr, int dfd, const char *name, const char *path)
{
	gp_tree_usage_t u = {0};
	int rc = gp_tree_measure_within(dfd, name, 0, &u);
	if (rc < 0 && errno == EXDEV) {
		mount_point(pr, path);
		return;
	}
	if (rc < 0 || u.skipped || u.cut) { /* cut: nested past GP_TREE_MAX_DEPTH, age unknown */
		gp_err("prune: %s: cannot read all of it; kept", path);
		pr->failed++;
		return;
	}
	/* its age: its newest file's, not a directory's (a removal that could not finish
	 * made its directories new, and the rest was kept another AGE with no word); a tree
	 * of directories alone: the newest of them */
	if (u.newest_file)
		u.newest = u.newest_file;
	if (u.newest >= pr->cutoff) {
		pr->kept++;
		return;
	}
	if (pr->dry) {
		pr->jobs++;
		pr->bytes += u.bytes;
		said(pr, path, &u, false);
		return;
	}
	gp_tree_usage_t gone = {0};
	rc = gp_tree_remove_within(dfd, name, &gone);
	said(pr, path, &u, rc == 0);
	if (rc < 0) { /* counted as not removed: the exit status says so */
		pr->failed++;
		return;
	}
	pr->jobs++;
	pr->bytes += u.bytes;
}

/* The directory at/name (path) of a level above the job directories: opened without
 * following a link, and only where it is on ROOT's file system (checked on what was
 * opened); -1 otherwise, said and counted. */
static int open_level(prune_t *pr, int at, const char *name, const char *path)
{
	struct stat st;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		gp_err("prune: %s: %s", path, strerror(errno));
		pr->failed++;
	} else if (st.st_dev != pr->dev) {
		mount_point(pr, path);
	} else {
		return fd;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The level of dfd (path) at depth: job directories there, directories to walk above. */
static void prune_level(prune_t *pr, int dfd, const char *path, unsigned depth)
{
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		pr->failed++;
		return;
	}
	while ((de = readdir(d))) {
		char sub[4096];
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		shown(sub);
		/* only what the template could have made: ~/gpuprof/%j, never ~/thesis */
		if (pr->tmpl && !gp_site_tmpl_level_match(pr->tmpl, depth, de->d_name))
			continue;
		if (depth == pr->depth) {
			if (pr->tmpl &&
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode)) /* a link the template's name: removed as one */
				prune_job(pr, dirfd(d), de->d_name, sub);
			else if (job_dir(pr, dirfd(d), de->d_name))
				prune_job(pr, dirfd(d), de->d_name, sub);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue; /* not a level of the template's: left alone */
		int nfd = open_level(pr, dirfd(d), de->d_name, sub);
		if (nfd < 0)
			continue;
		prune_level(pr, nfd, sub, depth + 1);
		close(nfd);
	}
	closedir(d);
}

/* Become the owner of a user's directory (root running it): its uid, its primary group
 * (the directory's group where the user is unknown), no other group. */
static int become(uid_t uid, gid_t dir_gid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t gid = pw ? pw->pw_gid : dir_gid;
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		return -1;
	return uid != 0 && setuid(0) == 0 ? -1 : 0;
}

static long long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000ll + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Reap pid within ms: true when it ended (status into *status). */
static bool reap(pid_t pid, long long ms, int *status)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return r == pid;
		if (ms_since(&t0) >= ms)
			return false;
		usleep(10000);
	}
}

/* The child's line "BYTES JOBS KEPT FAILED MOUNTS" from fd, read until its end or until
 * the deadline t0 + limit_ms: 0 and what it said in got, -1 when the deadline passed. */
static int child_line(int fd, const struct timespec *t0, long long limit_ms, prune_t *got)
{
	char buf[256];
	size_t n = 0;
	for (;;) {
		long long left = limit_ms - ms_since(t0);
		struct pollfd pf = {fd, POLLIN, 0};
		int r = left > 0 ? poll(&pf, 1, left > 60000 ? 60000 : (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && left > 60000)
			continue;
		if (r <= 0)
			return -1;
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (n += (size_t)k) == sizeof(buf) - 1)
			break;
	}
	buf[n] = '\0';
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &got->bytes,
	           &got->jobs, &got->kept, &got->failed, &got->mounts) != 5)
		got->failed = 1;
	return 0;
}

/* The parent's side of a user's child: its counts added to pr, within pr->limit; a child
 * that did not finish by then (stopped, or waiting on a file system that does not
 * answer) is killed and named, and the walk goes on with the next user's directory. */
static void user_child_wait(prune_t *pr, pid_t pid, int fd, const char *path)
{
	struct timespec t0;
	prune_t got = {0};
	int status = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = child_line(fd, &t0, pr->limit * 1000, &got);
	close(fd);
	long long left = pr->limit * 1000 - ms_since(&t0);
	if (rc == 0 && reap(pid, left > REAP_GRACE_MS ? left : REAP_GRACE_MS, &status)) {
		pr->bytes += got.bytes, pr->jobs += got.jobs, pr->kept += got.kept;
		pr->mounts += got.mounts;
		pr->failed += got.failed + !(WIFEXITED(status) && !WEXITSTATUS(status));
		return;
	}
	kill(pid, SIGKILL);
	bool ended = reap(pid, REAP_GRACE_MS, &status);
	fprintf(stderr,
	        "gpuprof: prune: %s: not done in %lld s (--timeout; its child stopped, or a file "
	        "system that does not answer): killed%s; what it removed before stays removed; "
	        "the next user's directory goes on\n",
	        path, pr->limit, ended ? "" : " (it has not ended yet: a file system that hangs)");
	fflush(stdout); /* the child's lines before this one */
	pr->failed++;
}

/* The child's side: ROOT/USER walked as its owner (root running it) and the counts
 * written to fd. Never returns. */
static void user_child(prune_t *pr, int rfd, const char *user, const struct stat *st,
                       const char *path, int fd)
{
	prune_t mine = *pr;
	mine.bytes = mine.jobs = mine.kept = mine.failed = mine.mounts = 0;
	setvbuf(stdout, NULL, _IOLBF, 0); /* each line out before a kill can take it */
	int ufd = -1;
	if (geteuid() == 0 && st->st_uid != 0 && become(st->st_uid, st->st_gid) < 0)
		gp_err("prune: %s: cannot become uid %u", path, (unsigned)st->st_uid);
	else
		ufd = open_level(&mine, rfd, user, path);
	if (ufd >= 0) {
		prune_level(&mine, ufd, path, 1);
		close(ufd);
	} else if (!mine.mounts && !mine.failed) {
		mine.failed++;
	}
	fflush(stdout);
	dprintf(fd, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mine.bytes,
	        mine.jobs, mine.kept, mine.failed, mine.mounts);
	_exit(0);
}

/* ROOT/USER, in a child of its own (as its owner when we are root) given pr->limit. */
static void prune_user(prune_t *pr, int rfd, const char *user)
{
	char path[4096];
	struct stat st;
	int p[2] = {-1, -1};
	pid_t pid = -1;
	snprintf(path, sizeof(path), "%s/%s", pr->root, user);
	shown(path);
	if (fstatat(rfd, user, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return; /* a link or a file at the users' level: not a user's directory */
	fflush(stdout);
	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		gp_err("prune: %s: %s", path, strerror(errno));
		if (p[0] >= 0)
			close(p[0]), close(p[1]);
		pr->failed++;
		return;
	}
	if (pid == 0) {
		close(p[0]);
		user_child(pr, rfd, user, &st, path, p[1]);
	}
	close(p[1]);
	user_child_wait(pr, pid, p[0], path);
}

/* a and b name the same directory */
static bool same_dir(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* ROOT and the depth from the operand, --depth and site_output; *tmpl: site_output's
 * split, when it describes ROOT at that depth (else its depth is 0). */
static int where(const gp_cli_cmd_t *cmd, const char *config, const char *operand,
                 const char *depth, char *root, size_t rootlen, unsigned *out, gp_site_tmpl_t *tmpl)
{
	gp_config_t cfg;
	gp_site_tmpl_t t = {{0}, {0}, 1};
	char err[600];
	bool have = false;
	if (gp_config_load(&cfg, config, !operand, err, sizeof(err)) < 0) {
		if (!operand)
			return gp_cli_usage(cmd, "%s", err);
	} else {
		if (*cfg.site_output)
			have = gp_site_tmpl_split(cfg.site_output, &t, err, sizeof(err)) == 0;
		/* the plugin makes each user's directory the user's alone then (spank/site.c) */
		if (*cfg.site_group && !getgrnam(cfg.site_group))
			gp_warn(
			    "prune: %s: site_group '%s' is not a group on this host: the users' "
			    "directories under site_output are made theirs alone where it is not "
			    "one on the node",
			    config, cfg.site_group);
	}
	gp_config_free(&cfg);
	struct stat cs;
	if (!operand && !have && stat(config, &cs) < 0 && errno == ENOENT)
		return gp_cli_usage(
		    cmd, "which directory? %s does not exist (--config=FILE); give ROOT", config);
	if (!operand && !have)
		return gp_cli_usage(cmd, "which directory? %s sets no site_output; give ROOT",
		                    config);
	snprintf(root, rootlen, "%s", operand ? operand : t.root);
	*out = have ? t.depth : 1;
	if (depth) {
		char *end;
		long n = strtol(depth, &end, 10);
		if (*end || end == depth || n < 1 || n > 16)
			return gp_cli_usage(cmd, "--depth: '%s' is not a depth from 1 to 16",
			                    depth);
		*out = (unsigned)n;
	}
	*tmpl = t;
	if (!have || *out != t.depth || (operand && !same_dir(operand, t.root)))
		tmpl->depth = 0;
	return 0;
}

int gp_cmd_prune(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &gp_cmd_prune_doc;
	const char *age = NULL, *depth = NULL, *config = GP_SYSCONF_PATH;
	const char *timeout = USER_TIMEOUT_DEFAULT;
	char root[1024];
	prune_t pr = {0};
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		if (k == OPT_OLDER)
			age = c.arg;
		else if (k == 'n')
			pr.dry = true;
		else if (k == OPT_DEPTH)
			depth = c.arg;
		else if (k == OPT_CONFIG)
			config = c.arg;
		else if (k == OPT_TIMEOUT)
			timeout = c.arg;
	}
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 0, 1, "directory") != 0)
		return GP_CLI_USAGE;
	long long secs = age ? gp_prune_age(age) : -1;
	if (!age)
		return gp_cli_usage(cmd, "--older-than is needed (an age such as 30d)");
	if (secs < 0)
		return gp_cli_usage(cmd,
		                    "--older-than: '%s' is not an age (a whole number above 0 with "
		                    "s, m, h, d or w: 30d)",
		                    age);
	if ((pr.limit = gp_prune_age(timeout)) < 0)
		return gp_cli_usage(cmd,
		                    "--timeout: '%s' is not an age (a whole number above 0 with "
		                    "s, m, h, d or w: 1h)",
		                    timeout);
	gp_site_tmpl_t tmpl;
	if (where(cmd, config, c.ind < argc ? argv[c.ind] : NULL, depth, root, sizeof(root),
	          &pr.depth, &tmpl) != 0)
		return GP_CLI_USAGE;
	pr.tmpl = tmpl.depth ? &tmpl : NULL;
	pr.root = root;
	pr.cutoff = time(NULL) - (time_t)secs;
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat rst;
	DIR *d = rfd >= 0 && fstat(rfd, &rst) == 0 ? fdopendir(dup(rfd)) : NULL;
	if (!d) {
		gp_err("prune: %s: %s", root, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		return 1;
	}
	pr.dev = rst.st_dev;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			prune_user(&pr, rfd, de->d_name);
	closedir(d);
	close(rfd);
	printf("gpuprof prune: %s %" PRIu64 " job director%s (%.1f MiB) older than %s under %s; "
	       "%" PRIu64 " kept; %" PRIu64 " mount point%s left alone%s\n",
	       pr.dry ? "would remove" : "removed", pr.jobs, pr.jobs == 1 ? "y" : "ies",
	       pr.bytes / 1048576.0, age, root, pr.kept, pr.mounts, pr.mounts == 1 ? "" : "s",
	       pr.failed ? "; some could not be read or removed (above)" : "");
	return fflush(stdout) || pr.failed ? 1 : 0;
}
