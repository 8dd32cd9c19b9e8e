/* `gpuprof top JOBID|JOBDIR`: a running job's live figures (livejob.h) in the terminal,
 * refreshed every few seconds: a job line (step time now against the job's median, busy,
 * memory against the card, the slowest rank, the first finding) and a line per rank,
 * sorted by a key that 's' changes, scrolled with the arrows. Plain ANSI escapes and
 * termios, so it works over ssh and in tmux with no terminal library; --once (and any
 * output that is not a terminal) prints the lines once, without escapes. */
#include "config.h"
#include "commands.h"
#include "jobref.h"
#include "livejob.h"
#include "log.h"
#include "wrap.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum { OPT_ONCE = 256, OPT_STEP, OPT_MAX_RANKS };

/* Live files read at each refresh: a job directory of 100 000 ranks would take seconds a
 * refresh and gigabytes (gp_live_rank_t is ~2.3 KB); a screen shows a few dozen lines. */
#define TOP_MAX_RANKS_DEFAULT 1000

static const gp_cli_opt_t top_opts[] = {
    {"once", OPT_ONCE, NULL,
     "print the lines once, without escapes, and exit (also when standard output is not a "
     "terminal)"},
    {"delay", 'd', "SECONDS", "between refreshes (default 2; 0.5 to 3600)"},
    {"sort", 's', "KEY",
     "rank (the default), now (last step time, slowest first), ratio (last against the "
     "rank's median), busy (least busy first), mem (fullest card first), finding"},
    {"step", OPT_STEP, "S", "only step S's ranks (default: every step's)"},
    {"max-ranks", OPT_MAX_RANKS, "N",
     "read at most N ranks' live files at each refresh, the lowest of each step first "
     "(default 1000; 0: every one); the job line is then of those, and says so"},
    {NULL, 0, NULL, NULL}};

const gp_cli_cmd_t gp_cmd_top_doc = {
    "top",
    "[OPTION]... JOBDIR|JOBID",
    "Watch a running job: its ranks' live figures (steps, step time now and so far, GPU busy, "
    "memory, findings), refreshed every few seconds.",
    top_opts,
    "Keys: q quit, s next sort key, r reverse, arrows or j/k scroll a line, space or PgDn and "
    "b or PgUp a page, g the top. The figures are the agents' live files "
    "(step*/rank<R>.live.json), written every live_interval seconds (gpuprof.yaml(5)); a "
    "rank whose file has not changed for 3 intervals is shown as gone. Exit status: 0, 1 "
    "when the job cannot be read, 2 on a usage error.",
    false};

static const char *const sort_keys[] = {"rank", "now", "ratio", "busy", "mem", "finding"};
#define NSORT (sizeof(sort_keys) / sizeof(sort_keys[0]))

typedef struct top {
	char dir[PATH_MAX];
	const char *step;
	unsigned sort, max_ranks;
	bool reverse, tty;
	double delay;
	int scroll;
	gp_live_job_t j;
	unsigned *order;
	const char *job; /* asked by a numeric job id: the live files must name it */
	unsigned said_other;
} top_t;

static const top_t *sorting; /* qsort's context */

static double key_of(const gp_live_job_t *j, unsigned i, unsigned sort)
{
	const gp_live_rank_t *r = &j->r[i];
	switch (sort) {
	case 1:
		return -r->last_median_ms;
	case 2:
		return r->median_ms > 0 && r->last_steps ? -r->last_median_ms / r->median_ms : 0;
	case 3:
		return gp_live_last_sampled(r) ? r->last_busy_pct : 1e9;
	case 4:
		return gp_live_sampled(r) && r->mem_total
		           ? -(double)r->mem_peak / (double)r->mem_total
		           : 0;
	case 5:
		return r->nfind ? 0 : 1;
	}
	return 0;
}

static int cmp_order(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	double kx = key_of(&sorting->j, x, sorting->sort),
	       ky = key_of(&sorting->j, y, sorting->sort);
	int c = kx < ky ? -1 : kx > ky;
	if (!c)
		c = (x > y) - (x < y); /* files come sorted by step and rank */
	return sorting->reverse ? -c : c;
}

static const char *gib(uint64_t b, char *out, size_t len)
{
	if (b)
		snprintf(out, len, "%.1f", b / 1073741824.0);
	else
		snprintf(out, len, "-");
	return out;
}

/* The ranks whose live file was not read: counted, not gone unseen. */
static void unread_line(const gp_live_job_t *j, FILE *f, const char *eol)
{
	if (j->unreadable)
		fprintf(
		    f,
		    "%u live file(s) not read, their ranks not shown: %u over %u KiB (not a live "
		    "file), %u not the job's owner's or not live files%s",
		    j->unreadable, j->too_big, GP_LIVE_MAXFILE / 1024, j->unreadable - j->too_big,
		    eol);
}

/* The lines above the ranks: what the job is doing now. */
static void job_lines(const top_t *t, FILE *f, const char *eol)
{
	const gp_live_job_t *j = &t->j;
	char hms[24], clock[48], a[16], b[16];
	fprintf(f, "gpuprof top: job %s (%s), %s%s", j->n && j->r[0].job[0] ? j->r[0].job : "?",
	        t->dir, gp_live_clock(j->now, clock, sizeof(clock)), eol);
	fprintf(f, "job: %s so far; ranks %u running, %u ended, %u gone",
	        gp_live_hms(j->elapsed_s, hms, sizeof(hms)), j->running, j->ended, j->nstale);
	if (j->median_ms > 0)
		fprintf(f, "; step %.2f ms now vs %.2f ms median (x%.2f)", j->now_ms, j->median_ms,
		        j->now_ms / j->median_ms);
	if (j->with_gpus) {
		fprintf(f, "; busy ");
		if (j->with_last)
			fprintf(f, "%.0f%% now, ", j->last_busy_pct);
		else
			fprintf(f, "- now, ");
		fprintf(f, "%.0f%% so far", j->busy_pct);
	}
	if (j->fullest >= 0)
		fprintf(f, "; memory %s of %s GiB (rank %d)",
		        gib(j->r[j->fullest].mem_peak, a, sizeof(a)),
		        gib(j->r[j->fullest].mem_total, b, sizeof(b)), j->r[j->fullest].rank);
	if (j->slowest >= 0 && j->n > 1)
		fprintf(f, "; slowest rank %d (x%.2f of the ranks' median now)",
		        j->r[j->slowest].rank, j->slowest_ratio);
	if (j->lost)
		fprintf(f, "; %llu records lost", (unsigned long long)j->lost);
	fprintf(f, "%s", eol);
	if (j->beyond)
		fprintf(f,
		        "only the first %u ranks' live files read of %u (--max-ranks): the figures "
		        "above are theirs%s",
		        j->n, j->n + j->beyond, eol);
	unread_line(j, f, eol);
	if (j->first_find >= 0) {
		const gp_live_rank_t *r = &j->r[j->first_find];
		fprintf(f, "first finding: rank %d: %s: %s", r->rank, r->find[0].id,
		        r->find[0].text);
		if (!strcmp(r->find[0].id, "slowdown") && r->slow_since_s >= 0)
			fprintf(f, " (began %s)",
			        gp_live_clock(r->started + r->slow_since_s, clock, sizeof(clock)));
		fprintf(f, "%s", eol);
	} else {
		fprintf(f, "no finding so far%s", eol);
	}
	fprintf(f, "%-6s %6s %-12s %-7s %8s %9s %9s %6s %6s %7s %7s %7s  %s%s", "STEP", "RANK",
	        "NODE", "STATE", "STEPS", "NOW ms", "MEDIAN ms", "xMED", "BUSY%", "MEM GiB", "PEAK",
	        "CARD", "FINDING", eol);
}

/* A program's string (a node's name, a step's, a state) as a cell of at least width
 * terminal columns, counted as the terminal counts them (gp_text_fit: a code point one
 * column, an East Asian wide one two; printf's widths count bytes, and a multibyte name
 * moved every column after it): what a terminal would act on made '?' first (as the
 * whole screen is after), cut past width columns at a whole character where cut is set,
 * then padded with spaces. */
static void put_col(FILE *f, const char *s, size_t width, bool cut)
{
	char buf[256];
	size_t n = strlen(s), used;
	n = n < sizeof(buf) ? n : sizeof(buf) - 1;
	memcpy(buf, s, n);
	n = gp_text_shown(buf, n);
	n = gp_text_fit(buf, n, cut ? width : SIZE_MAX, &used);
	fwrite(buf, 1, n, f);
	fprintf(f, "%*s", used < width ? (int)(width - used) : 0, "");
}

static void rank_line(const top_t *t, unsigned i, FILE *f, const char *eol)
{
	const gp_live_rank_t *r = &t->j.r[i];
	char now[16] = "-", med[16] = "-", x[16] = "-", busy[16] = "-", a[16], b[16], c[16];
	if (r->last_steps)
		snprintf(now, sizeof(now), "%.2f", r->last_median_ms);
	if (r->median_ms > 0)
		snprintf(med, sizeof(med), "%.2f", r->median_ms);
	if (r->last_steps && r->median_ms > 0)
		snprintf(x, sizeof(x), "%.2f", r->last_median_ms / r->median_ms);
	if (gp_live_last_sampled(r))
		snprintf(busy, sizeof(busy), "%.0f", r->last_busy_pct);
	bool mem = gp_live_sampled(r); /* NVML's: not measured without a sample */
	/* the columns of job_lines' heading: "%-6.6s %6d %-12.12s %-7s " in columns */
	put_col(f, r->step, 6, true);
	fprintf(f, " %6d ", r->rank);
	put_col(f, r->node, 12, true);
	fputc(' ', f);
	put_col(f, t->j.stale[i] ? "gone" : r->state, 7, false);
	fprintf(f, " %8u %9s %9s %6s %6s %7s %7s %7s  %s%s", r->steps, now, med, x, busy,
	        gib(mem ? r->mem_used : 0, a, sizeof(a)), gib(mem ? r->mem_peak : 0, b, sizeof(b)),
	        gib(r->mem_total, c, sizeof(c)), r->nfind ? r->find[0].id : "", eol);
}

static int load(top_t *t)
{
	char err[PATH_MAX + 256];
	gp_live_job_free(&t->j);
	free(t->order);
	t->order = NULL;
	if (gp_live_job_load(&t->j, t->dir, t->step, t->max_ranks, err, sizeof(err)) < 0)
		return gp_err("top: %s", err);
	char other[32];
	unsigned n = t->j.n;
	/* a job asked by id: its WorkDir's gpuprof-JOBID may be a link or a copy of another
	 * job's; only live files that name this job are shown */
	unsigned gone = t->job ? gp_live_job_only(&t->j, t->job, other, sizeof(other)) : 0;
	if (gone && !t->said_other++)
		gp_warn("top: %u of the %u live file(s) in %s are of job %s, not job %s: left out",
		        gone, n, t->dir, other, t->job);
	t->order = calloc(t->j.n + 1, sizeof(unsigned));
	if (!t->order)
		return gp_err("top: out of memory");
	for (unsigned i = 0; i < t->j.n; i++)
		t->order[i] = i;
	sorting = t;
	qsort(t->order, t->j.n, sizeof(unsigned), cmp_order);
	return 0;
}

static int print_once(top_t *t)
{
	if (load(t) < 0)
		return 1;
	if (!t->j.n) {
		char shown[PATH_MAX];
		snprintf(shown, sizeof(shown), "%s", t->dir);
		gp_log_shown(shown);
		printf("gpuprof top: no live figures in %s yet (each rank writes its first after "
		       "live_interval seconds; none where live_interval is 0)\n",
		       shown);
		return 0;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return gp_err("top: out of memory");
	job_lines(t, m, "\n");
	for (unsigned k = 0; k < t->j.n; k++)
		rank_line(t, t->order[k], m, "\n");
	fclose(m);
	/* the job's strings (node, step, findings' words) as the report writes them: what a
	 * terminal would act on made '?' */
	gp_text_put(stdout, buf, len, false);
	free(buf);
	return fflush(stdout) ? 1 : 0;
}

/* ---- the terminal ---- */

static struct termios saved;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void term_enter(void)
{
	struct termios raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor */
	fflush(stdout);
}

static void term_leave(void)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSANOW, &saved);
}

static void screen_size(int *rows, int *cols)
{
	struct winsize ws;
	*rows = 24, *cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
		*rows = ws.ws_row, *cols = ws.ws_col;
}

/* Each line cut to the screen's width in columns, at a whole character (a wrapped line
 * would scroll the screen; a cut by bytes showed a multibyte line short and could end it
 * inside a character). */
static void put_cut(const char *buf, int cols)
{
	for (const char *p = buf; *p;) {
		size_t n = strcspn(p, "\n");
		fwrite(p, 1, gp_text_fit(p, n, (size_t)cols, NULL), stdout);
		fputs("\033[K\r\n", stdout);
		p += n + (p[n] == '\n');
	}
}

static void draw(top_t *t)
{
	char *buf = NULL;
	size_t len = 0;
	int rows, cols;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	screen_size(&rows, &cols);
	if (!t->j.n) {
		char shown[PATH_MAX];
		snprintf(shown, sizeof(shown), "%s", t->dir);
		gp_log_shown(shown);
		fprintf(m,
		        "gpuprof top: no live figures in %s yet (each rank writes its first after "
		        "live_interval seconds)\n",
		        shown);
		unread_line(&t->j, m, "\n");
	} else
		job_lines(t, m, "\n");
	int body = rows - 6 - (t->j.beyond > 0) - (t->j.unreadable > 0); /* header, key lines */
	body = body < 1 ? 1 : body;
	int maxscroll = (int)t->j.n > body ? (int)t->j.n - body : 0;
	t->scroll = t->scroll > maxscroll ? maxscroll : t->scroll < 0 ? 0 : t->scroll;
	for (int k = t->scroll; k < (int)t->j.n && k < t->scroll + body; k++)
		rank_line(t, t->order[k], m, "\n");
	fclose(m);
	buf[gp_text_shown(buf, len)] = '\0'; /* never the job's escapes among ours */
	fputs("\033[H", stdout);
	put_cut(buf, cols);
	free(buf);
	fprintf(stdout, "\033[J\033[%d;1H\033[7m", rows);
	char keys[256];
	snprintf(keys, sizeof(keys),
	         " q quit  s sort: %s%s  r reverse  arrows/j/k scroll  ranks %d-%d of %u  every "
	         "%.1f s ",
	         sort_keys[t->sort], t->reverse ? " (reversed)" : "", t->j.n ? t->scroll + 1 : 0,
	         t->scroll + body < (int)t->j.n ? t->scroll + body : (int)t->j.n, t->j.n, t->delay);
	fprintf(stdout, "%.*s\033[K\033[0m", cols, keys);
	fflush(stdout);
}

/* A key (escape sequences of the arrows and page keys read whole); false: quit. */
static bool on_key(top_t *t, const char *k, size_t n)
{
	int rows, cols;
	screen_size(&rows, &cols);
	int page = rows - 7 > 1 ? rows - 7 : 1;
	if (n == 1 && (k[0] == 'q' || k[0] == 'Q' || k[0] == 3))
		return false;
	if (n == 1 && k[0] == 's')
		t->sort = (t->sort + 1) % NSORT;
	else if (n == 1 && k[0] == 'r')
		t->reverse = !t->reverse;
	else if ((n == 1 && k[0] == 'j') || (n == 3 && !memcmp(k, "\033[B", 3)))
		t->scroll++;
	else if ((n == 1 && k[0] == 'k') || (n == 3 && !memcmp(k, "\033[A", 3)))
		t->scroll--;
	else if ((n == 1 && k[0] == ' ') || (n == 4 && !memcmp(k, "\033[6~", 4)))
		t->scroll += page;
	else if ((n == 1 && k[0] == 'b') || (n == 4 && !memcmp(k, "\033[5~", 4)))
		t->scroll -= page;
	else if (n == 1 && k[0] == 'g')
		t->scroll = 0;
	sorting = t;
	qsort(t->order, t->j.n, sizeof(unsigned), cmp_order);
	return true;
}

/* What one read gave: keys typed ahead come together ("jjj"), each taken in turn; an
 * escape sequence (CSI: ESC [ then parameters up to a final byte) is one key. */
static bool on_keys(top_t *t, const char *k, size_t n)
{
	for (size_t i = 0, len; i < n; i += len) {
		len = 1;
		if (k[i] == '\033' && i + 2 < n && k[i + 1] == '[') {
			len = 2;
			while (i + len < n && (k[i + len] < 0x40 || k[i + len] > 0x7e))
				len++;
			len += i + len < n;
		}
		if (!on_key(t, k + i, len))
			return false;
	}
	return true;
}

static int interactive(top_t *t)
{
	struct sigaction sa = {.sa_handler = on_signal};
	int rc = 0;
	if (tcgetattr(STDIN_FILENO, &saved) < 0)
		return print_once(t);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	term_enter();
	struct timespec next = {0};
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec)) {
			if (load(t) < 0) {
				rc = 1;
				break;
			}
			double at = now.tv_sec + now.tv_nsec / 1e9 + t->delay;
			next.tv_sec = (time_t)at;
			next.tv_nsec = (long)((at - (double)next.tv_sec) * 1e9);
		}
		draw(t);
		if (got_signal && got_signal != SIGWINCH)
			break;
		got_signal = 0;
		double left = (next.tv_sec - now.tv_sec) + (next.tv_nsec - now.tv_nsec) / 1e9;
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		if (poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0) > 0) {
			char k[64];
			ssize_t n = read(STDIN_FILENO, k, sizeof(k));
			if (n == 0 || (n > 0 && !on_keys(t, k, (size_t)n)))
				break;
		}
	}
	term_leave();
	return rc;
}

int gp_cmd_top(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &gp_cmd_top_doc;
	top_t t = {.delay = 2, .max_ranks = TOP_MAX_RANKS_DEFAULT};
	uint64_t max_ranks = 0;
	bool once = false, by_id = false;
	char err[PATH_MAX + 256];
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		if (k == OPT_ONCE)
			once = true;
		else if (k == OPT_STEP)
			t.step = c.arg;
		else if (k == OPT_MAX_RANKS) {
			if (gp_cli_count(cmd, "--max-ranks", c.arg, 10000000, &max_ranks))
				return GP_CLI_USAGE;
			t.max_ranks = (unsigned)max_ranks;
		} else if (k == 'd' && gp_cli_number(cmd, "--delay", c.arg, 0.5, false, 3600, false,
		                                     "2", &t.delay))
			return GP_CLI_USAGE;
		else if (k == 's') {
			for (t.sort = 0; t.sort < NSORT && strcmp(c.arg, sort_keys[t.sort]);
			     t.sort++)
				;
			if (t.sort == NSORT)
				return gp_cli_usage(cmd,
				                    "--sort: '%s' (keys: rank, now, ratio, busy, "
				                    "mem, finding)",
				                    c.arg);
		}
	}
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 1, 1, "job directory or job id"))
		return GP_CLI_USAGE;
	if (gp_jobref_resolve(argv[c.ind], t.dir, sizeof(t.dir), &by_id, err, sizeof(err)) < 0)
		return gp_err("top: %s", err), 1;
	if (by_id && strspn(argv[c.ind], "0123456789") == strlen(argv[c.ind]))
		t.job = argv[c.ind]; /* SLURM_JOB_ID as the agent writes it; not an array's a_b */
	t.tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	int rc = once || !t.tty ? print_once(&t) : interactive(&t);
	gp_live_job_free(&t.j);
	free(t.order);
	return rc;
}
