/* PyTorch memory_viz export: the snapshot dictionary that torch.cuda.memory._dump_snapshot
 * pickles, written as pickle protocol 2 by hand, so `python -m torch.cuda._memory_viz
 * trace_plot|segment_plot|trace|segsum` and the memory_viz web page read it for any CUDA
 * program. Every device allocation gpuprof saw (cudaMalloc, cuMemAlloc, pools, VMM) is
 * one segment holding one active block; the trace is segment_alloc + alloc, then
 * free_requested + free_completed + segment_free. The snapshot is taken at the end of the
 * last step (the trace stops there too, so segments and trace agree), frames come from
 * the allocation call stacks ("symbol+offset" in "library").
 *
 * Where the PyTorch integration wrote the caching allocator's own snapshots beside the
 * rank files (rankR.torch-{exit,oom,peak}.pickle, agent/python), those are exported
 * instead: every selected rank, a device per rank and GPU, with PyTorch's real segments,
 * blocks and trace, merged by agent/python/_gpuprof_merge.py under plain python3 (its
 * unpickler refuses every global: the files are the user's).
 *
 * That is PyTorch 2's layout (torch.cuda.memory._snapshot(): a dictionary of "segments"
 * and "device_traces"). PyTorch 1.13's _memory_viz reads torch.cuda.memory_snapshot()'s
 * list of segments instead, a block's call stack in its "history" ({addr, real_size,
 * frames}); its stats, segments, memory and compare fail on a dictionary. With torch113
 * that list is written (no trace: 1.13 has none to read). */
#include "config.h"
#include "log.h"
#include "job.h"
#include "rankdata.h"
#include "event.h"
#include "path.h"
#include "rankfile.h"
#include "ranks.h"
#include "symbolize.h"
#include "symtab.h"
#include "vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- pickle protocol 2 ---- */
static void p_op(FILE *o, int c)
{
	fputc(c, o);
}
static void p_str(FILE *o, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	fputc('X', o); /* BINUNICODE */
	fwrite(&n, 4, 1, o);
	fwrite(s, 1, n, o);
}
static void p_int(FILE *o, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX) {
		int32_t x = (int32_t)v;
		fputc('J', o); /* BININT */
		fwrite(&x, 4, 1, o);
		return;
	}
	uint8_t b[9];
	int n = 0;
	uint64_t u = (uint64_t)v;
	do { /* LONG1: little-endian two's complement, minimal length */
		b[n++] = (uint8_t)u;
		u = (uint64_t)((int64_t)u >> 8);
	} while (!((u == 0 && !(b[n - 1] & 0x80)) || (u == UINT64_MAX && (b[n - 1] & 0x80))));
	fputc(0x8a, o);
	fputc(n, o);
	fwrite(b, 1, (size_t)n, o);
}
static void p_key_str(FILE *o, const char *k, const char *v)
{
	p_str(o, k);
	p_str(o, v);
}
static void p_key_int(FILE *o, const char *k, int64_t v)
{
	p_str(o, k);
	p_int(o, v);
}

/* A list of one dictionary, opened (its items follow), and closed */
static void p_open1(FILE *o)
{
	p_op(o, ']');
	p_op(o, '(');
	p_op(o, '}');
	p_op(o, '(');
}
static void p_close1(FILE *o)
{
	p_op(o, 'u');
	p_op(o, 'e');
}

/* Python's pickler appends at most 1 000 items per APPENDS; MemoryViz.js spreads each
 * batch into push(...), which throws RangeError in V8 above about 150 000. */
#define APPENDS_BATCH 1000
static void p_batch(FILE *o, size_t *n)
{
	if (++*n % APPENDS_BATCH == 0) {
		p_op(o, 'e');
		p_op(o, '(');
	}
}

static bool python_frame(const char *t)
{
	return strstr(t, " [python]") != NULL;
}

/* Frames innermost first, as PyTorch writes them: the collector's stack holds the
 * Python frames (innermost first) before the native ones (innermost first), and the
 * native ones (the CUDA runtime under the allocating call) are the inner ones. */
/* native frames symbolised to file:line (symbolize.c), and those that could be */
typedef struct natives {
	gp_symbolizer_t *sym;
	u64map_t seen; /* pc + 1: counted once */
	unsigned frames, lines, nomodule;
} natives_t;

static void p_frames(FILE *o, const gp_symtab_t *t, uint32_t stack, natives_t *nat)
{
	const uint64_t *pcs;
	size_t n = gp_symtab_stack(t, stack, &pcs);
	p_op(o, ']');
	if (!n)
		return;
	p_op(o, '(');
	for (size_t k = 0; k < 2 * n; k++) {
		size_t i = k % n;
		const char *f = gp_symtab_frame(t, pcs[i]);
		if (gp_symtab_profiler_frame(f) || (k < n) == python_frame(f))
			continue; /* native ones in the first pass, Python ones in the second */
		char name[512], file[256];
		int line = 0, fl = 0, nl = 0;
		const char *lp = strrchr(f, '(');
		if (sscanf(f, "%255[^:]:%d %n%*s [python]%n", file, &line, &fl, &nl) == 2 && nl) {
			/* a Python frame of the collector: "file.py:LINE function [python]" */
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(f + fl, " "), f + fl);
		} else {
			line = 0;
			snprintf(name, sizeof(name), "%.*s",
			         lp && lp > f ? (int)(lp - f - 1) : (int)strlen(f), f);
			snprintf(file, sizeof(file), "%.*s", lp ? (int)strcspn(lp + 1, ")") : 1,
			         lp ? lp + 1 : "?");
			/* the module's line table, where the file recorded the module */
			const char *mod;
			uint64_t off, seen;
			char fn[512], src[256];
			int ln = 0;
			bool known = gp_symtab_frame_module(t, pcs[i], &mod, &off);
			if (known && gp_symbolize(nat->sym, mod, off, true, fn, sizeof(fn), src,
			                          sizeof(src), &ln)) {
				if (fn[0])
					snprintf(name, sizeof(name), "%s", fn);
				if (src[0]) {
					snprintf(file, sizeof(file), "%s", src);
					line = ln;
				}
			}
			if (!u64map_get(&nat->seen, pcs[i] + 1, &seen)) {
				u64map_put(&nat->seen, pcs[i] + 1, 1);
				nat->frames++;
				nat->lines += line > 0;
				nat->nomodule += !known;
			}
		}
		p_op(o, '}');
		p_op(o, '(');
		p_key_str(o, "filename", file);
		p_key_int(o, "line", line);
		p_key_str(o, "name", name);
		p_op(o, 'u');
	}
	p_op(o, 'e');
}

typedef struct {
	uint64_t ts, addr, bytes, stream;
	uint32_t stack;
	uint8_t dev, is_free;
} mev_t;

/* The stream PyTorch's snapshots give a segment or an event (an int: the cudaStream_t,
 * 0 the default stream): CUPTI's memory records give 2^32-1 where the stream is not
 * known (a cudaMalloc belongs to none), which _memory_viz would name stream_4294967295,
 * a stream no program has; PyTorch's own allocations without a stream are the default
 * stream's, 0. */
static int64_t viz_stream(uint64_t stream)
{
	return stream == UINT32_MAX ? 0 : (int64_t)stream;
}

/* A snapshot PyTorch left for rank r: which 0 at exit, 1 at its OOM, 2 at its peak (the
 * merge takes the first of them whose trace holds events: the integration records the
 * allocator's history in windows, and PyTorch empties the trace when it stops, so the exit
 * one often has none). The name comes from the rank file, so only a plain "rank*.pickle"
 * beside it is taken, and it is opened here, not by name in the merge: a regular file of
 * the job directory's owner, never through a link (root's export copied a root-only file
 * a user's link named) nor waiting on a FIFO. The descriptor (O_CLOEXEC), or -1. */
static int torch_snapshot(const gp_job_t *job, const gp_rank_t *r, int which)
{
	char path[4400];
	const struct gp_torch *t = &r->torch;
	const gp_text_t *nm = which == 0   ? &t->snap_exit
	                      : which == 1 ? &t->snap_oom
	                                   : &t->snap_peak;
	const char *name = nm->s ? gp_txt(*nm) : "";
	size_t n = strlen(name);
	if (!n || strchr(name, '/') || strncmp(name, "rank", 4) || n < 8 ||
	    strcmp(name + n - 7, ".pickle") || !r->id.path)
		return -1;
	const char *slash = strrchr(r->id.path, '/');
	int dl = slash ? (int)(slash - r->id.path) : 1;
	snprintf(path, sizeof(path), "%.*s/%s", dl, slash ? r->id.path : ".", name);
	return gp_open_regular(AT_FDCWD, path, job->owner, NULL);
}

void gp_job_snapshots(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++) {
		gp_rank_t *r = &job->ranks[i];
		const gp_text_t *nm[] = {&r->torch.snap_exit, &r->torch.snap_oom,
		                         &r->torch.snap_peak};
		r->torch.snap_gone = 0;
		for (int k = 0; k < 3 && r->id.path; k++) {
			errno = ENOENT; /* a name torch_snapshot refuses: none of the rank file's */
			int fd = nm[k]->s ? torch_snapshot(job, r, k) : -2;
			if (fd >= 0)
				close(fd);
			else if (fd == -1)
				r->torch.snap_gone |= 1u << k, r->torch.snap_errno[k] = errno;
		}
	}
}

unsigned gp_snapshots_gone(const gp_rank_t *r, char *buf, size_t len, unsigned *named)
{
	static const char *const when[] = {"at exit", "at its OOM", "at its peak"};
	const gp_text_t *nm[] = {&r->torch.snap_exit, &r->torch.snap_oom, &r->torch.snap_peak};
	unsigned n = 0;
	size_t at = 0;
	*named = 0;
	if (len)
		buf[0] = 0;
	for (unsigned k = 0; k < 3; k++) {
		*named += nm[k]->s != NULL;
		if (!(r->torch.snap_gone & 1u << k) || !nm[k]->s)
			continue;
		int e = r->torch.snap_errno[k];
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s (%s%s%s)", n ? ", " : "",
			                       gp_txt(*nm[k]), when[k], e == ENOENT ? "" : "; ",
			                       e == ENOENT   ? ""
			                       : e == ELOOP  ? "a symbolic link"
			                       : e == EINVAL ? "not a regular file"
			                       : e == EPERM  ? "not the job owner's"
			                                     : strerror(e));
		n++;
	}
	return n;
}

bool gp_snapshots_refused(const gp_rank_t *r)
{
	for (unsigned k = 0; k < 3; k++)
		if (r->torch.snap_gone & 1u << k && r->torch.snap_errno[k] != ENOENT)
			return true;
	return false;
}

const char *gp_snapshots_verb(const gp_rank_t *r, unsigned n)
{
	return gp_snapshots_refused(r) ? "cannot be taken from beside it"
	       : n > 1                 ? "are gone from beside it"
	                               : "is gone from beside it";
}

/* Merge the selected ranks' PyTorch snapshots into o. 0: done, 1: none there, -1: the
 * merge failed (said on stderr). */
static int torch_snapshots(const gp_job_t *job, FILE *o, const gp_ranks_t *sel, bool all,
                           const char *pydir, bool torch113)
{
	char script[4200];
	snprintf(script, sizeof(script), "%s/_gpuprof_merge.py", pydir ? pydir : "");
	if (!pydir || access(script, R_OK) != 0)
		return 1;
	/* python3 -I script --layout=L, then one argument per rank */
	enum { FIXED = 4 };
	char **argv = calloc(3 * job->nranks + FIXED + 1, sizeof(char *));
	int *fds = calloc(3 * job->nranks + 1, sizeof(int));
	unsigned n = 0, without = 0, unopened = 0;
	if (!argv || !fds) {
		free(argv);
		free(fds);
		return -1;
	}
	argv[n++] = "python3";
	argv[n++] = "-I";
	argv[n++] = script;
	argv[n++] = torch113 ? "--layout=1.13" : "--layout=2";
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!all && !gp_ranks_contains(sel, (uint32_t)r->id.rank))
			continue;
		unsigned had = n;
		for (int which = 0; which < 3; which++) {
			static const char *const when[] = {"exit", "oom", "peak"};
			int fd = torch_snapshot(job, r, which);
			if (fd < 0)
				continue;
			/* the merge reads the descriptor opened here (/proc/self/fd/N reopens
			 * that file, not the name); one label per rank, its candidates in order */
			size_t need = 128;
			if (!(argv[n] = malloc(need))) {
				close(fd);
				break;
			}
			fds[n - FIXED] = fd;
			snprintf(argv[n++], need, "rank %d step %.32s@%s=/proc/self/fd/%d",
			         r->id.rank, r->id.step, when[which], fd);
		}
		without += n == had;
		unopened += n == had &&
		            (r->torch.snap_exit.s || r->torch.snap_oom.s || r->torch.snap_peak.s);
	}
	if (n == FIXED && unopened) /* named, none could be opened: said, not silent */
		gp_err("export: the PyTorch snapshots %u selected rank(s) named are gone or not "
		       "regular files of the job's owner (the report's data quality names them): "
		       "CUDA's segments instead",
		       unopened);
	int rc = 1;
	if (n > FIXED && without) /* said, not silently left out */
		fprintf(
		    stderr,
		    "gpuprof: export: %u selected rank(s) left no PyTorch snapshot and are not in "
		    "the memviz file\n",
		    without);
	if (n > FIXED) {
		int fd[2];
		fflush(o);
		if (pipe(fd) == 0) {
			pid_t pid = fork();
			if (pid == 0) {
				dup2(fd[1], 1);
				close(fd[0]);
				close(fd[1]);
				for (unsigned i = FIXED; i < n; i++) /* the snapshots, for python */
					fcntl(fds[i - FIXED], F_SETFD, 0);
				execvp("python3", argv);
				gp_err("export: python3: %s", strerror(errno));
				_exit(127);
			}
			close(fd[1]);
			char buf[65536];
			ssize_t k;
			size_t total = 0;
			while ((k = read(fd[0], buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
				if (k > 0)
					total += fwrite(buf, 1, (size_t)k, o);
			close(fd[0]);
			int st = 0;
			while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && total)
				rc = 0;
			else if (pid > 0 && WIFEXITED(st) &&
			         (WEXITSTATUS(st) == 127 || WEXITSTATUS(st) == 3))
				rc = 1; /* no python3, or no snapshot it could read (said):
				         * the CUDA records' export below */
			else
				rc = -1;
		}
	}
	for (unsigned i = FIXED; i < n; i++) {
		free(argv[i]);
		close(fds[i - FIXED]);
	}
	free(argv);
	free(fds);
	return rc;
}

/* One rank's allocations up to its snapshot, with frees paired to their allocation. */
typedef struct mrank {
	const gp_rank_t *r;
	rank_data_t d;
	VEC(mev_t) ev;
	u64map_t live; /* addr -> index+1 into ev of the live alloc */
	uint64_t t0;
	unsigned dev0, ndev; /* its devices are dev0 .. dev0+ndev-1 in the snapshot */
	uint8_t devmap[256]; /* CUDA device -> its index among the rank's + 1 */
	uint8_t devs[256];   /* and back */
} mrank_t;

static int mrank_load(mrank_t *mr, const gp_job_t *job, const gp_rank_t *rk)
{
	char err[256];
	mr->r = rk;
	/* the report's analysis: the same records, the impossible ones left out, sorted */
	if (gp_job_rank_records(job, rk, &mr->d, err, sizeof(err)) < 0) {
		gp_err("export: %s", err);
		return -1;
	}
	rank_data_t *d = &mr->d;
	mr->t0 = d->start_ts;
	for (size_t i = 0; i < d->mems.n; i++) {
		const mem_t *a = &d->mems.v[i];
		uint64_t ai = 0, li;
		if ((a->kind != 3 && a->kind != 5) ||
		    a->ts > rk->steps.snapshot_ns) /* device, managed */
			continue;
		u64map_get(&d->alloc_api, a->corr, &ai); /* the allocating call, with its stack */
		mev_t m = {.ts = a->ts,
		           .addr = a->addr,
		           .bytes = a->bytes,
		           .stream = a->stream,
		           .stack = ai ? d->apis.v[ai - 1].stack : 0,
		           .dev = a->device,
		           .is_free = a->is_free};
		if (m.is_free) {
			if (!u64map_get(&mr->live, m.addr, &li) || !li)
				continue; /* freed before we saw it: nothing to pair */
			m.stack = mr->ev.v[li - 1].stack;
			m.bytes = mr->ev.v[li - 1].bytes;
			u64map_put(&mr->live, m.addr, 0);
		}
		VEC_PUSH(mr->ev, m);
		if (!m.is_free)
			u64map_put(&mr->live, m.addr, mr->ev.n);
		if (!mr->devmap[m.dev]) { /* the devices it used, in the order first used */
			mr->devs[mr->ndev] = m.dev;
			mr->devmap[m.dev] = (uint8_t)++mr->ndev;
		}
	}
	return 0;
}

static void mrank_free(mrank_t *mr)
{
	u64map_free(&mr->live);
	VEC_FREE(mr->ev);
	gp_rd_free(&mr->d);
}

/* The segments live at each rank's snapshot: one block each, as cudaMalloc gave it.
 * torch113: 1.13's list (the caller writes no key before it), the block's stack in its
 * history. */
static void p_segments(FILE *o, mrank_t *mr, unsigned nr, natives_t *nat, bool torch113)
{
	size_t nseg = 0;
	if (!torch113)
		p_str(o, "segments");
	p_op(o, ']');
	p_op(o, '(');
	for (unsigned k = 0; k < nr; k++)
		for (size_t i = 0; i < mr[k].live.cap; i++) {
			if (!mr[k].live.k[i] || !mr[k].live.v[i])
				continue;
			const mev_t *m = &mr[k].ev.v[mr[k].live.v[i] - 1];
			const gp_symtab_t *sym = &mr[k].d.sym;
			p_op(o, '}');
			p_op(o, '(');
			p_key_int(o, "device", mr[k].dev0 + mr[k].devmap[m->dev] - 1);
			p_key_int(o, "address", (int64_t)m->addr);
			p_key_int(o, "total_size", (int64_t)m->bytes);
			p_key_int(o, "allocated_size", (int64_t)m->bytes);
			p_key_int(o, "active_size", (int64_t)m->bytes);
			p_key_int(o, "requested_size", (int64_t)m->bytes);
			p_key_int(o, "stream", viz_stream(m->stream));
			p_key_str(o, "segment_type", m->bytes <= (1 << 20) ? "small" : "large");
			p_str(o, "segment_pool_id");
			p_op(o, '(');
			p_int(o, 0);
			p_int(o, 0);
			p_op(o, 't'); /* TUPLE */
			p_str(o, "is_expandable");
			p_op(o, 0x89); /* False */
			p_str(o, "frames");
			p_frames(o, sym, m->stack, nat);
			p_str(o, "blocks");
			p_open1(o);
			p_key_int(o, "address", (int64_t)m->addr);
			p_key_int(o, "size", (int64_t)m->bytes);
			p_key_int(o, "requested_size", (int64_t)m->bytes);
			p_key_str(o, "state", "active_allocated");
			if (torch113) { /* one allocation made the block */
				p_str(o, "history");
				p_open1(o);
				p_key_int(o, "addr", (int64_t)m->addr);
				p_key_int(o, "real_size", (int64_t)m->bytes);
			}
			p_str(o, "frames");
			p_frames(o, sym, m->stack, nat);
			if (torch113)
				p_close1(o);
			p_close1(o);
			p_op(o, 'u');
			p_batch(o, &nseg);
		}
	p_op(o, 'e');
}

/* device_traces: one list per device of each rank, in the snapshot's device order */
static void p_traces(FILE *o, mrank_t *mr, unsigned nr, natives_t *nat)
{
	static const char *alloc_act[] = {"segment_alloc", "alloc"};
	static const char *free_act[] = {"free_requested", "free_completed", "segment_free"};
	p_str(o, "device_traces");
	p_op(o, ']');
	p_op(o, '(');
	for (unsigned k = 0; k < nr; k++)
		for (unsigned dv = 0; dv < mr[k].ndev; dv++) {
			size_t nitem = 0;
			p_op(o, ']');
			p_op(o, '(');
			for (size_t i = 0; i < mr[k].ev.n; i++) {
				const mev_t *m = &mr[k].ev.v[i];
				const char **acts = m->is_free ? free_act : alloc_act;
				int nact = m->is_free ? 3 : 2;
				uint64_t t0 = mr[k].t0;
				if (mr[k].devmap[m->dev] != dv + 1)
					continue;
				for (int a = 0; a < nact; a++) {
					p_op(o, '}');
					p_op(o, '(');
					p_key_str(o, "action", acts[a]);
					p_key_int(o, "addr", (int64_t)m->addr);
					p_key_int(o, "size", (int64_t)m->bytes);
					p_key_int(o, "stream", viz_stream(m->stream));
					p_key_int(o, "time_us",
					          (int64_t)((m->ts - (t0 && t0 < m->ts ? t0 : 0)) /
					                    1000));
					p_str(o, "frames");
					p_frames(o, &mr[k].d.sym, m->stack, nat);
					p_op(o, 'u');
					p_batch(o, &nitem);
				}
			}
			p_op(o, 'e');
		}
	p_op(o, 'e');
}

int gp_export_memviz(const gp_job_t *job, FILE *o, const char *ranklist, const char *pydir,
                     bool torch113)
{
	gp_ranks_t sel;
	char err[256];
	if (ranklist && gp_ranks_parse(ranklist, &sel, err, sizeof(err)) < 0) {
		gp_err("export: --ranks: %s", err);
		return -1;
	}
	int t = torch_snapshots(job, o, &sel, !ranklist, pydir, torch113);
	if (t <= 0)
		return t;
	/* every selected rank: its devices in one snapshot, after the previous rank's, as
	 * the PyTorch snapshots are merged (one device per rank) */
	mrank_t *mr = calloc(job->nranks ? job->nranks : 1, sizeof(*mr));
	unsigned nr = 0, ndev = 0, empty = 0;
	int rc = -1;
	natives_t nat = {.sym = gp_symbolizer_new()};
	if (!mr)
		goto out;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *rk = &job->ranks[i];
		if (ranklist && !gp_ranks_contains(&sel, (uint32_t)rk->id.rank))
			continue;
		if (mrank_load(&mr[nr], job, rk) < 0) {
			mrank_free(&mr[nr]);
			goto out;
		}
		if (!mr[nr].ev.n) { /* said below: not a device of the snapshot */
			empty++;
			mrank_free(&mr[nr]);
			memset(&mr[nr], 0, sizeof(mr[nr]));
			continue;
		}
		mr[nr].dev0 = ndev;
		ndev += mr[nr].ndev;
		nr++;
	}
	if (!nr && !empty) {
		gp_err("export: --ranks selects none of the job's ranks");
		goto out;
	}
	if (!nr) { /* nothing is written: an empty snapshot would read as "no memory" */
		fprintf(stderr,
		        "gpuprof: export: the selected ranks have no device memory records (a run "
		        "without mode mem, or before the first allocation); no snapshot written\n");
		goto out;
	}
	for (unsigned k = 0; k < nr && ndev > 1; k++)
		for (unsigned j = 0; j < mr[k].ndev; j++)
			gp_err("export: device %u = rank %d step %s cuda:%u", mr[k].dev0 + j,
			       mr[k].r->id.rank, mr[k].r->id.step, mr[k].devs[j]);
	if (empty)
		fprintf(
		    stderr,
		    "gpuprof: export: %u selected rank(s) have no device memory records and are "
		    "not in the snapshot\n",
		    empty);
	p_op(o, 0x80);
	p_op(o, 2);
	if (torch113) {
		p_segments(o, mr, nr, &nat, true);
	} else {
		p_op(o, '}');
		p_op(o, '(');
		p_segments(o, mr, nr, &nat, false);
		p_traces(o, mr, nr, &nat);
		p_str(o, "allocator_settings");
		p_op(o, '}');
		p_op(o, 'u');
	}
	p_op(o, '.');
	fprintf(stderr, torch113
	                    ? "gpuprof: export: memviz in PyTorch 1.13's layout (python -m "
	                      "torch.cuda._memory_viz stats|segments|memory of 1.13; no trace)\n"
	                    : "gpuprof: export: memviz in PyTorch 2's layout (the memory_viz web "
	                      "page, python -m torch.cuda._memory_viz of PyTorch 2.0 and later; "
	                      "--torch=1.13 for 1.13)\n");
	if (nat.frames)
		gp_err("export: %u of %u native frames symbolised to file:line%s%s", nat.lines,
		       nat.frames,
		       !gp_symbolizer_available() ? " (built without libdw: function+offset only)"
		       : nat.nomodule == nat.frames
		           ? " (the rank file names no modules: an older collector)"
		           : " (from the modules' debug information where this runs)",
		       nat.nomodule && nat.nomodule < nat.frames ? "; some frames name no module"
		                                                 : "");
	rc = ferror(o) ? -1 : 0;
out:
	for (unsigned k = 0; mr && k < nr; k++)
		mrank_free(&mr[k]);
	free(mr);
	gp_symbolizer_free(nat.sym);
	u64map_free(&nat.seen);
	return rc;
}
