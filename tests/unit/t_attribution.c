/* Kernel time by the user's code (report/attribution.c) on synthetic events whose answer is
 * known: operation ranges ("pytorch.ops") on the training thread and on an autograd engine
 * thread, kernels of known durations launched inside them, across them and outside all of
 * them; the tables by operation and by source line, their shares, the summary's copy of the
 * table, merging two ranks, and what the writers print. */
#include "config.h"
#include "attribution.h"
#include "rankdata.h"
#include "synth.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define US 1000ull

SYNTH_ONE_RANK()

static uint64_t corr = 100, rid = 1000;

static void launch(uint32_t tid, uint64_t ts, uint64_t dur, uint32_t name)
{
	synth_launch(&d, &r, tid, ts, ++corr, ts + 10 * US, dur, name);
}

/* an operation range (domain 9: "pytorch.ops"; 8: "pytorch.layers") */
static void sync_call(uint32_t tid, uint64_t ts, uint64_t dur)
{
	feed((gp_event_t){.type = GP_EV_API,
	                  .tid = tid,
	                  .ts = ts,
	                  .a = dur,
	                  .c = ++corr,
	                  .u8 = 1,
	                  .u16 = GP_API_SYNC});
}

static bool ranges_on = true; /* the integration's mode pushed (operation ranges made) */

static uint64_t op_start(uint32_t tid, uint64_t ts, uint32_t name, uint32_t domain)
{
	if (!ranges_on && domain == 9)
		return 0;
	feed((gp_event_t){
	    .type = GP_EV_NVTX_START, .tid = tid, .ts = ts, .a = name, .b = domain, .c = ++rid});
	return rid;
}
static void op_end(uint32_t tid, uint64_t ts, uint64_t id)
{
	if (!id)
		return;
	feed((gp_event_t){.type = GP_EV_NVTX_END, .tid = tid, .ts = ts, .c = id});
}

/* Six 10 ms steps (the program's NVTX range on thread 7), two of warm-up. In each: linear
 * (2 kernels, 300 + 200 us) and relu (100 us) on line 10, then backward() on line 12, in
 * which the engine thread 9 runs linear's backward node (400 us) and a node no range holds
 * (50 us: the backward() call's); a module range (layers) around linear; 25 us after all
 * of them (not attributed). Operation ranges in steps from..to only (the integration's
 * mode pushed at the end of step from - 1, where one range follows the step's launches). */
static void timeline_in(uint64_t from, uint64_t to)
{
	gp_rd_reset(&d);
	gp_rank_release(&r);
	memset(&r, 0, sizeof(r));
	gp_job_free(&job);
	d.warmup = 2;
	str(1, "train_step");
	str(2, "gemm"), str(3, "relu_kernel"), str(4, "gemm_bwd"), str(5, "accumulate");
	str(6, "tail");
	str(8, "pytorch.layers"), str(9, GP_OPS_DOMAIN);
	str(10, "linear @ train.py:10 (step)"), str(11, "relu @ train.py:10 (step)");
	str(12, "backward @ train.py:12 (step)"), str(13, "linear backward @ train.py:10 (step)");
	str(14, "Linear");
	str(15, "item @ train.py:14 (step)");
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t s = i * 10 * MS;
		ranges_on = i >= from && i <= to;
		feed((gp_event_t){.type = GP_EV_NVTX_PUSH, .tid = 7, .ts = s, .a = 1});
		uint64_t mod = op_start(7, s + 900 * US, 14, 8);
		uint64_t a = op_start(7, s + 1 * MS, 10, 9);
		launch(7, s + 1500 * US, 300 * US, 2);
		launch(7, s + 2 * MS, 200 * US, 2);
		op_end(7, s + 3 * MS, a);
		op_end(7, s + 3100 * US, mod);
		a = op_start(7, s + 3500 * US, 11, 9);
		launch(7, s + 3600 * US, 100 * US, 3);
		op_end(7, s + 4 * MS, a);
		uint64_t bw = op_start(7, s + 5 * MS, 12, 9);
		a = op_start(9, s + 5500 * US, 13, 9);
		launch(9, s + 6 * MS, 400 * US, 4);
		op_end(9, s + 6500 * US, a);
		launch(9, s + 7 * MS, 50 * US, 5);
		op_end(7, s + 9 * MS, bw);
		launch(7, s + 9500 * US, 25 * US, 6);
		a = op_start(7, s + 9550 * US, 15, 9); /* loss.item(): 150 us blocked */
		sync_call(7, s + 9560 * US, 150 * US);
		op_end(7, s + 9720 * US, a);
		sync_call(7, s + 9730 * US, 40 * US); /* outside every range */
		if (i + 1 == from) { /* pushed here: a call after the step's launches */
			ranges_on = true;
			op_end(7, s + 9800 * US, op_start(7, s + 9700 * US, 10, 9));
		}
		feed((gp_event_t){.type = GP_EV_NVTX_POP, .tid = 7, .ts = s + 9900 * US});
	}
	ranges_on = true;
	synth_attribute(&d, &r, &job);
}

static void timeline(void)
{
	timeline_in(0, 5);
}

static const gp_ostat_t *row(const gp_otab_t *t, const char *name)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

static bool is(const gp_ostat_t *o, uint64_t calls, uint64_t kernels, uint64_t ns)
{
	return o && o->calls == calls && o->kernels == kernels && o->gpu_ns == ns;
}

static const gp_attr_row_t *arow(const gp_attr_row_t *v, unsigned n, const char *key)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].keylen == strlen(key) && !memcmp(v[i].key, key, v[i].keylen))
			return &v[i];
	return NULL;
}

static void per_rank(void)
{
	timeline();
	uint64_t p = r.steps.n_post;
	ok(p == 4, "4 post-warm-up steps of 6 (%llu)", (unsigned long long)p);
	const gp_otab_t *t = &job.ops;
	ok(t->ranks == 1 && t->n == 6, "one rank, 6 rows: 5 operations and the unattributed (%u)",
	   t->n);
	ok(is(row(t, "linear @ train.py:10 (step)"), p, 2 * p, p * 500 * US),
	   "linear: its 2 kernels a step (300 + 200 us), not the module range around it");
	ok(is(row(t, "relu @ train.py:10 (step)"), p, p, p * 100 * US), "relu: 100 us a step");
	ok(is(row(t, "linear backward @ train.py:10 (step)"), p, p, p * 400 * US),
	   "linear's backward node on the engine thread: 400 us a step, on the forward's line");
	ok(is(row(t, "backward @ train.py:12 (step)"), p, p, p * 50 * US),
	   "a kernel of an engine thread with no range open goes to the op open on the "
	   "training thread (backward(): 50 us)");
	ok(is(row(t, ""), 0, p, p * 25 * US), "25 us a step launched outside every range: the "
	                                      "unattributed row");
	const gp_ostat_t *item = row(t, "item @ train.py:14 (step)"), *out = row(t, "");
	ok(item && item->syncs == p && item->sync_ns == p * 150 * US && out->syncs == p &&
	       out->sync_ns == p * 40 * US && row(t, "backward @ train.py:12 (step)")->syncs == 0,
	   "the host's waits: 150 us a step in loss.item()'s range, 40 us outside every range");
	char top[128];
	double sh = 0;
	ok(gp_attr_top_sync(&job, top, sizeof(top), &sh) && !strcmp(top, item->name) && sh > 78.9 &&
	       sh < 79.0,
	   "the line that held the host longest, named for the sync finding: %s, %.1f %%", top, sh);
	char ev[512] = "12 blocking calls";
	gp_attr_sync_evidence(&job, ev, sizeof(ev));
	ok(!strcmp(ev, "12 blocking calls; in the steps with operation ranges, 79% of the "
	               "blocking time was the program's 'item @ train.py:14 (step)'"),
	   "... in its evidence: %s", ev);
	bool leaked = false;
	for (unsigned i = 0; i < job.nr; i++)
		leaked |= strstr(job.r[i].name, " @ ") != NULL;
	ok(!leaked && job.nr == 2, "operation ranges stay out of the NVTX range table (%u rows)",
	   job.nr);

	gp_attr_t a;
	ok(gp_attr_make(t, &a) == 0, "the tables are made");
	ok(a.total_ns == p * 1075 * US && a.total_kernels == 6 * p,
	   "total: every kernel of the steady state, 1075 us a step (%llu ns)",
	   (unsigned long long)a.total_ns);
	const gp_attr_row_t *l10 = arow(a.by_line, a.nline, "train.py:10 (step)");
	const gp_attr_row_t *l12 = arow(a.by_line, a.nline, "train.py:12 (step)");
	const gp_attr_row_t *none = arow(a.by_line, a.nline, "(not attributed)");
	ok(a.nline == 4 && l10 && l10->gpu_ns == p * 1000 * US && l10->kernels == 4 * p &&
	       l10->calls == 2 * p,
	   "line 10: linear, relu and linear's backward, 1000 us a step; its calls the forward's "
	   "two (%llu)",
	   l10 ? (unsigned long long)l10->calls : 0);
	ok(l12 && l12->gpu_ns == p * 50 * US && none && none->gpu_ns == p * 25 * US,
	   "line 12 and the unattributed kernels");
	ok(a.by_line[0].gpu_ns == l10->gpu_ns && a.by_op[0].gpu_ns == p * 500 * US &&
	       a.by_op[0].keylen == 6 && !memcmp(a.by_op[0].key, "linear", 6),
	   "most GPU time first: line 10, operation linear");
	uint64_t sum = 0;
	for (unsigned i = 0; i < a.nop; i++)
		sum += a.by_op[i].gpu_ns;
	ok(sum == a.total_ns && a.nop == 6 && a.sync_ns == p * 190 * US,
	   "the operations' rows add up to the total");
	/* the figures the writers show are the result's: 1000 of 1075 us, 250 us a call */
	ok(fabs(l10->share_pct - 100.0 * 1000 / 1075) < 1e-9 && l10->mean_ns_per_call == 500 * US &&
	       fabs(none->share_pct - 100.0 * 25 / 1075) < 1e-9 && none->mean_ns_per_call == 0,
	   "shares and time per call in the result (line 10: %.3f %%)", l10->share_pct);
	double shown = 0;
	for (unsigned i = 0; i < a.op_shown.top; i++)
		shown += a.by_op[i].share_pct;
	ok(a.op_shown.top == 6 && a.op_shown.none < 0 && !a.op_shown.nothers &&
	       fabs(shown - 100) < 1e-9,
	   "six operations shown, no rest: their shares add up to 100 (%.6f)", shown);
	gp_attr_free(&a);
}

/* Operation ranges in steps 3 and 4 only (a window's first steps), one stray range at the
 * end of step 2 where the mode was pushed: the tables hold steps 3 and 4, none of the other
 * steps' kernels read as unattributed. */
static void part_of_a_window(void)
{
	timeline_in(3, 4);
	const gp_otab_t *t = &job.ops;
	ok(is(row(t, "linear @ train.py:10 (step)"), 2, 4, 2 * 500 * US) &&
	       is(row(t, ""), 0, 2, 2 * 25 * US),
	   "only the steps the ranges covered: 2 of linear's calls, 2 unattributed kernels");
	uint64_t tot = 0;
	for (unsigned i = 0; i < t->n; i++)
		tot += t->v[i].gpu_ns;
	ok(tot == 2 * 1075 * US,
	   "total 2 x 1075 us: the step the mode was pushed in and the "
	   "steps after it was popped left out (%llu ns)",
	   (unsigned long long)tot);
}

static void summary_and_merge(void)
{
	timeline();
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	gp_otab_write(m, &job.ops);
	fclose(m);
	gp_otab_t back;
	const unsigned char *p = (const unsigned char *)buf;
	int rc = gp_otab_read(&p, p + len, &back);
	ok(rc == 0 && p == (const unsigned char *)buf + len && back.n == job.ops.n &&
	       back.ranks == 1,
	   "the summary's copy reads back whole (%u rows)", back.n);
	const gp_ostat_t *x = row(&job.ops, "linear backward @ train.py:10 (step)");
	ok(x && is(row(&back, x->name), x->calls, x->kernels, x->gpu_ns), "with its figures");
	p = (const unsigned char *)buf;
	gp_otab_t cut;
	ok(gp_otab_read(&p, p + len - 3, &cut) < 0 && cut.n == 0, "a cut copy is refused");
	gp_otab_t j2 = {0};
	gp_otab_merge(&j2, &back);
	gp_otab_merge(&j2, &job.ops);
	ok(j2.ranks == 2 && is(row(&j2, ""), 0, 2 * x->calls, 2 * 25 * US * x->calls),
	   "two ranks merged by name, their unattributed kernels too");
	free(buf);
	gp_otab_free(&back);
	gp_otab_free(&j2);
}

static void writers(void)
{
	timeline();
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	gp_attr_text(&job, m);
	fclose(m);
	ok(buf && strstr(buf, "Kernel time by operation") && strstr(buf, "Kernel time by source") &&
	       strstr(buf, "train.py:10 (step)") && strstr(buf, "(not attributed)"),
	   "the text report has both tables");
	/* line 10's row: 4 ms over 4 steps, 93.0 % of 4.3 ms, 16 kernels, 8 calls, 500 us */
	ok(buf && strstr(buf, "     4.000  93.0%       16        8        500.0"),
	   "line 10's row reads 4.000 ms, 93.0 %%, 16 kernels, 8 calls, 500.0 us a call");
	free(buf);
	m = open_memstream(&buf, &len);
	gp_attr_json(&job, m);
	fclose(m);
	ok(buf &&
	       strstr(buf, "\"attribution\": {\"ranks\": 1, \"total_ns\": 4300000, \"kernels\": "
	                   "24, \"sync_ns\": 760000") &&
	       strstr(buf, "{\"name\": \"linear\", \"attributed\": true, \"gpu_ns\": 2000000, "
	                   "\"share_pct\": 46.512, \"kernels\": 8, \"calls\": 4, "
	                   "\"mean_ns_per_call\": 500000, \"syncs\": 0, \"sync_ns\": 0}"),
	   "report.json's attribution object");
	ok(buf &&
	       strstr(buf, "{\"operation\": \"linear backward\", \"line\": \"train.py:10 "
	                   "(step)\", \"gpu_ns\": 1600000, \"share_pct\": 37.209, "
	                   "\"kernels\": 4, \"calls\": 4, \"syncs\": 0, \"sync_ns\": 0}") &&
	       strstr(buf, "{\"operation\": \"item\", \"line\": \"train.py:14 (step)\", "
	                   "\"gpu_ns\": 0, \"share_pct\": 0.000, \"kernels\": 0, \"calls\": 4, "
	                   "\"syncs\": 4, \"sync_ns\": 600000}"),
	   "... with its rows by operation and line, the host's waits in them");
	free(buf);
	m = open_memstream(&buf, &len);
	gp_attr_text(&job, m);
	fclose(m);
	ok(buf && strstr(buf, "Host blocked in synchronising calls") &&
	       strstr(buf, "train.py:14 (step)                                    0.600  78.9%  "
	                   "      4"),
	   "the text names the line that blocked the host: train.py:14, 0.6 ms, 78.9 %%");
	free(buf);
	gp_otab_add(&job.ops, &(gp_ostat_t){"mul @ a.py:1 (<module>)", 1, 1, 1000, 0, 0});
	m = open_memstream(&buf, &len);
	gp_attr_html(&job, m);
	fclose(m);
	ok(buf && strstr(buf, "<table id=\"attr-lines\">") &&
	       strstr(buf, "<tr><td>a.py:1 (&lt;module&gt;)</td><td data-key=\"gpu_ns\">0.001</td>"
	                   "<td data-key=\"share_pct\">0.0 %</td>") &&
	       !strstr(buf, "(<module>)"),
	   "the HTML page's tables, the program's names escaped");
	free(buf);
	gp_otab_t none = {0};
	gp_otab_t keep = job.ops;
	job.ops = none;
	m = open_memstream(&buf, &len);
	gp_attr_text(&job, m);
	gp_attr_html(&job, m);
	fclose(m);
	ok(len == 0, "no table where no rank recorded operation ranges");
	free(buf);
	job.ops = keep;
}

/* No steps (inference: the integration covers top-level module calls 4-6 of the loop): 10
 * calls of 1 ms, a linear (300 us) in each, ranges in calls 4-6 only, and in call 5 a kernel
 * between the ranges (20 us). Counted: calls 4-6 and what is between them, nothing before
 * the first range nor after the last. */
static void no_steps(void)
{
	gp_rd_reset(&d);
	gp_rank_release(&r);
	memset(&r, 0, sizeof(r));
	gp_job_free(&job);
	str(2, "gemm"), str(6, "tail"), str(9, GP_OPS_DOMAIN);
	str(10, "linear @ infer.py:7 (<module>)");
	for (uint64_t i = 1; i <= 10; i++) {
		uint64_t s = i * MS;
		uint64_t a = i >= 4 && i <= 6 ? op_start(7, s + 100 * US, 10, 9) : 0;
		launch(7, s + 200 * US, 300 * US, 2);
		op_end(7, s + 600 * US, a);
		if (i == 5)
			launch(7, s + 800 * US, 20 * US, 6);
	}
	synth_attribute(&d, &r, &job);
	const gp_otab_t *t = &job.ops;
	ok(d.steps.n == 0 && is(row(t, "linear @ infer.py:7 (<module>)"), 3, 3, 900 * US) &&
	       is(row(t, ""), 0, 1, 20 * US) && t->n == 2,
	   "no steps: the span of the ranges (3 calls of 300 us, 20 us between them not "
	   "attributed), not the 7 calls around it (%u rows)",
	   t->n);
}

int main(void)
{
	no_steps();
	per_rank();
	part_of_a_window();
	summary_and_merge();
	writers();
	gp_job_free(&job);
	gp_rd_free(&d);
	gp_rank_release(&r);
	return done_testing();
}
