/* Named outputs written whole or not at all, gzip on request (see outfile.h). A failed
 * export deleted the file -o named, and through a symbolic link at -o it truncated the
 * link's target (as root: any file) and removed the link. */
#include "config.h"
#include "outfile.h"
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

bool gp_outfile_gzip_name(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && !strcmp(path + n - 3, ".gz");
}

/* gzip behind a FILE, so every writer keeps its fprintf: stdio's buffer is handed to
 * zlib's, and a failure of either shows in ferror() */
static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
	if (!n)
		return 0;
	int w = gzwrite((gzFile)cookie, buf, (unsigned)(n > 1u << 30 ? 1u << 30 : n));
	return w > 0 ? w : -1;
}

static int gz_close(void *cookie)
{
	return gzclose((gzFile)cookie) == Z_OK ? 0 : (errno = errno ? errno : EIO, -1);
}

/* A FILE on fd, compressed when gz. fd is the FILE's once it is made (or closed when
 * that fails). */
static FILE *file_on(int fd, bool gz)
{
	FILE *f;
	int e;
	if (!gz) {
		if (!(f = fdopen(fd, "w")))
			e = errno, close(fd), errno = e;
		return f;
	}
	gzFile z = gzdopen(fd, "wb6");
	if (!z)
		return e = errno ? errno : ENOMEM, close(fd), errno = e, NULL;
	gzbuffer(z, 1 << 17);
	f = fopencookie(z, "w", (cookie_io_functions_t){.write = gz_write, .close = gz_close});
	if (!f) {
		e = errno ? errno : ENOMEM;
		gzclose(z); /* and fd */
		return errno = e, NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

/* The temporary file beside name in o->dfd (owned by o from here), as a FILE. */
static FILE *open_tmp_in(gp_outfile_t *o, const char *base)
{
	snprintf(o->name, sizeof(o->name), "%s", base);
	snprintf(o->tmp, sizeof(o->tmp), ".%s.tmp.%d", base, (int)getpid());
	/* the mode a new file would get (0666 less the umask), with O_EXCL and O_NOFOLLOW:
	 * nothing planted under the temporary name is written into */
	int fd = gp_open_at(o->dfd, o->tmp, O_CREAT | O_EXCL | O_TRUNC, 0666);
	if (fd >= 0 && (o->sync_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		int e = errno;
		close(fd);
		fd = -1;
		errno = e;
	}
	if (fd >= 0)
		o->f = file_on(fd, o->gz);
	if (!o->f) {
		int e = errno;
		if (o->sync_fd >= 0)
			close(o->sync_fd);
		o->sync_fd = -1;
		if (fd >= 0) /* made, then not usable */
			unlinkat(o->dfd, o->tmp, 0);
		close(o->dfd);
		o->dfd = -1;
		errno = e;
	}
	return o->f;
}

/* What is at path (lstat, or fstatat without following at dirfd): refused (NULL with
 * errno), a stream to write in place (*fd set), or nothing in the way (NULL, errno 0). */
static FILE *existing(gp_outfile_t *o, int dirfd, const char *path, bool *done)
{
	struct stat st;
	*done = false;
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	*done = true;
	if (S_ISLNK(st.st_mode))
		return errno = ELOOP, NULL;
	if (S_ISDIR(st.st_mode))
		return errno = EISDIR, NULL;
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		/* a stream the caller chose: written in place, nothing to rename */
		int fd = openat(dirfd, path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		return fd < 0 ? NULL : (o->f = file_on(fd, o->gz));
	}
	*done = false;
	return NULL;
}

FILE *gp_outfile_open(gp_outfile_t *o, const char *path)
{
	char dir[4096];
	bool done;
	memset(o, 0, sizeof(*o));
	o->dfd = o->sync_fd = -1;
	o->path = path;
	if (!strcmp(path, "-"))
		return o->f = stdout;
	o->gz = gp_outfile_gzip_name(path);
	FILE *f = existing(o, AT_FDCWD, path, &done);
	if (done)
		return f;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base) /* "" or "dir/": no file named (a directory is EISDIR above) */
		return errno = *path ? EISDIR : ENOENT, NULL;
	if (strlen(base) + 32 > sizeof(o->tmp) || (slash && (size_t)(slash - path) >= sizeof(dir)))
		return errno = ENAMETOOLONG, NULL;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
	         slash ? path : ".");
	o->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dfd < 0)
		return NULL;
	return open_tmp_in(o, base);
}

FILE *gp_outfile_open_at(gp_outfile_t *o, int dirfd, const char *name, const char *path)
{
	bool done;
	memset(o, 0, sizeof(*o));
	o->dfd = o->sync_fd = -1;
	o->path = path;
	o->gz = gp_outfile_gzip_name(name);
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return errno = EINVAL, NULL;
	if (strlen(name) + 32 > sizeof(o->tmp))
		return errno = ENAMETOOLONG, NULL;
	FILE *f = existing(o, dirfd, name, &done);
	if (done)
		return f;
	if ((o->dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0)
		return NULL;
	return open_tmp_in(o, name);
}

int gp_outfile_close(gp_outfile_t *o, bool ok)
{
	int rc = -1, e = 0;
	if (!o->f)
		return -1;
	if (o->f == stdout) {
		rc = fflush(stdout) == 0 && !ferror(stdout) && ok ? 0 : -1;
		o->f = NULL;
		return rc;
	}
	if (ok && (fflush(o->f) != 0 || ferror(o->f)))
		ok = false, e = errno ? errno : EIO;
	if (fclose(o->f) != 0 && ok) /* for .gz, the compressor's last block and trailer too */
		ok = false, e = errno ? errno : EIO;
	o->f = NULL;
	/* the data on disk before the name points at it: a crash leaves the old file */
	if (ok && o->sync_fd >= 0 && fsync(o->sync_fd) < 0)
		ok = false, e = errno;
	if (o->sync_fd >= 0)
		close(o->sync_fd);
	o->sync_fd = -1;
	if (o->dfd < 0) { /* written in place */
		if (!ok && e)
			errno = e;
		return ok ? 0 : -1;
	}
	if (ok && renameat(o->dfd, o->tmp, o->dfd, o->name) == 0)
		rc = 0;
	else {
		if (ok)
			e = errno;
		unlinkat(o->dfd, o->tmp, 0);
	}
	close(o->dfd);
	o->dfd = -1;
	if (rc < 0 && e)
		errno = e;
	return rc;
}
