/* Per-rank analysis and job-wide aggregation behind `gpuprof report` and `diff`.
 * Rank files are read one at a time through the common reader; only per-rank summaries
 * and the merged kernel/range tables stay in memory. */
#ifndef GP_JOB_H
#define GP_JOB_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "acctrec.h"
#include "analyze.h"
#include "rank.h"
#include "summary.h"
#include "rankfile.h"
#include "ranks.h"
#include "vec.h"

/* Findings come in tiers, listed in this order: how the job ended, then what costs time
 * (ranked by the time a fix would save), then what costs memory (by the bytes). */
enum gp_finding_kind { GP_F_OUTCOME = 0, GP_F_TIME = 1, GP_F_MEMORY = 2 };

struct gp_rule;
typedef struct gp_finding {
	char id[32];
	const struct gp_rule *rule; /* the rule that made it (findings.h) */
	int kind;                   /* gp_finding_kind */
	int rank;                   /* the rank it is about, -1: the job */
	double score;        /* the saving's share: of step time (time), of peak memory (memory) */
	double saving_ms;    /* time findings: estimated saving per step */
	double saving_pct;   /* ... as % of the step time */
	double saving_bytes; /* memory findings: bytes a fix would free */
	char effect_of[32];  /* id of the finding that causes this one, "" if none */
	char title[256];
	char evidence[1024];
	char threshold[256];
	char fix[512];
} gp_finding_t;

/* How a finding relates to the one that causes it, in words ("" for a cause, "the
 * straggler's own time", "an effect of finding 1"), and whether it carries a
 * saving of its own (an effect adds nothing to its cause's): one wording for every
 * writer; an id never reaches a person's eyes. */
struct gp_job;
const char *gp_finding_relation(const struct gp_job *job, const gp_finding_t *f, char *buf,
                                size_t len);
static inline bool gp_finding_has_saving(const gp_finding_t *f)
{
	return !f->effect_of[0];
}

typedef struct gp_job {
	char dir[4096];
	uid_t owner; /* the job directory's: the only user whose files in it are read */
	char job[32];
	char other_job[32];   /* a rank file's job other than job's (the first found) */
	unsigned other_ranks; /* rank files of jobs other than job */
	unsigned *seen;       /* open addressing over ranks: index + 1, 0 empty (copies) */
	unsigned seen_cap, copies;
	gp_rank_t *ranks;
	unsigned nranks;
	gp_kstat_t *k;
	unsigned nk, kcap;
	/* every kernel's GPU time, all ranks: the whole of each kernel's and kind's share
	 * (gp_job_kernel_share; computed once, read by every writer) */
	uint64_t k_total;
	gp_rstat_t *r;
	unsigned nr, rcap;
	gp_otab_t ops; /* kernel time by operation range, the ranks' merged (attribution.h) */
	/* while loading: name hash -> index + 1 into k and r (10^5 distinct range names
	 * made the linear lookup quadratic); freed before k and r are sorted */
	u64map_t kidx, ridx;
	/* tasks that were launchers (torchrun) whose ranks recorded files of their own:
	 * launcher<T>.gpr, read for how the task ended (analyze.c) */
	struct gp_launcher {
		int task;
		bool has_end;
		int wait_status;
		uint64_t other_processes; /* processes it started that were not recorded */
		char node[64], command[160];
	} * launchers;
	unsigned nlaunchers;
	gp_finding_t f[24];
	unsigned nf;
	unsigned missing_ranks, ntasks_expected;
	/* the batch script, when it ran no GPU work of its own (analyze.c): not a rank */
	struct {
		bool seen, has_end;
		int wait_status;
		uint64_t wall_ns;
		char command[160];
	} batch;
	/* rank files that could not be read: how many, and the first one with its reason */
	unsigned nunreadable;
	char unreadable[768];
	char sacct[2048];
	char sacct_state[64]; /* sacct's State of the job (TIMEOUT, CANCELLED by U, ...), "" unknown
	                       */
	double step_median_ms; /* median over ranks of rank medians (each rank's headline) */
	/* the job's throughput: the slowest rank's mean step period (steps.mean_period_ms; a
	 * synchronous job runs at its pace), and that rank's index (-1: no rank has one) */
	double step_mean_period_ms;
	double steps_per_second; /* 1000 / step_mean_period_ms; 0: none */
	/* the GPUs' busy and idle shares of the job, the summary line's (AdminComment) and
	 * report.json's busy_pct, idle_pct: the time table's busy (communication running
	 * alone is not) and its idle causes, span-weighted over the ranks; measured only where
	 * gpu_span_ns (kernel records: modes with cuda) */
	double busy_pct, idle_pct;
	uint64_t gpu_span_ns;
	int step_period_rank;
	char step_basis[16]; /* what the ranks' headlines measure (gpu, period, mixed) */
	/* ranks with steps left out of step_median_ms: their rank files had corrupt chunks
	 * (records lost: a rank of 20 steps read as 3 moved the median), where a whole rank
	 * has steps */
	unsigned step_median_left_out;
	/* how many steps the ranks that found steps have (the steps line says the job's
	 * count, not rank 0's): the count most of them have (the larger on a tie), the least
	 * and the most, and the ranks whose count is another (ndiffer of them; the first 8
	 * runs of them in differ) */
	/* the job's nodes, in the order of their first rank (the text's node lines,
	 * report.json's nodes): a node's ranks, their median headline step (the median of
	 * its ranks' steps.median_ms) and the largest device-memory peak among them; the
	 * nodes by that median, fastest first, and the median node's (the nearest rank) */
	struct gp_node {
		const char *name; /* its ranks' id.node */
		unsigned ranks;
		double step_median_ms;
		uint64_t peak;
	} * nodes;
	/* node_by_step: the nnodes_timed nodes whose ranks have steps first, then the others
	 * (step_median_ms 0: not measured) */
	unsigned nnodes, *node_by_step, nnodes_timed;
	double node_step_median_ms;
	struct gp_step_counts {
		unsigned ranks, common, min, max, ndiffer, nruns; /* nruns of differ */
		struct { /* runs of consecutive ranks with one count: rank to last */
			int rank, last;
			unsigned count;
		} differ[8];
	} step_counts;
	int steps_from; /* 0 auto, 1 nvtx, 2 profiler, 3 kernels (see rankdata.h) */
	/* text report: ranks listed line by line. With more than GP_TEXT_RANKS ranks and no
	 * list, the tables give distributions across ranks and nodes with outliers named */
	bool have_detail;
	gp_ranks_t detail;
	/* GPU-seconds by cause and the record's other figures (acct.c), once the findings are
	 * made (the first one's id is in it) */
	gp_acct_rec_t acct;
} gp_job_t;
#define GP_TEXT_RANKS 32
/* report.json: every rank an object up to this many ranks; above, the ranks the findings
 * and `--ranks` name (output.c: json_listed), and every rank a row of rank_table */
#define GP_JSON_RANKS 1024

/* A small file of the job directory (a node summary) into buf, NUL-terminated: a regular
 * file of the directory's owner (or the caller's), never through a link nor waiting on a
 * FIFO. Its length, or (size_t)-1. */
size_t gp_read_job_file(const gp_job_t *job, const char *path, char *buf, size_t len);

/* Load every rank file under dir (step* subdirectories), optionally one step only.
 * Each rank comes from its summary where one is valid (GPUPROF_REPORT_SUMMARIES), else
 * from its rank file, read on GPUPROF_REPORT_THREADS threads, its summary then written.
 * steps_from: where steps come from, "auto" (or NULL), "nvtx", "profiler", "kernels". */
/* fn(done, total) after every 256 rank files gp_job_load has merged, and the last, on the
 * calling thread (a progress line); NULL: none. */
void gp_job_set_progress(void (*fn)(unsigned done, unsigned total));
/* Step directory name of the job directory open as topfd (path: its name to say), as
 * the job's readers may read it (gp_job_file_ok: root in another user's job takes only
 * the owner's, never through a link; said when warn), or NULL: errno EPERM when refused so,
 * ENOTDIR when it is no directory. */
DIR *gp_job_step_dir(const gp_job_t *job, int topfd, const char *name, const char *path, bool warn);
int gp_job_load(gp_job_t *job, const char *dir, const char *step, const char *steps_from, char *err,
                size_t errlen);
void gp_job_findings(gp_job_t *job);
/* job->acct from the ranks and the findings (acct.c; gp_job_findings calls it), and its
 * JSON object (report.json "accounting"). */
void gp_job_accounting(gp_job_t *job);
/* A finding's advice in one sentence, for any job (findings.c; gpuprof ledger); NULL for an
 * unknown id */
const char *gp_finding_advice(const char *id);
void gp_acct_json(const gp_job_t *job, FILE *out);
/* The job's kernel time by kind of work (gp_kernel_kind of every kernel's name), most
 * first: n kinds into k[], at most max (the kinds are fewer than 16). */
typedef struct gp_kind {
	const char *kind;
	uint64_t total, calls, kernels;
	double share; /* of all kernels' time (job->k_total), 0 to 1 */
} gp_kind_t;
unsigned gp_job_kernel_kinds(const gp_job_t *job, gp_kind_t *k, unsigned max);
/* Kernel i's share of all kernels' time (0 to 1; 0 where none took any): the one figure
 * the text's and HTML's share %, the CSV's share and report.json's kernels[].share print */
double gp_job_kernel_share(const gp_job_t *job, unsigned i);
/* The records of one of the job's ranks (its file, analysed as the report analysed it:
 * the same steps), into d for an export (reused from rank to rank; gp_rd_free after).
 * 0, or -1 with the reason in err. */
int gp_job_rank_records(const gp_job_t *job, const gp_rank_t *rk, rank_data_t *d, char *err,
                        size_t errlen);
void gp_job_free(gp_job_t *job);

void gp_report_text(const gp_job_t *job, FILE *out);
void gp_report_json(const gp_job_t *job, FILE *out);
/* job.json: who, where, when, which ranks were profiled and how they ended, and the
 * plugin's per-node step summaries (step*\/node*.json) embedded as they are. */
void gp_job_json(const gp_job_t *job, FILE *out);
void gp_report_summary_line(const gp_job_t *job, char *buf, size_t len);
/* PyTorch memory_viz snapshot (pickle protocol 2) of one rank (first of ranks, else the
 * first rank), as torch.cuda.memory._dump_snapshot writes it. */
/* pydir: agent/python (its _gpuprof_merge.py merges PyTorch's own snapshots when the
 * ranks have them); NULL: the CUDA records alone. torch113: the layout PyTorch 1.13's
 * _memory_viz reads (a list of segments, each block with its history) instead of 2.x's
 * dictionary of segments and device_traces. */
int gp_export_memviz(const gp_job_t *job, FILE *out, const char *ranks, const char *pydir,
                     bool torch113);
/* Each rank's PyTorch snapshots that the memviz export could not take (torch.snap_gone),
 * looked at once beside its rank file (the pipeline's pass; a rank read from no file
 * keeps 0). */
void gp_job_snapshots(gp_job_t *job);
/* Those of rank r, as the writers say them: "rank0.torch-exit.pickle (at exit), ..." in
 * buf; how many are gone, and in *named how many the rank file named. */
unsigned gp_snapshots_gone(const gp_rank_t *r, char *buf, size_t len, unsigned *named);
/* What they are, said after "named by the rank file, ": "is gone from beside it", "are
 * gone ...", or, where one is there but not to be taken (a link, not a regular file,
 * another's), "cannot be taken from beside it". */
const char *gp_snapshots_verb(const gp_rank_t *r, unsigned n);
/* Is one of them there but not to be taken (not only gone)? */
bool gp_snapshots_refused(const gp_rank_t *r);
/* Self-contained HTML with SVG plots. */
int gp_report_html(const gp_job_t *job, FILE *out);
/* Chrome/Perfetto trace of the job (re-reads the rank files). */
/* One Kineto-layout trace per rank under dir/stepS/rankR.json, for HTA */
int gp_export_kineto(const gp_job_t *job, const char *dir, const char *ranks);
int gp_export_chrome(const gp_job_t *job, FILE *out, const char *ranks, uint64_t max_events,
                     double win_from_s, double win_to_s);

/* CSV of one of the job's tables (csv.c): "kernels" (every kernel, its whole name),
 * "ranks" (every single value of a rank in report.json) or "findings" (after
 * gp_job_findings). -1: an unknown table or a write error. */
int gp_export_csv(const gp_job_t *job, FILE *out, const char *table);

/* The name of a GP_LOSS_* cause in JSON and in words; NULL past the last. */
const char *gp_loss_key(unsigned cause);
const char *gp_loss_words(unsigned cause);

#endif
