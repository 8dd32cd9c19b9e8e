/* Named outputs written whole or not at all (see outfile.h). A failed export deleted the
 * file -o named, and through a symbolic link at -o it truncated the link's target (as
 * root: any file) and removed the link. */
#include "config.h"
#include "outfile.h"
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *gp_outfile_open(gp_outfile_t *o, const char *path)
{
	struct stat st;
	char dir[4096];
	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	o->path = path;
	if (!strcmp(path, "-"))
		return o->f = stdout;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return errno = ELOOP, NULL;
		if (S_ISDIR(st.st_mode))
			return errno = EISDIR, NULL;
		if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			/* a stream the caller chose: written in place, nothing to rename */
			int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
			if (fd >= 0 && !(o->f = fdopen(fd, "w")))
				close(fd);
			return o->f;
		}
	}
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || strlen(base) + 32 > sizeof(o->tmp) ||
	    (slash && (size_t)(slash - path) >= sizeof(dir)))
		return errno = ENAMETOOLONG, NULL;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
	         slash ? path : ".");
	o->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dfd < 0)
		return NULL;
	snprintf(o->name, sizeof(o->name), "%s", base);
	snprintf(o->tmp, sizeof(o->tmp), ".%s.tmp.%d", base, (int)getpid());
	/* the mode a new file would get (0666 less the umask), with O_EXCL and O_NOFOLLOW:
	 * nothing planted under the temporary name is written into */
	int fd = gp_open_at(o->dfd, o->tmp, O_CREAT | O_EXCL | O_TRUNC, 0666);
	if (fd >= 0 && !(o->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlinkat(o->dfd, o->tmp, 0);
		errno = e;
	}
	if (!o->f) {
		int e = errno;
		close(o->dfd);
		o->dfd = -1;
		errno = e;
	}
	return o->f;
}

int gp_outfile_close(gp_outfile_t *o, bool ok)
{
	int rc = -1, e = 0;
	if (!o->f)
		return -1;
	if (o->f == stdout) {
		rc = fflush(stdout) == 0 && ok ? 0 : -1;
		o->f = NULL;
		return rc;
	}
	if (ok && (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) < 0))
		ok = false, e = errno;
	if (fclose(o->f) != 0 && ok)
		ok = false, e = errno;
	o->f = NULL;
	if (o->dfd < 0) /* written in place */
		return ok ? 0 : (errno = e, -1);
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
