/* gpuprof's per-job record in the accounting database: one entry of a job's SystemComment
 * (doc/admin.md, "The accounting record"), written root-side by the plugin from the job
 * report's own figures (report.json "accounting") and read by `gpuprof ledger`.
 *
 *   gpuprof-record/1 ranks=2 gpus=2 compute=812.500 comm=3.250 ... top=input_bound dir=/p%20q
 *
 * Space-separated KEY=VALUE tokens after the versioned tag, every key exactly once, in any
 * order; seconds with up to 3 decimals; the job directory percent-encoded (it is the
 * user's text: no ' ', ';', '%', '=', quote or byte outside printable ASCII survives raw,
 * so nothing in it can end the entry or start another). SystemComment, unlike
 * AdminComment (jobstats' JS1: replaces that field whole) and Comment (the user's), is
 * writable only by root or SlurmUser. */
#ifndef GP_ACCTREC_H
#define GP_ACCTREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_REC_TAG     "gpuprof-record/"
#define GP_REC_VERSION 1
#define GP_REC_MAX     1024 /* the whole entry, bytes */
#define GP_REC_DIR_MAX 700  /* the encoded directory, bytes */
#define GP_REC_SEC_MAX 1e10 /* seconds of one cause: 300 years of one GPU, per job */

/* GPU-seconds by cause; the order of the record's keys and of the ledger's columns */
enum {
	GP_CAUSE_COMPUTE,    /* GPU busy with kernels (exposed communication excluded) */
	GP_CAUSE_COMM,       /* communication kernels no compute overlapped */
	GP_CAUSE_INPUT,      /* idle while the host waited for the next batch */
	GP_CAUSE_LAUNCH,     /* idle while the host was inside launch calls */
	GP_CAUSE_SYNC,       /* idle while the host synchronised */
	GP_CAUSE_STARTUP,    /* start-up before the first step, and compilation after it */
	GP_CAUSE_IDLE,       /* idle for another reason (Python, a slow host, between kernels) */
	GP_CAUSE_UNUSED,     /* a rank that had a GPU and ran no CUDA work on it */
	GP_CAUSE_UNPROFILED, /* a rank whose GPU use was not recorded */
	GP_NCAUSES
};
extern const char *const gp_cause_key[GP_NCAUSES];   /* "compute", ... (record, JSON, CSV) */
extern const char *const gp_cause_words[GP_NCAUSES]; /* "computing", ... (text) */

typedef struct gp_acct_rec {
	unsigned ranks, gpus; /* profiled ranks; distinct GPUs they ran kernels on */
	double s[GP_NCAUSES]; /* GPU-seconds by cause, summed over ranks */
	double step_ms;       /* the job's step median (report.json step_median_ms); 0 none */
	uint64_t peak_bytes;  /* the largest rank's device memory peak */
	uint64_t card_bytes;  /* that rank's card's memory (0 unknown) */
	char top[48];         /* the first finding's id, "none" */
	char dir[1024];       /* the job directory (decoded) */
} gp_acct_rec_t;

/* The record's entry into out: -1 when it does not fit GP_REC_MAX (a directory too long
 * is the only way: it is then cut, and said with a trailing "..." encoded away). */
int gp_rec_format(const gp_acct_rec_t *r, char *out, size_t len);
/* Parse one entry (the text from GP_REC_TAG to its end, no "; " in it). -1 with why
 * ("version 2 not understood", "key 'x' twice", ...) in err. */
int gp_rec_parse(const char *s, size_t n, gp_acct_rec_t *r, char *err, size_t errlen);
/* Our entry among a field's "; "-separated entries: 1 and its span (*at, *n) when there
 * is exactly one, 0 when none, -1 when several (err says so). */
int gp_rec_find(const char *field, const char **at, size_t *n, char *err, size_t errlen);
/* The field with our entry (if any) replaced by rec, other entries kept in order:
 * -1 when it does not fit len. */
int gp_rec_compose(const char *field, const char *rec, char *out, size_t len);

#endif
