/* Rank file writer and reader (format in rankfile.h and doc/format.md).
 * Records: type byte, presence mask byte, then the non-zero fields as LEB128 varints.
 * ts (all types) and c (correlation ids of activity types) are zigzag deltas against the
 * previous record of the same type; kernels then cost about 9 raw bytes before zstd. */
#include "config.h"
#include "rankfile.h"
#include "crc32c.h"
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define CHUNK_HDR 24

/* Types whose field c is a monotonic-ish correlation id worth delta coding. */
static const uint8_t delta_c[GP_EV_MAX] = {
    [GP_EV_KERNEL] = 1, [GP_EV_MEMCPY] = 1, [GP_EV_MEMSET] = 1, [GP_EV_SYNC] = 1,
    [GP_EV_API] = 1,    [GP_EV_ALLOC] = 1,  [GP_EV_FREE] = 1,
};

static const char *const type_names[GP_EV_MAX] = {
    "none",      "string",    "nvtx_push", "nvtx_pop", "nvtx_start", "nvtx_end",   "nvtx_mark",
    "thread",    "kernel",    "memcpy",    "memset",   "sync",       "api",        "alloc",
    "free",      "stack",     "frame",     "nvml",     "drops",      "end",        "stream_name",
    "yield",     "gpu",       "profiler",  "start",    "signal",     "control",    "nvml_io",
    "gpu_fault", "overhead",  "step_mark", "loss",     "fw",         "nvtx_range", "clock",
    "cuda_init", "gpu_procs",
};

const char *gp_ev_type_name(unsigned type)
{
	return type < GP_EV_MAX ? type_names[type] : "unknown";
}

static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t get_varint(const uint8_t *p, size_t len, uint64_t *v)
{
	uint64_t r = 0;
	for (size_t i = 0; i < len && i < 10; i++) {
		r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

static inline uint64_t zz(uint64_t now, uint64_t prev)
{
	int64_t d = (int64_t)(now - prev);
	return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static inline uint64_t unzz(uint64_t v, uint64_t prev)
{
	int64_t d = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return prev + (uint64_t)d;
}

size_t gp_rf_encode(gp_rf_delta_t *st, const gp_event_t *ev, uint8_t *out)
{
	unsigned t = ev->type < GP_EV_MAX ? ev->type : 0;
	uint64_t f[8];
	uint8_t mask = 0;
	size_t n = 2;

	f[0] = ev->u8;
	f[1] = ev->u16;
	f[2] = ev->tid;
	f[3] = zz(ev->ts, st->ts[t]);
	f[4] = ev->a;
	f[5] = ev->b;
	f[6] = delta_c[t] ? zz(ev->c, st->c[t]) : ev->c;
	f[7] = ev->d;
	st->ts[t] = ev->ts;
	if (delta_c[t])
		st->c[t] = ev->c;
	for (int i = 0; i < 8; i++) {
		if (!f[i])
			continue;
		mask |= (uint8_t)(1u << i);
		n += put_varint(out + n, f[i]);
	}
	out[0] = ev->type;
	out[1] = mask;
	return n;
}

size_t gp_rf_decode(gp_rf_delta_t *st, const uint8_t *in, size_t len, gp_event_t *ev)
{
	uint64_t f[8] = {0};
	size_t n = 2;
	unsigned t;
	if (len < 2 || in[0] >= GP_EV_MAX)
		return 0;
	t = in[0];
	for (int i = 0; i < 8; i++) {
		if (!(in[1] & (1u << i)))
			continue;
		size_t k = get_varint(in + n, len - n, &f[i]);
		if (!k)
			return 0;
		n += k;
	}
	if (f[0] > 0xff || f[1] > 0xffff || f[2] > 0xffffffffu)
		return 0;
	ev->type = (uint8_t)t;
	ev->u8 = (uint8_t)f[0];
	ev->u16 = (uint16_t)f[1];
	ev->tid = (uint32_t)f[2];
	ev->ts = unzz(f[3], st->ts[t]);
	ev->a = f[4];
	ev->b = f[5];
	ev->c = delta_c[t] ? unzz(f[6], st->c[t]) : f[6];
	ev->d = f[7];
	st->ts[t] = ev->ts;
	if (delta_c[t])
		st->c[t] = ev->c;
	return n;
}

/* ---- writer ---- */

struct gp_rf_writer {
	int fd;
	uint8_t *raw;
	size_t rawlen;
	uint32_t nrec;
	uint8_t *cbuf;
	size_t cbuflen;
	gp_rf_delta_t delta;
	uint64_t bytes, max_bytes, dropped, records;
	uint64_t unwritten; /* records of chunks whose write failed (a full spool) */
	ZSTD_CCtx *zc;
	gp_rf_observe_fn observe;
	void *observe_ctx;
};

int gp_rf_hdr_add(char *buf, size_t len, const char *key, const char *value)
{
	size_t off = strnlen(buf, len);
	int n = snprintf(buf + off, len - off, "%s=", key);
	if (n < 0 || (size_t)n >= len - off)
		return -1;
	off += (size_t)n;
	for (const char *p = value ? value : ""; *p; p++) {
		if (off + 2 >= len)
			return -1;
		buf[off++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
	}
	buf[off++] = '\n';
	buf[off] = '\0';
	return 0;
}

static gp_rf_writer_t *writer_new(int fd, uint64_t max_bytes)
{
	gp_rf_writer_t *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = fd;
	w->max_bytes = max_bytes;
	w->raw = malloc(GP_RF_CHUNK_RAW_MAX + GP_RF_REC_MAX);
	w->cbuflen = ZSTD_compressBound(GP_RF_CHUNK_RAW_MAX + GP_RF_REC_MAX) + CHUNK_HDR;
	w->cbuf = malloc(w->cbuflen);
	w->zc = ZSTD_createCCtx();
	if (!w->raw || !w->cbuf || !w->zc) {
		free(w->raw);
		free(w->cbuf);
		ZSTD_freeCCtx(w->zc);
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

gp_rf_writer_t *gp_rf_writer_create(int fd, const char *hdr_text, uint64_t max_bytes)
{
	uint8_t fixed[20];
	uint32_t len = (uint32_t)strlen(hdr_text), v = GP_RF_VERSION, crc;
	gp_rf_writer_t *w;
	if (len > GP_RF_HDR_MAX)
		return errno = E2BIG, NULL;
	w = writer_new(fd, max_bytes);
	if (!w)
		return NULL;
	crc = gp_crc32c(0, hdr_text, len);
	memcpy(fixed, GP_RF_MAGIC, 8);
	memcpy(fixed + 8, &v, 4);
	memcpy(fixed + 12, &len, 4);
	memcpy(fixed + 16, &crc, 4);
	if (gp_write_all(fd, fixed, 20) < 0 || gp_write_all(fd, hdr_text, len) < 0) {
		int e = errno;
		gp_rf_writer_close(w, false);
		errno = e;
		return NULL;
	}
	w->bytes = 20 + len;
	return w;
}

gp_rf_writer_t *gp_rf_writer_resume(int fd, uint64_t max_bytes)
{
	off_t end = lseek(fd, 0, SEEK_END);
	gp_rf_writer_t *w;
	if (end < 0)
		return NULL;
	w = writer_new(fd, max_bytes);
	if (w)
		w->bytes = (uint64_t)end;
	return w;
}

int gp_rf_flush(gp_rf_writer_t *w)
{
	uint32_t h[6];
	size_t clen;
	if (!w || w->nrec == 0)
		return 0;
	clen = ZSTD_compressCCtx(w->zc, w->cbuf + CHUNK_HDR, w->cbuflen - CHUNK_HDR, w->raw,
	                         w->rawlen, 3);
	if (ZSTD_isError(clen))
		return errno = EIO, -1;
	h[0] = GP_RF_CHUNK_MAGIC;
	h[1] = (uint32_t)clen;
	h[2] = (uint32_t)w->rawlen;
	h[3] = w->nrec;
	h[4] = gp_crc32c(0, w->cbuf + CHUNK_HDR, clen);
	h[5] = gp_crc32c(0, h, 20);
	memcpy(w->cbuf, h, CHUNK_HDR);
	uint32_t nrec = w->nrec;
	w->rawlen = 0;
	w->nrec = 0;
	memset(&w->delta, 0, sizeof(w->delta));
	if (gp_write_all(w->fd, w->cbuf, clen + CHUNK_HDR) < 0) {
		/* the chunk is gone (a torn one the reader drops): its records stay counted
		 * as pending, never written; they went uncounted (112 355 of 600 000 on a full
		 * spool, and the report said complete) */
		w->unwritten += nrec;
		return -1;
	}
	w->bytes += clen + CHUNK_HDR;
	return 0;
}

void gp_rf_writer_observe(gp_rf_writer_t *w, gp_rf_observe_fn fn, void *ctx)
{
	w->observe = fn;
	w->observe_ctx = ctx;
}

int gp_rf_append(gp_rf_writer_t *w, const gp_event_t *ev)
{
	if (w->observe)
		w->observe(w->observe_ctx, ev);
	/* The cap counts raw bytes too, so a chunk in the making cannot overshoot it. */
	if (w->max_bytes && w->bytes + w->rawlen >= w->max_bytes && ev->type != GP_EV_END &&
	    ev->type != GP_EV_DROPS && ev->type != GP_EV_LOSS) {
		w->dropped++;
		return 0;
	}
	w->rawlen += gp_rf_encode(&w->delta, ev, w->raw + w->rawlen);
	w->nrec++;
	w->records++;
	if (w->rawlen >= GP_RF_CHUNK_RAW_MAX)
		return gp_rf_flush(w);
	return 0;
}

int gp_rf_append_string(gp_rf_writer_t *w, uint32_t id, const char *s)
{
	size_t len = strnlen(s, GP_STRING_MAX), off = 0;
	do {
		gp_event_t e = {.type = GP_EV_STRING, .tid = id, .u16 = (uint16_t)off};
		size_t k = len - off > GP_STRING_CHUNK ? GP_STRING_CHUNK : len - off;
		e.u8 = (uint8_t)k;
		memcpy(&e.a, s + off, k);
		if (gp_rf_append(w, &e) < 0)
			return -1;
		off += k;
	} while (off < len);
	return 0;
}

int gp_rf_fsync(gp_rf_writer_t *w)
{
	if (gp_rf_flush(w) < 0)
		return -1;
	return fsync(w->fd);
}

uint64_t gp_rf_bytes(const gp_rf_writer_t *w)
{
	return w->bytes + w->rawlen;
}

uint64_t gp_rf_dropped(const gp_rf_writer_t *w)
{
	return w->dropped;
}

uint64_t gp_rf_pending(const gp_rf_writer_t *w)
{
	return w->nrec + w->unwritten;
}

uint64_t gp_rf_records(const gp_rf_writer_t *w)
{
	return w->records;
}

int gp_rf_writer_close(gp_rf_writer_t *w, bool do_fsync)
{
	int rc = 0;
	if (!w)
		return 0;
	int saved = errno;
	if (gp_rf_flush(w) < 0)
		rc = -1;
	if (do_fsync && fsync(w->fd) < 0)
		rc = -1;
	if (w->fd >= 0 && close(w->fd) < 0)
		rc = -1;
	free(w->raw);
	free(w->cbuf);
	ZSTD_freeCCtx(w->zc);
	free(w);
	if (rc == 0)
		errno = saved;
	return rc;
}

/* ---- reader ---- */

/* The reader reads through pread into a window of the file, not through a mapping: a
 * file cut shorter while it is read (a writer's ftruncate, an admin's `truncate`) would
 * have killed a mapping's reader with SIGBUS, root reading a user's job included. A
 * short read ends the file there, as a truncated tail. */
#define WINDOW (1u << 20)

struct gp_rf_reader {
	int fd;
	size_t size; /* the file's size when opened (less once it is seen shorter) */
	uint8_t *win;
	size_t win_off, win_len, win_cap;
	size_t off; /* next chunk header */
	char *hdr;
	uint8_t *raw;
	size_t rawcap, rawlen, rawoff;
	uint32_t left; /* records left in current chunk */
	gp_rf_delta_t delta;
	ZSTD_DCtx *zd;
	gp_rf_stats_t st;
	gp_rf_ident_t id;
	bool changed;          /* the file was seen shorter, or another size or mtime, while read */
	unsigned resync_false; /* headers valid but not their chunks, while resynchronising */
};

/* The largest payload a writer makes (writer_new's cbuf): a chunk claiming more is not
 * one, and the window never grows past it. */
static size_t chunk_max(void)
{
	return ZSTD_compressBound(GP_RF_CHUNK_RAW_MAX + GP_RF_REC_MAX);
}

/* len bytes of the file at off, or NULL past its end. */
static const uint8_t *at(gp_rf_reader_t *r, size_t off, size_t len)
{
	if (off > r->size || len > r->size - off)
		return NULL;
	if (off >= r->win_off && off + len <= r->win_off + r->win_len)
		return r->win + (off - r->win_off);
	size_t want = len > WINDOW ? len : WINDOW;
	if (want > r->size - off)
		want = r->size - off;
	if (want > r->win_cap) {
		uint8_t *n = realloc(r->win, want);
		if (!n)
			return NULL;
		r->win = n;
		r->win_cap = want;
	}
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(r->fd, r->win + got, want - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	r->win_off = off;
	r->win_len = got;
	if (got < want) { /* shorter than it was: it ends here now */
		r->size = off + got;
		r->changed = true;
	}
	return got >= len ? r->win : NULL;
}

int gp_rf_ident_fd(int fd, gp_rf_ident_t *id)
{
	struct stat st;
	memset(id, 0, sizeof(*id));
	if (fstat(fd, &st) < 0)
		return -1;
	gp_rf_ident_stat(&st, id);
	return 0;
}

void gp_rf_ident_stat(const struct stat *st, gp_rf_ident_t *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
	id->ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec;
}

int gp_rf_open(const char *path, gp_rf_reader_t **out, char *err, size_t errlen)
{
	return gp_rf_open_owned(path, (uid_t)-1, out, err, errlen);
}

int gp_rf_open_owned(const char *path, uid_t owner, gp_rf_reader_t **out, char *err, size_t errlen)
{
	struct stat sb;
	uint32_t ver, len, crc;
	const uint8_t *p;
	gp_rf_reader_t *r;
	/* O_NONBLOCK: a FIFO named rank5.gpr must not hang the report; O_NOFOLLOW: a rank
	 * file is never a link (one planted in a job directory would have root's report
	 * read another user's file) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (!gp_job_file_ok(sb.st_uid, owner)) {
		snprintf(err, errlen,
		         "%s: owned by uid %u, not by the job directory's owner (uid %u): not read "
		         "as root",
		         path, (unsigned)sb.st_uid, (unsigned)owner);
		close(fd);
		return -1;
	}
	if (sb.st_size < 20) {
		snprintf(err, errlen, "%s: not a gpuprof rank file (too short)", path);
		close(fd);
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	r->fd = fd;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	/* what is read is what the identity describes: taken before the first byte */
	if (gp_rf_ident_fd(fd, &r->id) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	r->size = (size_t)r->id.size;
	if (!(p = at(r, 0, 20))) {
		snprintf(err, errlen, "%s: not a gpuprof rank file (too short)", path);
		goto fail;
	}
	memcpy(&ver, p + 8, 4);
	memcpy(&len, p + 12, 4);
	memcpy(&crc, p + 16, 4);
	if (memcmp(p, GP_RF_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a gpuprof rank file (bad magic)", path);
		goto fail;
	}
	if (ver < GP_RF_VERSION_MIN || ver > GP_RF_VERSION) {
		snprintf(err, errlen, "%s: rank file version %u, this gpuprof reads %u to %u", path,
		         ver, GP_RF_VERSION_MIN, GP_RF_VERSION);
		goto fail;
	}
	if (len > GP_RF_HDR_MAX || !(p = at(r, 20, len)) || gp_crc32c(0, p, len) != crc) {
		snprintf(err, errlen, "%s: corrupt header", path);
		goto fail;
	}
	r->hdr = malloc(len + 1);
	r->zd = ZSTD_createDCtx();
	if (!r->hdr || !r->zd) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	memcpy(r->hdr, p, len);
	r->hdr[len] = '\0';
	r->off = 20 + len;
	r->st.valid_end = r->off;
	*out = r;
	return 0;
fail:
	gp_rf_close(r);
	return -1;
}

const char *gp_rf_header_text(const gp_rf_reader_t *r)
{
	return r->hdr;
}

const char *gp_rf_header(const gp_rf_reader_t *r, const char *key)
{
	/* Returns a pointer into a per-reader static slot: copy before the next call. */
	static __thread char val[1024];
	size_t klen = strlen(key);
	for (const char *p = r->hdr; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l > klen && p[klen] == '=' && !strncmp(p, key, klen)) {
			size_t vl = l - klen - 1;
			if (vl >= sizeof(val))
				vl = sizeof(val) - 1;
			memcpy(val, p + klen + 1, vl);
			val[vl] = '\0';
			return val;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* The chunk at off: its header in h; its payload (*payload) when valid. */
static bool chunk_valid(gp_rf_reader_t *r, size_t off, uint32_t h[6], bool *truncated,
                        const uint8_t **payload)
{
	const uint8_t *p;
	*truncated = false;
	if (!(p = at(r, off, CHUNK_HDR))) {
		*truncated = true;
		return false;
	}
	memcpy(h, p, CHUNK_HDR);
	if (h[0] != GP_RF_CHUNK_MAGIC || gp_crc32c(0, h, 20) != h[5])
		return false;
	if (h[2] > GP_RF_CHUNK_RAW_MAX + GP_RF_REC_MAX || h[1] > chunk_max())
		return false;
	if (!(p = at(r, off, CHUNK_HDR + (size_t)h[1]))) {
		*truncated = true;
		return false;
	}
	*payload = p + CHUNK_HDR;
	return gp_crc32c(0, *payload, h[1]) == h[4];
}

/* Chunk headers that pass their own CRC but not their payload's that one file may make
 * the reader try while resynchronising: each costs a CRC over up to chunk_max() bytes
 * and a window read, so a file of such headers every 24 bytes was hours of root's time.
 * A file torn by a crash or a bad disk has a few. */
#define RESYNC_FALSE_MAX 256

/* The offset of the next valid chunk at or after from, or r->size (with the rest
 * counted as dropped, when the file made too many false starts). Holes are skipped
 * (SEEK_DATA: a sparse file's gigabytes of nothing hold no chunk and are not read); the
 * magic is searched a window at a time, each candidate's header CRC checked in the
 * window before anything else is read. Byte by byte, a rank file with a 20 GB hole took
 * the report 95 s of CPU; re-reading the window after each false magic was quadratic. */
static size_t resync(gp_rf_reader_t *r, size_t from, uint32_t *h, bool *trunc,
                     const uint8_t **payload)
{
	const uint32_t mv = GP_RF_CHUNK_MAGIC;
	uint8_t magic[4];
	memcpy(magic, &mv, 4);
	size_t o = from;
	while (o + CHUNK_HDR <= r->size) {
		off_t d = lseek(r->fd, (off_t)o, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			return r->size; /* a hole to the end */
		if (d > (off_t)o)
			o = (size_t)d;
		if (o + CHUNK_HDR > r->size)
			break;
		size_t len = r->size - o < WINDOW ? r->size - o : WINDOW;
		const uint8_t *w = at(r, o, len), *m;
		if (!w)
			break;
		size_t i = 0, next = o + len - 3; /* a magic across the end: the next window */
		while ((m = i + 4 <= len ? memmem(w + i, len - i, magic, 4) : NULL)) {
			size_t k = (size_t)(m - w);
			uint32_t hh[6];
			if (k + CHUNK_HDR > len) {
				next = o + k; /* its header across the end: the next window */
				break;
			}
			memcpy(hh, m, CHUNK_HDR);
			if (gp_crc32c(0, hh, 20) != hh[5]) {
				i = k + 1; /* not a header: the next in this window */
				continue;
			}
			if (chunk_valid(r, o + k, h, trunc, payload))
				return o + k;
			if (++r->resync_false > RESYNC_FALSE_MAX) {
				r->st.truncated = true;
				r->st.truncated_offset = o + k;
				return r->size;
			}
			next = o + k + 1; /* chunk_valid may have moved the window */
			break;
		}
		o = next;
	}
	return r->size;
}

/* Load the next valid chunk; 0 at end. */
static int load_chunk(gp_rf_reader_t *r)
{
	uint32_t h[6] = {0};
	const uint8_t *payload = NULL;
	bool trunc;
	while (r->off < r->size) {
		if (!chunk_valid(r, r->off, h, &trunc, &payload)) {
			if (trunc && (h[0] == GP_RF_CHUNK_MAGIC || r->off + CHUNK_HDR > r->size)) {
				/* a header whose payload runs past the end (a crash mid-write), or
				 * not even a header's worth left */
				r->st.truncated = true;
				r->st.truncated_offset = r->off;
				r->off = r->size;
				return 0;
			}
			if (!r->st.corrupt_chunks++)
				r->st.first_corrupt_offset = r->off;
			/* resynchronise on the next plausible chunk header */
			r->off = resync(r, r->off + 1, h, &trunc, &payload);
			continue;
		}
		if (h[2] > r->rawcap) {
			uint8_t *n = realloc(r->raw, h[2]);
			if (!n)
				return -1;
			r->raw = n;
			r->rawcap = h[2];
		}
		size_t got = ZSTD_decompressDCtx(r->zd, r->raw, r->rawcap, payload, h[1]);
		size_t this_off = r->off;
		r->off += CHUNK_HDR + h[1];
		if (ZSTD_isError(got) || got != h[2]) {
			if (!r->st.corrupt_chunks++)
				r->st.first_corrupt_offset = this_off;
			continue;
		}
		r->rawlen = got;
		r->st.valid_end = r->off;
		r->rawoff = 0;
		r->left = h[3];
		memset(&r->delta, 0, sizeof(r->delta));
		r->st.chunks++;
		return 1;
	}
	return 0;
}

int gp_rf_next(gp_rf_reader_t *r, gp_event_t *ev)
{
	for (;;) {
		if (r->left && r->rawoff < r->rawlen) {
			size_t n =
			    gp_rf_decode(&r->delta, r->raw + r->rawoff, r->rawlen - r->rawoff, ev);
			if (n) {
				r->rawoff += n;
				r->left--;
				r->st.records++;
				if (ev->type == GP_EV_END)
					r->st.end_seen = true;
				return 1;
			}
			/* malformed record: the chunk passed its CRC, so this is a bug or a
			 * newer writer; skip the rest of the chunk */
			r->st.corrupt_chunks++;
			r->left = 0;
		}
		int rc = load_chunk(r);
		if (rc <= 0)
			return rc;
	}
}

const gp_rf_stats_t *gp_rf_stats(const gp_rf_reader_t *r)
{
	return &r->st;
}

const gp_rf_ident_t *gp_rf_ident(gp_rf_reader_t *r)
{
	gp_rf_ident_t now;
	/* a file that changed while it was read (appended to, cut, rewritten in place) is
	 * not the one its identity describes: then none */
	if (r->changed || gp_rf_ident_fd(r->fd, &now) < 0 || now.size != r->id.size ||
	    now.mtime_ns != r->id.mtime_ns || now.ctime_ns != r->id.ctime_ns)
		return NULL;
	return &r->id;
}

void gp_rf_close(gp_rf_reader_t *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->win);
	free(r->hdr);
	free(r->raw);
	ZSTD_freeDCtx(r->zd);
	free(r);
}

gp_rf_writer_t *gp_rf_reopen(const char *path, char *err, size_t errlen)
{
	gp_rf_reader_t *r;
	gp_event_t ev;
	if (gp_rf_open(path, &r, err, errlen) < 0)
		return NULL;
	while (gp_rf_next(r, &ev) == 1)
		;
	uint64_t end = gp_rf_stats(r)->valid_end;
	gp_rf_close(r);
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || ftruncate(fd, (off_t)end) < 0 || lseek(fd, (off_t)end, SEEK_SET) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	gp_rf_writer_t *w = gp_rf_writer_resume(fd, 0);
	if (!w) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return w;
}
