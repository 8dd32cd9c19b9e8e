/* The rank file (doc/format.md): one per task.
 *   file   := header chunk*
 *   header := "GPUPROF1" u32 version u32 textlen u32 crc32c(text) text
 *             text = "key=value\n" lines (job, step, task, rank, node, pid, modes, ...)
 *   chunk  := u32 magic "GPC1" u32 clen u32 rlen u32 nrec u32 crc32c(payload) u32 crc32c(first 20)
 *             payload = zstd(records), each record delta/varint encoded (rankfile.c)
 * A chunk is self-contained (delta state resets), so a reader can drop a truncated tail
 * and skip a corrupt chunk by scanning for the next valid chunk header. */
#ifndef GP_RANKFILE_H
#define GP_RANKFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "event.h"

#define GP_RF_MAGIC "GPUPROF1"
/* 2: nvtx_range records (a push and its pop in one, from a thread's lane of the ring);
 * a version-1 file is read as it always was */
#define GP_RF_VERSION       2
#define GP_RF_VERSION_MIN   1
#define GP_RF_CHUNK_MAGIC   0x31435047u /* "GPC1" little-endian */
#define GP_RF_CHUNK_RAW_MAX (512u * 1024u)
#define GP_RF_HDR_MAX       65536

/* The header's keys, named once for the writer (spool.c: gp_spool_header, for the agent
 * and the injected library alike) and every reader; doc/format.md's table of header keys
 * says what each holds (tests/tree checks that both list the same keys). Keys are only
 * ever added: a reader meets files of every earlier version. */
#define GP_HDR_JOB                  "job"
#define GP_HDR_STEP                 "step"
#define GP_HDR_TASK                 "task"
#define GP_HDR_RANK                 "rank"
#define GP_HDR_PID                  "pid"
#define GP_HDR_LAUNCHER_RANK        "launcher_rank"
#define GP_HDR_NTASKS               "ntasks"
#define GP_HDR_NODE                 "node"
#define GP_HDR_AGENT_PID            "agent_pid"
#define GP_HDR_MODES                "modes"
#define GP_HDR_REALTIME_NS          "realtime_ns"
#define GP_HDR_MONOTONIC_NS         "monotonic_ns"
#define GP_HDR_GPUS                 "gpus"
#define GP_HDR_NVML_LIMITS          "nvml_limits"
#define GP_HDR_CUDA_VISIBLE_DEVICES "cuda_visible_devices"
#define GP_HDR_USER                 "user"
#define GP_HDR_RESTART_COUNT        "restart_count"
#define GP_HDR_WARMUP_STEPS         "warmup_steps"
#define GP_HDR_WRAPPED              "wrapped"
#define GP_HDR_FALLBACK             "fallback"
#define GP_HDR_VERSION              "version"
#define GP_HDR_STEP_RANGE           "step_range"
#define GP_HDR_JOB_NAME             "job_name"
#define GP_HDR_COMMAND              "command"

typedef struct gp_rf_writer gp_rf_writer_t;
typedef struct gp_rf_reader gp_rf_reader_t;

/* Header text builder: appends "key=value\n" (value sanitised: no newlines). */
int gp_rf_hdr_add(char *buf, size_t len, const char *key, const char *value);

/* Take over fd (positioned at 0, empty file) and write the header. max_bytes caps the
 * file (0: unlimited): records past it are dropped and counted. NULL on error. */
gp_rf_writer_t *gp_rf_writer_create(int fd, const char *hdr_text, uint64_t max_bytes);
/* Continue a file written earlier (salvage): fd positioned at its end. */
gp_rf_writer_t *gp_rf_writer_resume(int fd, uint64_t max_bytes);
int gp_rf_append(gp_rf_writer_t *w, const gp_event_t *ev);
/* fn(ctx, ev) for every record appended from now on, before the byte cap is applied (the
 * agent's live figures, common/live.h, see what the program did, not what the file kept);
 * fn NULL: none. It runs on the appending thread and must not append. */
typedef void (*gp_rf_observe_fn)(void *ctx, const gp_event_t *ev);
void gp_rf_writer_observe(gp_rf_writer_t *w, gp_rf_observe_fn fn, void *ctx);
/* Append string id's text as GP_EV_STRING pieces (at most GP_STRING_MAX bytes kept). */
int gp_rf_append_string(gp_rf_writer_t *w, uint32_t id, const char *s);
/* Compress and write the buffered records as one chunk (no-op when empty). */
int gp_rf_flush(gp_rf_writer_t *w);
int gp_rf_fsync(gp_rf_writer_t *w);
uint64_t gp_rf_bytes(const gp_rf_writer_t *w);
uint64_t gp_rf_dropped(const gp_rf_writer_t *w);
uint64_t gp_rf_records(const gp_rf_writer_t *w);
/* Records appended but not written to the fd: those buffered (0 right after a flush)
 * and those of chunks whose write failed. */
uint64_t gp_rf_pending(const gp_rf_writer_t *w);
/* Continue a rank file at path: a half-written chunk at its end is cut off first. */
gp_rf_writer_t *gp_rf_reopen(const char *path, char *err, size_t errlen);
/* Flush, optionally fsync, close the fd, free. Accepts NULL. */
int gp_rf_writer_close(gp_rf_writer_t *w, bool do_fsync);

typedef struct gp_rf_stats {
	uint64_t chunks;
	uint64_t records;
	uint64_t corrupt_chunks;
	uint64_t first_corrupt_offset; /* valid when corrupt_chunks > 0 */
	bool truncated;                /* tail dropped */
	uint64_t truncated_offset;
	bool end_seen;      /* an END record: the rank finished cleanly */
	uint64_t valid_end; /* offset just past the last valid chunk (or the header) */
} gp_rf_stats_t;

/* Which file, and which bytes of it, a reader read: its device, inode, size, modification
 * time and status-change time (a summary is keyed to it, report/summary.c: the kernel sets
 * ctime on every write, truncate, rename, link and chmod, and no program can set it). */
typedef struct gp_rf_ident {
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
} gp_rf_ident_t;
/* The identity of the file open at fd, as it is now; of the file st describes. */
int gp_rf_ident_fd(int fd, gp_rf_ident_t *id);
void gp_rf_ident_stat(const struct stat *st, gp_rf_ident_t *id);

/* Open and validate the header (the file is read with pread, never mapped: a file cut
 * shorter while it is read ends there, as a truncated tail). -1 with a message in err. */
int gp_rf_open(const char *path, gp_rf_reader_t **out, char *err, size_t errlen);
/* The same for a file that must be owner's or the caller's ((uid_t)-1: anyone's): a job
 * directory's rank files are its owner's, and root's report of it reads no other user's
 * file that a hard link put there. */
int gp_rf_open_owned(const char *path, uid_t owner, gp_rf_reader_t **out, char *err, size_t errlen);
const char *gp_rf_header(const gp_rf_reader_t *r, const char *key);
const char *gp_rf_header_text(const gp_rf_reader_t *r);
/* Next record: 1 = *ev filled, 0 = end of file. Corruption is skipped and counted. */
int gp_rf_next(gp_rf_reader_t *r, gp_event_t *ev);
const gp_rf_stats_t *gp_rf_stats(const gp_rf_reader_t *r);
/* The identity of what was read, taken at open; NULL when the file was seen to change
 * (shorter, another size or mtime) while it was read. */
const gp_rf_ident_t *gp_rf_ident(gp_rf_reader_t *r);
void gp_rf_close(gp_rf_reader_t *r);

/* Encoding, exposed for tests and the benchmark: encode one record into out (at least
 * GP_RF_REC_MAX bytes) against the delta state; returns bytes written. */
#define GP_RF_REC_MAX 80
typedef struct gp_rf_delta {
	uint64_t ts[GP_EV_MAX];
	uint64_t c[GP_EV_MAX];
} gp_rf_delta_t;
size_t gp_rf_encode(gp_rf_delta_t *st, const gp_event_t *ev, uint8_t *out);
/* Decode one record; returns bytes consumed or 0 when malformed. */
size_t gp_rf_decode(gp_rf_delta_t *st, const uint8_t *in, size_t len, gp_event_t *ev);

#endif
