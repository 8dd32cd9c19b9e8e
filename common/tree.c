/* Link-safe, one-file-system tree measurement and removal (tree.h). Recursive, one open
 * directory per level, at most GP_TREE_MAX_DEPTH levels. */
#include "config.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void account(gp_tree_usage_t *u, const struct stat *st)
{
	u->bytes += (uint64_t)st->st_blocks * 512u;
	u->entries++;
	if (st->st_mtime > u->newest)
		u->newest = st->st_mtime;
	if (!S_ISDIR(st->st_mode) && st->st_mtime > u->newest_file)
		u->newest_file = st->st_mtime;
}

/* The directory dirfd/name opened for reading, never through a link, and only where it is
 * on dev; -1 otherwise (errno EXDEV for another file system). */
static DIR *open_below(int dirfd, const char *name, dev_t dev)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	int e = fstat(fd, &st) < 0 ? errno : st.st_dev != dev ? EXDEV : 0;
	if (e) {
		close(fd);
		errno = e;
		return NULL;
	}
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static bool dot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

/* ... its entries' count (1 where it could not be read or was cut: not known empty) */
static size_t measure_dir(int at, const char *name, dev_t dev, unsigned depth, uint64_t max,
                          gp_tree_usage_t *u)
{
	struct dirent *de;
	DIR *d;
	size_t n = 0;
	if (depth >= GP_TREE_MAX_DEPTH) {
		u->cut = true;
		return 1;
	}
	if (!(d = open_below(at, name, dev))) {
		u->skipped++;
		return 1;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (dot(de->d_name))
			continue;
		n++;
		if (max && u->entries >= max) {
			u->cut = true;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			u->skipped++;
			continue;
		}
		account(u, &st);
		/* an empty directory is as new as a file: a requeued job's new step directory
		 * before its first file, beside the old attempt's (the reviewer, session 34) */
		if (S_ISDIR(st.st_mode) &&
		    !measure_dir(dirfd(d), de->d_name, dev, depth + 1, max, u) &&
		    st.st_mtime > u->newest_file)
			u->newest_file = st.st_mtime;
	}
	closedir(d);
	return n;
}

/* name's stat into st and the file system the walk stays on into dev: name's own, or
 * (within) dirfd's, name refused (EXDEV) when it is a mount point on dirfd. */
static int top_stat(int dirfd, const char *name, bool within, struct stat *st, dev_t *dev)
{
	struct stat parent;
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	*dev = st->st_dev;
	if (!within)
		return 0;
	if (fstat(dirfd, &parent) < 0)
		return -1;
	*dev = parent.st_dev;
	return st->st_dev == parent.st_dev ? 0 : (errno = EXDEV, -1);
}

static int measure(int dirfd, const char *name, bool within, uint64_t max_entries,
                   gp_tree_usage_t *u)
{
	struct stat st;
	dev_t dev;
	if (top_stat(dirfd, name, within, &st, &dev) < 0)
		return -1;
	account(u, &st);
	if (S_ISDIR(st.st_mode))
		measure_dir(dirfd, name, dev, 0, max_entries, u);
	return 0;
}

int gp_tree_measure(int dirfd, const char *name, uint64_t max_entries, gp_tree_usage_t *u)
{
	return measure(dirfd, name, false, max_entries, u);
}

int gp_tree_measure_within(int dirfd, const char *name, uint64_t max_entries, gp_tree_usage_t *u)
{
	return measure(dirfd, name, true, max_entries, u);
}

/* Empty the directory dirfd/name (on dev). 0 when every entry went. */
static int empty_dir(int at, const char *name, dev_t dev, unsigned depth, gp_tree_usage_t *u)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;
	if (depth >= GP_TREE_MAX_DEPTH)
		return errno = ELOOP, -1;
	if (!(d = open_below(at, name, dev)))
		return -1;
	while ((de = readdir(d))) {
		struct stat st;
		if (dot(de->d_name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -1;
			continue;
		}
		bool dir = S_ISDIR(st.st_mode);
		if (dir &&
		    (st.st_dev != dev || empty_dir(dirfd(d), de->d_name, dev, depth + 1, u) < 0)) {
			u->skipped++;
			rc = -1;
			continue;
		}
		if (unlinkat(dirfd(d), de->d_name, dir ? AT_REMOVEDIR : 0) < 0) {
			u->skipped++;
			rc = -1;
			continue;
		}
		account(u, &st);
	}
	int e = errno;
	closedir(d);
	errno = e;
	return rc;
}

static int tree_remove(int dirfd, const char *name, bool within, gp_tree_usage_t *u)
{
	struct stat st;
	dev_t dev;
	if (top_stat(dirfd, name, within, &st, &dev) < 0) {
		u->skipped += errno == EXDEV;
		return -1;
	}
	bool dir = S_ISDIR(st.st_mode);
	if (dir && empty_dir(dirfd, name, dev, 0, u) < 0) {
		u->skipped++;
		return -1;
	}
	if (unlinkat(dirfd, name, dir ? AT_REMOVEDIR : 0) < 0) {
		u->skipped++;
		return -1;
	}
	account(u, &st);
	return 0;
}

int gp_tree_remove(int dirfd, const char *name, gp_tree_usage_t *u)
{
	return tree_remove(dirfd, name, false, u);
}

int gp_tree_remove_within(int dirfd, const char *name, gp_tree_usage_t *u)
{
	return tree_remove(dirfd, name, true, u);
}
