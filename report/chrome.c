/* Chrome/Perfetto trace export, fed by the report's own loader (load.c): the same
 * records, the same filtering of impossible ones, sorted. One process per (step, rank)
 * named "rank R (step S) on NODE"; NVTX ranges as complete slices on their threads (open
 * ones closed at the rank's end), thread and stream names as the program gave them; a
 * track per GPU stream; CUDA API calls by their real names; flow events from each launch
 * call to the GPU work it made, with ids unique across the file (Perfetto binds v1 flows
 * by id, category and name over the whole file; CUPTI's correlation ids repeat in every
 * process); device memory and NVML as counters in time order, with the value at the
 * window's start. Timestamps: integer nanoseconds from the job's first event to the end,
 * printed as microseconds with three decimals.
 *
 * --format=kineto writes the same events the way PyTorch's Kineto does, one file per
 * rank (DIR/stepS/rankR.json), for HTA's TraceAnalysis: "distributedInfo" {rank,
 * world_size} and "deviceProperties" at the top; GPU work on pid = device, tid = stream
 * with args stream >= 0 and correlation (HTA's GPU-kernel test); API calls as
 * cuda_runtime/cuda_driver with the same correlation and no stream (its CPU test); NVTX
 * ranges as user_annotation; each step as a "ProfilerStep#N" annotation on the steps'
 * thread (HTA's iterations), from whatever found the steps, from its start to the next
 * one's as the Chrome trace's step slices (gp_step_span_end); copies and sets with Kineto's
 * "bytes" and "memory bandwidth (GB/s)" (HTA's memory bandwidth analysis); flows ac2g by
 * correlation, unique within the file; kernels with Kineto's launch configuration ("grid",
 * "block", "registers per thread", "shared memory") where the collector recorded it; the
 * framework operations gpuprof attributes kernels to (PyTorch's operation ranges,
 * attribution.h) as cpu_op slices whose "External id" their launch calls and kernels
 * carry, as Kineto links an operator to its kernels. */
#include "config.h"
#include "log.h"
#include "attribution.h"
#include "event.h"
#include "names.h"
#include "job.h"
#include "outfile.h"
#include "cbid_names.h"
#include "json.h"
#include "rankdata.h"
#include "ranks.h"

#include "path.h"
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	FILE *out;
	int pid;
	bool kineto;            /* Kineto's layout (see above) */
	uint64_t flows;         /* flow ids given so far in this file */
	uint64_t off;           /* add to a monotonic time for ns since the job's t0 */
	uint64_t lo, hi;        /* window in monotonic ns (hi 0: none) */
	uint64_t budget, spent; /* events this rank may write */
	const rank_data_t *d;
	u64map_t tids; /* Chrome: the program's thread id + 1 -> its number in the rank, 1.. */
	gp_ops_t ops;  /* Kineto: the operation ranges (attribution.h), exported as cpu_op */
} ctx_t;

#define STREAM_TID(s) (1000000ull + (s))

/* A thread's id in the file. The collector's thread ids are pthread_self()'s low bits
 * (1778078464): Chrome traces number a rank's threads 1, 2, ... in the order they first
 * appear, and name them "thread N (ID)" or by their NVTX names (thread_names); Kineto's
 * files keep the ids, as Kineto does. */
static uint64_t tid_of(const ctx_t *c, uint64_t tid)
{
	uint64_t v;
	return !c->kineto && u64map_get(&c->tids, tid + 1, &v) ? v : tid;
}

static void tid_see(ctx_t *c, uint64_t tid)
{
	uint64_t v;
	if (!c->kineto && !u64map_get(&c->tids, tid + 1, &v))
		u64map_put(&c->tids, tid + 1, c->tids.n + 1);
}

/* Microseconds with three decimals from integer nanoseconds. */
static void put_us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, "\"%s\": %" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static const char *name_of(const rank_data_t *d, uint32_t id)
{
	const char *s = gp_symtab_str(&d->sym, id);
	return s && *s ? s : "(unnamed)";
}

/* Kineto's names for CUPTI's copy kinds (memcpyKindString) */
static const char *memcpy_name(unsigned kind)
{
	static const char *n[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
	                          "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
	                          "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
	return kind < sizeof(n) / sizeof(n[0]) ? n[kind] : "Memcpy";
}

/* Does [start, end] meet the window? */
static bool in_window(const ctx_t *c, uint64_t start, uint64_t end)
{
	return !c->hi || (end >= c->lo && start <= c->hi);
}

static bool spend(ctx_t *c)
{
	if (c->budget && c->spent >= c->budget)
		return false;
	c->spent++;
	return true;
}

static void slice_at(ctx_t *c, const char *cat, int pid, uint64_t tid, uint64_t start, uint64_t dur,
                     const char *name)
{
	fprintf(c->out, ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"pid\": %d, \"tid\": %" PRIu64 ", ",
	        cat, pid, tid);
	put_us(c->out, "ts", start + c->off);
	fputs(", ", c->out);
	put_us(c->out, "dur", dur);
	fputs(", \"name\": ", c->out);
	gp_json_str(c->out, name);
}

static void slice(ctx_t *c, const char *cat, uint64_t tid, uint64_t start, uint64_t dur,
                  const char *name)
{
	slice_at(c, cat, c->pid, tid, start, dur, name);
}

/* Where GPU work goes: Chrome, a track per stream in the rank's process; Kineto, the
 * device's process with the stream as its thread. */
static int gpu_pid(const ctx_t *c, const kern_t *k)
{
	return c->kineto ? (int)k->device : c->pid;
}
static uint64_t gpu_tid(const ctx_t *c, const kern_t *k)
{
	return c->kineto ? k->stream : STREAM_TID(k->stream);
}

static void thread_name(ctx_t *c, uint64_t tid, const char *name);

static int cmp_kern_start(const void *a, const void *b)
{
	const kern_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The track a GPU activity goes on: its stream's, unless it starts inside the last slice
 * there and ends after it (work a stream's records show overlapping: a library's split
 * kernels, a host-to-host copy). Perfetto nests slices on a track and drops what
 * overlaps without nesting, so such work goes on the stream's next overlap track,
 * "stream N (overlapping)", one of up to 7. Records arrive sorted by start. */
#define OVERLAP_TID (1ull << 40)
static uint64_t gpu_track(ctx_t *c, u64map_t *ends, const kern_t *k)
{
	uint64_t base = gpu_tid(c, k), end = k->start + k->dur;
	for (unsigned level = 0; level < 8; level++) {
		uint64_t tid = base + level * OVERLAP_TID, last = 0;
		bool known = u64map_get(ends, tid + 1, &last);
		if (known && k->start < last && end > last && level < 7)
			continue; /* overlaps it without nesting: the next track */
		if (!known && level && !c->kineto) { /* Kineto's GPU tracks are named by pid */
			char nm[64];
			snprintf(nm, sizeof(nm), "stream %u (overlapping, %u)", k->stream, level);
			thread_name(c, tid, nm);
		}
		if (!known || end > last)
			u64map_put(ends, tid + 1, end);
		return tid;
	}
	return base;
}

static void thread_name(ctx_t *c, uint64_t tid, const char *name)
{
	fprintf(c->out,
	        ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %" PRIu64
	        ", \"args\": {\"name\": ",
	        c->pid, tid);
	gp_json_str(c->out, name);
	fputs("}}", c->out);
}

/* The program's threads, numbered in the order they first appear, and its streams. */
static void export_names(ctx_t *c)
{
	const rank_data_t *d = c->d;
	FILE *out = c->out;
	char nm[512];
	/* names: the program's threads, numbered in the order they first appear (tid_of),
	 * and its streams */
	u64map_t seen = {0};
	for (size_t i = 0; i < d->ranges.n; i++)
		tid_see(c, d->ranges.v[i].tid);
	for (size_t s = 0; s < d->stacks.n; s++)
		for (size_t j = 0; j < d->stacks.v[s].n; j++)
			tid_see(c, d->stacks.v[s].v[j].tid);
	for (size_t i = 0; i < d->nvtx_marks.n; i++)
		tid_see(c, d->nvtx_marks.v[i].tid);
	for (size_t i = 0; i < d->apis.n; i++)
		if (!d->apis.v[i].alloc)
			tid_see(c, d->apis.v[i].tid);
	for (size_t i = 0; i < c->tids.cap; i++) {
		uint64_t tid, v;
		if (!c->tids.k[i])
			continue;
		tid = c->tids.k[i] - 1;
		const char *steps = tid == d->step_tid ? ": the steps" : "";
		if (u64map_get(&d->thread_name, tid + 1, &v))
			snprintf(nm, sizeof(nm), "%s (thread %" PRIu64 "%s)",
			         name_of(d, (uint32_t)v), tid_of(c, tid), steps);
		else
			snprintf(nm, sizeof(nm), "thread %" PRIu64 " (%" PRIu64 ")%s",
			         tid_of(c, tid), tid, steps);
		thread_name(c, tid_of(c, tid), nm);
	}
	if (c->kineto) /* Kineto's ids are the program's own (no map above) */
		for (size_t i = 0; i < d->ranges.n; i++) {
			uint64_t tid = d->ranges.v[i].tid, v;
			if (u64map_get(&seen, tid + 1, &v))
				continue;
			u64map_put(&seen, tid + 1, 1);
			if (u64map_get(&d->thread_name, tid + 1, &v))
				snprintf(nm, sizeof(nm), "%s (thread %" PRIu64 ")",
				         name_of(d, (uint32_t)v), tid);
			else
				snprintf(nm, sizeof(nm), "%sthread %" PRIu64,
				         tid == d->step_tid ? "steps' " : "", tid);
			thread_name(c, tid, nm);
		}
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		uint64_t v;
		if (u64map_get(&seen, STREAM_TID(k->stream) + 1, &v))
			continue;
		u64map_put(&seen, STREAM_TID(k->stream) + 1, 1);
		if (u64map_get(&d->stream_name, (uint64_t)k->stream + 1, &v))
			snprintf(nm, sizeof(nm), "GPU %u stream %u: %s", k->device, k->stream,
			         name_of(d, (uint32_t)v));
		else
			snprintf(nm, sizeof(nm), "GPU %u stream %u", k->device, k->stream);
		if (c->kineto) {
			fprintf(out,
			        ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, "
			        "\"tid\": %u, "
			        "\"args\": {\"name\": ",
			        k->device, k->stream);
			gp_json_str(out, nm);
			fputs("}}", out);
		} else {
			thread_name(c, STREAM_TID(k->stream), nm);
		}
	}
	u64map_free(&seen);
}

/* The ATen operator a torch function the PyTorch integration names (agent/python/
 * _gpuprof_ops.py: the function's name, F.linear -> linear, Tensor.__iadd__ -> add_) runs
 * as, where it is known: the function is an ATen op of the same name (or of the one given).
 * HTA's ATen analyses (get_aten_op_kernels_and_delay) read only cpu_op names that begin
 * "aten::", as torch.profiler writes them. NULL: not known to be one (a Python-level
 * composite such as F.normalize, the backward pass): the name stays as it is. Sorted. */
static const char *const aten_ops[][2] = {
    {"abs", NULL},
    {"adaptive_avg_pool2d", NULL},
    {"add", NULL},
    {"add_", NULL},
    {"addcdiv_", NULL},
    {"addcmul_", NULL},
    {"addmm", NULL},
    {"argmax", NULL},
    {"avg_pool2d", NULL},
    {"baddbmm", NULL},
    {"batch_norm", NULL},
    {"binary_cross_entropy", NULL},
    {"binary_cross_entropy_with_logits", NULL},
    {"bmm", NULL},
    {"cat", NULL},
    {"clamp", NULL},
    {"clone", NULL},
    {"contiguous", NULL},
    {"conv1d", NULL},
    {"conv2d", NULL},
    {"conv3d", NULL},
    {"copy_", NULL},
    {"cross_entropy", "aten::cross_entropy_loss"},
    {"cumsum", NULL},
    {"div", NULL},
    {"div_", NULL},
    {"dropout", NULL},
    {"einsum", NULL},
    {"embedding", NULL},
    {"exp", NULL},
    {"fill_", NULL},
    {"flatten", NULL},
    {"gather", NULL},
    {"gelu", NULL},
    {"group_norm", NULL},
    {"index_select", NULL},
    {"item", NULL},
    {"layer_norm", NULL},
    {"lerp_", NULL},
    {"linear", NULL},
    {"log", NULL},
    {"log_softmax", NULL},
    {"masked_fill", NULL},
    {"matmul", NULL},
    {"max_pool2d", NULL},
    {"mean", NULL},
    {"mm", NULL},
    {"mse_loss", NULL},
    {"mul", NULL},
    {"mul_", NULL},
    {"neg", NULL},
    {"nll_loss", "aten::nll_loss_nd"},
    {"one_hot", NULL},
    {"pad", NULL},
    {"permute", NULL},
    {"pow", NULL},
    {"relu", NULL},
    {"relu_", NULL},
    {"reshape", NULL},
    {"rsqrt", NULL},
    {"scaled_dot_product_attention", NULL},
    {"sigmoid", NULL},
    {"silu", NULL},
    {"softmax", NULL},
    {"sqrt", NULL},
    {"stack", NULL},
    {"sub", NULL},
    {"sub_", NULL},
    {"sum", NULL},
    {"tanh", NULL},
    {"to", NULL},
    {"topk", NULL},
    {"transpose", NULL},
    {"where", NULL},
    {"zero_", NULL},
};

static int cmp_aten(const void *key, const void *row)
{
	return strcmp(key, ((const char *const *)row)[0]);
}

/* op as HTA's ATen analyses want it, into out: "aten::linear", or op itself */
static void aten_name(const char *op, char *out, size_t len)
{
	const char *const *row = bsearch(op, aten_ops, sizeof(aten_ops) / sizeof(aten_ops[0]),
	                                 sizeof(aten_ops[0]), cmp_aten);
	if (!row)
		snprintf(out, len, "%s", op);
	else if (row[1])
		snprintf(out, len, "%s", row[1]);
	else
		snprintf(out, len, "aten::%s", op);
}

/* An operation range ("linear @ train.py:34 (step)", attribution.h) as Kineto writes a
 * framework operation: a cpu_op slice named by the operation (its ATen name where known,
 * aten_ops), its "External id" (the
 * range's position + 1, unique in the file) on the launch calls and GPU work it owns
 * (export_work), so HTA's call graph, frequent kernel patterns and operator statistics
 * find the kernels under it; the user's line in "source". */
static void cpu_op(ctx_t *c, const range_t *g, size_t i)
{
	const char *n = name_of(c->d, g->name), *at = strstr(n, " @ ");
	char op[512], aten[520];
	snprintf(op, sizeof(op), "%.*s", at ? (int)(at - n) : (int)strlen(n), n);
	aten_name(op, aten, sizeof(aten));
	slice(c, "cpu_op", tid_of(c, g->tid), g->start, g->end - g->start, aten);
	fprintf(c->out, ", \"args\": {\"External id\": %zu", i + 1);
	if (at) {
		fputs(", \"source\": ", c->out);
		gp_json_str(c->out, at + 3);
	}
	fputs("}}", c->out);
}

/* NVTX ranges, the ones still open at the end, and marks. */
static void export_ranges(ctx_t *c, int index)
{
	const rank_data_t *d = c->d;
	FILE *out = c->out;
	/* NVTX ranges (complete: the loader paired them), then the ones still open at the
	 * end, closed there */
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *g = &d->ranges.v[i];
		if (!in_window(c, g->start, g->end) || !spend(c))
			continue;
		if (c->kineto && c->ops.ops.n && gp_ops_is_op(d, &c->ops, i)) {
			cpu_op(c, g, i);
			continue;
		}
		if (g->depth == 1000 && !c->kineto) {
			/* start/end ranges need not nest (PyTorch's backward layer ranges overlap):
			 * async slices, which Perfetto lays out on tracks of their own */
			uint64_t id = (uint64_t)(index + 1) << 32 | i;
			for (int end = 0; end < 2; end++) {
				fprintf(
				    out,
				    ",\n{\"ph\": \"%c\", \"cat\": \"nvtx_async\", \"id\": %" PRIu64
				    ", \"pid\": %d, \"tid\": %u, ",
				    end ? 'e' : 'b', id, c->pid, (unsigned)tid_of(c, g->tid));
				put_us(out, "ts", (end ? g->end : g->start) + c->off);
				fputs(", \"name\": ", out);
				gp_json_str(out, name_of(d, g->name));
				fputs("}", out);
			}
			continue;
		}
		slice(c,
		      c->kineto   ? "user_annotation"
		      : g->domain ? "nvtx_domain"
		                  : "nvtx",
		      tid_of(c, g->tid), g->start, g->end - g->start, name_of(d, g->name));
		fputs("}", out);
	}
	for (size_t s = 0; s < d->stacks.n; s++)
		for (size_t j = 0; j < d->stacks.v[s].n; j++) {
			const open_t *o = &d->stacks.v[s].v[j];
			if (o->start > d->last_ts || !in_window(c, o->start, d->last_ts) ||
			    !spend(c))
				continue;
			slice(c, c->kineto ? "user_annotation" : "nvtx", tid_of(c, o->tid),
			      o->start, d->last_ts - o->start, name_of(d, o->name));
			fputs(", \"args\": {\"open_at_end\": true}}", out);
		}
	for (size_t i = 0; i < d->nvtx_marks.n; i++) {
		const nvtx_mark_t *m = &d->nvtx_marks.v[i];
		if (!in_window(c, m->ts, m->ts) || !spend(c))
			continue;
		fprintf(out,
		        ",\n{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"nvtx\", \"pid\": %d, "
		        "\"tid\": %u, ",
		        c->pid, (unsigned)tid_of(c, m->tid));
		put_us(out, "ts", m->ts + c->off);
		fputs(", \"name\": ", out);
		gp_json_str(out, name_of(d, m->name));
		fputs("}", out);
	}
}

/* A kernel's launch configuration under Kineto's keys (its CUPTI kernel record's grid,
 * block, registers per thread, static + dynamic shared memory per block), which HTA's
 * kernel analyses read; nothing where the collector did not record it. */
static void launch_args(ctx_t *c, const kern_t *k)
{
	unsigned v[9];
	const char *s = k->launch ? gp_symtab_str(&c->d->sym, (uint32_t)k->launch) : NULL;
	if (!s || sscanf(s, GP_LAUNCH_FMT, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
	                 &v[8]) != 9)
		return;
	fprintf(c->out,
	        ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"registers per thread\": "
	        "%u, \"shared memory\": %llu",
	        v[0], v[1], v[2], v[3], v[4], v[5], v[6], (unsigned long long)v[7] + v[8]);
}

/* GPU work, and the launch calls that made it joined by flows. */
static void export_work(ctx_t *c)
{
	const rank_data_t *d = c->d;
	FILE *out = c->out;
	char nm[512];
	/* GPU work, and the launch calls that made it joined by flows. A flow id is a
	 * number of the file's own (CUPTI's correlation ids repeat in every process, and
	 * carry the process's generation above bit 32), small enough for any JSON reader;
	 * Kineto's files (one per rank) keep the correlation id, as Kineto does. */
	u64map_t flowed = {0};    /* correlation + 1 -> flow id: its kernel is in the trace */
	u64map_t track_end = {0}; /* a GPU track (its tid + 1) -> the end of its last slice */
	SORT_IF_NEEDED(d->kerns, cmp_kern_start);
	char *dbuf = NULL;
	size_t dlen = 0;
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		if (!in_window(c, k->start, k->start + k->dur) || !spend(c))
			continue;
		uint64_t tid = gpu_track(c, &track_end, k);
		const char *kn = k->kind == 0 ? name_of(d, k->name) : NULL, *dm;
		if (kn &&
		    (dm = gp_demangle(
		         kn, &dbuf,
		         &dlen))) /* demangled: Kineto's and HTA's names, readable in Perfetto */
			kn = dm;
		slice_at(c,
		         k->kind == 0   ? "kernel"
		         : k->kind == 1 ? "gpu_memcpy"
		                        : "gpu_memset",
		         gpu_pid(c, k), tid, k->start, k->dur,
		         k->kind == 0   ? kn
		         : k->kind == 1 ? memcpy_name(k->copykind)
		                        : "Memset");
		fprintf(out,
		        ", \"args\": {\"correlation\": %" PRIu64 ", \"stream\": %u, \"device\": %u",
		        k->corr, k->stream, k->device);
		if (k->kind != 0) /* Kineto's keys, which HTA's memory bandwidth analysis reads */
			fprintf(out, ", \"bytes\": %" PRIu64 ", \"memory bandwidth (GB/s)\": %.3f",
			        k->bytes, k->dur ? (double)k->bytes / (double)k->dur : 0.0);
		else
			launch_args(c, k);
		const api_t *a = gp_rd_launch(d, k);
		size_t op = a && c->ops.ops.n ? gp_ops_owner(d, &c->ops, a->tid, a->start) : 0;
		if (op)
			fprintf(out, ", \"External id\": %zu", op);
		fputs("}}", out);
		uint64_t had;
		/* one flow per launch call: a graph launch's many kernels share its
		 * correlation, and the flow goes to the first of them */
		if (!a || !k->corr || u64map_get(&flowed, k->corr + 1, &had))
			continue;
		uint64_t id = c->kineto ? k->corr : ++c->flows;
		u64map_put(&flowed, k->corr + 1, id);
		fprintf(out,
		        ",\n{\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"ac2g\", \"name\": \"ac2g\", "
		        "\"id\": %" PRIu64 ", \"pid\": %d, \"tid\": %" PRIu64 ", ",
		        id, gpu_pid(c, k), tid);
		put_us(out, "ts", k->start + c->off);
		fputs("}", out);
	}
	u64map_free(&track_end);
	for (size_t i = 0; i < d->apis.n; i++) {
		const api_t *a = &d->apis.v[i];
		uint64_t v;
		if (a->alloc || !in_window(c, a->start, a->start + a->dur) || !spend(c))
			continue;
		const char *n = gp_cbid_name(a->domain, a->cbid);
		if (!n) {
			snprintf(nm, sizeof(nm), "%s callback %u", a->domain == 1 ? "cuda" : "cu",
			         a->cbid);
			n = nm;
		}
		slice(c, a->domain == 1 ? "cuda_runtime" : "cuda_driver", tid_of(c, a->tid),
		      a->start, a->dur, n);
		fprintf(out, ", \"args\": {\"correlation\": %" PRIu64 ", \"cbid\": %u", a->corr,
		        a->cbid);
		bool made = a->corr && u64map_get(&flowed, a->corr + 1, &v);
		size_t op = made && c->ops.ops.n ? gp_ops_owner(d, &c->ops, a->tid, a->start) : 0;
		if (op) /* the operation its GPU work ran for, as on that work */
			fprintf(out, ", \"External id\": %zu", op);
		fputs("}}", out);
		if (made) {
			fprintf(out,
			        ",\n{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": "
			        "%" PRIu64 ", \"pid\": %d, \"tid\": %u, ",
			        v, c->pid, (unsigned)tid_of(c, a->tid));
			put_us(out, "ts", a->start + c->off);
			fputs("}", out);
		}
	}
	u64map_free(&flowed);
	free(dbuf);
}

/* The steps, from whatever found them (NVTX, optimizer.step(), cudaProfilerStart/Stop,
 * the kernels' own rhythm: steps.c), each from its start to the next one's start, the
 * last to its end (gp_step_span_end). Kineto: as PyTorch's profiler marks them,
 * ProfilerStep#N on the steps' thread. Chrome: every step the headline counted is a slice
 * of its own time on a track that says how it was timed:
 *   "steps (SOURCE) on the host": every step, its start to the next one's (the period
 *     headline's own sample), args its number, that span, and where a range made it the
 *     range's own duration;
 *   "steps on the GPU (kernels)": completion of a step's GPU work to the next one's, from
 *     the kernel records (traced steps), at the GPU's times;
 *   "steps on the GPU (step markers)": the markers' GPU time of each untraced step (modes
 *     without cuda, the steps between capture windows), which gives no GPU timestamp:
 *     drawn from the host's end of the step before (the earliest its GPU work can have
 *     completed after), or from the slice before where that ends later, never
 *     overlapping.
 * args "headline" says which slice is the headline's sample of the step. */
#define STEPS_TID      (1ull << 41)
#define GPU_STEPS_TID  (STEPS_TID + 1)
#define MARK_STEPS_TID (STEPS_TID + 2)
static void export_steps(ctx_t *c, const char *source)
{
	const rank_data_t *d = c->d;
	FILE *out = c->out;
	char nm[512];
	uint32_t tid = d->step_tid ? d->step_tid : d->apis.n ? d->apis.v[0].tid : 0;
	uint64_t gpu_last = 0, mark_last = 0; /* the GPU tracks' last ends: no overlap */
	bool own_track = c->kineto && source && !strcmp(source, "kernels");
	/* a range of the program's made the steps: its own time is said (not for steps
	 * found from kernels or optimizer returns: no range) */
	bool ranged = source && (!strcmp(source, "nvtx") || !strcmp(source, "profiler"));
	if (own_track && d->steps.n)
		thread_name(c, STEPS_TID, "steps (kernels)");
	if (!c->kineto && d->steps.n) {
		bool kern = false, mark = false;
		for (size_t i = 0; i < d->steps.n; i++)
			kern |= d->steps.v[i].gpu_end != 0, mark |= d->steps.v[i].mark_ms > 0;
		snprintf(nm, sizeof(nm), "steps (%s) on the host: start to the next start",
		         source && source[0] ? source : "found");
		thread_name(c, STEPS_TID, nm);
		if (kern)
			thread_name(c, GPU_STEPS_TID,
			            "steps on the GPU (kernels: completion to completion)");
		if (mark)
			thread_name(
			    c, MARK_STEPS_TID,
			    "steps on the GPU (step markers: GPU time, drawn from the host's "
			    "end of the step before)");
	}
	for (size_t i = 0; i < d->steps.n; i++) {
		const step_t *st = &d->steps.v[i];
		/* both: the step's whole span (gp_step_span_end), to the next one's start,
		 * the last to its end; never overlapping, so Perfetto keeps every one and
		 * HTA's iterations hold all of a step's work, as in PyTorch's own traces */
		uint64_t end = gp_step_span_end(d, i);
		if (end < st->start || !in_window(c, st->start, end) || !spend(c))
			continue;
		if (c->kineto) {
			/* on the steps' thread, as PyTorch's profiler marks them; steps found from
			 * the kernels' rhythm (JAX, no NVTX) begin at a launch inside an annotation
			 * of that thread (XLA's Thunk ranges) and would cross its end: a track of
			 * their own there, where HTA still takes them by name and time */
			snprintf(nm, sizeof(nm), "ProfilerStep#%zu", i);
			slice(c, "user_annotation", own_track ? STEPS_TID : tid_of(c, tid),
			      st->start, end - st->start, nm);
			fputs("}", out);
			continue;
		}
		snprintf(nm, sizeof(nm), "step %zu", i);
		slice(c, "step", STEPS_TID, st->start, end - st->start, nm);
		fprintf(out, ", \"args\": {\"step\": %zu, \"dur_ms\": %.4f", i,
		        (end - st->start) / 1e6);
		if (ranged && st->end > st->start)
			fprintf(out, ", \"range_ms\": %.4f", (st->end - st->start) / 1e6);
		fprintf(out, ", \"traced\": %s, \"headline\": %s}}", st->traced ? "true" : "false",
		        st->head == GP_HEAD_PERIOD || st->head == GP_HEAD_CPU ? "true" : "false");
		const step_t *pv = i ? &d->steps.v[i - 1] : NULL;
		uint64_t from = pv && pv->gpu_end > gpu_last ? pv->gpu_end : gpu_last;
		if (pv && pv->gpu_end && st->gpu_end > from && spend(c)) {
			slice(c, "step", GPU_STEPS_TID, from, st->gpu_end - from, nm);
			fprintf(out,
			        ", \"args\": {\"step\": %zu, \"dur_ms\": %.4f, \"gpu_ms\": %.4f, "
			        "\"headline\": %s}}",
			        i, (st->gpu_end - from) / 1e6, (st->gpu_end - pv->gpu_end) / 1e6,
			        st->head == GP_HEAD_KERNELS ? "true" : "false");
			gpu_last = st->gpu_end;
		}
		if (pv && st->mark_ms > 0 && spend(c)) {
			uint64_t at = pv->end > mark_last ? pv->end : mark_last,
			         dur = (uint64_t)((double)st->mark_ms * 1e6 + 0.5);
			slice(c, "step", MARK_STEPS_TID, at, dur, nm);
			fprintf(out,
			        ", \"args\": {\"step\": %zu, \"dur_ms\": %.4f, \"gpu_ms\": %.4f, "
			        "\"headline\": %s}}",
			        i, dur / 1e6, st->mark_ms,
			        st->head == GP_HEAD_MARKERS ? "true" : "false");
			mark_last = at + dur;
		}
	}
}

/* Device memory and NVML as counters. */
static void export_counters(ctx_t *c)
{
	const rank_data_t *d = c->d;
	FILE *out = c->out;
	/* counters in time order; inside a window they start from the value at its start */
	int64_t live = 0;
	bool started = false;
	for (size_t i = 0; i < d->mems.n; i++) {
		const mem_t *m = &d->mems.v[i];
		if (!gp_mem_is_device(m->kind)) /* the device's allocations, not host buffers */
			continue;
		live += m->is_free ? -(int64_t)m->bytes : (int64_t)m->bytes;
		if (c->hi && m->ts < c->lo)
			continue;
		if (c->hi && m->ts > c->hi)
			break;
		if (!spend(c))
			break;
		fprintf(out, ",\n{\"ph\": \"C\", \"pid\": %d, \"name\": \"device memory\", ",
		        c->pid);
		put_us(out, "ts", (started || !c->hi ? m->ts : c->lo) + c->off);
		fprintf(out, ", \"args\": {\"MiB\": %.3f}}", (live > 0 ? live : 0) / 1048576.0);
		started = true;
	}
	for (size_t i = 0; i < d->nvml.n; i++) {
		const nvml_sample_t *s = &d->nvml.v[i];
		if (!in_window(c, s->ts, s->ts) || !spend(c))
			continue;
		fprintf(out, ",\n{\"ph\": \"C\", \"pid\": %d, \"name\": \"NVML GPU %u\", ", c->pid,
		        s->device);
		put_us(out, "ts", s->ts + c->off);
		fprintf(out,
		        ", \"args\": {\"util %%\": %u, \"used MiB\": %.1f, \"power W\": %.1f}}",
		        s->util, s->mem_bytes / 1048576.0, s->power_mw / 1000.0);
	}
}

static void export_rank(ctx_t *c, int index, const char *step_source)
{
	if (c->kineto)
		gp_ops_index(c->d, &c->ops);
	export_names(c);
	export_ranges(c, index);
	export_work(c);
	export_steps(c, step_source);
	export_counters(c);
	gp_ops_free(&c->ops);
}

/* The ranks --ranks selects (all without it) and the earliest realtime among them (the
 * time 0 of every exported timestamp); 0 ranks, said on stderr, when none. */
static unsigned select_ranks(const gp_job_t *job, const char *ranklist, gp_ranks_t *sel,
                             uint64_t *t0)
{
	char err[512];
	unsigned n = 0;
	*t0 = UINT64_MAX;
	if (ranklist && gp_ranks_parse(ranklist, sel, err, sizeof(err)) < 0) {
		gp_err("export: --ranks: %s", err);
		return 0;
	}
	for (unsigned i = 0; i < job->nranks; i++) {
		if (ranklist && !gp_ranks_contains(sel, (uint32_t)job->ranks[i].id.rank))
			continue;
		n++;
		if (job->ranks[i].id.t0_realtime_ns && job->ranks[i].id.t0_realtime_ns < *t0)
			*t0 = job->ranks[i].id.t0_realtime_ns;
	}
	if (!n)
		gp_err("export: --ranks=%s selects none of the job's %u ranks",
		       ranklist ? ranklist : "", job->nranks);
	if (*t0 == UINT64_MAX)
		*t0 = 0;
	return n;
}

int gp_export_chrome(const gp_job_t *job, FILE *out, const char *ranklist, uint64_t max_events,
                     double win_from_s, double win_to_s)
{
	gp_ranks_t sel;
	char err[512];
	uint64_t t0;
	unsigned nsel = select_ranks(job, ranklist, &sel, &t0);
	if (!nsel)
		return -1;
	fprintf(
	    out,
	    "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"gpuprof " PACKAGE_VERSION
	    "\", \"job\": ");
	gp_json_str(out, job->job);
	fputs("}, \"traceEvents\": [", out);
	rank_data_t d;
	memset(&d, 0, sizeof(d));
	uint64_t written = 0, flows = 0;
	bool cut = false, first = true;
	for (unsigned i = 0, n = 0; i < job->nranks; i++) {
		const gp_rank_t *rk = &job->ranks[i];
		if (ranklist && !gp_ranks_contains(&sel, (uint32_t)rk->id.rank))
			continue;
		if (gp_job_rank_records(job, rk, &d, err, sizeof(err)) < 0) {
			gp_err("export: %s", err);
			continue;
		}
		/* the rank's clock to the job's: realtime at the agent's start, then
		 * monotonic since; nanoseconds since the job's first event */
		ctx_t c = {.out = out, .pid = (int)i + 1, .d = &d};
		int64_t off = (int64_t)(d.hdr_realtime - d.hdr_monotonic - t0); /* usually < 0 */
		c.off = (uint64_t)off;       /* ts + off wraps to the (non-negative) ns since t0 */
		if (win_to_s > win_from_s) { /* the window in this rank's monotonic clock */
			int64_t from = (int64_t)(win_from_s * 1e9) - off;
			int64_t to = (int64_t)(win_to_s * 1e9) - off;
			c.lo = from > 0 ? (uint64_t)from : 0;
			c.hi = to > 0 ? (uint64_t)to : 1;
		}
		/* --max-events: split across the selected ranks, what one leaves goes on */
		if (max_events) {
			uint64_t left = max_events > written ? max_events - written : 0;
			c.budget = left / (nsel - n) ? left / (nsel - n) : 1;
		}
		n++;
		char pname[256];
		snprintf(pname, sizeof(pname), "rank %d (step %s) on %s", rk->id.rank, rk->id.step,
		         rk->id.node.s ? gp_txt(rk->id.node) : "?");
		/* the first event opens the list: no comma before it, and no placeholder event
		 * (Chrome's format has no "trace" metadata) */
		fprintf(out,
		        "%s\n{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": "
		        "{\"name\": ",
		        first ? "" : ",", c.pid);
		first = false;
		gp_json_str(out, pname);
		fprintf(out,
		        "}},\n{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, "
		        "\"args\": {\"sort_index\": %u}}",
		        c.pid, i);
		c.flows = flows; /* flow ids count on through the file */
		export_rank(&c, (int)i, rk->steps.source);
		u64map_free(&c.tids);
		flows = c.flows;
		written += c.spent;
		cut |= c.budget && c.spent >= c.budget;
	}
	gp_rd_free(&d);
	fprintf(out, "\n]}\n");
	if (win_to_s > win_from_s && !written)
		fprintf(
		    stderr,
		    "gpuprof: export: --window=%g:%g holds no event of the selected ranks (seconds "
		    "after the job's first event)\n",
		    win_from_s, win_to_s);
	if (cut)
		fprintf(
		    stderr,
		    "gpuprof: export: stopped at %llu events (--max-events, shared across the %u "
		    "ranks); select ranks with --ranks or a time with --window\n",
		    (unsigned long long)written, nsel);
	return 0;
}

/* The step directory of a rank's trace under -o: the name of the job directory's step
 * directory the rank file came from (step0 and step0.attempt1 apart), when it is one the
 * plugin makes; else "step_" and its other characters made '_'. Never the header's
 * step (the user's to write: "/../../../home/VICTIM/t" led root's export there). */
static void kineto_step_name(const gp_rank_t *rk, char *out, size_t len)
{
	const char *p = rk->id.path ? rk->id.path : "", *e = strrchr(p, '/'), *b = e;
	while (b && b > p && b[-1] != '/')
		b--;
	size_t n = e && b ? (size_t)(e - b) : 0;
	char name[128];
	snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : 0), b ? b : "");
	if (!strncmp(name, "step", 4) && gp_spool_step_name_ok(name + 4)) {
		snprintf(out, len, "%s", name);
		return;
	}
	snprintf(out, len, "step_%s", !strncmp(name, "step", 4) ? name + 4 : name);
	for (char *q = out + 5; *q; q++)
		if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= 'A' && *q <= 'Z')))
			*q = '_';
}

/* dir/<step>, made if need be and opened, without leaving dir (no link followed); -1. */
static int kineto_step_dir(int odfd, const char *step)
{
	if (mkdirat(odfd, step, 0755) < 0 && errno != EEXIST)
		return -1;
	return openat(odfd, step, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* rank<R>.json in that directory, rank<R>.<k>.json for the k-th other file of the same
 * rank there (a rank's other processes' files, rankR.pidP.gpr; a header's step that is
 * not its directory's): none of this export's replaces another. made: the names given. */
static void kineto_file_name(u64map_t *made, int rank, const char *step, char *out, size_t len)
{
	char key[256];
	uint64_t v;
	for (unsigned k = 0;; k++) {
		if (k)
			snprintf(out, len, "rank%d.%u.json", rank, k);
		else
			snprintf(out, len, "rank%d.json", rank);
		snprintf(key, sizeof(key), "%s/%s", step, out);
		uint64_t h = gp_name_hash(key);
		if (!u64map_get(made, h, &v)) {
			u64map_put(made, h, 1);
			return;
		}
	}
}

/* One Kineto-layout file per selected rank: DIR/stepS/rankR.json (see above). Every
 * name under DIR is ours (kineto_step_name, kineto_file_name), each made relative to
 * DIR's descriptor. */
int gp_export_kineto(const gp_job_t *job, const char *dir, const char *ranklist)
{
	gp_ranks_t sel;
	char err[512], path[4400], step[160], file[64];
	uint64_t t0;
	unsigned nsel = select_ranks(job, ranklist, &sel, &t0), written = 0;
	if (!nsel)
		return -1;
	int odfd = gp_mkdir_p(dir, 0755);
	if (odfd < 0) {
		gp_err("export: %s: %s", dir, strerror(errno));
		return -1;
	}
	rank_data_t d;
	memset(&d, 0, sizeof(d));
	u64map_t made = {0};
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *rk = &job->ranks[i];
		if (ranklist && !gp_ranks_contains(&sel, (uint32_t)rk->id.rank))
			continue;
		if (gp_job_rank_records(job, rk, &d, err, sizeof(err)) < 0) {
			gp_err("export: %s", err);
			continue;
		}
		unsigned world = 0; /* the ranks of this step */
		for (unsigned j = 0; j < job->nranks; j++)
			world += !strcmp(job->ranks[j].id.step, rk->id.step);
		kineto_step_name(rk, step, sizeof(step));
		kineto_file_name(&made, rk->id.rank, step, file, sizeof(file));
		snprintf(path, sizeof(path), "%s/%s/%s", dir, step, file);
		int sdfd = kineto_step_dir(odfd, step);
		if (sdfd < 0) {
			gp_err("export: %s/%s: %s", dir, step,
			       errno == ENOTDIR || errno == ELOOP
			           ? "not a directory of the export's "
			             "(a link is not followed)"
			           : strerror(errno));
			break;
		}
		gp_outfile_t of;
		FILE *out = gp_outfile_open_at(&of, sdfd, file, path);
		close(sdfd);
		if (!out) {
			gp_err("export: %s: %s", path, strerror(errno));
			break;
		}
		fprintf(out,
		        "{\"schemaVersion\": 1, \"displayTimeUnit\": \"ms\", \"distributedInfo\": "
		        "{\"rank\": %d, \"world_size\": %u, \"backend\": \"%s\"}, "
		        "\"deviceProperties\": [",
		        rk->id.rank, world,
		        rk->gpu.comm_ns ? "nccl"
		        : world > 1     ? "unknown"
		                        : "none");
		unsigned ndev = 0;
		for (unsigned g = 0; g < 8; g++) { /* the devices this rank's work ran on */
			bool used = false;
			for (size_t k = 0; k < d.kerns.n && !used; k++)
				used = d.kerns.v[k].device == g;
			if (used)
				fprintf(out, "%s{\"id\": %u}", ndev++ ? ", " : "", g);
		}
		fprintf(out, "], \"traceName\": ");
		gp_json_str(out, rk->id.path);
		fprintf(out,
		        ", \"traceEvents\": [\n{\"ph\": \"M\", \"name\": \"process_name\", "
		        "\"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
		        1000000 + rk->id.rank, rk->id.rank);
		ctx_t c = {.out = out, .pid = 1000000 + rk->id.rank, .d = &d, .kineto = true};
		c.off = (uint64_t)(int64_t)(d.hdr_realtime - d.hdr_monotonic - t0);
		export_rank(&c, (int)i, rk->steps.source);
		u64map_free(&c.tids);
		fprintf(out, "\n]}\n");
		if (gp_outfile_close(&of, true) != 0) {
			gp_err("export: %s: %s", path, strerror(errno));
			break;
		}
		written++;
	}
	gp_rd_free(&d);
	u64map_free(&made);
	close(odfd);
	if (written)
		fprintf(stderr,
		        "gpuprof: export: %u Kineto trace(s) under %s/step*/ (one HTA trace "
		        "directory per step)\n",
		        written, dir);
	return written == nsel ? 0 : -1;
}
