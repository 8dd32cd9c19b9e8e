/* Rank file: round trip, encoding size, truncated tail, corrupt chunk, byte cap. */
#include "config.h"
#include "rankfile.h"
#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A kernel stream shaped like a training loop: ~100 distinct kernels in a repeating
 * order, durations with jitter, gaps between launches, correlation ids with API calls
 * interleaved. The jitter comes from a hash so every call reproduces the same record. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static bool with_launch; /* kernels name their launch configuration (tid) */

static gp_event_t kernel(uint64_t i)
{
	gp_event_t e = {0};
	uint64_t h = mix(i + 1);
	e.type = GP_EV_KERNEL;
	e.ts = 1000000000ull + i * 9000 + (h % 4000);
	e.a = 1500 + (i % 97) * 50 + (h >> 20) % 700;
	e.b = 1 + i % 97;
	e.c = 100 + i * 3 + (h >> 40) % 2;
	e.d = 7 + ((h >> 50) % 4 == 0);
	e.u8 = 0;
	/* the collector's string id of the configuration: a slot of its 2^18-slot table (one
	 * configuration per kernel name here, as a training step has) */
	e.tid = with_launch ? (uint32_t)(mix(e.b) % (1u << 18)) + 1 : 0;
	return e;
}

static int write_file(const char *path, uint64_t n, uint64_t cap)
{
	char hdr[256] = "";
	gp_rf_hdr_add(hdr, sizeof(hdr), "job", "42");
	gp_rf_hdr_add(hdr, sizeof(hdr), "rank", "3");
	gp_rf_hdr_add(hdr, sizeof(hdr), "node", "n1\nevil=1");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gp_rf_writer_t *w = gp_rf_writer_create(fd, hdr, cap);
	if (!w)
		return -1;
	gp_event_t s = {.type = GP_EV_STRING, .tid = 1, .u8 = 5};
	memcpy(&s.a, "hello", 5);
	gp_rf_append(w, &s);
	for (uint64_t i = 0; i < n; i++) {
		gp_event_t e = kernel(i);
		gp_rf_append(w, &e);
	}
	gp_event_t end = {.type = GP_EV_END, .ts = 5, .a = 7 << 8};
	gp_rf_append(w, &end);
	return gp_rf_writer_close(w, true);
}

int main(void)
{
	char path[64], err[256];
	gp_rf_reader_t *r;
	gp_event_t ev;
	struct stat st;
	const uint64_t N = 200000;
	snprintf(path, sizeof(path), "/tmp/gp-t-rf.%d", (int)getpid());

	/* encode/decode of extreme values */
	gp_rf_delta_t d1 = {0}, d2 = {0};
	uint8_t buf[GP_RF_REC_MAX];
	gp_event_t x = {.type = GP_EV_ALLOC,
	                .u8 = 255,
	                .u16 = 65535,
	                .tid = 0xffffffffu,
	                .ts = ~0ull,
	                .a = ~0ull,
	                .b = 1,
	                .c = 0,
	                .d = ~0ull};
	size_t n = gp_rf_encode(&d1, &x, buf);
	ok(n <= GP_RF_REC_MAX, "encoded size %zu within bound", n);
	ok(gp_rf_decode(&d2, buf, n, &ev) == n && !memcmp(&ev, &x, sizeof(ev)),
	   "extreme record round trip");
	ok(gp_rf_decode(&d2, buf, n - 1, &ev) == 0, "short record rejected");
	buf[0] = 200;
	ok(gp_rf_decode(&d2, buf, n, &ev) == 0, "unknown type rejected");

	ok(write_file(path, N, 0) == 0, "write %llu kernels", (unsigned long long)N);
	stat(path, &st);
	double per = (double)st.st_size / (double)N;
	ok(per <= 16.0, "%.2f bytes per kernel event on disk (goal <= 16)", per);
	char path2[96];
	struct stat st2;
	snprintf(path2, sizeof(path2), "%s.launch", path);
	with_launch = true;
	int wrc = write_file(path2, N, 0);
	with_launch = false;
	double per2 = wrc == 0 && stat(path2, &st2) == 0 ? (double)st2.st_size / (double)N : 99;
	ok(per2 <= 16.0,
	   "%.2f bytes per kernel event with its launch configuration's id (%.2f without; goal <= "
	   "16)",
	   per2, per);
	unlink(path2);

	ok(gp_rf_open(path, &r, err, sizeof(err)) == 0, "open");
	is_str(gp_rf_header(r, "job"), "42", "header job");
	is_str(gp_rf_header(r, "node"), "n1 evil=1", "newline in header value neutralised");
	ok(gp_rf_header(r, "evil") == NULL, "no injected header key");
	uint64_t nk = 0, bad = 0;
	int saw_string = 0, saw_end = 0;
	while (gp_rf_next(r, &ev) == 1) {
		if (ev.type == GP_EV_KERNEL) {
			gp_event_t want = kernel(nk++);
			bad += memcmp(&ev, &want, sizeof(ev)) != 0;
		} else if (ev.type == GP_EV_STRING) {
			saw_string = ev.tid == 1 && ev.u8 == 5 && !memcmp(&ev.a, "hello", 5);
		} else if (ev.type == GP_EV_END) {
			saw_end = ev.a == 7 << 8;
		}
	}
	ok(nk == N && bad == 0, "all kernels read back exactly (%llu, %llu differ)",
	   (unsigned long long)nk, (unsigned long long)bad);
	ok(saw_string && saw_end, "string and end records");
	ok(gp_rf_stats(r)->end_seen && !gp_rf_stats(r)->truncated, "clean stats");
	uint64_t chunks = gp_rf_stats(r)->chunks;
	ok(chunks >= 2, "several chunks (%llu)", (unsigned long long)chunks);
	gp_rf_close(r);

	/* truncated tail: cut in the middle of the last chunk */
	ok(truncate(path, st.st_size - 10) == 0, "truncate");
	ok(gp_rf_open(path, &r, err, sizeof(err)) == 0, "open truncated");
	nk = 0;
	while (gp_rf_next(r, &ev) == 1)
		nk += ev.type == GP_EV_KERNEL;
	ok(gp_rf_stats(r)->truncated && nk > 0 && nk < N, "truncated tail dropped, %llu kept",
	   (unsigned long long)nk);
	ok(!gp_rf_stats(r)->end_seen, "no end record: incomplete");
	gp_rf_close(r);

	/* corrupt a byte in the first chunk's payload: that chunk is skipped, rest read */
	write_file(path, N, 0);
	int fd = open(path, O_RDWR);
	char c;
	const off_t chunk0 = 20 + 29;  /* fixed header + "job=42\nrank=3\nnode=n1 evil=1\n" */
	off_t off = chunk0 + 24 + 100; /* chunk header + some payload */
	ok(pread(fd, &c, 1, off) == 1, "read byte");
	c ^= 0x55;
	ok(pwrite(fd, &c, 1, off) == 1, "flip byte");
	close(fd);
	ok(gp_rf_open(path, &r, err, sizeof(err)) == 0, "open corrupt");
	nk = 0;
	while (gp_rf_next(r, &ev) == 1)
		nk += ev.type == GP_EV_KERNEL;
	const gp_rf_stats_t *s = gp_rf_stats(r);
	ok(s->corrupt_chunks == 1 && s->first_corrupt_offset == (uint64_t)chunk0,
	   "corrupt chunk named at %llu", (unsigned long long)s->first_corrupt_offset);
	ok(nk > 0 && nk < N && s->end_seen, "later chunks still read (%llu kernels)",
	   (unsigned long long)nk);
	gp_rf_close(r);

	/* byte cap: records past it are dropped and counted, END still written */
	write_file(path, N, 64 * 1024);
	stat(path, &st);
	ok(st.st_size <= 64 * 1024 + 4096, "cap respected (%lld bytes)", (long long)st.st_size);
	ok(gp_rf_open(path, &r, err, sizeof(err)) == 0, "open capped");
	while (gp_rf_next(r, &ev) == 1)
		;
	ok(gp_rf_stats(r)->end_seen, "END written past the cap");
	gp_rf_close(r);

	/* versions: 1 (before nvtx_range records) is read, one from a later gpuprof refused
	 * with both numbers; a range record comes back whole */
	write_file(path, 10, 0);
	uint32_t v;
	fd = open(path, O_RDWR);
	v = 1;
	ok(pwrite(fd, &v, 4, 8) == 4 && gp_rf_open(path, &r, err, sizeof(err)) == 0,
	   "a version-1 rank file is read");
	gp_rf_close(r);
	v = GP_RF_VERSION + 1;
	ok(pwrite(fd, &v, 4, 8) == 4 && gp_rf_open(path, &r, err, sizeof(err)) == -1 &&
	       strstr(err, "reads 1 to 2"),
	   "a later version is refused: %s", err);
	close(fd);
	{
		gp_rf_delta_t st0 = {0}, st1 = {0};
		uint8_t rb[128];
		gp_event_t in = {.type = GP_EV_NVTX_RANGE,
		                 .u16 = 3,
		                 .tid = 9,
		                 .ts = 1000000,
		                 .a = 5,
		                 .b = 25000,
		                 .c = 42,
		                 .d = 1ull << 63},
		           outev = {0};
		size_t rn = gp_rf_encode(&st0, &in, rb);
		ok(gp_rf_decode(&st1, rb, rn, &outev) == rn && !memcmp(&in, &outev, sizeof(in)),
		   "an nvtx_range record round-trips (%zu bytes)", rn);
	}

	/* not a rank file */
	fd = open(path, O_WRONLY | O_TRUNC);
	ok(write(fd, "hello world, this is not it", 27) == 27, "write junk");
	close(fd);
	ok(gp_rf_open(path, &r, err, sizeof(err)) == -1 && strstr(err, "bad magic"), "bad magic");
	unlink(path);
	return done_testing();
}
