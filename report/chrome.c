/* Chrome/Perfetto trace export: one process per rank, NVTX as slices on CPU threads, a
 * track per GPU stream, flow events from each launch call to its kernel (cat "ac2g", as
 * HolisticTraceAnalysis expects), device memory and NVML as counters. */
#include "config.h"
#include "analyze.h"
#include "event.h"
#include "rankfile.h"
#include "ranks.h"
#include "symtab.h"
#include "vec.h"

#include <stdlib.h>
#include <string.h>

/* Names may be defined after first use (another thread interned them): read the rank
 * file's symbols first, then its events. */
static void load_symbols(const char *path, gp_symtab_t *t)
{
	char err[256];
	gp_rf_reader_t *r;
	gp_event_t e;
	if (gp_rf_open(path, &r, err, sizeof(err)) < 0)
		return;
	while (gp_rf_next(r, &e) == 1)
		gp_symtab_feed(t, &e);
	gp_rf_close(r);
}

static const char *lookup(const gp_symtab_t *t, uint32_t id)
{
	const char *s = gp_symtab_str(t, id);
	return s ? s : "";
}

int gp_export_chrome(const gp_job_t *job, FILE *out, const char *ranklist, uint64_t max_events,
                     double win_from_s, double win_to_s)
{
	gp_ranks_t sel;
	char err[256];
	uint64_t t0 = UINT64_MAX, written = 0;
	bool first = true;
	if (ranklist && gp_ranks_parse(ranklist, &sel, err, sizeof(err)) < 0) {
		fprintf(stderr, "gpuprof: export: --ranks: %s\n", err);
		return -1;
	}
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].t0_realtime_ns && job->ranks[i].t0_realtime_ns < t0)
			t0 = job->ranks[i].t0_realtime_ns;
	fprintf(
	    out,
	    "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"gpuprof " PACKAGE_VERSION
	    "\", \"job\": ");
	gp_json_str(out, job->job);
	fprintf(out, "}, \"traceEvents\": [\n");
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *rk = &job->ranks[i];
		gp_rf_reader_t *r;
		gp_event_t e;
		gp_symtab_t st;
		memset(&st, 0, sizeof(st));
		if (ranklist && !gp_ranks_contains(&sel, (uint32_t)rk->rank))
			continue;
		load_symbols(rk->path, &st);
		if (gp_rf_open(rk->path, &r, err, sizeof(err)) < 0)
			continue;
		const char *h = gp_rf_header(r, "realtime_ns");
		uint64_t rt = h ? strtoull(h, NULL, 10) : 0;
		h = gp_rf_header(r, "monotonic_ns");
		uint64_t mono = h ? strtoull(h, NULL, 10) : 0;
		int pid = rk->rank;
		fprintf(out,
		        "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": "
		        "{\"name\": \"rank %d (%s)\"}},\n"
		        "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, \"args\": "
		        "{\"sort_index\": %d}}",
		        first ? "" : ",\n", pid, rk->rank, rk->node, pid, rk->rank);
		fprintf(out,
		        ",\n{\"ph\": \"M\", \"name\": \"distributedInfo\", \"pid\": %d, \"args\": "
		        "{\"rank\": %d}}",
		        pid, rk->rank);
		first = false;
		int64_t live = 0;
		u64map_t streams = {0};
#define TS(x) (((double)((x)-mono + rt) - (double)t0) / 1000.0)
		while (gp_rf_next(r, &e) == 1 && (!max_events || written < max_events)) {
			/* a time window (seconds from the job's first event) keeps traces small;
			 * slices that straddle its edges are kept whole */
			if (win_to_s > win_from_s && e.ts &&
			    (e.type == GP_EV_NVTX_MARK || e.type == GP_EV_KERNEL ||
			     e.type == GP_EV_MEMCPY || e.type == GP_EV_MEMSET ||
			     e.type == GP_EV_API || e.type == GP_EV_ALLOC || e.type == GP_EV_FREE ||
			     e.type == GP_EV_NVML)) {
				double t = TS(e.ts) / 1e6, d = (double)e.a / 1e9;
				if (e.type == GP_EV_ALLOC || e.type == GP_EV_FREE ||
				    e.type == GP_EV_NVML || e.type == GP_EV_NVTX_MARK)
					d = 0;
				if (t + d < win_from_s || t > win_to_s)
					continue;
			}
			switch (e.type) {
			case GP_EV_NVTX_PUSH:
				fprintf(out,
				        ",\n{\"ph\": \"B\", \"cat\": \"nvtx\", \"pid\": %d, "
				        "\"tid\": %u, "
				        "\"ts\": %.3f, \"name\": ",
				        pid, e.tid, TS(e.ts));
				gp_json_str(out, lookup(&st, (uint32_t)e.a));
				fputc('}', out);
				break;
			case GP_EV_NVTX_POP:
				fprintf(
				    out,
				    ",\n{\"ph\": \"E\", \"pid\": %d, \"tid\": %u, \"ts\": %.3f}",
				    pid, e.tid, TS(e.ts));
				break;
			case GP_EV_NVTX_MARK:
				if (e.u8)
					break;
				fprintf(out,
				        ",\n{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"nvtx\", "
				        "\"pid\": %d, "
				        "\"tid\": %u, \"ts\": %.3f, \"name\": ",
				        pid, e.tid, TS(e.ts));
				gp_json_str(out, lookup(&st, (uint32_t)e.a));
				fputc('}', out);
				break;
			case GP_EV_STREAM_NAME: /* nvtxNameCudaStream: the user's name */
				if (e.u8 != 1)
					break; /* a handle CUPTI did not map: no track to name */
				u64map_put(&streams, 1000000 + e.a, 1);
				fprintf(
				    out,
				    ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
				    "\"tid\": %llu, \"args\": {\"name\": ",
				    pid, (unsigned long long)(1000000 + e.a));
				{
					char nm[300];
					snprintf(nm, sizeof(nm), "stream %llu: %s",
					         (unsigned long long)e.a,
					         lookup(&st, (uint32_t)e.b));
					gp_json_str(out, nm);
				}
				fputs("}}", out);
				break;
			case GP_EV_KERNEL:
			case GP_EV_MEMCPY:
			case GP_EV_MEMSET: {
				uint64_t tid = 1000000 + e.d, dummy;
				if (!u64map_get(&streams, tid, &dummy)) {
					u64map_put(&streams, tid, 1);
					fprintf(out,
					        ",\n{\"ph\": \"M\", \"name\": \"thread_name\", "
					        "\"pid\": %d, "
					        "\"tid\": %llu, \"args\": {\"name\": \"GPU %u "
					        "stream %llu\"}}",
					        pid, (unsigned long long)tid, e.u8,
					        (unsigned long long)e.d);
				}
				fprintf(out,
				        ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"pid\": %d, \"tid\": "
				        "%llu, "
				        "\"ts\": %.3f, \"dur\": %.3f, \"name\": ",
				        e.type == GP_EV_KERNEL   ? "kernel"
				        : e.type == GP_EV_MEMCPY ? "gpu_memcpy"
				                                 : "gpu_memset",
				        pid, (unsigned long long)tid, TS(e.ts), e.a / 1000.0);
				gp_json_str(out, e.type == GP_EV_KERNEL ? lookup(&st, (uint32_t)e.b)
				                 : e.type == GP_EV_MEMCPY ? "Memcpy"
				                                          : "Memset");
				fprintf(out,
				        ", \"args\": {\"correlation\": %llu, \"stream\": %llu, "
				        "\"device\": %u%s}}",
				        (unsigned long long)e.c, (unsigned long long)e.d, e.u8,
				        e.type == GP_EV_KERNEL ? "" : "");
				fprintf(
				    out,
				    ",\n{\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"ac2g\", \"id\": "
				    "%llu, "
				    "\"pid\": %d, \"tid\": %llu, \"ts\": %.3f, \"name\": \"ac2g\"}",
				    (unsigned long long)e.c, pid, (unsigned long long)tid,
				    TS(e.ts));
				break;
			}
			case GP_EV_API:
				if (GP_API_CLASS(e.u16) == GP_API_ALLOC_STACK)
					break; /* allocation stack marker, not a timed call */
				fprintf(
				    out,
				    ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"pid\": %d, "
				    "\"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, \"name\": \"%s "
				    "%llu\", "
				    "\"args\": {\"correlation\": %llu, \"cbid\": %llu}}",
				    pid, e.tid, TS(e.ts), e.a / 1000.0, e.u8 == 1 ? "cuda" : "cu",
				    (unsigned long long)e.b, (unsigned long long)e.c,
				    (unsigned long long)e.b);
				fprintf(out,
				        ",\n{\"ph\": \"s\", \"cat\": \"ac2g\", \"id\": %llu, "
				        "\"pid\": %d, "
				        "\"tid\": %u, \"ts\": %.3f, \"name\": \"ac2g\"}",
				        (unsigned long long)e.c, pid, e.tid, TS(e.ts));
				break;
			case GP_EV_ALLOC:
			case GP_EV_FREE:
				if (e.u16 == 6)
					break;
				live += e.type == GP_EV_ALLOC ? (int64_t)e.b : -(int64_t)e.b;
				fprintf(out,
				        ",\n{\"ph\": \"C\", \"pid\": %d, \"ts\": %.3f, \"name\": "
				        "\"device memory\", \"args\": {\"MiB\": %.3f}}",
				        pid, TS(e.ts), live / 1048576.0);
				break;
			case GP_EV_NVML:
				fprintf(out,
				        ",\n{\"ph\": \"C\", \"pid\": %d, \"ts\": %.3f, \"name\": "
				        "\"NVML GPU "
				        "%u\", \"args\": {\"util %%\": %llu, \"used MiB\": %.1f, "
				        "\"power W\": "
				        "%.1f}}",
				        pid, TS(e.ts), e.u8, (unsigned long long)(e.a & 0xff),
				        e.b / 1048576.0, (e.c & 0xffffffffu) / 1000.0);
				break;
			default:
				continue;
			}
			written++;
		}
#undef TS
		gp_rf_close(r);
		u64map_free(&streams);
		gp_symtab_free(&st);
	}
	fprintf(out, "\n]}\n");
	if (max_events && written >= max_events)
		fprintf(stderr,
		        "gpuprof: export: stopped at %llu events (--max-events); select "
		        "ranks with --ranks\n",
		        (unsigned long long)written);
	return 0;
}
