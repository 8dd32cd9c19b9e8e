/* The mode grammar shared by --gpuprof, GPUPROF_MODES, gpuprof run and the site config:
 *   MODES := WORD (',' WORD)*    WORD := timing|nvtx|cuda|mem|gpu|layers|all|none|help
 * `timing` is always on; `none` switches profiling off and stands alone; `help` asks for
 * the list and stands alone. `layers` (PyTorch per-module ranges) is opt-in: not in
 * `all`. */
#ifndef GP_MODES_H
#define GP_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	GP_MODE_TIMING = 1u << 0,
	GP_MODE_NVTX = 1u << 1,
	GP_MODE_CUDA = 1u << 2,
	GP_MODE_MEM = 1u << 3,
	GP_MODE_GPU = 1u << 4,
	GP_MODE_LAYERS = 1u << 5, /* PyTorch: an NVTX range per module forward/backward */
	GP_MODE_NONE = 1u << 6,   /* profiling off */
	GP_MODE_HELP = 1u << 7,   /* print the modes, submit nothing */
};
/* Not a mode: in a ring header's modes word, `gpuprof capture on` asked for CUDA
 * activity now, inside capture windows or not (agent/inject/capture.c); `capture off`
 * clears it. */
#define GP_CAPTURE_FORCED (1u << 30)
#define GP_MODES_ALL      (GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_CUDA | GP_MODE_MEM | GP_MODE_GPU)
#define GP_MODES_MAXLEN   256
/* every mode a site can allow (all, and the opt-in ones) */
#define GP_MODES_KNOWN (GP_MODES_ALL | GP_MODE_LAYERS)
#define GP_MODES_WORDS "timing,nvtx,cuda,mem,gpu,layers,all,none,help"

/* Parse s into *modes. On error returns -1, leaves *modes untouched and writes a message
 * naming the bad token, its 1-based position and the accepted words into err. */
int gp_modes_parse(const char *s, unsigned *modes, char *err, size_t errlen);
/* "timing,nvtx,mem" (or "none"); returns the length snprintf would. */
int gp_modes_format(unsigned modes, char *buf, size_t len);
/* One line per mode, for --gpuprof=help and `gpuprof run --modes=help`. */
const char *gp_modes_help(void);
/* Does the argument hold only printable ASCII/valid UTF-8 within maxlen? Writes the
 * reason into err. Shared by every option parser. */
int gp_text_check(const char *s, size_t maxlen, char *err, size_t errlen);
/* Is the code point a bidirectional control that reorders what is shown after it:
 * U+202A-U+202E (embeddings, overrides, their end) and U+2066-U+2069 (isolates)? A name
 * holding one shows in a terminal, an editor or a browser in another order than its
 * bytes (Trojan Source, CVE-2021-42574); every output writes it escaped. */
bool gp_bidi_control(uint32_t cp);
/* The length (1-4) of the printable character at p: valid UTF-8 that is no control
 * (C0, DEL, or C1: U+0080-U+009F, which terminals act on as escapes) and no
 * bidirectional control (gp_bidi_control); 0 otherwise. */
size_t gp_utf8_char(const unsigned char *p);
/* The UTF-8 sequence at s (n bytes left): its length (1-4) with *cp its code point, or 0
 * when it is not valid UTF-8 (overlong, a surrogate, above U+10FFFF, cut short), with
 * *bad the length of its maximal invalid subpart (>= 1), which stands for one U+FFFD. */
size_t gp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad);
/* The length of the UTF-8 character at s (n bytes left) where a text output may write it
 * as it is; 0 where no reader shows it raw, with *skip the bytes that stand for one
 * replacement: a maximal invalid subpart, or a control character (C0 other than the
 * characters in keep, DEL, C1, a bidirectional control: gp_bidi_control). */
size_t gp_utf8_shown(const unsigned char *s, size_t n, const char *keep, size_t *skip);
/* buf[0..len) with what no terminal shows raw made '?', in place: one '?' for each
 * control character other than those in keep (C0, DEL, C1), bidirectional control and
 * maximal invalid subpart (gp_utf8_shown); its new length. The text report's and the log's
 * one rule (gp_text_shown, gp_log_shown). */
size_t gp_shown(char *buf, size_t len, const char *keep);
/* Copy s into dst (cap bytes) with non-printable bytes escaped as \xNN, for messages. */
void gp_text_escape(const char *s, size_t n, char *dst, size_t cap);

/* Capture windows for cuda (GPUPROF_CAPTURE, `gpuprof run --capture`):
 *   all | cudaprofilerapi | steps=A-B[,C-D...]   (0-based step indices, inclusive)
 *   sampled[=LEN/EVERY]  kernel-level tracing from the start through the warm-up and LEN
 *                        more steps, then LEN steps out of every EVERY (the default:
 *                        GP_SAMPLE_LEN/GP_SAMPLE_EVERY); programs whose steps the
 *                        collector cannot see get windows by time (agent/inject/capture.c) */
#define GP_CAPTURE_MAXWIN 16
#define GP_SAMPLE_LEN     20
#define GP_SAMPLE_EVERY   500
typedef struct gp_capture {
	enum { GP_CAP_ALWAYS, GP_CAP_STEPS, GP_CAP_PROFILER, GP_CAP_SAMPLED } how;
	unsigned nwin;
	unsigned long long win[GP_CAPTURE_MAXWIN][2];
	unsigned long long len, every, first_end; /* sampled; first_end: warm-up + len */
} gp_capture_t;
/* Parse s (NULL or "" means all); -1 with a message in err on bad input. */
int gp_capture_parse(const char *s, gp_capture_t *c, char *err, size_t errlen);
/* Is step idx inside one of the windows (always true for all and cudaprofilerapi)? */
int gp_capture_in(const gp_capture_t *c, unsigned long long idx);
/* Sampled windows: the first one runs through the warm-up steps and LEN more. */
void gp_capture_warmup(gp_capture_t *c, unsigned long long warmup);

#endif
