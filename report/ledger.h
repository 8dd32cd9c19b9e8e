/* gpuprof ledger: the cluster's GPU-hours by cause over a time range, from the accounting
 * database's job records (sacct) or a file of them. ledger.c reads and sums them,
 * ledger_out.c writes the formats, cmd_ledger.c is the command. Every cause's figure is
 * the sum of the jobs' accounting records (report.json "accounting", acctrec.h), which
 * only root or SlurmUser can write (SystemComment); what the records do not cover of a
 * job's allocation is the ledger's own, from Slurm's AllocTRES and ElapsedRaw: GPUs the
 * job held that no rank ran kernels on (unused), the rest unprofiled. */
#ifndef GP_LEDGER_H
#define GP_LEDGER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "acctrec.h"
#include "job.h"
#include "siteconf.h"

/* sacct's fields, in the order --print-fields gives them (a file with sacct's header may
 * hold them in any order, and more) */
#define GP_LD_FIELDS                                                                               \
	"JobID,User,Account,Partition,JobName,NodeList,State,End,ElapsedRaw,AllocTRES,"            \
	"SystemComment"

enum { GP_BY_USER, GP_BY_ACCOUNT, GP_BY_PARTITION, GP_BY_NAME, GP_BY_NODE, GP_NBY };
extern const char *const gp_by_name[GP_NBY];

/* Allocations that ended badly, by how (sacct's State; every end state but COMPLETED has
 * a class: ledger.c's end_kind, doc/admin.md) */
enum { GP_END_FAILED, GP_END_OOM, GP_END_TIMEOUT, GP_END_CANCELLED, GP_END_PREEMPTED, GP_NEND };
extern const char *const gp_end_name[GP_NEND];

/* GPU-seconds of a set of jobs */
typedef struct gp_ld_sums {
	uint64_t jobs, profiled, refused; /* GPU jobs; with a record; with a refused one */
	uint64_t scaled; /* records that claimed more GPU-seconds than Slurm allocated */
	double alloc_s;
	double s[GP_NCAUSES];   /* by cause: the records' plus the ledger's unused and
	                           unprofiled (what records do not cover) */
	double rec[GP_NCAUSES]; /* the records' alone, as they claim (the sum of the reports'
	                           fields; s has them scaled to each job's allocation) */
	double end_s[GP_NEND];  /* allocations of jobs that ended badly, by how */
	double week_alloc[2],
	    week_waste[2]; /* ended in the last 7 days of the range, the 7 before */
} gp_ld_sums_t;

/* One job, as the lists of jobs show it */
typedef struct gp_ld_job {
	char id[32], user[64], account[64], partition[64], name[96], state[32];
	double alloc_s, waste_s, unused_s;
	unsigned gpus_alloc, gpus_used;
	bool has_rec;
	gp_acct_rec_t rec;
} gp_ld_job_t;

typedef struct gp_ld_group {
	char *key; /* the group's values, joined by '\x1f' */
	uint64_t hash;
	gp_ld_sums_t sums;
} gp_ld_group_t;

#define GP_LD_TOP_MAX 1000

/* A refused record's job, as JSON lists it (refused_records) */
#define GP_LD_REFUSALS_LISTED 10000 /* listed, at most; the rest counted ("more") */
typedef struct gp_ld_refusal {
	char id[32];  /* the JobID, as ld_clean makes it */
	char why[96]; /* gp_rec_parse's reason, cut */
} gp_ld_refusal_t;

typedef struct gp_ledger {
	/* asked */
	int by[GP_NBY];
	unsigned nby;
	time_t since, until; /* 0: open, unless bounded */
	bool bounded;        /* since and until are the window, 0 (1970) too (gpuprof ledger) */
	unsigned top;        /* jobs listed in each list (0: none) */
	const gp_config_t *cfg;
	/* read */
	uint64_t lines, steps, not_gpu, running, out_of_range, bad_lines;
	uint64_t duplicates; /* a job's line again (same JobID, End, State, ElapsedRaw) */
	uint64_t *seen;      /* those keys' hashes (0: empty), open-addressed */
	size_t nseen, seen_cap;
	unsigned dup_said; /* duplicates printed (the rest are counted) */
	unsigned headers;  /* headers after the first (files joined) */
	gp_ld_sums_t total;
	gp_ld_group_t *groups; /* ngroups of them, in the order first seen; sorted after */
	size_t ngroups, gcap;
	uint32_t *slot; /* open-addressed: a group's index + 1 (0: empty), cap of them */
	size_t cap;
	char **keys; /* the groups' keys, packed into blocks (nkeys of them) */
	size_t nkeys, key_used;
	gp_ld_job_t *waste; /* the jobs that wasted most, a min-heap of top while reading */
	unsigned nwaste;
	gp_ld_job_t *idle; /* jobs that held GPUs they never used, most GPU-hours first */
	unsigned nidle;
	unsigned refused_said;     /* refusal lines printed (the rest are counted) */
	gp_ld_refusal_t *refusals; /* the first GP_LD_REFUSALS_LISTED refused records' jobs */
	unsigned nrefusals;
	time_t first_end, last_end; /* the earliest and latest End of the jobs counted (0: none) */
	unsigned scaled_said;       /* lines printed for records scaled to their allocation */
	unsigned bad_said;          /* lines printed for unreadable lines */
	char *head;                 /* a line cut by a newline in JobName, until its rest comes */
	unsigned head_lines;
	/* the header's columns: index of each of GP_LD_FIELDS' fields, -1 before it is read */
	int col[11];
	int ncols;
	/* between fields: "|" (sacct -P's own), or a sealed one the header showed
	 * (GP_LD_SEAL_FMT: --delimiter=, as the ledger asks sacct for), which no job name can
	 * hold, so no name can make a field or a line of another job */
	char delim[32];
	size_t dlen;
} gp_ledger_t;

/* A sealed delimiter: '|', '#', 12 random digits, '#', '|' (gp_ld_seal makes one) */
#define GP_LD_SEAL_FMT "|#%012llu#|"
/* A fresh sealed delimiter into out (at least 20 bytes). */
void gp_ld_seal(char *out, size_t len);

/* Begin: by and the rest set by the caller, the table empty. */
void gp_ledger_init(gp_ledger_t *l);
void gp_ledger_free(gp_ledger_t *l);
/* One line of `sacct -P` output (no newline); the first may be its header. -1 when the
 * header lacks a field we need (err says which). */
int gp_ledger_line(gp_ledger_t *l, char *line, size_t len, char *err, size_t errlen);
/* After the last line: groups sorted by wasted GPU-hours, the job lists sorted. */
void gp_ledger_finish(gp_ledger_t *l);
/* Wasted GPU-seconds of a set of sums (every cause but compute and unprofiled). */
double gp_ld_waste(const gp_ld_sums_t *s);

/* Slurm's date syntax as sacct -S/-E reads it (ledger_time.c says it whole): 0, or -1
 * where s is none */
int gp_ld_time(const char *s, time_t now, time_t *out);

/* The formats (ledger_out.c) */
typedef void (*gp_ld_writer_t)(const gp_ledger_t *l, FILE *out);
gp_ld_writer_t gp_ld_writer(const char *format);
#define GP_LD_FORMATS "text, json, csv, html, openmetrics"

/* the command (cmd_ledger.c) */
#include "cli.h"
extern const gp_cli_cmd_t gp_cmd_ledger_doc;
int gp_cmd_ledger(int argc, char **argv);

#endif
