/* Path templates and link-safe directory/file creation (see path.h). */
#include "config.h"
#include "path.h"
#include "modes.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The codes, once: what each stands for and whether a node's directory may hold it. */
static const struct tmpl_code {
	char code;
	bool node;
	size_t off; /* in gp_tmpl_vars_t; (size_t)-1: '%' itself */
} tmpl_codes[] = {
    {'j', false, offsetof(gp_tmpl_vars_t, job)},
    {'u', false, offsetof(gp_tmpl_vars_t, user)},
    {'x', false, offsetof(gp_tmpl_vars_t, name)},
    {'s', false, offsetof(gp_tmpl_vars_t, step)},
    {'n', true, offsetof(gp_tmpl_vars_t, node)},
    {'h', true, offsetof(gp_tmpl_vars_t, host)},
    {'t', false, offsetof(gp_tmpl_vars_t, task)},
    {'r', false, offsetof(gp_tmpl_vars_t, rank)},
    {'%', true, (size_t)-1},
};
#define NCODES (sizeof(tmpl_codes) / sizeof(tmpl_codes[0]))

static const struct tmpl_code *tmpl_code(char c)
{
	for (size_t i = 0; c && i < NCODES; i++)
		if (tmpl_codes[i].code == c)
			return &tmpl_codes[i];
	return NULL;
}

/* "%j %u ... %%": the codes a template of kind may hold */
static const char *tmpl_codes_list(gp_tmpl_kind_t kind, char *b, size_t len)
{
	size_t o = 0;
	b[0] = '\0';
	for (size_t i = 0; i < NCODES && o + 4 < len; i++)
		if (kind == GP_TMPL_JOB || tmpl_codes[i].node)
			o += (size_t)snprintf(b + o, len - o, "%s%%%c", o ? " " : "",
			                      tmpl_codes[i].code);
	return b;
}

int gp_tmpl_check_kind(const char *tmpl, gp_tmpl_kind_t kind, char *err, size_t errlen)
{
	char why[128], list[64];
	if (!tmpl || !*tmpl) {
		snprintf(err, errlen, "empty directory");
		return -1;
	}
	if (gp_text_check(tmpl, 1024, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	tmpl_codes_list(kind, list, sizeof(list));
	for (const char *p = tmpl; *p; p++) {
		if (*p != '%')
			continue;
		const struct tmpl_code *c = tmpl_code(p[1]);
		if (!p[1]) {
			snprintf(err, errlen, "trailing '%%' (escapes: %s)", list);
			return -1;
		}
		if (!c || (kind == GP_TMPL_NODE && !c->node)) {
			char esc[8];
			gp_text_escape(p + 1, 1, esc, sizeof(esc));
			snprintf(err, errlen, "%s '%%%s' at position %zu (escapes%s: %s)",
			         c ? "job escape" : "unknown escape", esc, (size_t)(p - tmpl) + 1,
			         kind == GP_TMPL_NODE ? " of a node's directory" : "", list);
			return -1;
		}
		p++;
	}
	return 0;
}

int gp_tmpl_check(const char *tmpl, char *err, size_t errlen)
{
	return gp_tmpl_check_kind(tmpl, GP_TMPL_JOB, err, errlen);
}

void gp_tmpl_this_host(gp_tmpl_vars_t *v, gp_tmpl_hostbuf_t *buf)
{
	memset(buf, 0, sizeof(*buf));
	if (gethostname(buf->node, sizeof(buf->node) - 1) < 0)
		buf->node[0] = '\0';
	snprintf(buf->host, sizeof(buf->host), "%.*s", (int)strcspn(buf->node, "."), buf->node);
	v->node = buf->node[0] ? buf->node : NULL;
	v->host = buf->host[0] ? buf->host : NULL;
}

/* A value's bytes at most, whole UTF-8 characters: a job name of any length still makes
 * a component a file system takes (NAME_MAX 255 with the template's own text). */
#define TMPL_VALUE_MAX 128

static size_t utf8_len(unsigned char lead)
{
	return lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

/* One value into out at *o, made harmless as a path's part: '/' and control characters
 * (a newline in a job name) become '_', and it is cut to TMPL_VALUE_MAX bytes. */
static int tmpl_put_value(const char *val, char *out, size_t outlen, size_t *o)
{
	size_t n = 0;
	for (const unsigned char *q = (const unsigned char *)val; *q; q++, n++) {
		bool cont = (*q & 0xc0) == 0x80;
		if (!cont && n + utf8_len(*q) > TMPL_VALUE_MAX)
			break;
		if (*o + 1 >= outlen)
			return errno = ENAMETOOLONG, -1;
		out[(*o)++] = (*q == '/' || *q < 0x20 || *q == 0x7f) ? '_' : (char)*q;
	}
	return 0;
}

/* The component out[start..end) that a value made "." or "..": its first dot becomes
 * '_', so that no job name or user climbs out of the directory the template names. */
static void tmpl_defuse_dots(char *out, size_t start, size_t end)
{
	size_t n = end - start;
	if ((n == 1 && out[start] == '.') || (n == 2 && out[start] == '.' && out[start + 1] == '.'))
		out[start] = '_';
}

int gp_tmpl_expand(const char *tmpl, const gp_tmpl_vars_t *v, char *out, size_t outlen)
{
	size_t o = 0, comp = 0;
	bool valued = false; /* the component being written holds a value */
	if (outlen == 0)
		return -1;
	for (const char *p = tmpl; *p; p++) {
		if (*p == '%') {
			const struct tmpl_code *k = tmpl_code(*++p);
			if (!k)
				return errno = EINVAL, -1;
			const char *val = k->off == (size_t)-1
			                      ? "%"
			                      : *(const char *const *)((const char *)v + k->off);
			if (tmpl_put_value(val && *val ? val : "unknown", out, outlen, &o) < 0)
				return -1;
			valued = true;
			continue;
		}
		if (o + 1 >= outlen)
			return errno = ENAMETOOLONG, -1;
		if (*p == '/') {
			if (valued)
				tmpl_defuse_dots(out, comp, o);
			comp = o + 1;
			valued = false;
		}
		out[o++] = *p;
	}
	if (valued)
		tmpl_defuse_dots(out, comp, o);
	out[o] = '\0';
	return 0;
}

/* out (n bytes used) without its last component; "/" stays */
static size_t path_pop(char *out, size_t n)
{
	while (n > 1 && out[n - 1] != '/')
		n--;
	n = n > 1 ? n - 1 : 1;
	out[n] = '\0';
	return n;
}

int gp_path_normalise(const char *path, char *out, size_t outlen)
{
	char buf[PATH_MAX], real[PATH_MAX];
	size_t n;
	if (outlen < 2 || strlen(path) >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	if (path[0] == '/')
		snprintf(buf, sizeof(buf), "/");
	else if (!getcwd(buf, sizeof(buf)))
		return -1;
	n = strlen(buf);
	for (const char *c = path; *c;) {
		size_t l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.') {
			/* the kernel's parent: of the directory the name so far reaches */
			if (realpath(buf, real) && strlen(real) < sizeof(buf))
				n = strlen(strcpy(buf, real));
			n = path_pop(buf, n);
		} else if (l && !(l == 1 && c[0] == '.')) {
			if (n + 1 + l >= sizeof(buf))
				return errno = ENAMETOOLONG, -1;
			if (n > 1)
				buf[n++] = '/';
			memcpy(buf + n, c, l);
			buf[n += l] = '\0';
		}
		c += l + (c[l] == '/');
	}
	if (n >= outlen)
		return errno = ENAMETOOLONG, -1;
	memcpy(out, buf, n + 1);
	return 0;
}

int gp_mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	int dfd;
	char *save = NULL;

	if (strlen(path) >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	strcpy(buf, path);
	dfd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	for (char *comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int nfd;
		if (!strcmp(comp, "."))
			continue;
		nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT) {
			if (mkdirat(dfd, comp, mode) < 0 && errno != EEXIST) {
				int e = errno;
				close(dfd);
				return errno = e, -1;
			}
			nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
			/* O_NOFOLLOW on a symlink with O_DIRECTORY reports ENOTDIR on Linux. A
			 * link of root's (an admin's /scratch -> /lustre/scratch) or of the
			 * caller's own is followed; one planted by anybody else is not (the
			 * kernel's protected_symlinks rule). */
			struct stat st;
			int e = errno;
			if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode)) {
				e = ELOOP;
				if (st.st_uid == 0 || st.st_uid == geteuid())
					nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			}
			if (nfd < 0)
				errno = e;
		}
		if (nfd < 0) {
			int e = errno;
			close(dfd);
			return errno = e, -1;
		}
		close(dfd);
		dfd = nfd;
	}
	return dfd;
}

int gp_open_at(int dirfd, const char *name, int flags, mode_t mode)
{
	return openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags, mode);
}

int gp_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gp_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
                     bool durable)
{
	char tmp[512];
	int fd, e;
	if (snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid()) >= (int)sizeof(tmp))
		return errno = ENAMETOOLONG, -1;
	fd = gp_open_at(dirfd, tmp, O_CREAT | O_EXCL | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	if (gp_write_all(fd, buf, len) < 0 || (durable && fsync(fd) < 0)) {
		e = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return errno = e, -1;
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		e = errno;
		unlinkat(dirfd, tmp, 0);
		return errno = e, -1;
	}
	return 0;
}

int gp_root_link_check(const char *dir, char *err, size_t errlen)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	if (geteuid() != 0)
		return 0;
	if (n >= sizeof(p)) {
		snprintf(err, errlen, "%.64s...: %s", dir, strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(p, dir, n + 1);
	/* every prefix of dir that ends a component: "a", "a/b", ..., dir itself */
	for (size_t i = 1; i <= n; i++) {
		if (i < n && (p[i] != '/' || p[i - 1] == '/'))
			continue;
		char c = p[i];
		struct stat ls, ts;
		p[i] = '\0';
		bool bad = lstat(p, &ls) == 0 && S_ISLNK(ls.st_mode) && ls.st_uid != 0 &&
		           stat(p, &ts) == 0 && ts.st_uid != ls.st_uid;
		if (bad)
			snprintf(
			    err, errlen,
			    "%s: a link of uid %u's to uid %u's directory: not followed as root", p,
			    (unsigned)ls.st_uid, (unsigned)ts.st_uid);
		p[i] = c;
		if (bad)
			return -1;
	}
	return 0;
}

bool gp_job_file_ok(uid_t file_uid, uid_t owner)
{
	return owner == (uid_t)-1 || geteuid() != 0 || owner == 0 || file_uid == owner;
}

int gp_open_regular(int dirfd, const char *path, uid_t owner, struct stat *st)
{
	struct stat sb;
	int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int e = 0;
	if (fstat(fd, &sb) < 0)
		e = errno;
	else if (!S_ISREG(sb.st_mode))
		e = EINVAL;
	else if (owner != (uid_t)-1 && sb.st_uid != owner && sb.st_uid != geteuid())
		e = EPERM;
	if (!e && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		e = errno;
	if (e) {
		close(fd);
		return errno = e, -1;
	}
	if (st)
		*st = sb;
	return fd;
}

int gp_path_join(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= outlen)
		return errno = ENAMETOOLONG, -1;
	return 0;
}

void gp_tmpl_vars_from_env(gp_tmpl_vars_t *v)
{
	const char *job = getenv("SLURM_JOB_ID");
	*v = (gp_tmpl_vars_t){.job = job && *job ? job : "local",
	                      .user = getenv("USER"),
	                      .name = getenv("SLURM_JOB_NAME"),
	                      .step = getenv("SLURM_STEP_ID"),
	                      .rank = getenv("SLURM_PROCID")};
}
