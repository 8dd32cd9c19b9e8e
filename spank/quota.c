/* The room a user has left under site_quota_per_user, asked by spank/site.c at each step
 * the site profiles. What ROOT/USER holds of the template's making is measured as the user:
 * the entries each level of the template's job part could be (gp_site_tmpl_level_match,
 * as gpuprof prune walks), so a template in the user's home (/home/%u/gpuprof/%j) measures
 * ~/gpuprof's job directories, not the user's own files beside them. A bounded walk (up to
 * QUOTA_MAX_ENTRIES entries and QUOTA_TIMEOUT_S seconds: a directory of 200 000 entries
 * takes seconds, and init_post_opt holds the step's start meanwhile). The walk is kept per
 * node and user in the state directory (root's alone) for site_quota_cache seconds, and in
 * between the usage is bounded from above: what the walk found plus every cap this node
 * granted since (a rank never writes past its cap). A step is thus never given room that
 * a walk would have refused it, but for what other nodes wrote since (as without the
 * cache: steps that start together are each measured before the others write), and a
 * bound that leaves too little room walks again at once, so the cache never refuses a
 * step a walk would admit. Steps that start together on a node wait for one walk. */
#include "config.h"
#include "plugin.h"
#include "log.h"
#include "path.h"
#include "sitedir.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUOTA_MAX_ENTRIES 200000       /* a user's directory measured up to this many entries */
#define QUOTA_TIMEOUT_S   5            /* and for this long: init_post_opt holds the step's start */
#define RANK_CAP_MIN      (64ll << 20) /* less room than this a rank: not profiled */
#define CACHE_TAG         "gpuprof-quota/1"
#define CACHE_LINE        96 /* bytes of the node's record, padded */

typedef struct quota_arg {
	const gp_site_tmpl_t *t;
	const char *user;
} quota_arg_t;

/* What the node knows of a user's directory: measured at `walked` (Unix time), holding
 * `bytes`, and `granted` bytes of caps given to steps on this node since. */
typedef struct usage {
	long long walked, bytes, granted;
} usage_t;

/* Into u: dfd/name whole where it is a job's directory gpuprof wrote (it holds a step's
 * directory: what gpuprof prune removes when it is old); a user's own directory of that
 * name, or a file, is theirs. One the user cannot read is counted as skipped. */
static void measure_job(int dfd, const char *name, gp_tree_usage_t *u)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool empty;
	if (fd < 0) {
		if (errno != ENOTDIR && errno != ELOOP && errno != ENOENT)
			u->skipped++;
		return;
	}
	bool ours = gp_site_holds_step(fd, &empty);
	if (!ours && !empty) {
		struct stat st; /* a directory it could not read: nothing can be hidden that way */
		if (fstatat(fd, ".", &st, 0) < 0 || faccessat(fd, ".", R_OK | X_OK, 0) < 0)
			u->skipped++;
	}
	close(fd);
	if (ours && gp_tree_measure(dfd, name, QUOTA_MAX_ENTRIES, u) < 0)
		u->skipped++;
}

/* Into u: what the directory dfd at `level` of t's job part (0: ROOT/USER) holds in the
 * entries of the next level the template could have made; at the job's level, each one
 * whole. A matching directory that cannot be read counts as skipped (a user could hide
 * any amount there). */
static void measure_level(int dfd, const gp_site_tmpl_t *t, unsigned level, gp_tree_usage_t *u)
{
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		u->skipped++;
		return;
	}
	while ((de = readdir(d)) && !u->cut) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") ||
		    !gp_site_tmpl_level_match(t, level + 1, n))
			continue;
		if (level + 1 >= t->depth) { /* a job's directory: whole */
			measure_job(dirfd(d), n, u);
			continue;
		}
		struct stat st;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue; /* a file where the template has a directory: nothing of ours */
		int cfd = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			u->skipped++;
			continue;
		}
		u->bytes += (uint64_t)st.st_blocks * 512u;
		u->entries++;
		measure_level(cfd, t, level + 1, u);
		close(cfd);
		if (u->entries >= QUOTA_MAX_ENTRIES)
			u->cut = true;
	}
	closedir(d);
}

/* As the user: what ROOT/USER holds of the template's making, "BYTES ENTRIES CUT SKIPPED"
 * on fd. */
static int measure_as_user(void *arg, int fd)
{
	const quota_arg_t *q = arg;
	gp_tree_usage_t u = {0};
	char line[96];
	int rfd = open(q->t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ufd =
	    rfd < 0 ? -1 : openat(rfd, q->user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd >= 0)
		close(rfd);
	if (ufd < 0)
		return -1;
	measure_level(ufd, q->t, 0, &u);
	close(ufd);
	int n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %d %u\n", u.bytes, u.entries,
	                 (int)u.cut, u.skipped);
	return gp_write_all(fd, line, (size_t)n);
}

/* The walk, into u (walked now, nothing granted); -1 with why. */
static int walk(const gp_plugin_t *p, const gp_site_tmpl_t *t, const char *user, usage_t *u,
                char *why, size_t whylen)
{
	const gp_creds_t who = {p->uid, p->gid, p->ngroups, p->groups};
	quota_arg_t q = {t, user};
	char out[128] = "";
	unsigned long long bytes = 0, entries = 0;
	int cut = 0;
	unsigned skipped = 0;
	if (gp_run_as_user_out(&who, measure_as_user, &q, out, sizeof(out), QUOTA_TIMEOUT_S) != 0 ||
	    sscanf(out, "%llu %llu %d %u", &bytes, &entries, &cut, &skipped) != 4)
		return snprintf(why, whylen, "its size could not be measured in %d s",
		                QUOTA_TIMEOUT_S),
		       -1;
	if (cut)
		return snprintf(why, whylen,
		                "holds more than %d entries or nests deeper than %d levels "
		                "(site_quota_per_user): not measured",
		                QUOTA_MAX_ENTRIES, GP_TREE_MAX_DEPTH),
		       -1;
	/* a directory its user made unreadable, or a mount point: what it holds would not
	 * count, so a user could hide any amount from the quota */
	if (skipped)
		return snprintf(why, whylen,
		                "has parts its user cannot read or another file system in it "
		                "(%u): not measured (site_quota_per_user)",
		                skipped),
		       -1;
	*u = (usage_t){(long long)time(NULL), (long long)bytes, 0};
	return 0;
}

/* The node's record of the user's directory, locked (waiting for a step that walks it
 * now, up to a walk's time): its descriptor, or -1 where there is no state directory of
 * root's alone to keep it in (every step walks then, as with site_quota_cache 0). */
static int cache_open(const gp_plugin_t *p)
{
	char name[64];
	struct stat st;
	if (!p->state_dir || p->cfg.site_quota_cache <= 0)
		return -1;
	int dfd = open(p->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	snprintf(name, sizeof(name), "quota-%u", (unsigned)p->uid);
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return -1;
	for (int i = 0; i <= (QUOTA_TIMEOUT_S + 1) * 20; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		usleep(50000);
	}
	close(fd);
	return -1;
}

/* The record's figures, when it holds a walk younger than site_quota_cache */
static bool cache_read(int fd, const gp_plugin_t *p, usage_t *u)
{
	char buf[160];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	long long now = (long long)time(NULL);
	return sscanf(buf, CACHE_TAG " %lld %lld %lld", &u->walked, &u->bytes, &u->granted) == 3 &&
	       u->bytes >= 0 && u->granted >= 0 && u->walked <= now &&
	       now - u->walked < p->cfg.site_quota_cache;
}

/* One line of a fixed width written over the last: no ftruncate (on ext4 a truncate to 0
 * makes the close flush the file, ~3 ms, a third of a cached step's start) */
static void cache_write(int fd, const usage_t *u)
{
	char line[96], buf[CACHE_LINE + 1];
	snprintf(line, sizeof(line), CACHE_TAG " %lld %lld %lld", u->walked, u->bytes, u->granted);
	int n = snprintf(buf, sizeof(buf), "%-*s\n", CACHE_LINE - 1, line);
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		gp_debug("quota record: %s", strerror(errno));
}

/* The cap per rank that usage leaves ntasks, 0 when it leaves less than RANK_CAP_MIN */
static long long cap_of(const gp_plugin_t *p, long long used, unsigned ntasks)
{
	long long room = p->cfg.site_quota_per_user - used;
	long long cap = room / (long long)(ntasks ? ntasks : 1);
	if (cap < RANK_CAP_MIN)
		return 0;
	/* max_bytes_per_rank 0 is no cap of the site's own: the quota's cap stands */
	if (p->cfg.max_bytes_per_rank > 0 && cap > p->cfg.max_bytes_per_rank)
		cap = p->cfg.max_bytes_per_rank;
	return cap;
}

int gp_site_quota_cap(const gp_plugin_t *p, const struct gp_site_tmpl *t, const char *user,
                      unsigned ntasks, long long *cap, char *why, size_t whylen)
{
	usage_t u;
	int rc = -1;
	*cap = 0;
	if (p->cfg.site_quota_per_user <= 0)
		return 0;
	int fd = cache_open(p);
	bool cached = fd >= 0 && cache_read(fd, p, &u);
	if (cached && (*cap = cap_of(p, u.bytes + u.granted, ntasks)) > 0)
		gp_debug("quota: %s's directory: %lld bytes at the walk %lld s ago, %lld granted "
		         "since: no walk",
		         user, u.bytes, (long long)time(NULL) - u.walked, u.granted);
	else if (walk(p, t, user, &u, why, whylen) < 0)
		goto out;
	else if ((*cap = cap_of(p, u.bytes, ntasks)) == 0) {
		snprintf(why, whylen,
		         "holds %.1f MiB of its %.1f MiB (site_quota_per_user): gpuprof prune, or "
		         "the user frees room",
		         u.bytes / 1048576.0, p->cfg.site_quota_per_user / 1048576.0);
		if (fd >= 0)
			cache_write(fd, &u);
		goto out;
	}
	u.granted += *cap * (long long)(ntasks ? ntasks : 1);
	if (fd >= 0)
		cache_write(fd, &u);
	rc = 0;
out:
	if (fd >= 0)
		close(fd); /* and its lock */
	return rc;
}
