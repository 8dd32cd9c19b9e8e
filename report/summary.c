/* Per-rank summaries (rankR.gps beside rankR.gpr): one rank's analysis as the job report
 * merges it, so a job of 10 000 ranks is reported from small files computed where and
 * when each rank ended (`gpuprof summarize`, run by the agent at capture end), not by
 * re-reading every event. A summary is a cache: it is used only when it was written by
 * this version of gpuprof for the rank file as it is now (the identity of the bytes its
 * analysis read: device, inode, size, modification time, a checksum of its ends), in the
 * default step detection, and its checksum holds; otherwise the rank file
 * is read and the summary written again where the directory allows.
 *
 * Layout (little-endian, as the machine writes it; the rank file's own byte order):
 *   "GPSUM\0v8" | gpuprof version (32 bytes) | sizes of gp_rank_t, gp_kstat_t, gp_rstat_t
 *   | the rank file's ends' CRC-32C, size, mtime (ns), device and inode | nstep, nk, nr | the job
 * id and task count its header gave | the number of sections, then each section of
 * gp_rank_t (rank.h) in the order of sum_sections: its name (length byte, bytes), its size
 * (4 bytes) and its bytes, pointers zeroed | the rank's text (text.h: every gp_text_t of
 * gp_rank_t, in the order of sum_texts): their number (2 bytes), then each one's length (2
 * bytes) and bytes | owners flag (1 byte) and, when 1, 3 x
 * GP_OWNERS gp_owner_t | nstep doubles, nstep step numbers | nk kernels (name length, name,
 * comm, calls, total, min, max, GP_KRANGES launching ranges: length, name, ns, the sum of
 * squared durations (double), the duration histogram's non-empty buckets: their number (2
 * bytes) then (bucket 2 bytes, count 4 bytes) each) | nr ranges (name
 * length, name, count, cpu, gpu, sync, count over the whole run) | the operation table
 * (optable.c: rows, ranks, XLA ranks, native ranks, kernels with no launch site, then each row's
 * name, calls, kernels, GPU ns) | CRC-32C of everything before it. A section whose name or size
 * differs from this gpuprof's makes the summary stale (it is a cache: the rank file is read
 * instead), and the table is checked to cover every byte of gp_rank_t but padding
 * (tests/unit/t_summary.c), so a section added to the rank and not here fails a test rather than a
 * report. */
#include "config.h"
#include "analyze.h"
#include "log.h"
#include "rankdata.h"
#include "summary.h"
#include "crc32c.h"
#include "env.h"
#include "path.h"
#include "settings.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC    "GPSUM\0v8"
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
	uint32_t sz_rank, sz_k, sz_r, ends_crc;
	uint64_t size, mtime_ns, dev, ino;
} sum_key_t;

/* A summary's key: this gpuprof and a rank file's identity (rankfile.h: device, inode,
 * size, mtime, a checksum of its ends). Written with the identity of the bytes the
 * analysis read, not of the file at the path when the summary is written: a rank file
 * replaced while it was read (the agent's SIGTERM snapshot, then salvage's whole file
 * after SIGKILL) made a summary of the snapshot that the epilog's report took for the
 * whole file (3 372 of 5 487 steps). */
static void make_key(const gp_rf_ident_t *id, sum_key_t *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->version, sizeof(k->version), "%s", PACKAGE_VERSION);
	k->sz_rank = sizeof(gp_rank_t);
	k->sz_k = sizeof(gp_kstat_t);
	k->sz_r = sizeof(gp_rstat_t);
	k->ends_crc = id->ends_crc;
	k->size = id->size;
	k->mtime_ns = id->mtime_ns;
	k->dev = id->dev;
	k->ino = id->ino;
}

/* The key of the rank file at gpr as it is now (its mode too, for the summary's). */
static int rank_key(const char *gpr, uid_t owner, sum_key_t *k, mode_t *mode)
{
	struct stat st;
	gp_rf_ident_t id;
	/* a regular file, never through a link nor a FIFO or device: root must not open, let
	 * alone read, what a user's rank0.gpr -> /root/secret names */
	int fd = gp_open_regular(AT_FDCWD, gpr, (uid_t)-1, &st);
	if (fd < 0 || !gp_job_file_ok(st.st_uid, owner) || gp_rf_ident_fd(fd, &id) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (mode)
		*mode = st.st_mode;
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
	for (unsigned i = 0; i < nk; i++) {
		uint16_t l = (uint16_t)strnlen(k[i].name, 65535);
		uint8_t comm = k[i].comm;
		uint64_t v[4] = {k[i].calls, k[i].total, k[i].min, k[i].max};
		fwrite(&l, 2, 1, m);
		fwrite(k[i].name, 1, l, m);
		fwrite(&comm, 1, 1, m);
		fwrite(v, sizeof(v), 1, m);
		for (unsigned j = 0; j < GP_KRANGES; j++) {
			const char *rn = k[i].in[j].name ? k[i].in[j].name : "";
			uint16_t rl = (uint16_t)strnlen(rn, 65535);
			fwrite(&rl, 2, 1, m);
			fwrite(rn, 1, rl, m);
			fwrite(&k[i].in[j].ns, 8, 1, m);
		}
		uint16_t nb = 0;
		fwrite(&k[i].sumsq, sizeof(double), 1, m);
		for (unsigned j = 0; j < k[i].hn; j++)
			nb += k[i].hist[j] != 0;
		fwrite(&nb, 2, 1, m);
		for (unsigned j = 0; j < k[i].hn; j++)
			if (k[i].hist[j]) {
				uint16_t b = (uint16_t)(k[i].hlo + j);
				fwrite(&b, 2, 1, m);
				fwrite(&k[i].hist[j], 4, 1, m);
			}
	}
	for (unsigned i = 0; i < nr; i++) {
		uint16_t l = (uint16_t)strnlen(rs[i].name, 65535);
		uint64_t v[5] = {rs[i].count, rs[i].cpu_ns, rs[i].gpu_ns, rs[i].sync_ns,
		                 rs[i].count_all};
		fwrite(&l, 2, 1, m);
		fwrite(rs[i].name, 1, l, m);
		fwrite(v, sizeof(v), 1, m);
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

static char *get_name(rd_t *r)
{
	uint16_t l = 0;
	get(r, &l, 2);
	char *s = r->bad ? NULL : malloc((size_t)l + 1);
	if (!s) {
		r->bad = true;
		return NULL;
	}
	get(r, s, l);
	s[l] = '\0';
	return s;
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

/* A kernel's histogram: its non-empty buckets (number, then bucket and count each), in
 * one allocation from the first to the last. */
static void get_hist(rd_t *r, gp_kstat_t *k)
{
	uint16_t nb = 0, at[GP_KHIST];
	uint32_t cnt[GP_KHIST];
	get(r, &nb, 2);
	if (nb > GP_KHIST)
		r->bad = true;
	for (unsigned b = 0; !r->bad && b < nb; b++) {
		get(r, &at[b], 2);
		get(r, &cnt[b], 4);
		r->bad |= at[b] >= GP_KHIST;
	}
	if (r->bad || !nb)
		return;
	unsigned lo = at[0], hi = at[0];
	for (unsigned b = 1; b < nb; b++)
		lo = at[b] < lo ? at[b] : lo, hi = at[b] > hi ? at[b] : hi;
	r->bad |= !gp_kstat_hist_add(k, lo, 0) || !gp_kstat_hist_add(k, hi, 0);
	for (unsigned b = 0; !r->bad && b < nb; b++)
		gp_kstat_hist_add(k, at[b], cnt[b]);
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

int gp_summary_read(const char *gpr, uid_t owner, gp_rank_t *out, gp_rank_tables_t *one)
{
	char path[4200];
	sum_key_t want, have;
	struct stat st;
	if (sum_path(gpr, path, sizeof(path)) < 0 || rank_key(gpr, owner, &want, NULL) < 0)
		return -1;
	/* only a summary this user (or root) wrote: another user's could say anything; a
	 * FIFO in its place must not hang the report (it was opened blocking) */
	int fd = gp_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0)
		return -1;
	if (st.st_size < 16 || (uint64_t)st.st_size > MAXBYTES) {
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
	 * GP_STEP_KEEP samples at most, a kernel's record takes 75 bytes or more, a
	 * range's 42 (no allocation larger than the file is made for them) */
	if (r.bad || memcmp(&have, &want, sizeof(have)) || n3[0] > GP_STEP_KEEP ||
	    (uint64_t)n3[1] * 75 + (uint64_t)n3[2] * 42 > n) {
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
	one->k = calloc(n3[1] ? n3[1] : 1, sizeof(gp_kstat_t));
	one->r = calloc(n3[2] ? n3[2] : 1, sizeof(gp_rstat_t));
	if (!one->k || !one->r)
		r.bad = true;
	for (unsigned i = 0; !r.bad && i < n3[1]; i++) {
		gp_kstat_t *k = &one->k[one->nk++];
		uint8_t comm = 0;
		uint64_t v[4];
		k->name = get_name(&r);
		get(&r, &comm, 1);
		get(&r, v, sizeof(v));
		k->comm = comm != 0;
		k->calls = v[0], k->total = v[1], k->min = v[2], k->max = v[3];
		for (unsigned j = 0; j < GP_KRANGES; j++) {
			k->in[j].name = get_name(&r);
			get(&r, &k->in[j].ns, 8);
			if (k->in[j].name && !k->in[j].name[0]) { /* none */
				free(k->in[j].name);
				k->in[j].name = NULL;
			}
		}
		get(&r, &k->sumsq, sizeof(double));
		get_hist(&r, k);
	}
	for (unsigned i = 0; !r.bad && i < n3[2]; i++) {
		gp_rstat_t *s = &one->r[one->nr++];
		uint64_t v[5];
		s->name = get_name(&r);
		get(&r, v, sizeof(v));
		s->count = v[0], s->cpu_ns = v[1], s->gpu_ns = v[2], s->sync_ns = v[3];
		s->count_all = v[4];
	}
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
