/* Per-rank summaries (report/summary.c): the sections a summary holds cover every byte of
 * gp_rank_t but padding, and a rank written and read back is the same rank, its step
 * samples, PyTorch owners and tables included; a summary of another file, a torn one or a
 * corrupted one is refused, and so is one whose rank file was rewritten in place or
 * replaced with its size and mtime put back (the key is the file's status: its ctime). */
#include "config.h"
#include "rankfile.h"
#include "summary.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int cmp_off(const void *a, const void *b)
{
	const gp_sum_section_t *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void coverage(void)
{
	size_t n;
	const gp_sum_section_t *s0 = gp_summary_sections(&n);
	gp_sum_section_t s[64];
	ok(n > 0 && n <= 64, "%zu sections", n);
	memcpy(s, s0, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_off);
	size_t at = 0, worst = 0;
	const char *where = "";
	for (size_t i = 0; i < n; i++) {
		size_t gap = s[i].off >= at ? s[i].off - at : (size_t)-1;
		if (gap > worst)
			worst = gap, where = s[i].name;
		at = s[i].off + s[i].size;
	}
	size_t tail = sizeof(gp_rank_t) - at;
	/* padding is less than the largest alignment of a member */
	ok(worst < alignof(max_align_t) && tail < alignof(max_align_t),
	   "the sections cover gp_rank_t but padding (largest gap %zu before %s, %zu at the end)",
	   worst == (size_t)-1 ? 0 : worst, where, tail);
}

/* A rank whose every byte says something: a pattern, then values to check. */
static void fill(gp_rank_t *r, const char *gpr)
{
	unsigned char *p = (unsigned char *)r;
	for (size_t i = 0; i < sizeof(*r); i++)
		p[i] = (unsigned char)(i * 7 + 3);
	r->id.path = strdup(gpr);
	r->id.rank = 42;
	size_t nt;
	const size_t *tx = gp_summary_texts(&nt);
	for (size_t i = 0; i < nt; i++) /* every text a string of its own */
		gp_text_setf((gp_text_t *)(void *)((char *)r + tx[i]), 0, "text %zu", i);
	gp_text_set(&r->id.node, "node-a", GP_ID_NODE);
	snprintf(r->steps.name, sizeof(r->steps.name), "train_step");
	r->steps.median_ms = 12.5;
	r->steps.nms = 3;
	r->steps.ms = malloc(3 * sizeof(double));
	r->steps.ms[0] = 1, r->steps.ms[1] = 2, r->steps.ms[2] = 3;
	r->steps.no = NULL;
	r->steps.no0 = 5;
	r->steps.nq = 2; /* the steps as a distribution (steps.h: q) */
	r->steps.q = malloc(2 * sizeof(double));
	r->steps.q[0] = 1, r->steps.q[1] = 3;
	r->gpu.busy_ns = 123456789;
	r->memory.peak = 1ull << 30;
	r->memory.nowners = 2;
	r->ts.util[GP_TS - 1] = 0.75f;
	r->quality.loss[15] = 9;
	r->procs.n = 2;
	r->procs.p[1].pid = 777;
	r->torch.nopt = 1;
	r->torch.nowner = 1, r->torch.noom_owner = 0, r->torch.ngrow_owner = 1;
	r->torch.own = calloc(3 * GP_OWNERS, sizeof(gp_owner_t));
	snprintf(r->torch.own[0].stack, sizeof(r->torch.own[0].stack), "train.py:17 step");
	r->torch.own[0].bytes = 4096;
}

/* A summary of gpr as it is now (tb read from it, its identity taken now). */
static bool summarize_now(const char *gpr, const gp_rank_t *r, gp_rank_tables_t *tb)
{
	int fd = open(gpr, O_RDONLY);
	tb->src_ok = fd >= 0 && gp_rf_ident_fd(fd, &tb->src) == 0;
	if (fd >= 0)
		close(fd);
	return tb->src_ok && gp_summary_write(gpr, r, tb) == 0;
}

/* Until the file system's clock has passed path's ctime: a change made now gets another
 * (it moves in ticks of the kernel's coarse clock) */
static void next_tick(const char *path)
{
	struct stat st;
	struct timespec now, ms = {0, 1000000};
	if (stat(path, &st) < 0)
		return;
	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (now.tv_sec > st.st_ctim.tv_sec ||
		    (now.tv_sec == st.st_ctim.tv_sec && now.tv_nsec > st.st_ctim.tv_nsec))
			return;
		nanosleep(&ms, NULL);
	}
}

/* The rank file changed or replaced with what the old key checked (size, mtime) put back:
 * each time the summary is refused (the report then reads the rank file). */
static void replaced(const char *dir, const char *gpr, const gp_rank_t *r, gp_rank_tables_t *tb)
{
	gp_rank_t x;
	gp_rank_tables_t tx;
	struct stat st;
	char other[300], link2[300];
	ok(summarize_now(gpr, r, tb) && gp_summary_read(gpr, (uid_t)-1, &x, &tx) == 0,
	   "a summary of the rank file as it is now is read");
	gp_rank_release(&x);
	gp_rank_tables_free(&tx);

	/* in place: same inode, same size, another byte, its mtime set back */
	stat(gpr, &st);
	next_tick(gpr);
	int fd = open(gpr, O_WRONLY);
	bool rewrote = fd >= 0 && pwrite(fd, "y", 1, 100) == 1;
	struct timespec times[2] = {st.st_atim, st.st_mtim};
	rewrote &= futimens(fd, times) == 0;
	close(fd);
	struct stat now;
	stat(gpr, &now);
	ok(rewrote && now.st_ino == st.st_ino && now.st_size == st.st_size &&
	       now.st_mtim.tv_sec == st.st_mtim.tv_sec && now.st_mtim.tv_nsec == st.st_mtim.tv_nsec,
	   "the rank file rewritten in place, its inode, size and mtime as they were");
	ok(gp_summary_read(gpr, (uid_t)-1, &x, &tx) < 0,
	   "its summary is stale (the rewrite moved its ctime)");

	/* another file of the same size and mtime renamed into its place */
	ok(summarize_now(gpr, r, tb), "summarized again");
	stat(gpr, &st);
	snprintf(other, sizeof(other), "%s/other.gpr", dir);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char b[4100];
	memset(b, 'z', sizeof(b));
	bool put = fd >= 0 && write(fd, b, (size_t)st.st_size) == st.st_size;
	times[0] = st.st_atim, times[1] = st.st_mtim;
	put &= futimens(fd, times) == 0;
	close(fd);
	put &= rename(other, gpr) == 0;
	ok(put && gp_summary_read(gpr, (uid_t)-1, &x, &tx) < 0,
	   "a file of the same size and mtime renamed into its place: stale");

	/* a hard link made to it since (its ctime moves): stale, not wrong */
	ok(summarize_now(gpr, r, tb), "summarized again");
	next_tick(gpr);
	snprintf(link2, sizeof(link2), "%s/rank1.gpr", dir);
	ok(link(gpr, link2) == 0 && gp_summary_read(gpr, (uid_t)-1, &x, &tx) < 0,
	   "a hard link made to the rank file since: stale");
	unlink(link2);

	/* the rank file's name a symbolic link to a file the summary was of: never followed */
	ok(summarize_now(gpr, r, tb), "summarized again");
	snprintf(other, sizeof(other), "%s/real.gpr", dir);
	ok(rename(gpr, other) == 0 && symlink("real.gpr", gpr) == 0 &&
	       gp_summary_read(gpr, (uid_t)-1, &x, &tx) < 0,
	   "a link in the rank file's place is not followed");
	unlink(gpr);
	rename(other, gpr);
}

int main(void)
{
	coverage();

	char dir[] = "/tmp/gp-t-summary.XXXXXX", gpr[256], gps[256];
	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), done_testing();
	snprintf(gpr, sizeof(gpr), "%s/rank0.gpr", dir);
	snprintf(gps, sizeof(gps), "%s/rank0.gps", dir);
	int fd = open(gpr, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char bytes[4096];
	memset(bytes, 'x', sizeof(bytes));
	ok(fd >= 0 && write(fd, bytes, sizeof(bytes)) == (ssize_t)sizeof(bytes), "a rank file");
	close(fd);

	gp_rank_t r, back, again;
	gp_rank_tables_t t = {0}, tb, ta;
	fill(&r, gpr);
	t.nk = 2, t.nr = 1;
	t.k = calloc(2, sizeof(gp_kstat_t));
	t.r = calloc(1, sizeof(gp_rstat_t));
	t.k[0] = (gp_kstat_t){
	    .name = strdup("gemm"),
	    .calls = 10,
	    .total = 1000,
	    .min = 50,
	    .max = 200,
	    .in = {{strdup("fc1"), 800}, {strdup("fc2"), 100}},
	};
	t.k[1] = (gp_kstat_t){.name = strdup("ncclAllReduce"),
	                      .calls = 5,
	                      .total = 500,
	                      .min = 90,
	                      .max = 110,
	                      .comm = true};
	gp_kstat_hist_add(&t.k[0], 100, 7); /* two buckets far apart: one histogram of both */
	gp_kstat_hist_add(&t.k[0], 140, 3);
	t.r[0] = (gp_rstat_t){strdup("forward"), 10, 100, 80, 5, 12};
	snprintf(t.job, sizeof(t.job), "4242");
	t.ntasks_expected = 8;
	fd = open(gpr, O_RDONLY);
	t.src_ok = gp_rf_ident_fd(fd, &t.src) == 0;
	close(fd);

	ok(gp_summary_write(gpr, &r, &t) == 0, "written");
	ok(gp_summary_read(gpr, (uid_t)-1, &back, &tb) == 0, "read back");
	ok(back.id.rank == 42 && !strcmp(gp_txt(back.id.node), "node-a") &&
	       !strcmp(back.steps.name, "train_step") && back.steps.median_ms == 12.5 &&
	       back.gpu.busy_ns == 123456789 && back.memory.peak == 1ull << 30 &&
	       back.ts.util[GP_TS - 1] == 0.75f && back.quality.loss[15] == 9 &&
	       back.procs.p[1].pid == 777,
	   "figures of every section come back");
	ok(back.steps.nms == 3 && back.steps.ms[2] == 3 && gp_step_no(&back, 2) == 7 &&
	       !back.steps.no,
	   "step samples and their numbers (run on from 5: not kept)");
	ok(back.steps.nq == 2 && back.steps.q && back.steps.q[0] == 1 && back.steps.q[1] == 3,
	   "the steps' distribution (what gpuprof diff tests) comes back");
	ok(back.torch.own && !strcmp(back.torch.own[0].stack, "train.py:17 step") &&
	       back.torch.own[0].bytes == 4096,
	   "PyTorch's owners");
	ok(back.id.path && !strcmp(back.id.path, gpr), "the path is where the rank file is");
	size_t nt, right = 0;
	const size_t *tx = gp_summary_texts(&nt);
	for (size_t i = 0; i < nt; i++) {
		const gp_text_t *a = (const gp_text_t *)(const void *)((const char *)&r + tx[i]),
		                *b = (const gp_text_t *)(const void *)((const char *)&back + tx[i]);
		right += a->s && b->s && !strcmp(a->s, b->s);
	}
	ok(nt >= 47 && right == nt, "every text of the rank comes back as it was (%zu of %zu)",
	   right, nt);
	/* the pattern put bytes other than 0 and 1 into the bools: read as 0 or 1 */
	const unsigned char *bools[] = {(const unsigned char *)&back.outcome.has_end,
	                                (const unsigned char *)&back.torch.seen,
	                                (const unsigned char *)&back.capture.window,
	                                (const unsigned char *)&back.procs.p[3].trainer,
	                                (const unsigned char *)&back.startup.top[5].kernel};
	unsigned loose = 0;
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		loose += *bools[i] > 1;
	ok(!loose, "a bool is read as 0 or 1, whatever byte the file held (%u not)", loose);
	ok(tb.nk == 2 && !strcmp(tb.k[1].name, "ncclAllReduce") && tb.k[1].comm &&
	       tb.k[0].total == 1000 && tb.k[0].in[0].name && !strcmp(tb.k[0].in[0].name, "fc1") &&
	       tb.k[0].in[0].ns == 800 && tb.k[0].in[1].ns == 100 && !tb.k[0].in[2].name &&
	       !tb.k[1].in[0].name && tb.nr == 1 && tb.r[0].count_all == 12 &&
	       !strcmp(tb.job, "4242") && tb.ntasks_expected == 8,
	   "the kernel and range tables (a kernel's launching range), the job and its tasks");
	unsigned h100 = 0, h140 = 0, hall = 0;
	for (unsigned i = 0; tb.nk && i < tb.k[0].hn; i++) {
		hall += tb.k[0].hist[i];
		h100 += tb.k[0].hlo + i == 100 ? tb.k[0].hist[i] : 0;
		h140 += tb.k[0].hlo + i == 140 ? tb.k[0].hist[i] : 0;
	}
	ok(h100 == 7 && h140 == 3 && hall == 10 && !tb.k[1].hn,
	   "a kernel's duration histogram comes back bucket by bucket (%u, %u of %u)", h100, h140,
	   hall);
	/* what a write of what was read reads as: the same, byte for byte, section by section */
	tb.src = t.src, tb.src_ok = true;
	ok(gp_summary_write(gpr, &back, &tb) == 0 &&
	       gp_summary_read(gpr, (uid_t)-1, &again, &ta) == 0,
	   "written and read again");
	size_t n;
	const gp_sum_section_t *s = gp_summary_sections(&n);
	unsigned same = 0;
	gp_rank_t x = back, y = again;
	x.id.path = y.id.path = NULL, x.steps.ms = y.steps.ms = NULL;
	x.steps.no = y.steps.no = NULL, x.torch.own = y.torch.own = NULL;
	x.steps.q = y.steps.q = NULL;
	for (size_t i = 0; i < n; i++)
		same += !memcmp((char *)&x + s[i].off, (char *)&y + s[i].off, s[i].size);
	ok(same == n, "a read rank written again reads the same (%u of %zu sections)", same, n);
	gp_rank_release(&again);
	gp_rank_tables_free(&ta);

	/* refused: a corrupted byte, a torn file, another rank file at the path */
	struct stat st;
	stat(gps, &st);
	fd = open(gps, O_RDWR);
	char c;
	bool flipped = pread(fd, &c, 1, st.st_size / 2) == 1;
	c ^= 1;
	flipped &= pwrite(fd, &c, 1, st.st_size / 2) == 1;
	close(fd);
	ok(flipped, "a byte in the middle of the summary flipped");
	ok(gp_summary_read(gpr, (uid_t)-1, &again, &ta) < 0, "a corrupted summary is refused");
	ok(gp_summary_write(gpr, &back, &tb) == 0 && truncate(gps, st.st_size - 9) == 0 &&
	       gp_summary_read(gpr, (uid_t)-1, &again, &ta) < 0,
	   "a torn summary is refused");
	ok(gp_summary_write(gpr, &back, &tb) == 0, "written again");
	fd = open(gpr, O_WRONLY | O_APPEND);
	ok(write(fd, "more", 4) == 4, "the rank file grows");
	close(fd);
	ok(gp_summary_read(gpr, (uid_t)-1, &again, &ta) < 0,
	   "a summary of the file as it was is stale");
	t.src_ok = false;
	errno = 0;
	ok(gp_summary_write(gpr, &r, &t) < 0, "no summary of a file that changed while read");
	replaced(dir, gpr, &back, &tb);

	gp_rank_release(&r);
	gp_rank_release(&back);
	gp_rank_tables_free(&t);
	gp_rank_tables_free(&tb);
	unlink(gps);
	unlink(gpr);
	rmdir(dir);
	return done_testing();
}
