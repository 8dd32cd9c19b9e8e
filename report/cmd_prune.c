/* gpuprof prune: remove the job directories under the site's directory (site_output,
 * ROOT/USER/JOB...) in which nothing was written for longer than --older-than. Run by
 * root (cron, a systemd timer) over every user's directory, it removes each user's as
 * that user (a child that dropped to the directory's owner), never following a link and
 * never leaving the file system (common/tree.h); a user may run it over their own. */
#include "config.h"
#include "prune.h"
#include "log.h"
#include "siteconf.h"
#include "sitedir.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { OPT_OLDER = 400, OPT_DRY_RUN, OPT_DEPTH, OPT_CONFIG };

static const gp_cli_opt_t prune_opts[] = {
    {"older-than", OPT_OLDER, "AGE",
     "remove a job directory when nothing in it was written for AGE: a whole number with s, "
     "m, h, d or w (30d); needed"},
    {"dry-run", 'n', NULL, "say what would be removed, and remove nothing"},
    {"depth", OPT_DEPTH, "N",
     "a job directory's depth below ROOT/USER (default: site_output's, else 1)"},
    {"config", OPT_CONFIG, "FILE",
     "the site's gpuprof.yaml, for site_output (default: the installed one)"},
    {NULL, 0, NULL, NULL}};

const gp_cli_cmd_t gp_cmd_prune_doc = {
    "prune",
    "--older-than=AGE [OPTION]... [ROOT]",
    "Remove the job directories under the site's directory (site_output: ROOT/USER/JOB) in "
    "which nothing was written for AGE, so that profiling every GPU job stays bounded.",
    prune_opts,
    "ROOT defaults to site_output's root in the site's gpuprof.yaml. Run as root (a daily "
    "timer), each user's directory is pruned by a child that dropped to its owner; a link "
    "is removed as a link and never followed, and nothing on another file system (a mount "
    "point) is entered. The age of a job directory is the newest modification time of "
    "anything in it.\n\n"
    "Exit status: 0 done, 1 something could not be removed or read, 2 a usage error.",
    false};

typedef struct prune {
	time_t cutoff;
	unsigned depth;
	bool dry;
	const char *root;
	uint64_t bytes, jobs, kept, failed;
} prune_t;

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

/* One job directory dfd/name (path for messages): removed when it is old enough. */
static void prune_job(prune_t *pr, int dfd, const char *name, const char *path)
{
	gp_tree_usage_t u = {0};
	if (gp_tree_measure(dfd, name, 0, &u) < 0 || u.skipped) {
		fprintf(stderr, "gpuprof: prune: %s: cannot read all of it; kept\n", path);
		pr->failed++;
		return;
	}
	if (u.newest >= pr->cutoff) {
		pr->kept++;
		return;
	}
	pr->jobs++;
	pr->bytes += u.bytes;
	if (pr->dry) {
		said(pr, path, &u, false);
		return;
	}
	gp_tree_usage_t gone = {0};
	int rc = gp_tree_remove(dfd, name, &gone);
	said(pr, path, &u, rc == 0);
	if (rc < 0)
		pr->failed++;
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
		if (depth == pr->depth) {
			prune_job(pr, dirfd(d), de->d_name, sub);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue; /* not a level of the template's: left alone */
		int nfd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			pr->failed++;
			continue;
		}
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

/* ROOT/USER, as its owner when we are root: the counts come back through a pipe. */
static void prune_user(prune_t *pr, int rfd, const char *user)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", pr->root, user);
	if (fstatat(rfd, user, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return; /* a link or a file at the users' level: not a user's directory */
	bool drop = geteuid() == 0 && st.st_uid != 0;
	int p[2] = {-1, -1};
	pid_t pid = 0;
	fflush(stdout);
	if (drop && (pipe(p) < 0 || (pid = fork()) < 0)) {
		fprintf(stderr, "gpuprof: prune: %s: %s\n", path, strerror(errno));
		pr->failed++;
		return;
	}
	if (pid > 0) { /* root: the child's counts */
		prune_t got = {0};
		close(p[1]);
		FILE *f = fdopen(p[0], "r");
		if (!f || fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &got.bytes,
		                 &got.jobs, &got.kept, &got.failed) != 4)
			got.failed = 1;
		if (f)
			fclose(f);
		int status = 0;
		waitpid(pid, &status, 0);
		pr->bytes += got.bytes, pr->jobs += got.jobs, pr->kept += got.kept;
		pr->failed += got.failed + !(WIFEXITED(status) && !WEXITSTATUS(status));
		return;
	}
	prune_t mine = *pr;
	mine.bytes = mine.jobs = mine.kept = mine.failed = 0;
	int ufd = -1;
	if (drop && become(st.st_uid, st.st_gid) < 0)
		fprintf(stderr, "gpuprof: prune: %s: cannot become uid %u\n", path,
		        (unsigned)st.st_uid);
	else if ((ufd = openat(rfd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		fprintf(stderr, "gpuprof: prune: %s: %s\n", path, strerror(errno));
	else
		prune_level(&mine, ufd, path, 1);
	mine.failed += ufd < 0;
	if (ufd >= 0)
		close(ufd);
	if (!drop) {
		pr->bytes += mine.bytes, pr->jobs += mine.jobs, pr->kept += mine.kept;
		pr->failed += mine.failed;
		return;
	}
	fflush(stdout);
	dprintf(p[1], "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mine.bytes, mine.jobs,
	        mine.kept, mine.failed);
	_exit(0);
}

/* ROOT and the depth from the operand, --depth and site_output. */
static int where(const gp_cli_cmd_t *cmd, const char *config, const char *operand,
                 const char *depth, char *root, size_t rootlen, unsigned *out)
{
	gp_config_t cfg;
	gp_site_tmpl_t t = {{0}, {0}, 1};
	char err[600];
	bool have = false;
	if (gp_config_load(&cfg, config, !operand, err, sizeof(err)) < 0) {
		if (!operand)
			return gp_cli_usage(cmd, "%s", err);
	} else if (*cfg.site_output) {
		have = gp_site_tmpl_split(cfg.site_output, &t, err, sizeof(err)) == 0;
	}
	gp_config_free(&cfg);
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
	return 0;
}

int gp_cmd_prune(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &gp_cmd_prune_doc;
	const char *age = NULL, *depth = NULL, *config = GP_SYSCONF_PATH;
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
	if (where(cmd, config, c.ind < argc ? argv[c.ind] : NULL, depth, root, sizeof(root),
	          &pr.depth) != 0)
		return GP_CLI_USAGE;
	pr.root = root;
	pr.cutoff = time(NULL) - (time_t)secs;
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rfd >= 0 ? fdopendir(dup(rfd)) : NULL;
	if (!d) {
		gp_err("prune: %s: %s", root, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		return 1;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			prune_user(&pr, rfd, de->d_name);
	closedir(d);
	close(rfd);
	printf("gpuprof prune: %s %" PRIu64 " job director%s (%.1f MiB) older than %s under %s; "
	       "%" PRIu64 " kept%s\n",
	       pr.dry ? "would remove" : "removed", pr.jobs, pr.jobs == 1 ? "y" : "ies",
	       pr.bytes / 1048576.0, age, root, pr.kept,
	       pr.failed ? "; some could not be read or removed (above)" : "");
	return fflush(stdout) || pr.failed ? 1 : 0;
}
