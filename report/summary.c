/* Per-rank summaries (rankR.gps beside rankR.gpr): one rank's analysis as the job report
 * merges it, so a job of 10 000 ranks is reported from small files computed where and
 * when each rank ended (`gpuprof summarize`, run by the agent at capture end), not by
 * re-reading every event. A summary is a cache: it is used only when it was written by
 * this version of gpuprof for the rank file as it is now (the identity of the bytes its
 * analysis read: device, inode, size, modification and status-change times), in the
 * default step detection, and its checksum holds (this version: PACKAGE_VERSION and a
 * checksum of the analysis's sources, so a rebuild of other code under the same version
 * reads the rank file again); otherwise the rank file
 * is read and the summary written again where the directory allows.
 *
 * Layout (little-endian, as the machine writes it; the rank file's own byte order):
 *   "GPSUMv10" | gpuprof version (32 bytes) | sizes of gp_rank_t, gp_kstat_t, gp_rstat_t, 0
 *   | the rank file's size, mtime (ns), ctime (ns), device and inode | nstep, nk, nr | the job
 * id and task count its header gave | the number of sections, then each section of
 * gp_rank_t (rank.h) in the order of sum_sections: its name (length byte, bytes), its size
 * (4 bytes) and its bytes, pointers zeroed | the rank's text (text.h: every gp_text_t of
 * gp_rank_t, in the order of sum_texts): their number (2 bytes), then each one's length (2
 * bytes) and bytes | owners flag (1 byte) and, when 1, 3 x
 * GP_OWNERS gp_owner_t | nstep doubles, nstep step numbers | the kernel and range tables
 * (put_tables: the names they use, once each, then nk kernels and nr ranges that name
 * them by index, each kernel's histogram aligned where it is read in place) | the
 * operation table (optable.c: rows, ranks, XLA ranks, native ranks, kernels with no
 * launch site, then each row's name, calls, kernels, GPU ns) | CRC-32C of everything
 * before it. v9: the key held a CRC-32C of the rank file's first and last 4 KiB instead of
 * its ctime; v8: no launch sites; v7: names and sparse histograms inline.
 * A section whose name or size differs from this gpuprof's makes the summary stale (it is a
 * cache: the rank file is read instead), and the table is checked to cover every byte of
 * gp_rank_t but padding (tests/unit/t_summary.c), so a section added to the rank and not
 * here fails a test rather than a report. */
#include "config.h"
#include "analysis_id.h"
#include "analyze.h"
#include "log.h"
#include "rankdata.h"
#include "summary.h"
#include "crc32c.h"
#include "env.h"
#include "path.h"
#include "settings.h"
#include "strhash.h"
#include "vec.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAGIC    "GPSUMv10"   /* v9 and before: "GPSUM\0vN" */
#define MAXBYTES (256u << 20) /* a summary larger than this is not one */

#define SECTION(name, m)                                                                           \
	{                                                                                          \
		name, offsetof(gp_rank_t, m), sizeof(((gp_rank_t *)0)->m)                          \
	}
static const gp_sum_section_t sum_sections[] = {
    SECTION("id", id),           SECTION("outcome", outcome),
    SECTION("steps", steps),     SECTION("capture", capture),
    SECTION("own_cost", own),    SECTION("startup", startup),
    SECTION("gpu", gpu),         SECTION("sync", sync),
    SECTION("memory", memory),   SECTION("pool", pool),
    SECTION("pytorch", torch),   SECTION("io", io),
    SECTION("faults", faults),   SECTION("overhead", overhead),
    SECTION("processes", procs), SECTION("quality", quality),
    SECTION("ts", ts),           SECTION("shares", shares)};
#define NSECTIONS (sizeof(sum_sections) / sizeof(sum_sections[0]))

/* Where gp_rank_t holds text (text.h): written as strings, never as the pointers they are.
 * A gp_text_t added to the rank is added here (tests/unit/t_summary.c sets every one). */
#define TXT(m)     (offsetof(gp_rank_t, m) + 0 * sizeof(((gp_rank_t *)0)->m.s))
#define TXT6(a, f) TXT(a[0].f), TXT(a[1].f), TXT(a[2].f), TXT(a[3].f), TXT(a[4].f), TXT(a[5].f)
#define TXT8(a, f) TXT6(a, f), TXT(a[6].f), TXT(a[7].f)
static const size_t sum_texts[] = {
    TXT(id.node),
    TXT(id.command),
    TXT(id.job_name),
    TXT(steps.how),
    TXT6(startup.top, name),
    TXT(gpu.fp32_gemm_top),
    TXT(sync.range),
    TXT(memory.peak_stack),
    TXT(memory.peak_ranges),
    TXT(memory.leak_stack),
    TXT8(memory.owners, module),
    TXT(pool.what),
    TXT(torch.info),
    TXT(torch.missing),
    TXT8(torch.opt, what),
    TXT(torch.snap_peak),
    TXT(torch.snap_oom),
    TXT(torch.snap_exit),
    TXT(io.nvml_limits),
    TXT8(procs.p, command),
    TXT(quality.yielded),
};
#define NTEXTS   (sizeof(sum_texts) / sizeof(sum_texts[0]))
#define COUNT(m) (sizeof(((gp_rank_t *)0)->m) / sizeof(((gp_rank_t *)0)->m[0]))
_Static_assert(COUNT(startup.top) == 6 && COUNT(memory.owners) == 8 && COUNT(torch.opt) == 8 &&
                   COUNT(procs.p) == 8,
               "sum_texts lists every element of the rank's arrays of text");

const size_t *gp_summary_texts(size_t *n)
{
	*n = NTEXTS;
	return sum_texts;
}

static gp_text_t *text_at(gp_rank_t *r, size_t i)
{
	return (gp_text_t *)(void *)((char *)r + sum_texts[i]);
}

/* The rank's text as strings (length, bytes) */
static void put_texts(FILE *m, const gp_rank_t *r)
{
	uint16_t n = NTEXTS;
	fwrite(&n, 2, 1, m);
	for (size_t i = 0; i < NTEXTS; i++) {
		const char *s =
		    gp_txt(*(const gp_text_t *)(const void *)((const char *)r + sum_texts[i]));
		uint16_t l = (uint16_t)strnlen(s, 65535);
		fwrite(&l, 2, 1, m);
		fwrite(s, 1, l, m);
	}
}

const gp_sum_section_t *gp_summary_sections(size_t *n)
{
	*n = NSECTIONS;
	return sum_sections;
}

/* "dir/rankR.gpr" -> "dir/rankR.gps" */
static int sum_path(const char *gpr, char *out, size_t len)
{
	size_t n = strlen(gpr);
	if (n < 4 || strcmp(gpr + n - 4, ".gpr") || n + 1 > len)
		return -1;
	memcpy(out, gpr, n + 1);
	out[n - 1] = 's';
	return 0;
}

typedef struct key {
	char version[32];
	uint32_t sz_rank, sz_k, sz_r, pad;
	uint64_t size, mtime_ns, ctime_ns, dev, ino;
} sum_key_t;

/* A summary's key: this gpuprof and a rank file's identity (rankfile.h: device, inode,
 * size, mtime, ctime). Written with the identity of the bytes the analysis read, not of
 * the file at the path when the summary is written: a rank file replaced while it was
 * read (the agent's SIGTERM snapshot, then salvage's whole file after SIGKILL) made a
 * summary of the snapshot that the epilog's report took for the whole file (3 372 of
 * 5 487 steps). */
static void make_key(const gp_rf_ident_t *id, sum_key_t *k)
{
	memset(k, 0, sizeof(*k));
	/* the version and the analysis's own sources (analysis_id.h, Makefile.am): a build of
	 * the same version from other sources is another analysis */
	snprintf(k->version, sizeof(k->version), "%s+%s", PACKAGE_VERSION, GP_ANALYSIS_ID);
	k->sz_rank = sizeof(gp_rank_t);
	k->sz_k = sizeof(gp_kstat_t);
	k->sz_r = sizeof(gp_rstat_t);
	k->size = id->size;
	k->mtime_ns = id->mtime_ns;
	k->ctime_ns = id->ctime_ns;
	k->dev = 0; /* NFS and Lustre clients number a filesystem each their own way: a summary
	             * made on a node would never match on another; the inode is the server's */
	k->ino = id->ino;
}

/* The key of the rank file at gpr as it is now (its mode too, for the summary's), from
 * its status alone: nothing of it is opened or read. A file put in its place is another
 * inode, or the same one with a new ctime (a copy over it, `cp -p`, rsync --inplace, tar:
 * each sets the kernel's ctime, which utimensat cannot set back), and one that grew or
 * was cut has another size. Reading its first and last 4 KiB for a checksum instead (v9)
 * was 16 % of a report from summaries (perf, 10 240 ranks: open, fstat, fcntl, two preads,
 * close); what that checksum saw and this does not is a rewrite to the same size within
 * the timestamp tick of the summary's own reading (a jiffy; none where the kernel gives
 * fine-grained ctimes to files whose times were read, Linux >= 6.13), which no writer of
 * rank files does: they append, or write another file and rename it into place. */
/* path's status as its filesystem's server has it now: NFS answers a stat from the
 * client's attribute cache (seconds to a minute old: a rank file salvaged into place on
 * another node would keep the old file's key); statx's FORCE_SYNC asks the server, and
 * changes nothing on a local filesystem. Never through a link. */
static int stat_now(const char *path, struct stat *st)
{
	struct statx sx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, STATX_BASIC_STATS,
	          &sx) < 0)
		return errno == ENOSYS ? fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) : -1;
	memset(st, 0, sizeof(*st));
	st->st_mode = sx.stx_mode;
	st->st_uid = sx.stx_uid;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	st->st_ino = (ino_t)sx.stx_ino;
	st->st_size = (off_t)sx.stx_size;
	st->st_mtim = (struct timespec){sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec};
	st->st_ctim = (struct timespec){sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
	return 0;
}

static int rank_key(const char *gpr, uid_t owner, sum_key_t *k, mode_t *mode)
{
	struct stat st;
	gp_rf_ident_t id;
	/* a regular file, never through a link: its status, never what a link names */
	if (stat_now(gpr, &st) < 0 || !S_ISREG(st.st_mode) || !gp_job_file_ok(st.st_uid, owner))
		return -1;
	if (mode)
		*mode = st.st_mode;
	gp_rf_ident_stat(&st, &id);
	make_key(&id, k);
	return 0;
}

/* Measured (bench/synth-job, 512 ranks, one thread): rank files of 200 events (2.5 KiB)
 * 0.14 s against 0.08 s from their summaries (20 KiB each), 2 000 events (13 KiB)
 * 0.34 s against 0.09 s, 10 000 events (60 KiB) 1.98 s against 0.12 s. */
bool gp_summary_wanted(const char *gpr)
{
	struct stat st;
	return lstat(gpr, &st) == 0 && S_ISREG(st.st_mode) &&
	       (long long)st.st_size >= gp_setting_long(GP_ENV_SUMMARY_MIN);
}

/* The kernel and range tables (v8). Every name they use is written once, in a list (a
 * rank's ~100 kernels name four launching ranges each: 500 strings that were read,
 * allocated and freed one by one per rank), and each record names its entries by index
 * (NO_NAME: none). A kernel's histogram is written as it is held, its buckets from the
 * first to the last non-empty one, at an offset aligned for uint32_t: the reader points
 * at the names and counts where they are in the summary's bytes (gp_rank_tables_t's
 * arena) instead of copying them. At 10 240 ranks, get_hist alone was 23 % of the
 * report's CPU (perf). Layout: u32 names, each (u16 length, bytes, NUL); per kernel
 * u32 name, u8 comm, u64 calls/total/min/max, GP_KRANGES x (u32 range, u64 ns), f64
 * sum of squares, u16 first bucket, u16 buckets, zeros to a multiple of 4, u32 counts;
 * per range u32 name, u64 count/cpu/gpu/sync/count over the run. */
#define NO_NAME UINT32_MAX
#define KREC    (4 + 1 + 32 + GP_KRANGES * 12 + 8 + 4) /* a kernel's bytes, at least */
#define RREC    (4 + 40)                               /* a range's */

typedef struct name_list {
	const char **v;
	uint32_t n, cap;
	u64map_t idx; /* hash -> index + 1 of the first name with it */
} name_list_t;

/* s's index in the list, added if new; NO_NAME for NULL, "" or no memory. */
static uint32_t name_id(name_list_t *l, const char *s)
{
	if (!s || !s[0])
		return NO_NAME;
	uint64_t h = gp_strhash(s, strlen(s)) | 1, at = 0;
	if (u64map_get(&l->idx, h, &at) && !strcmp(l->v[at - 1], s))
		return (uint32_t)(at - 1);
	for (uint32_t i = 0; at && i < l->n; i++) /* two names, one hash */
		if (!strcmp(l->v[i], s))
			return i;
	if (l->n == l->cap) {
		uint32_t nc = l->cap ? l->cap * 2 : 256;
		const char **nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return NO_NAME;
		l->v = nv, l->cap = nc;
	}
	l->v[l->n] = s;
	if (!at)
		u64map_put(&l->idx, h, l->n + 1);
	return l->n++;
}

static void put_u32(FILE *m, uint32_t v)
{
	fwrite(&v, 4, 1, m);
}

static void put_kernel(FILE *m, name_list_t *l, const gp_kstat_t *k)
{
	static const char zeros[4];
	uint8_t comm = k->comm;
	uint64_t v[4] = {k->calls, k->total, k->min, k->max};
	unsigned lo = 0, hi = k->hn; /* the non-empty buckets' extent [lo, hi) */
	while (lo < hi && !k->hist[lo])
		lo++;
	while (hi > lo && !k->hist[hi - 1])
		hi--;
	uint16_t h[2] = {(uint16_t)(k->hlo + lo), (uint16_t)(hi - lo)};
	put_u32(m, name_id(l, k->name));
	fwrite(&comm, 1, 1, m);
	fwrite(v, sizeof(v), 1, m);
	for (unsigned j = 0; j < GP_KRANGES; j++) {
		put_u32(m, name_id(l, k->in[j].name));
		fwrite(&k->in[j].ns, 8, 1, m);
	}
	fwrite(&k->sumsq, sizeof(double), 1, m);
	fwrite(h, sizeof(h), 1, m);
	long at = ftell(m);
	fwrite(zeros, 1, at < 0 ? 0 : (size_t)(-at & 3), m);
	if (h[1])
		fwrite(k->hist + lo, sizeof(uint32_t), h[1], m);
}

static int put_tables(FILE *m, const gp_kstat_t *k, unsigned nk, const gp_rstat_t *rs, unsigned nr)
{
	name_list_t l = {0};
	char *body = NULL;
	size_t blen = 0;
	/* the records first (into their own buffer), so that the list they name comes first */
	FILE *b = open_memstream(&body, &blen);
	if (!b)
		return -1;
	for (unsigned i = 0; i < nk; i++)
		put_kernel(b, &l, &k[i]);
	for (unsigned i = 0; i < nr; i++) {
		uint64_t v[5] = {rs[i].count, rs[i].cpu_ns, rs[i].gpu_ns, rs[i].sync_ns,
		                 rs[i].count_all};
		put_u32(b, name_id(&l, rs[i].name));
		fwrite(v, sizeof(v), 1, b);
	}
	int rc = fclose(b) == 0 ? 0 : -1;
	put_u32(m, l.n);
	for (uint32_t i = 0; i < l.n; i++) {
		uint16_t len = (uint16_t)strnlen(l.v[i], 65535);
		fwrite(&len, 2, 1, m);
		fwrite(l.v[i], 1, len, m);
		fputc('\0', m);
	}
	/* the records' histograms were aligned as if they began at a multiple of 4 */
	long at = ftell(m);
	static const char zeros[4];
	fwrite(zeros, 1, at < 0 ? 0 : (size_t)(-at & 3), m);
	if (rc == 0 && body)
		fwrite(body, 1, blen, m);
	free(body);
	free(l.v);
	u64map_free(&l.idx);
	return rc;
}

int gp_summary_write(const char *gpr, const gp_rank_t *r, const gp_rank_tables_t *one)
{
	const gp_kstat_t *k = one->k;
	const gp_rstat_t *rs = one->r;
	unsigned nk = one->nk, nr = one->nr;
	char path[4200], *buf = NULL;
	size_t len = 0;
	sum_key_t key, now;
	mode_t mode;
	if (sum_path(gpr, path, sizeof(path)) < 0 || rank_key(gpr, (uid_t)-1, &now, &mode) < 0)
		return -1;
	/* what was read, or no summary: one of a file that changed under its reader, or of
	 * another file than the one now at gpr, would be stale on arrival */
	if (!one->src_ok)
		return errno = ESTALE, -1;
	make_key(&one->src, &key);
	if (memcmp(&key, &now, sizeof(key)))
		return errno = ESTALE, -1;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -1;
	gp_rank_t copy = *r;
	copy.id.path = NULL;
	copy.steps.ms = NULL;
	copy.steps.no = NULL;
	copy.steps.q = NULL;
	copy.torch.own = NULL;
	for (size_t i = 0; i < NTEXTS; i++) /* written as strings after the sections */
		text_at(&copy, i)->s = NULL;
	uint8_t has_own = r->torch.own != NULL;
	uint32_t n3[3] = {r->steps.nms, nk, nr};
	fwrite(MAGIC, 1, 8, m);
	fwrite(&key, sizeof(key), 1, m);
	fwrite(n3, sizeof(n3), 1, m);
	fwrite(one->job, sizeof(one->job), 1, m); /* what the rank's header says of its job */
	fwrite(&one->ntasks_expected, sizeof(one->ntasks_expected), 1, m);
	uint8_t nsec = NSECTIONS;
	fwrite(&nsec, 1, 1, m);
	for (size_t i = 0; i < NSECTIONS; i++) {
		const gp_sum_section_t *sec = &sum_sections[i];
		uint8_t l = (uint8_t)strlen(sec->name);
		uint32_t size = (uint32_t)sec->size;
		fwrite(&l, 1, 1, m);
		fwrite(sec->name, 1, l, m);
		fwrite(&size, 4, 1, m);
		fwrite((const char *)&copy + sec->off, 1, sec->size, m);
	}
	put_texts(m, r);
	fwrite(&has_own, 1, 1, m);
	if (has_own)
		fwrite(r->torch.own, sizeof(gp_owner_t), 3 * GP_OWNERS, m);
	if (r->steps.nms) {
		fwrite(r->steps.ms, sizeof(double), r->steps.nms, m);
		for (unsigned i = 0; i < r->steps.nms; i++) {
			unsigned no = gp_step_no(r, i);
			fwrite(&no, sizeof(no), 1, m);
		}
	}
	if (r->steps.nq) /* the count is in the steps' section */
		fwrite(r->steps.q, sizeof(double), r->steps.nq, m);
	if (put_tables(m, k, nk, rs, nr) < 0) {
		fclose(m);
		free(buf);
		return -1;
	}
	gp_otab_write(m, &one->ops);
	if (fflush(m) != 0) {
		fclose(m);
		free(buf);
		return -1;
	}
	uint32_t crc = gp_crc32c(0, buf, len);
	fwrite(&crc, 4, 1, m);
	if (fclose(m) != 0) {
		free(buf);
		return -1;
	}
	/* beside the rank file, as readable as it is, written whole or not at all */
	char dir[4200];
	const char *slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat ds;
	/* root never writes into a directory someone else owns (an admin reading a job) */
	if (dfd >= 0 && geteuid() == 0 && (fstat(dfd, &ds) < 0 || ds.st_uid != 0)) {
		close(dfd);
		free(buf);
		return errno = EPERM, -1;
	}
	/* not fsynced: a summary torn by a crash of the node fails its checksum and is
	 * made again from the rank file */
	int rc =
	    dfd < 0 ? -1
	            : gp_write_file_at(dfd, slash ? slash + 1 : path, buf, len, mode & 0640, false);
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return rc;
}

/* a bounded reader over the summary's bytes */
typedef struct rd {
	const unsigned char *p, *end;
	bool bad;
} rd_t;

static void get(rd_t *r, void *dst, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p, n);
	r->p += n;
}

/* A record read from a file is text the report prints and counts it loops on: every
 * string ends inside its array, every count within its array (defence in depth: only
 * the reader's own or root's summaries are read at all). */
#define TERM(a) ((a)[sizeof(a) - 1] = '\0')
/* a bool is 0 or 1, read as its byte (any other value loaded as a bool is undefined) */
#define BOOL01(b)   (*(unsigned char *)&(b) = *(unsigned char *)&(b) != 0)
#define CLAMP(n, a) ((n) = (n) > sizeof(a) / sizeof((a)[0]) ? sizeof(a) / sizeof((a)[0]) : (n))
static void sanitize(gp_rank_t *r)
{
	/* text (text.h) ends where it was read: get_texts */
	TERM(r->id.step), TERM(r->quality.wrapped), TERM(r->id.user), TERM(r->id.modes);
	TERM(r->steps.name), TERM(r->steps.source), TERM(r->steps.basis);
	TERM(r->memory.peak_stack_source), TERM(r->memory.optimizer_source);
	CLAMP(r->memory.nowners, r->memory.owners);
	CLAMP(r->startup.ntop, r->startup.top);
	CLAMP(r->procs.n, r->procs.p);
	TERM(r->id.gpu_uuid), TERM(r->id.gpu_name);
	BOOL01(r->outcome.has_end), BOOL01(r->outcome.status_unknown);
	BOOL01(r->outcome.agent_end), BOOL01(r->outcome.status_from_node);
	BOOL01(r->quality.truncated), BOOL01(r->quality.nvtx_cuda_tids_unrelated);
	BOOL01(r->quality.lost_any), BOOL01(r->pool.seen), BOOL01(r->torch.seen);
	BOOL01(r->torch.grow_stale), BOOL01(r->torch.oom), BOOL01(r->steps.gpu_from_markers);
	BOOL01(r->capture.window), BOOL01(r->memory.peak_ranges_other_thread);
	for (unsigned i = 0; i < sizeof(r->startup.top) / sizeof(r->startup.top[0]); i++)
		BOOL01(r->startup.top[i].kernel);
	for (unsigned i = 0; i < GP_PROCS; i++)
		BOOL01(r->procs.p[i].trainer), BOOL01(r->procs.p[i].has_end),
		    BOOL01(r->procs.p[i].status_unknown);
	struct gp_torch *t = &r->torch;
	CLAMP(t->nopt, t->opt);
	unsigned most = t->own ? GP_OWNERS : 0;
	t->nowner = t->nowner > most ? most : t->nowner;
	t->noom_owner = t->noom_owner > most ? most : t->noom_owner;
	t->ngrow_owner = t->ngrow_owner > most ? most : t->ngrow_owner;
	for (unsigned i = 0; t->own && i < 3 * GP_OWNERS; i++)
		TERM(t->own[i].stack);
}

/* Each section of this gpuprof's, named and sized as it is here; -1: stale or not one. */
static int get_sections(rd_t *r, gp_rank_t *out)
{
	uint8_t nsec = 0;
	get(r, &nsec, 1);
	if (r->bad || nsec != NSECTIONS)
		return -1;
	for (size_t i = 0; i < NSECTIONS; i++) {
		const gp_sum_section_t *sec = &sum_sections[i];
		uint8_t l = 0;
		char name[256];
		uint32_t size = 0;
		get(r, &l, 1);
		get(r, name, l);
		get(r, &size, 4);
		if (r->bad || l != strlen(sec->name) || memcmp(name, sec->name, l) ||
		    size != sec->size)
			return -1;
		get(r, (char *)out + sec->off, sec->size);
	}
	return r->bad ? -1 : 0;
}

/* The rank's text (put_texts); what the sections held there is no pointer of ours. */
static int get_texts(rd_t *r, gp_rank_t *out)
{
	uint16_t n = 0;
	for (size_t i = 0; i < NTEXTS; i++)
		text_at(out, i)->s = NULL;
	get(r, &n, 2);
	if (r->bad || n != NTEXTS)
		return -1;
	for (size_t i = 0; i < NTEXTS && !r->bad; i++) {
		uint16_t l = 0;
		get(r, &l, 2);
		if (r->bad || (size_t)(r->end - r->p) < l)
			return r->bad = true, -1;
		gp_text_setn(text_at(out, i), (const char *)r->p, l);
		r->p += l;
	}
	return r->bad ? -1 : 0;
}

/* Skip the zeros that align the next bytes for uint32_t (put_kernel, put_tables). */
static void get_align(rd_t *r, const unsigned char *base)
{
	size_t pad = -(size_t)(r->p - base) & 3;
	if ((size_t)(r->end - r->p) < pad)
		r->bad = true;
	else
		r->p += pad;
}

/* A name of the list by index: NULL for NO_NAME when none may be, else bad. */
static char *name_at(rd_t *r, char *const *names, uint32_t nn, uint32_t id, bool none_ok)
{
	if (id < nn)
		return names[id];
	r->bad |= !(none_ok && id == NO_NAME);
	return NULL;
}

/* One kernel (put_kernel); its name and histogram point into base's bytes. */
static void get_kernel(rd_t *r, unsigned char *base, char *const *names, uint32_t nn, gp_kstat_t *k)
{
	uint32_t id = NO_NAME;
	uint8_t comm = 0;
	uint64_t v[4];
	uint16_t h[2];
	get(r, &id, 4);
	k->name = name_at(r, names, nn, id, false);
	get(r, &comm, 1);
	get(r, v, sizeof(v));
	k->comm = comm != 0;
	k->calls = v[0], k->total = v[1], k->min = v[2], k->max = v[3];
	for (unsigned j = 0; j < GP_KRANGES; j++) {
		get(r, &id, 4);
		k->in[j].name = name_at(r, names, nn, id, true);
		get(r, &k->in[j].ns, 8);
	}
	get(r, &k->sumsq, sizeof(double));
	get(r, h, sizeof(h));
	get_align(r, base);
	if (r->bad || (unsigned)h[0] + h[1] > GP_KHIST ||
	    (size_t)(r->end - r->p) < (size_t)h[1] * sizeof(uint32_t)) {
		r->bad = true;
		return;
	}
	if (h[1]) {
		k->hist = (uint32_t *)(void *)(base + (r->p - base));
		k->hlo = h[0], k->hn = h[1];
		r->p += (size_t)h[1] * sizeof(uint32_t);
	}
}

/* The tables (put_tables) out of the summary's bytes base, which t keeps (t->arena). */
static int get_tables(rd_t *r, unsigned char *base, uint32_t nk, uint32_t nr, gp_rank_tables_t *t)
{
	uint32_t nn = 0;
	get(r, &nn, 4);
	/* a name takes 3 bytes or more: no list longer than the bytes left */
	if (r->bad || (uint64_t)nn * 3 > (uint64_t)(r->end - r->p))
		return -1;
	char **names = malloc((nn ? nn : 1) * sizeof(*names));
	t->k = calloc(nk ? nk : 1, sizeof(gp_kstat_t));
	t->r = calloc(nr ? nr : 1, sizeof(gp_rstat_t));
	r->bad |= !names || !t->k || !t->r;
	for (uint32_t i = 0; !r->bad && i < nn; i++) {
		uint16_t l = 0;
		get(r, &l, 2);
		if (r->bad || (size_t)(r->end - r->p) < (size_t)l + 1 || r->p[l]) {
			r->bad = true;
			break;
		}
		names[i] = (char *)base + (r->p - base);
		r->p += (size_t)l + 1;
	}
	get_align(r, base);
	for (uint32_t i = 0; !r->bad && i < nk; i++)
		get_kernel(r, base, names, nn, &t->k[t->nk++]);
	for (uint32_t i = 0; !r->bad && i < nr; i++) {
		gp_rstat_t *s = &t->r[t->nr++];
		uint32_t id = NO_NAME;
		uint64_t v[5];
		get(r, &id, 4);
		s->name = name_at(r, names, nn, id, false);
		get(r, v, sizeof(v));
		s->count = v[0], s->cpu_ns = v[1], s->gpu_ns = v[2], s->sync_ns = v[3];
		s->count_all = v[4];
	}
	free(names);
	return r->bad ? -1 : 0;
}

int gp_summary_read(const char *gpr, uid_t owner, gp_rank_t *out, gp_rank_tables_t *one)
{
	char path[4200];
	sum_key_t want, have;
	struct stat st;
	if (sum_path(gpr, path, sizeof(path)) < 0 || rank_key(gpr, owner, &want, NULL) < 0)
		return -1;
	/* only a summary this user (or root) wrote: another user's could say anything; a
	 * FIFO in its place must not hang the report (opened O_NONBLOCK, and left so: a
	 * regular file's read ignores it, and a short read is a summary refused, the rank
	 * file read instead; gp_open_regular's two fcntl calls to clear it were 2.6 % of a
	 * report from summaries) */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid && st.st_uid != geteuid()) ||
	    st.st_size < 16 || (uint64_t)st.st_size > MAXBYTES) {
		close(fd);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	unsigned char *buf = malloc(n);
	ssize_t got = buf ? read(fd, buf, n) : -1;
	close(fd);
	uint32_t crc;
	if (got != (ssize_t)n || memcmp(buf, MAGIC, 8)) {
		free(buf);
		return -1;
	}
	memcpy(&crc, buf + n - 4, 4);
	if (crc != gp_crc32c(0, buf, n - 4)) {
		free(buf);
		return -1;
	}
	rd_t r = {buf + 8, buf + n - 4, false};
	uint32_t n3[3];
	get(&r, &have, sizeof(have));
	get(&r, n3, sizeof(n3));
	/* stale (another version or rank file), or counts the file cannot hold: a rank keeps
	 * GP_STEP_KEEP samples at most, a kernel's record takes KREC bytes or more, a
	 * range's RREC (no allocation larger than the file is made for them) */
	if (r.bad || memcmp(&have, &want, sizeof(have)) || n3[0] > GP_STEP_KEEP ||
	    (uint64_t)n3[1] * KREC + (uint64_t)n3[2] * RREC > n) {
		free(buf);
		return -1;
	}
	memset(one, 0, sizeof(*one));
	get(&r, one->job, sizeof(one->job));
	one->job[sizeof(one->job) - 1] = '\0';
	get(&r, &one->ntasks_expected, sizeof(one->ntasks_expected));
	memset(out, 0, sizeof(*out));
	if (get_sections(&r, out) < 0) {
		free(buf);
		return -1;
	}
	out->id.path = NULL;
	out->steps.ms = NULL;
	out->steps.no = NULL;
	out->steps.q = NULL;
	out->torch.own = NULL;
	if (get_texts(&r, out) < 0) {
		free(buf);
		return -1;
	}
	uint8_t has_own = 0;
	get(&r, &has_own, 1);
	if (has_own && !r.bad) {
		if (!(out->torch.own = calloc(3 * GP_OWNERS, sizeof(gp_owner_t))))
			r.bad = true;
		else
			get(&r, out->torch.own, 3 * GP_OWNERS * sizeof(gp_owner_t));
	}
	if (n3[0]) {
		out->steps.ms = malloc(n3[0] * sizeof(double));
		out->steps.no = malloc(n3[0] * sizeof(unsigned));
		if (!out->steps.ms || !out->steps.no)
			r.bad = true;
		else {
			get(&r, out->steps.ms, n3[0] * sizeof(double));
			get(&r, out->steps.no, n3[0] * sizeof(unsigned));
		}
	}
	out->steps.nms = n3[0];
	if (out->steps.nq > GP_STEP_KEEP)
		r.bad = true, out->steps.nq = 0;
	else if (out->steps.nq && !r.bad) {
		if (!(out->steps.q = malloc(out->steps.nq * sizeof(double))))
			r.bad = true;
		else
			get(&r, out->steps.q, out->steps.nq * sizeof(double));
	}
	if (!r.bad) /* the tables' names and histograms stay in the summary's bytes */
		one->arena = buf, buf = NULL;
	if (!r.bad && get_tables(&r, one->arena, n3[1], n3[2], one) < 0)
		r.bad = true;
	if (!r.bad && gp_otab_read(&r.p, r.end, &one->ops) < 0)
		r.bad = true;
	free(buf);
	if (!r.bad && r.p == r.end && !(out->id.path = strdup(gpr))) /* where it is now */
		r.bad = true;
	if (r.bad || r.p != r.end) {
		gp_rank_release(out);
		gp_rank_tables_free(one);
		return -1;
	}
	sanitize(out);
	gp_rank_compact_steps(out);
	return 0;
}

int gp_rank_summarize(const char *gpr, char *err, size_t errlen)
{
	gp_rank_t r;
	gp_rank_tables_t t;
	rank_data_t rd;
	memset(&rd, 0, sizeof(rd));
	bool ok = gp_rank_analyse(gpr, NULL, &r, &t, &rd, err, errlen) == 0;
	gp_rd_free(&rd);
	int rc = -1;
	if (ok && (rc = gp_summary_write(gpr, &r, &t)) < 0 && errno == ESTALE) {
		/* replaced or changed while read: the report reads the file there now */
		gp_debug("%s changed while it was read; no summary of it", gpr);
		rc = 0;
	} else if (ok && rc < 0)
		snprintf(err, errlen, "%s: cannot write its summary: %s", gpr, strerror(errno));
	if (ok)
		gp_rank_release(&r);
	gp_rank_tables_free(&t);
	return rc;
}
