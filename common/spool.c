/* Spool handling shared by the agent and `gpuprof salvage` (see spool.h). */
#include "config.h"
#include "spool.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "path.h"
#include "rankfile.h"
#include "settings.h"
#include "ring.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *gp_spool_root(char *out, size_t len, const char *site, const char *tmpdir, char *why,
                          size_t whylen)
{
	char err[256];
	bool bad = false;
	if (site && *site) {
		gp_tmpl_vars_t v = {0};
		gp_tmpl_hostbuf_t hb;
		gp_tmpl_this_host(&v, &hb);
		if (gp_tmpl_check_kind(site, GP_TMPL_NODE, err, sizeof(err)) == 0) {
			if (gp_tmpl_expand(site, &v, out, len) == 0)
				return out;
			snprintf(err, sizeof(err), "too long once expanded");
		}
		if (why)
			snprintf(why, whylen, "%s", err);
		bad = true;
	}
	const char *fallback = tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp";
	if (snprintf(out, len, "%s", fallback) >= (int)len)
		snprintf(out, len, "/tmp");
	return bad ? NULL : out;
}

/* The user spool's fixed names (gpuprof-UID, then .1 ... .9) and its unpredictable one's
 * prefix (gpuprof-UID.r + six of mkdtemp's characters). */
#define USER_NAMES 10
static void user_name(char *name, size_t len, int i)
{
	if (i)
		snprintf(name, len, "gpuprof-%u.%d", (unsigned)getuid(), i);
	else
		snprintf(name, len, "gpuprof-%u", (unsigned)getuid());
}

static bool random_name(const char *name)
{
	char prefix[48];
	int n = snprintf(prefix, sizeof(prefix), "gpuprof-%u.r", (unsigned)getuid());
	return !strncmp(name, prefix, (size_t)n) && strlen(name) == (size_t)n + 6;
}

/* Is rfd/name a directory of ours that no one else may write into (never through a link)? */
static bool dir_ours(int rfd, const char *name)
{
	struct stat st;
	int fd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ours = fstat(fd, &st) == 0 && st.st_uid == getuid() && !(st.st_mode & 0077);
	close(fd);
	return ours;
}

/* The first (by name) unpredictable user spool of ours below rfd into name: 0, else -1. */
static int random_ours(int rfd, char *name, size_t len)
{
	int fd = dup(rfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = -1;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d)))
		if (random_name(de->d_name) && (rc < 0 || strcmp(de->d_name, name) < 0) &&
		    dir_ours(rfd, de->d_name)) {
			snprintf(name, len, "%s", de->d_name);
			rc = 0;
		}
	closedir(d);
	return rc;
}

int gp_spool_userdir(const char *root, char *out, size_t outlen)
{
	char name[64], tmpl[4200];
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	/* In a shared /tmp someone else may have planted the name: insist it is ours, and
	 * take the next candidate when it is not (the same walk finds it again later, for
	 * salvage). */
	for (int i = 0; i < USER_NAMES; i++) {
		user_name(name, sizeof(name), i);
		if (mkdirat(rfd, name, 0700) < 0 && errno != EEXIST)
			break;
		if (dir_ours(rfd, name)) {
			close(rfd);
			return gp_path_join(out, outlen, root, name);
		}
	}
	/* all ten planted (anyone can make them for any uid): one of ours of an unpredictable
	 * name, made by mkdtemp (0700) and found again by the next task and by salvage, which
	 * check it as they check the others; a planted spool never leaves a task unprofiled */
	int rc = random_ours(rfd, name, sizeof(name));
	close(rfd);
	if (rc == 0)
		return gp_path_join(out, outlen, root, name);
	if (snprintf(tmpl, sizeof(tmpl), "%s/gpuprof-%u.rXXXXXX", root, (unsigned)getuid()) >=
	    (int)sizeof(tmpl))
		return errno = ENAMETOOLONG, -1;
	if (!mkdtemp(tmpl))
		return -1;
	return snprintf(out, outlen, "%s", tmpl) < (int)outlen ? 0 : (errno = ENAMETOOLONG, -1);
}

int gp_spool_publish(const char *src, const char *dest, mode_t fmode, mode_t dmode)
{
	char dir[4096], tmp[4200];
	const char *slash = strrchr(dest, '/');
	int in = -1, dfd = -1, out = -1, rc = -1;
	if (!slash || (size_t)(slash - dest) >= sizeof(dir))
		return errno = EINVAL, -1;
	memcpy(dir, dest, (size_t)(slash - dest));
	dir[slash - dest] = '\0';
	dfd = gp_mkdir_p(dir, dmode);
	if (dfd < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", slash + 1, (int)getpid());
	in = gp_open_regular(AT_FDCWD, src, geteuid(), NULL);
	if (in < 0)
		goto out;
	out = gp_open_at(dfd, tmp, O_CREAT | O_TRUNC, fmode);
	if (out < 0)
		goto out;
	for (;;) {
		char buf[1 << 16];
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		if (gp_write_all(out, buf, (size_t)n) < 0)
			goto out;
	}
	if (fsync(out) < 0)
		goto out;
	if (renameat(dfd, tmp, dfd, slash + 1) < 0)
		goto out;
	rc = 0;
out : {
	int e = errno;
	if (out >= 0) {
		close(out);
		if (rc < 0)
			unlinkat(dfd, tmp, 0);
	}
	if (in >= 0)
		close(in);
	close(dfd);
	errno = e;
}
	return rc;
}

/* A spool file of ours: a FIFO or a link in its place (the spool is the user's, the
 * epilog's salvage reads it) must neither hold the node's epilog (it was opened blocking:
 * 60 s per step) nor lead elsewhere. */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = gp_open_regular(AT_FDCWD, path, geteuid(), NULL);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int gp_spool_step_dir(char *out, size_t len, const char *jobdir, const char *step,
                      const char *attempt)
{
	bool again = attempt && *attempt && strcmp(attempt, "0");
	int n = snprintf(out, len, "%s/step%s%s%s", jobdir, step, again ? ".attempt" : "",
	                 again ? attempt : "");
	return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
}

bool gp_spool_step_name_ok(const char *s)
{
	size_t n = strspn(s, "0123456789");
	if (!n && (n = !strncmp(s, "batch", 5)          ? 5
	               : !strncmp(s, "extern", 6)       ? 6
	               : !strncmp(s, "interactive", 11) ? 11
	                                                : 0) == 0)
		return false;
	if (!s[n])
		return true;
	if (strncmp(s + n, ".attempt", 8) || !s[n + 8])
		return false;
	return strspn(s + n + 8, "0123456789") == strlen(s + n + 8);
}

/* The job directory as given (see spool.h), before gp_path_normalise */
static int jobdir_given(char *out, size_t len)
{
	char err[256];
	const char *dir = getenv(GP_ENV_JOBDIR), *tmpl = gp_setting_str(GP_ENV_OUTPUT);
	if (dir && *dir) {
		int n = snprintf(out, len, "%s", dir);
		return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
	}
	if (gp_tmpl_check(tmpl, err, sizeof(err)) < 0) {
		tmpl = gp_setting_env(GP_ENV_OUTPUT)->def;
		gp_warn("%s: %s; the job directory is %s", GP_ENV_OUTPUT, err, tmpl);
	}
	gp_tmpl_vars_t v;
	gp_tmpl_vars_from_env(&v);
	return gp_tmpl_expand(tmpl, &v, out, len) < 0 ? (errno = ENAMETOOLONG, -1) : 0;
}

int gp_spool_jobdir(char *out, size_t len)
{
	char given[4096];
	/* one spelling, decided here: "./DIR", "DIR/" or "DIR//x" went into the spool's dest
	 * as typed, and salvage refused the agent's own destination */
	if (jobdir_given(given, sizeof(given)) < 0)
		return -1;
	return gp_path_normalise(given, out, len);
}

int gp_spool_task_dir(char *out, size_t len, const char *udir, const char *job, const char *step,
                      const char *rank, int pid)
{
	int n = snprintf(out, len, "%s/job%s.%s.%s.%d", udir, job && *job ? job : "local", step,
	                 rank, pid);
	return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
}

int gp_spool_launcher_dest(const char *dest, char *out, size_t outlen)
{
	const char *r = strrchr(dest, '/');
	if (!r || strncmp(r, "/rank", 5) ||
	    snprintf(out, outlen, "%.*s/launcher%s", (int)(r - dest), dest, r + 5) >= (int)outlen)
		return errno = EINVAL, -1;
	return 0;
}

int gp_spool_entry_make(const char *dir)
{
	return mkdir(dir, 0700);
}

int gp_spool_entry_set_dest(const char *dir, const char *dest)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	unlinkat(dfd, GP_SPOOL_DEST, 0);
	/* for the epilog's salvage after the agent died, on a node that did not crash: the
	 * page cache is enough */
	int rc = gp_write_file_at(dfd, GP_SPOOL_DEST, dest, strlen(dest), 0600, false);
	int e = errno;
	close(dfd);
	errno = e;
	return rc;
}

int gp_spool_entry_create_rank(const char *dir, mode_t fmode)
{
	char p[4400];
	if (snprintf(p, sizeof(p), "%s/" GP_SPOOL_RANK, dir) >= (int)sizeof(p))
		return errno = ENAMETOOLONG, -1;
	return open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fmode);
}

void gp_spool_entry_remove(const char *dir)
{
	static const char *files[] = {GP_SPOOL_RING, GP_SPOOL_RANK, GP_SPOOL_DEST};
	char p[4400];
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v ? v : dflt;
}

/* The command line: the recording process's from /proc (NULs made spaces), or argv. */
static void command_line(const gp_spool_hdr_t *h, char *b, size_t len)
{
	size_t off = 0;
	if (h->pid || !h->argv) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/cmdline", h->pid ? (int)h->pid : (int)getpid());
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, b, len - 1) : -1;
		if (fd >= 0)
			close(fd);
		off = n > 0 ? (size_t)n : 0;
		while (off && b[off - 1] == '\0')
			off--;
		for (size_t i = 0; i < off; i++)
			b[i] = b[i] ? b[i] : ' ';
		b[off] = '\0';
		return;
	}
	b[0] = '\0';
	for (char *const *p = h->argv; *p && off < len - 1; p++)
		off += (size_t)snprintf(b + off, len - off, "%s%s", p == h->argv ? "" : " ", *p);
}

int gp_spool_header(char *hdr, size_t len, const gp_spool_hdr_t *h)
{
	char b[256], host[256] = "";
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	gethostname(host, sizeof(host) - 1);
	hdr[0] = '\0';
	gp_rf_hdr_add(hdr, len, GP_HDR_JOB, env_or("SLURM_JOB_ID", ""));
	gp_rf_hdr_add(hdr, len, GP_HDR_STEP, h->step);
	gp_rf_hdr_add(hdr, len, GP_HDR_TASK, env_or("SLURM_LOCALID", "0"));
	gp_rf_hdr_add(hdr, len, GP_HDR_RANK, h->rank);
	if (h->pid) {
		snprintf(b, sizeof(b), "%d", (int)h->pid);
		gp_rf_hdr_add(hdr, len, GP_HDR_PID, b);
	}
	if (h->launcher_rank)
		gp_rf_hdr_add(hdr, len, GP_HDR_LAUNCHER_RANK, h->launcher_rank);
	gp_rf_hdr_add(hdr, len, GP_HDR_NTASKS, env_or("SLURM_NTASKS", "1"));
	gp_rf_hdr_add(hdr, len, GP_HDR_NODE, host);
	if (!strcmp(h->wrapped, "agent")) {
		snprintf(b, sizeof(b), "%d", (int)getpid());
		gp_rf_hdr_add(hdr, len, GP_HDR_AGENT_PID, b);
	}
	gp_modes_format(h->modes, b, sizeof(b));
	gp_rf_hdr_add(hdr, len, GP_HDR_MODES, b);
	snprintf(b, sizeof(b), "%lld", (long long)rt.tv_sec * 1000000000ll + rt.tv_nsec);
	gp_rf_hdr_add(hdr, len, GP_HDR_REALTIME_NS, b);
	snprintf(b, sizeof(b), "%lld", (long long)mono.tv_sec * 1000000000ll + mono.tv_nsec);
	gp_rf_hdr_add(hdr, len, GP_HDR_MONOTONIC_NS, b);
	gp_rf_hdr_add(hdr, len, GP_HDR_GPUS, h->gpus ? h->gpus : "");
	gp_rf_hdr_add(hdr, len, GP_HDR_NVML_LIMITS, h->nvml_limits ? h->nvml_limits : "");
	gp_rf_hdr_add(hdr, len, GP_HDR_CUDA_VISIBLE_DEVICES, env_or("CUDA_VISIBLE_DEVICES", ""));
	gp_rf_hdr_add(hdr, len, GP_HDR_USER, env_or("USER", ""));
	gp_rf_hdr_add(hdr, len, GP_HDR_RESTART_COUNT, env_or("SLURM_RESTART_COUNT", "0"));
	snprintf(b, sizeof(b), "%lld", gp_setting_long(GP_ENV_WARMUP));
	gp_rf_hdr_add(hdr, len, GP_HDR_WARMUP_STEPS, b);
	gp_rf_hdr_add(hdr, len, GP_HDR_WRAPPED, h->wrapped);
	if (h->fallback)
		gp_rf_hdr_add(hdr, len, GP_HDR_FALLBACK, h->fallback);
	gp_rf_hdr_add(hdr, len, GP_HDR_VERSION, PACKAGE_VERSION);
	/* what the user chose last, each cut to a bound: a long job name must not push the
	 * values the report needs out of the header */
	snprintf(b, sizeof(b), "%.200s", env_or(GP_ENV_STEP_RANGE, ""));
	gp_rf_hdr_add(hdr, len, GP_HDR_STEP_RANGE, b);
	snprintf(b, sizeof(b), "%.200s", env_or("SLURM_JOB_NAME", ""));
	gp_rf_hdr_add(hdr, len, GP_HDR_JOB_NAME, b);
	/* the command line, for people reading the report */
	command_line(h, b, sizeof(b));
	return gp_rf_hdr_add(hdr, len, GP_HDR_COMMAND, b);
}

static int salvage_one(const char *dir, const char *into, bool verbose, int nprocs);

/* The task's other processes' files, each in DIR/rank<N>/ (a launcher's rank) or
 * DIR/rank<N>.pid<P>/ (another process of rank N): salvaged first; returns how many
 * there were, *failed how many of them could not be (each said). */
static int salvage_procs(const char *dir, const char *into, bool verbose, long task,
                         bool *task_rank, int *failed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char sub[4400];
	int n = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "rank", 4) || !isdigit((unsigned char)de->d_name[4]) ||
		    snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			continue;
		struct stat sb;
		if (lstat(sub, &sb) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		n++;
		char *end;
		long r = strtol(de->d_name + 4, &end, 10);
		/* rankR.pidP: another process of rank R (agent/inject/startup.c), which makes no
		 * launcher */
		*task_rank |= r == task && !*end;
		if (salvage_one(sub, into, verbose, 0) < 0)
			++*failed;
	}
	closedir(d);
	return n;
}

int gp_spool_salvage(const char *dir, const char *into, bool verbose)
{
	const char *base = strrchr(dir, '/');
	long pid = 0;

	base = base ? base + 1 : dir;
	const char *dot = strrchr(base, '.');
	if (dot)
		pid = strtol(dot + 1, NULL, 10);
	if (pid > 0 && kill((pid_t)pid, 0) == 0) {
		gp_err("%s: agent %ld is still running; not salvaging", dir, pid);
		return 1;
	}
	/* the task's rank, from its name job<J>.<step>.<rank>.<agentpid> */
	long task = -1;
	const char *d1 = strchr(base, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (d2)
		task = strtol(d2 + 1, NULL, 10);
	bool task_rank = false;
	int failed = 0;
	int nprocs = salvage_procs(dir, into, verbose, task, &task_rank, &failed);
	/* -1: the task's rank recorded into a ring of its own; the task is a launcher */
	int rc = salvage_one(dir, into, verbose, task_rank ? -1 : nprocs);
	if (failed) /* a process's file left behind was salvaged as "1 spool", rc 0 */
		return gp_err("%s: %d of %d process file(s) of the task not salvaged (kept there)",
		              dir, failed, nprocs);
	return rc;
}

/* n characters of s are all of [A-Za-z0-9._-] */
static bool name_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return n > 0;
}

/* A rank file's name in a step directory as the agent makes them: rank<N>.gpr,
 * launcher<N>.gpr or (another process of rank N) rank<N>.pid<P>.gpr */
static bool dest_file_ok(const char *f, size_t l)
{
	size_t p = !strncmp(f, "rank", 4) ? 4 : !strncmp(f, "launcher", 8) ? 8 : 0;
	size_t d = p && p < l ? strspn(f + p, "0123456789") : 0;
	if (!d)
		return false;
	p += d;
	if (f[0] == 'r' && l > p + 4 && !strncmp(f + p, ".pid", 4) &&
	    (d = strspn(f + p + 4, "0123456789")) > 0)
		p += 4 + d;
	return l == p + 4 && !strncmp(f + p, ".gpr", 4);
}

/* A spool's dest is the user's to write: only the shape the agent writes is believed,
 * <jobdir>/step<S>/<file> (dest_file_ok). With into, its last two components go under
 * into and nothing else of it is used (the job directory's spelling does not matter).
 * Without, the job directory must be absolute and climb nowhere: empty and "."
 * components (a job directory given as "DIR/" or "./DIR" to an agent before it
 * normalised it) are dropped, ".." is refused. Root's salvage wrote a user's line
 * wherever dest said: an absolute path, or "../" out of --into into root's
 * authorized_keys. */
int gp_spool_dest_check(const char *dest, const char *into, char *out, size_t outlen)
{
	const char *comp[512];
	size_t len[512], nc = 0;
	for (const char *c = dest; *c;) {
		size_t l = strcspn(c, "/");
		if (l && !(l == 1 && c[0] == '.')) {
			if (nc == 512 || (!into && l == 2 && c[0] == '.' && c[1] == '.'))
				return errno = EINVAL, -1;
			comp[nc] = c;
			len[nc++] = l;
		}
		c += l + (c[l] == '/');
	}
	if (nc < 2 || !dest_file_ok(comp[nc - 1], len[nc - 1]) || len[nc - 2] < 5 ||
	    strncmp(comp[nc - 2], "step", 4) || !name_chars(comp[nc - 2], len[nc - 2]))
		return errno = EINVAL, -1;
	size_t o = 0;
	int n = 0;
	if (into) {
		n = snprintf(out, outlen, "%s/%.*s/%.*s", into, (int)len[nc - 2], comp[nc - 2],
		             (int)len[nc - 1], comp[nc - 1]);
		return n < 0 || (size_t)n >= outlen ? (errno = ENAMETOOLONG, -1) : 0;
	}
	if (dest[0] != '/') /* relative: to what? (--into says) */
		return errno = EINVAL, -1;
	for (size_t i = 0; i < nc && n >= 0; i++, o += (size_t)n)
		if ((n = snprintf(out + o, outlen - o, "/%.*s", (int)len[i], comp[i])) < 0 ||
		    o + (size_t)n >= outlen)
			return errno = ENAMETOOLONG, -1;
	return 0;
}

/* nprocs: the launcher's ranks salvaged with it (-1: one of them had the task's rank) */
static int salvage_one(const char *dir, const char *into, bool verbose, int nprocs)
{
	char path[4200], dest[4200], said[4200], err[512];
	uint64_t lost = 0;
	gp_ring_t ring;
	snprintf(path, sizeof(path), "%s/dest", dir);
	if (read_small(path, said, sizeof(said)) < 0)
		return errno == EINVAL  ? gp_err("%s: not a regular file; not salvaged", path)
		       : errno == EPERM ? gp_err("%s: not the spool owner's; not salvaged", path)
		                        : gp_err_errno("%s", path);
	if (gp_spool_dest_check(said, into, dest, sizeof(dest)) < 0)
		return gp_err(
		    "%s: not salvaged: its dest '%.200s' is not <absolute jobdir>/step<S>/"
		    "{rank<N>,launcher<N>,rank<N>.pid<P>}.gpr%s",
		    dir, said, said[0] == '/' || into ? "" : " (--into DIR puts it under DIR)");
	/* cut a half-written chunk off before appending */
	snprintf(path, sizeof(path), "%s/rank.gpr", dir);
	gp_rf_writer_t *w = gp_rf_reopen(path, err, sizeof(err));
	if (!w)
		return gp_err("%s", err);
	snprintf(path, sizeof(path), "%s/ring", dir);
	long moved = 0;
	if (gp_ring_attach(&ring, path) == 0) {
		char ld[4200];
		/* no process recorded into the task's ring, its launcher's ranks did: the task
		 * is a launcher (as the agent names it, agent.c) */
		if ((nprocs < 0 || (nprocs && !atomic_load(&ring.hdr->generations))) &&
		    !strstr(dest, "/launcher") && gp_spool_launcher_dest(dest, ld, sizeof(ld)) == 0)
			snprintf(dest, sizeof(dest), "%s", ld);
		moved = gp_ring_drain(&ring, w, true, &lost);
		/* running totals: the report keeps the largest of each cause, so an agent
		 * that wrote its own before dying is not counted twice */
		gp_ring_write_losses(&ring, w, NULL);
		gp_ring_detach(&ring);
	}
	if (gp_rf_writer_close(w, true) < 0)
		return gp_err_errno("%s/rank.gpr", dir);
	snprintf(path, sizeof(path), "%s/rank.gpr", dir);
	if (gp_spool_publish(path, dest, 0600, 0700) < 0)
		return gp_err_errno("publish %s", dest);
	if (verbose)
		gp_info("salvaged %s -> %s (%ld records from the ring, %llu lost)", dir, dest,
		        moved, (unsigned long long)lost);
	gp_spool_entry_remove(dir);
	return 0;
}

/* The job entries (prefix) of one user spool, root/name: salvaged, counted. */
static int salvage_udir(const char *root, const char *name, const char *prefix, const char *into,
                        bool verbose, int *failed)
{
	char udir[4096], path[4200];
	struct dirent *de;
	int n = 0;
	if (gp_path_join(udir, sizeof(udir), root, name) < 0)
		return 0;
	DIR *d = opendir(udir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", udir, de->d_name);
		int rc = gp_spool_salvage(path, into, verbose);
		if (rc == 0)
			n++;
		else if (rc < 0 && failed) /* not a live agent's: that one is not salvaged yet */
			++*failed;
	}
	closedir(d);
	return n;
}

int gp_spool_salvage_all(const char *root, const char *job, const char *into, bool verbose,
                         int *failed)
{
	char name[300], prefix[64];
	int n = 0, rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	snprintf(prefix, sizeof(prefix), job ? "job%s." : "job", job ? job : "");
	/* every user spool gp_spool_userdir may have taken: the ten names, then the
	 * unpredictable ones, each only where it is ours (a planted one is another user's) */
	for (int i = 0; i < USER_NAMES; i++) {
		user_name(name, sizeof(name), i);
		if (dir_ours(rfd, name))
			n += salvage_udir(root, name, prefix, into, verbose, failed);
	}
	int fd = dup(rfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (random_name(de->d_name) && dir_ours(rfd, de->d_name)) {
			snprintf(name, sizeof(name), "%s", de->d_name);
			n += salvage_udir(root, name, prefix, into, verbose, failed);
		}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	close(rfd);
	return n;
}
