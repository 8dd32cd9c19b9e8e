/* gpuprof ledger's reading and summing (ledger.h): one line of sacct's parsable output at
 * a time, kept as sums per group and two short lists of jobs, so a million jobs take a
 * few seconds and a table of groups, never the jobs themselves. */
#include "config.h"
#include "ledger.h"
#include "log.h"
#include "modes.h"
#include "strhash.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

const char *const gp_by_name[GP_NBY] = {"user", "account", "partition", "name", "node"};
const char *const gp_end_name[GP_NEND] = {"failed", "oom", "timeout", "cancelled", "preempted"};

enum {
	F_ID,
	F_USER,
	F_ACCOUNT,
	F_PARTITION,
	F_NAME,
	F_NODES,
	F_STATE,
	F_END,
	F_ELAPSED,
	F_TRES,
	F_SC,
	NF
};
static const char *const field_name[NF] = {"JobID",      "User",      "Account",      "Partition",
                                           "JobName",    "NodeList",  "State",        "End",
                                           "ElapsedRaw", "AllocTRES", "SystemComment"};
#define MAX_COLS     64
#define REFUSED_SAID 20 /* refusals printed; the rest counted */
/* a job's hosts, at most (more: its line refused): past the largest clusters; a 20-byte
 * node list (n[1-65536]) costs --by node at most that many host groups, not a million */
#define MAX_JOB_NODES 65536u
#define MAX_GPUS      1000000               /* a job's GPUs, at most (more: a line refused) */
#define MAX_ELAPSED_S (100.0 * 365 * 86400) /* a job's ElapsedRaw, at most */
/* physical lines one job name's newlines may make under sacct -P's own "|" (slurmdbd
 * keeps 255 bytes of it); under a sealed delimiter, where no name can make another job's
 * line, MAX_SEALED_HEAD_LINES (a name of 300 newlines hid two jobs under the old bound;
 * each join copies the head, so no bound of 1 MiB of newlines: minutes of CPU) */
#define MAX_HEAD_LINES        257
#define MAX_SEALED_HEAD_LINES 4096
#define MAX_HEAD_BYTES        (1u << 20)

void gp_ledger_init(gp_ledger_t *l)
{
	for (int i = 0; i < NF; i++)
		l->col[i] = -1;
	snprintf(l->delim, sizeof(l->delim), "|");
	l->dlen = 1;
}

void gp_ledger_free(gp_ledger_t *l)
{
	for (size_t i = 0; i < l->nkeys; i++)
		free(l->keys[i]);
	free(l->keys);
	free(l->groups);
	free(l->slot);
	l->keys = NULL;
	l->slot = NULL;
	l->nkeys = l->key_used = l->ngroups = l->gcap = l->cap = 0;
	free(l->waste);
	free(l->idle);
	free(l->refusals);
	l->refusals = NULL;
	free(l->head);
	free(l->seen);
	l->seen = NULL;
	l->head = NULL;
	l->groups = NULL;
	l->waste = l->idle = NULL;
}

double gp_ld_waste(const gp_ld_sums_t *s)
{
	double w = 0;
	for (int c = 0; c < GP_NCAUSES; c++)
		if (c != GP_CAUSE_COMPUTE && c != GP_CAUSE_UNPROFILED)
			w += s->s[c];
	return w;
}

/* ---- the header ---- */

void gp_ld_seal(char *out, size_t len)
{
	unsigned long long r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) { /* never: a weaker seal */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (unsigned long long)ts.tv_nsec * 2654435761u ^ (unsigned long long)getpid();
	}
	snprintf(out, len, GP_LD_SEAL_FMT, r % 1000000000000ull);
}

/* The header's delimiter, after "JobID": a sealed one (GP_LD_SEAL_FMT), or '|' */
static void header_delim(gp_ledger_t *l, const char *after)
{
	if (strncmp(after, "|#", 2))
		return;
	size_t d = strspn(after + 2, "0123456789");
	if (d == 12 && !strncmp(after + 2 + d, "#|", 2)) {
		memcpy(l->delim, after, 16);
		l->delim[16] = '\0';
		l->dlen = 16;
	}
}

/* Cut line at every delimiter into f (at most MAX_COLS; the count either way) */
static int cut_fields(const gp_ledger_t *l, char *line, char **f)
{
	int n = 0;
	for (char *p = line;;) {
		if (n < MAX_COLS)
			f[n] = p;
		n++;
		char *d = l->dlen == 1 ? strchr(p, l->delim[0]) : strstr(p, l->delim);
		if (!d)
			break;
		*d = '\0';
		p = d + l->dlen;
	}
	return n;
}

static int read_header(gp_ledger_t *l, char **f, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < NF; k++)
			if (!strcasecmp(f[i], field_name[k]) && l->col[k] < 0)
				l->col[k] = i;
	for (int k = 0; k < NF; k++)
		if (l->col[k] < 0) {
			snprintf(err, errlen,
			         "sacct's header has no %s (sacct -a -P -o $(gpuprof ledger "
			         "--print-fields))",
			         field_name[k]);
			return -1;
		}
	l->ncols = n;
	return 0;
}

/* ---- one job's fields ---- */

/* s as a whole number 0..max (digits alone, as sacct prints them), or -1 */
static double whole(const char *s, double max)
{
	double v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '9' && i < 16; i++)
		v = v * 10 + (s[i] - '0');
	return i && !s[i] && v <= max ? v : -1;
}

/* What tres_gpus gives for a count it refuses: more than MAX_GPUS, a negative one, not a
 * whole number (each a hostile line, said as such). */
#define GPUS_TOO_MANY  (MAX_GPUS + 1u)
#define GPUS_NEGATIVE  (MAX_GPUS + 2u)
#define GPUS_NOT_WHOLE (MAX_GPUS + 3u)

/* gres/gpu=N of AllocTRES: N, 0 when none; GPUS_* when it is not a count. Without
 * a plain gres/gpu= (Slurm prints it beside the typed ones, but a site's or an older
 * slurmdbd's line may carry only typed ones: gres/gpu:a100=2), the typed ones summed. */
static unsigned tres_gpus(const char *tres)
{
	char n[24];
	double sum = 0;
	for (int typed = 0; typed < 2; typed++) {
		const char *key = typed ? "gres/gpu:" : "gres/gpu=";
		for (const char *p = tres; (p = strstr(p, key)); p++) {
			if (p != tres && p[-1] != ',')
				continue;
			const char *v = p + 9;
			if (typed) { /* gres/gpu:TYPE=N: the count after the type's '=' */
				size_t t = strcspn(v, ",=");
				if (v[t] != '=')
					continue;
				v += t + 1;
			}
			size_t len = strcspn(v, ",");
			snprintf(n, sizeof(n), "%.*s", (int)(len < sizeof(n) ? len : sizeof(n) - 1),
			         v);
			double x = len < sizeof(n) ? whole(n, MAX_GPUS) : -1;
			if (x < 0)
				return n[0] == '-' ? GPUS_NEGATIVE
				       : n[0] && strspn(n, "0123456789") == strlen(n)
				           ? GPUS_TOO_MANY
				           : GPUS_NOT_WHOLE;
			if (!typed)
				return (unsigned)x;
			sum += x;
		}
	}
	return sum > MAX_GPUS ? GPUS_TOO_MANY : (unsigned)sum;
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* sacct's End, 2026-12-06T17:10:10 (local time); 0 when Unknown. mktime's result for the
 * hour is kept (mktime reads the time zone file's status every call: a third of the
 * ledger's time over a million jobs) */
static time_t end_time(const char *s)
{
	static struct {
		int key;
		time_t t;
	} hours[4096];
	if (strlen(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return 0;
	int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2), h = digits(s + 11, 2);
	int mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || sec < 0 || sec > 60 ||
	    (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))))
		return 0; /* 2026-02-30 is no date, not the 2nd of March */
	int key = ((y * 13 + mo) * 32 + d) * 24 + h, slot = key & 4095;
	if (hours[slot].key != key) {
		struct tm tm = {.tm_year = y - 1900,
		                .tm_mon = mo - 1,
		                .tm_mday = d,
		                .tm_hour = h,
		                .tm_isdst = -1};
		hours[slot].key = key;
		hours[slot].t = mktime(&tm);
	}
	return hours[slot].t + mi * 60 + sec;
}

/* A State of a job that has not ended: it holds or waits for its allocation (Slurm's
 * job_state_string(): the base states and the flags it shows instead of the base) */
static bool still_allocated(const char *state)
{
	static const char *const st[] = {"RUNNING",     "PENDING",    "SUSPENDED",
	                                 "CONFIGURING", "COMPLETING", "STAGE_OUT",
	                                 "STOPPED",     "SIGNALING",  "RESV_DEL_HOLD"};
	size_t n = strcspn(state, " ");
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (strlen(st[i]) == n && !strncmp(state, st[i], n))
			return true;
	return false;
}

/* sacct's State as Slurm's job_state_string() writes it (src/common/slurm_protocol_defs.c;
 * "CANCELLED by UID"): each end state's class, -1 for COMPLETED and RESIZING (an
 * allocation that went on as the resized job's). Still allocated (RUNNING and the like)
 * was skipped before this (still_allocated). Anything else, a state a later Slurm adds,
 * ended badly as failed: never silently fine. */
static int end_kind(const char *state, const gp_acct_rec_t *rec)
{
	static const struct {
		const char *name;
		int kind;
	} st[] = {{"COMPLETED", -1},
	          {"RESIZING", -1},
	          {"OUT_OF_MEMORY", GP_END_OOM},
	          {"TIMEOUT", GP_END_TIMEOUT},
	          {"DEADLINE", GP_END_TIMEOUT},
	          {"CANCELLED", GP_END_CANCELLED},
	          {"REVOKED", GP_END_CANCELLED},
	          {"PREEMPTED", GP_END_PREEMPTED},
	          {"REQUEUED", GP_END_PREEMPTED},
	          {"REQUEUE_FED", GP_END_PREEMPTED},
	          {"REQUEUE_HOLD", GP_END_PREEMPTED}};
	size_t n = strcspn(state, " ");
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (strlen(st[i].name) == n && !strncmp(state, st[i].name, n))
			return st[i].kind;
	/* FAILED, NODE_FAIL, BOOT_FAIL, SPECIAL_EXIT, and any other: a CUDA out-of-memory
	 * record says how */
	return rec && !strcmp(rec->top, "cuda_oom") ? GP_END_OOM : GP_END_FAILED;
}

static void ld_clean(char *out, size_t cap, const char *v, size_t max);

/* The job's record from its SystemComment: 1 read, 0 none, -1 refused (said, counted) */
static int job_record(gp_ledger_t *l, const char *id, const char *sc, gp_acct_rec_t *rec)
{
	const char *at;
	size_t n;
	char why[200];
	int found = gp_rec_find(sc, &at, &n, why, sizeof(why));
	if (found == 0)
		return 0;
	if (found == 1 && gp_rec_parse(at, n, rec, why, sizeof(why)) == 0)
		return 1;
	if (l->nrefusals < GP_LD_REFUSALS_LISTED) { /* JSON's list; the count is total's */
		if (!l->refusals)
			l->refusals = calloc(GP_LD_REFUSALS_LISTED, sizeof(*l->refusals));
		if (l->refusals) {
			gp_ld_refusal_t *r = &l->refusals[l->nrefusals++];
			ld_clean(r->id, sizeof(r->id), id, 200);
			ld_clean(r->why, sizeof(r->why), why, sizeof(why));
		}
	}
	if (l->refused_said++ < REFUSED_SAID)
		gp_err(
		    "ledger: job %.32s: SystemComment record refused: %s; its GPU-hours count as "
		    "unprofiled",
		    id, why);
	return -1;
}

/* ---- sums ---- */

typedef struct job_fig {
	double alloc, s[GP_NCAUSES], rec[GP_NCAUSES];
	int end; /* -1, or GP_END_* */
	bool has_rec, refused, scaled;
	time_t end_t;
} job_fig_t;

static void add_sums(const gp_ledger_t *l, gp_ld_sums_t *t, const job_fig_t *j, double w)
{
	t->jobs++;
	t->profiled += j->has_rec;
	t->refused += j->refused;
	t->scaled += j->scaled;
	t->alloc_s += j->alloc * w;
	for (int c = 0; c < GP_NCAUSES; c++) {
		t->s[c] += j->s[c] * w;
		t->rec[c] += j->rec[c] * w;
	}
	if (j->end >= 0)
		t->end_s[j->end] += j->alloc * w;
	time_t until = l->until || l->bounded ? l->until : time(NULL);
	int week = j->end_t > until - 7 * 86400 ? 0 : j->end_t > until - 14 * 86400 ? 1 : -1;
	if (week >= 0 && j->end_t <= until) {
		double waste = 0;
		for (int c = 0; c < GP_NCAUSES; c++)
			if (c != GP_CAUSE_COMPUTE && c != GP_CAUSE_UNPROFILED)
				waste += j->s[c];
		t->week_alloc[week] += j->alloc * w;
		t->week_waste[week] += waste * w;
	}
}

/* A copy of key[0..n) among the groups' keys: blocks of KEY_BLOCK bytes, freed whole
 * (a key is at most 1 KiB: add_to_group); NULL without memory */
#define KEY_BLOCK (1u << 20)
static char *keep_key(gp_ledger_t *l, const char *key, size_t n)
{
	if (!l->nkeys || l->key_used + n + 1 > KEY_BLOCK) {
		char **k = realloc(l->keys, (l->nkeys + 1) * sizeof(*k));
		if (!k)
			return NULL;
		l->keys = k;
		if (!(k[l->nkeys] = malloc(KEY_BLOCK)))
			return NULL;
		l->nkeys++;
		l->key_used = 0;
	}
	char *at = l->keys[l->nkeys - 1] + l->key_used;
	memcpy(at, key, n);
	at[n] = '\0';
	l->key_used += n + 1;
	return at;
}

/* The table's slots doubled (kept at most half full), each group's index put back */
static int grow_slots(gp_ledger_t *l)
{
	size_t cap = l->cap ? l->cap * 2 : 1024;
	uint32_t *v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < l->cap; i++) {
		if (!l->slot[i])
			continue;
		size_t k = l->groups[l->slot[i] - 1].hash & (cap - 1);
		while (v[k])
			k = (k + 1) & (cap - 1);
		v[k] = l->slot[i];
	}
	free(l->slot);
	l->slot = v;
	l->cap = cap;
	return 0;
}

/* The group of key[0..n), made empty the first time: the groups themselves in one array
 * (its growth a realloc, which glibc makes an mremap for a large one, never a copy of
 * both), their indexes in an open-addressed table of 4 bytes a slot. A million groups
 * take 256 MB of sums and 8 MB of slots (the table of whole groups, half empty and doubled
 * by a copy, took 830 MB) */
static gp_ld_group_t *group_of(gp_ledger_t *l, const char *key, size_t n)
{
	if ((l->ngroups + 1) * 2 > l->cap && (l->ngroups >= UINT32_MAX - 1 || grow_slots(l)))
		return NULL;
	uint64_t h = gp_strhash(key, n);
	size_t k = h & (l->cap - 1);
	for (; l->slot[k]; k = (k + 1) & (l->cap - 1)) {
		gp_ld_group_t *g = &l->groups[l->slot[k] - 1];
		if (g->hash == h && !strcmp(g->key, key))
			return g;
	}
	if (l->ngroups == l->gcap) {
		size_t cap = l->gcap ? l->gcap + l->gcap / 2 : 256;
		gp_ld_group_t *g = realloc(l->groups, cap * sizeof(*g));
		if (!g)
			return NULL;
		l->groups = g;
		l->gcap = cap;
	}
	gp_ld_group_t *g = &l->groups[l->ngroups];
	*g = (gp_ld_group_t){.key = keep_key(l, key, n), .hash = h};
	if (!g->key)
		return NULL;
	l->slot[k] = (uint32_t)++l->ngroups;
	return g;
}

/* digits of s[0..n) as a number (its leading digits; 0 with none), at most 10^12 */
static unsigned long long host_num(const char *s, size_t n)
{
	unsigned long long v = 0;
	for (size_t i = 0; i < n && s[i] >= '0' && s[i] <= '9' && v < 1000000000000ull; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

/* Slurm's host list, node[01-03,7],gpu5: each name to fn (NULL: counted only), the count;
 * MAX_JOB_NODES + 1 when there are more (a file's n[0-4294967295]), before any is
 * named. No bound on a list's length or its ranges: a job on 10 000 nodes of a fragmented
 * cluster is gpu[00001,00003,...] of 60 KB (the list was cut at 4 096 hosts and each
 * item at 255 bytes) */
static size_t expand_hosts(const char *list, void (*fn)(const char *, void *), void *arg)
{
	size_t n = 0;
	char name[512];
	for (const char *p = list; *p;) {
		size_t len = 0;
		for (int depth = 0; p[len] && (depth || p[len] != ','); len++)
			depth += p[len] == '[' ? 1 : p[len] == ']' ? -1 : 0;
		const char *item = p, *end = p + len;
		p = *end ? end + 1 : end;
		const char *lb = memchr(item, '[', len);
		const char *rb = lb ? memchr(lb, ']', (size_t)(end - lb)) : NULL;
		if (!lb || !rb) {
			if (n++ == MAX_JOB_NODES)
				return n;
			if (fn) {
				snprintf(name, sizeof(name), "%.*s", (int)len, item);
				fn(name, arg);
			}
			continue;
		}
		for (const char *r = lb + 1; r < rb;) {
			const char *re = memchr(r, ',', (size_t)(rb - r));
			re = re ? re : rb;
			const char *dash = memchr(r, '-', (size_t)(re - r));
			int width = (int)((dash ? dash : re) - r);
			unsigned long long a = host_num(r, (size_t)width);
			unsigned long long b =
			    dash ? host_num(dash + 1, (size_t)(re - dash - 1)) : a;
			r = re < rb ? re + 1 : rb;
			if (b < a)
				continue;
			if (b - a + 1 > MAX_JOB_NODES - n)
				return MAX_JOB_NODES + 1;
			for (unsigned long long x = a; fn && x <= b; x++) {
				snprintf(name, sizeof(name), "%.*s%0*llu%.*s", (int)(lb - item),
				         item, width > 20 ? 20 : width, x, (int)(end - rb - 1),
				         rb + 1);
				fn(name, arg);
			}
			n += b - a + 1;
		}
	}
	return n;
}

typedef struct add_ctx {
	gp_ledger_t *l;
	char **f;
	const job_fig_t *j;
	double w;
} add_ctx_t;

/* A value of sacct's (a job name is the user's bytes) into out as text every output can
 * carry and no two values share: '\' as "\\", every control character (C0, DEL, C1)
 * and every byte that is no valid UTF-8 as "\xNN"; at most max bytes of v read, out cut at
 * a whole character. The '\x1f' that joins a group's values, a newline for OpenMetrics'
 * labels, an escape sequence for a terminal: none of them passes. */
static void ld_clean(char *out, size_t cap, const char *v, size_t max)
{
	size_t o = 0;
	const unsigned char *s = (const unsigned char *)v;
	for (size_t i = 0; i < max && s[i];) {
		size_t n = gp_utf8_char(s + i);
		if (n && i + n > max)
			break;
		char esc[8];
		size_t k = n ? n : 4;
		if (s[i] == '\\')
			memcpy(esc, "\\\\", k = 2);
		else if (!n)
			snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
		else
			memcpy(esc, s + i, n);
		if (o + k >= cap)
			break;
		memcpy(out + o, esc, k);
		o += k;
		i += n ? n : 1;
	}
	out[o] = '\0';
}

static void add_to_group(add_ctx_t *c, const char *node)
{
	char key[1024];
	size_t o = 0;
	static const int fld[GP_NBY] = {F_USER, F_ACCOUNT, F_PARTITION, F_NAME, F_NODES};
	for (unsigned i = 0; i < c->l->nby; i++) { /* each value cut at 200 bytes */
		int b = c->l->by[i];
		const char *v = b == GP_BY_NODE ? node : c->f[c->l->col[fld[b]]];
		char val[200];
		ld_clean(val, sizeof(val), v, 200);
		size_t n = strlen(val);
		if (i)
			key[o++] = '\x1f';
		memcpy(key + o, val, n);
		o += n;
	}
	key[o] = '\0';
	gp_ld_group_t *g = group_of(c->l, key, o);
	if (g)
		add_sums(c->l, &g->sums, c->j, c->w);
}

static void host_cb(const char *name, void *arg)
{
	add_to_group(arg, name);
}

/* nodes: the job's hosts (expand_hosts' count) */
static void add_groups(gp_ledger_t *l, char **f, const job_fig_t *j, size_t nodes)
{
	add_ctx_t c = {.l = l, .f = f, .j = j, .w = 1};
	bool by_node = false;
	for (unsigned i = 0; i < l->nby; i++)
		by_node |= l->by[i] == GP_BY_NODE;
	if (!by_node) {
		add_to_group(&c, NULL);
		return;
	}
	/* a job's GPU-seconds shared evenly by its nodes */
	c.w = nodes ? 1.0 / (double)nodes : 1;
	if (!nodes)
		add_to_group(&c, "");
	else
		expand_hosts(f[l->col[F_NODES]], host_cb, &c);
}

/* ---- the lists of jobs: the top ones kept in a min-heap while reading ---- */

static double key_of(const gp_ld_job_t *j, bool idle)
{
	return idle ? j->unused_s : j->waste_s;
}

/* Job ids in order: a shorter one first (numbers as numbers), else byte order */
static int id_cmp(const char *x, const char *y)
{
	size_t a = strlen(x), b = strlen(y);
	return a != b ? (a < b ? -1 : 1) : strcmp(x, y);
}

/* Does job x come after y in the list (less waste, or as much and a later id)? The heap's
 * order, total: which of equal jobs make the list is not the order they were read in */
static bool after(const gp_ld_job_t *x, const gp_ld_job_t *y, bool idle)
{
	double kx = key_of(x, idle), ky = key_of(y, idle);
	return kx != ky ? kx < ky : id_cmp(x->id, y->id) > 0;
}

static void heap_push(gp_ld_job_t **heap, unsigned *n, unsigned cap, const gp_ld_job_t *j,
                      bool idle)
{
	if (!cap || (!*heap && !(*heap = calloc(cap, sizeof(gp_ld_job_t)))))
		return; /* --top=0: no list */
	gp_ld_job_t *h = *heap;
	unsigned i;
	if (*n < cap) {
		i = (*n)++;
		for (; i && after(j, &h[(i - 1) / 2], idle); i = (i - 1) / 2)
			h[i] = h[(i - 1) / 2];
		h[i] = *j;
		return;
	}
	if (!after(&h[0], j, idle))
		return;
	for (i = 0;;) { /* replace the least, sift down */
		unsigned c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && after(&h[c + 1], &h[c], idle))
			c++;
		if (!after(&h[c], j, idle))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = *j;
}

/* Might heap_push keep a job of this key? (a job is 1.5 KiB to build: most never enter; one
 * of the least's key is built, its id decides) */
static bool heap_wants(const gp_ld_job_t *heap, unsigned n, unsigned cap, double key, bool idle)
{
	return cap && (n < cap || key >= key_of(&heap[0], idle));
}

static void list_job(gp_ledger_t *l, char **f, const job_fig_t *j, const gp_acct_rec_t *rec,
                     unsigned gpus)
{
	double waste = 0, unused = j->s[GP_CAUSE_UNUSED];
	for (int c = 0; c < GP_NCAUSES; c++)
		if (c != GP_CAUSE_COMPUTE && c != GP_CAUSE_UNPROFILED)
			waste += j->s[c];
	bool to_waste = waste > 0 && heap_wants(l->waste, l->nwaste, l->top, waste, false);
	bool to_idle = j->has_rec && unused > 0 && rec->gpus < gpus &&
	               heap_wants(l->idle, l->nidle, l->top, unused, true);
	if (!to_waste && !to_idle)
		return;
	gp_ld_job_t x = {0};
	ld_clean(x.id, sizeof(x.id), f[l->col[F_ID]], 200);
	ld_clean(x.user, sizeof(x.user), f[l->col[F_USER]], 200);
	ld_clean(x.account, sizeof(x.account), f[l->col[F_ACCOUNT]], 200);
	ld_clean(x.partition, sizeof(x.partition), f[l->col[F_PARTITION]], 200);
	ld_clean(x.name, sizeof(x.name), f[l->col[F_NAME]], 200);
	ld_clean(x.state, sizeof(x.state), f[l->col[F_STATE]], 200);
	x.alloc_s = j->alloc;
	x.unused_s = unused;
	x.waste_s = waste;
	x.gpus_alloc = gpus;
	x.has_rec = j->has_rec;
	if (j->has_rec) {
		x.rec = *rec;
		x.gpus_used = rec->gpus;
	}
	if (to_waste)
		heap_push(&l->waste, &l->nwaste, l->top, &x, false);
	if (to_idle)
		heap_push(&l->idle, &l->nidle, l->top, &x, true);
}

/* ---- one line ---- */

/* A job's line seen before: the same JobID, End, State and ElapsedRaw (daily dumps joined:
 * sacct -S/-E lists a job that ran across midnight in both days); a requeued job's runs
 * (sacct -D) differ in End, State or ElapsedRaw and stay apart. Keys kept as 64-bit hashes
 * (8 bytes a job, 16 MiB for a million): two different keys share one with odds of about
 * 3 in 10^8 over 10^6 jobs, and then the second job would be taken for a duplicate (said). */
static bool seen_before(gp_ledger_t *l, char **f)
{
	char key[1024];
	int n = snprintf(key, sizeof(key), "%.300s\x1f%.64s\x1f%.64s\x1f%.64s", f[l->col[F_ID]],
	                 f[l->col[F_END]], f[l->col[F_STATE]], f[l->col[F_ELAPSED]]);
	uint64_t h = gp_strhash(key, n < (int)sizeof(key) ? (size_t)n : sizeof(key) - 1);
	h += !h;
	if (l->nseen * 2 >= l->seen_cap) {
		size_t cap = l->seen_cap ? l->seen_cap * 2 : 4096;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (!v)
			return false; /* no memory: counted, as before */
		for (size_t i = 0; i < l->seen_cap; i++)
			if (l->seen[i]) {
				size_t k = l->seen[i] & (cap - 1);
				while (v[k])
					k = (k + 1) & (cap - 1);
				v[k] = l->seen[i];
			}
		free(l->seen);
		l->seen = v;
		l->seen_cap = cap;
	}
	size_t k = h & (l->seen_cap - 1);
	for (; l->seen[k]; k = (k + 1) & (l->seen_cap - 1))
		if (l->seen[k] == h)
			return true;
	l->seen[k] = h;
	l->nseen++;
	return false;
}

/* The job's figures: its allocation by cause (ledger.h) */
/* A record claims its GPU-seconds (the user's process measured them: doc/admin.md, "What
 * a user controls"); Slurm's allocation is the one figure the user cannot change. A job's
 * causes never sum past it: a record that claims more is scaled down to it (said beyond
 * ElapsedRaw's whole second per GPU, counted), so no record adds GPU-hours to the ledger
 * that Slurm did not allocate, whatever it says. */
static void scale_to_alloc(gp_ledger_t *l, const char *id, job_fig_t *j, unsigned gpus,
                           double covered)
{
	if (covered <= j->alloc || covered <= 0)
		return;
	double k = j->alloc / covered;
	for (int c = 0; c < GP_NCAUSES; c++)
		j->s[c] *= k;
	if (covered <= j->alloc + gpus) /* sacct's elapsed in whole seconds */
		return;
	j->scaled = true;
	if (l->scaled_said++ < REFUSED_SAID)
		gp_err("ledger: job %.32s: its record claims %.1f GPU-seconds, more than Slurm "
		       "allocated (%.1f: GPUs x elapsed); scaled down to the allocation",
		       id, covered, j->alloc);
}

static void job_figures(gp_ledger_t *l, const char *id, job_fig_t *j, unsigned gpus, double elapsed,
                        const gp_acct_rec_t *rec)
{
	j->alloc = gpus * elapsed;
	double covered = 0;
	if (j->has_rec)
		for (int c = 0; c < GP_NCAUSES; c++) {
			j->rec[c] = j->s[c] = rec->s[c];
			covered += rec->s[c];
		}
	scale_to_alloc(l, id, j, gpus, covered);
	double rest = j->alloc > covered ? j->alloc - covered : 0, unused = 0;
	/* GPUs no rank ran kernels on, where every rank's GPU use was recorded (a rank whose
	 * modes did not trace CUDA may have used one) and the record saw something: GPU time
	 * of some cause, or its report's first finding that a GPU went unused (gpu_unused:
	 * NVML's process lists, for a task too short to leave a millisecond). A record whose
	 * causes are all 0 otherwise (no GPU seen at all: no NVML, no CUDA traced) is no
	 * evidence, so the GPUs stay unprofiled */
	bool saw = j->has_rec && (covered > 0 || !strcmp(rec->top, "gpu_unused"));
	if (j->has_rec && saw && rec->gpus < gpus && rec->s[GP_CAUSE_UNPROFILED] <= 0) {
		double idle = (gpus - rec->gpus) * elapsed - rec->s[GP_CAUSE_UNUSED];
		unused = idle < 0 ? 0 : idle < rest ? idle : rest;
	}
	j->s[GP_CAUSE_UNUSED] += unused;
	j->s[GP_CAUSE_UNPROFILED] += rest - unused;
}

/* Split at the delimiter; with '|', JobName, the only field a user names freely, takes
 * any extra '|' (a sealed delimiter: exactly the header's fields, or none) */
static int split(gp_ledger_t *l, char *line, char **f)
{
	int n = cut_fields(l, line, f);
	if (n > MAX_COLS)
		return -1;
	int want = l->ncols ? l->ncols : NF, extra = n - want, name = l->col[F_NAME];
	if (extra < 0 || (extra > 0 && (name < 0 || l->dlen > 1)))
		return -1;
	for (int k = 0; k < extra; k++) /* JobName's pieces joined back */
		f[name + k + 1][-1] = '|';
	for (int i = name + 1; extra > 0 && i + extra < n; i++)
		f[i] = f[i + extra];
	return want;
}

/* A line that ends before its last field was cut by a newline in JobName (a user's
 * sbatch -J, which sacct -P prints raw): kept until its rest comes, so that the name's
 * tail is never read as a job of its own (a user naming another user, account or job id
 * there). -1: not a cut line (or too long to be one). */
static size_t count_fields(const gp_ledger_t *l, const char *line)
{
	size_t fields = 1;
	if (l->dlen == 1) {
		for (const char *p = line; (p = strchr(p, l->delim[0])); p++)
			fields++;
		return fields;
	}
	for (const char *p = line; (p = strstr(p, l->delim)); p += l->dlen)
		fields++;
	return fields;
}

/* A line the ledger cannot read, said (the first REFUSED_SAID of them) and counted. */
static void bad_line(gp_ledger_t *l, const char *line, const char *why)
{
	l->bad_lines++;
	if (l->bad_said++ >= REFUSED_SAID)
		return;
	/* its first 40 bytes, what no terminal shows raw (a job name's newlines and tabs too)
	 * as '?': the project's one rule (gp_shown) */
	char shown[41];
	size_t n = strnlen(line, 40);
	memcpy(shown, line, n);
	shown[gp_shown(shown, n, "")] = '\0';
	gp_err("ledger: line %llu unreadable (%s): %s%s", (unsigned long long)l->lines, why, shown,
	       line[n] ? "..." : "");
}

static int keep_head(gp_ledger_t *l, const char *line, size_t len)
{
	size_t fields = count_fields(l, line);
	bool sealed = l->dlen > 1;
	if (fields >= (size_t)(l->ncols ? l->ncols : NF) ||
	    l->head_lines >= (sealed ? MAX_SEALED_HEAD_LINES : MAX_HEAD_LINES) ||
	    len > MAX_HEAD_BYTES)
		return -1;
	free(l->head);
	l->head = strdup(line);
	l->head_lines++;
	return l->head ? 0 : -1;
}

static int job_line(gp_ledger_t *l, char *line);

/* A header again after jobs: files joined (two days' sealed dumps, cat a b). Under a
 * sealed delimiter, a line of its own (no cut line before it: a job name's tail is always
 * one, and no name holds the seal) that is a whole header is the next file's: its seal and
 * columns from here on. Under '|', where a name can make a line of its own, only the very
 * header read first is one (it changes nothing); another is an unreadable line. 1: read */
static int again_header(gp_ledger_t *l, const char *line)
{
	gp_ledger_t h;
	gp_ledger_init(&h);
	char *f[MAX_COLS], *copy = strdup(line), err[200];
	if (!copy)
		return 0;
	header_delim(&h, copy + 5);
	int n = cut_fields(&h, copy, f);
	int ok = n <= MAX_COLS && read_header(&h, f, n, err, sizeof(err)) == 0;
	free(copy);
	if (ok && (l->dlen > 1 || h.dlen == 1)) {
		/* under '|': the same columns only; a '|' file after a sealed one is '|'
		 * from here on (cmd_ledger says so: dlen 1 at the end) */
		if (l->dlen == 1 && (h.ncols != l->ncols || memcmp(h.col, l->col, sizeof(h.col))))
			return 0;
		memcpy(l->col, h.col, sizeof(l->col));
		l->ncols = h.ncols;
		memcpy(l->delim, h.delim, sizeof(l->delim));
		l->dlen = h.dlen;
		l->headers++;
		return 1;
	}
	return 0;
}

int gp_ledger_line(gp_ledger_t *l, char *line, size_t len, char *err, size_t errlen)
{
	char *f[MAX_COLS], *joined = NULL;
	l->lines++;
	if (l->col[0] < 0 && !strncasecmp(line, "JobID|", 6)) {
		header_delim(l, line + 5);
		int n = cut_fields(l, line, f);
		return read_header(l, f, n < MAX_COLS ? n : MAX_COLS, err, errlen);
	}
	if (l->ncols && !l->head && !strncasecmp(line, "JobID|", 6) && again_header(l, line))
		return 0;
	if (l->col[0] < 0) /* no header: --print-fields' order */
		for (int k = 0; k < NF; k++)
			l->col[k] = k;
	if (l->head && l->dlen > 1 && count_fields(l, line) >= (size_t)(l->ncols ? l->ncols : NF)) {
		/* sealed: a whole line on its own, so the cut one before it never got its rest
		 * (no name can hold the seal): that one unreadable, this one read */
		bad_line(l, l->head, "a line cut short");
		free(l->head);
		l->head = NULL;
		l->head_lines = 0;
	}
	if (l->head) { /* the rest of a cut line: the newline put back into JobName */
		size_t hl = strlen(l->head);
		if ((joined = malloc(hl + len + 2))) {
			memcpy(joined, l->head, hl);
			joined[hl] = '\n';
			memcpy(joined + hl + 1, line, len + 1);
			line = joined;
			len += hl + 1;
		}
		free(l->head);
		l->head = NULL;
	} else if (!*line) {
		return 0;
	}
	if (keep_head(l, line, len) == 0) {
		free(joined);
		return 0;
	}
	l->head_lines = 0;
	int rc = job_line(l, line);
	free(joined);
	return rc;
}

/* One job's whole line. */
static int job_line(gp_ledger_t *l, char *line)
{
	char *f[MAX_COLS];
	if (split(l, line, f) < 0) {
		bad_line(l, line, "not the header's fields");
		return 0;
	}
	const char *id = f[l->col[F_ID]], *state = f[l->col[F_STATE]];
	if (strchr(id, '.')) { /* a step: the allocation's line has the job */
		l->steps++;
		return 0;
	}
	unsigned gpus = tres_gpus(f[l->col[F_TRES]]);
	if (!gpus) {
		l->not_gpu++;
		return 0;
	}
	double elapsed = whole(f[l->col[F_ELAPSED]], MAX_ELAPSED_S);
	size_t nodes = expand_hosts(f[l->col[F_NODES]], NULL, NULL);
	if (gpus > MAX_GPUS || elapsed < 0 || nodes > MAX_JOB_NODES) { /* a file's hostile
		                                                          line: never summed */
		bad_line(l, id,
		         gpus == GPUS_NEGATIVE    ? "a negative GPU count"
		         : gpus == GPUS_NOT_WHOLE ? "a GPU count that is not a whole number"
		         : gpus > MAX_GPUS        ? "more GPUs than a job can hold"
		         : elapsed < 0            ? "ElapsedRaw not a whole number of seconds"
		                                  : "NodeList of more hosts than a job can hold");
		return 0;
	}
	/* still allocated: counted when it ends. A REQUEUED line is a run that ended (sacct
	 * -D lists a requeued or preempted job's every run): Slurm allocated it, so it counts */
	if (still_allocated(state)) {
		l->running++;
		return 0;
	}
	job_fig_t j = {.end_t = end_time(f[l->col[F_END]])};
	if (!j.end_t && strcmp(f[l->col[F_END]], "Unknown") && *f[l->col[F_END]]) {
		/* an ended job's End not as sacct prints it by default: never out of range by
		 * mistake (a SLURM_TIME_FORMAT of the caller's makes every End unreadable) */
		bad_line(l, id,
		         "End not a date as YYYY-MM-DDTHH:MM:SS (SLURM_TIME_FORMAT=standard)");
		return 0;
	}
	if (seen_before(l, f)) {
		l->duplicates++;
		if (l->dup_said++ < REFUSED_SAID)
			gp_err("ledger: line %llu: job %.32s (End %.20s, %.20s, %.20s s) is a "
			       "line seen before (files joined?): counted once",
			       (unsigned long long)l->lines, id, f[l->col[F_END]], state,
			       f[l->col[F_ELAPSED]]);
		return 0;
	}
	if (((l->since || l->bounded) && j.end_t < l->since) ||
	    ((l->until || l->bounded) && j.end_t > l->until)) {
		l->out_of_range++;
		return 0;
	}
	if (j.end_t && (!l->first_end || j.end_t < l->first_end))
		l->first_end = j.end_t;
	if (j.end_t > l->last_end)
		l->last_end = j.end_t;
	gp_acct_rec_t rec;
	int got = job_record(l, id, f[l->col[F_SC]], &rec);
	j.has_rec = got == 1;
	j.refused = got < 0;
	job_figures(l, id, &j, gpus, elapsed, &rec);
	j.end = end_kind(state, j.has_rec ? &rec : NULL);
	add_sums(l, &l->total, &j, 1);
	add_groups(l, f, &j, nodes);
	list_job(l, f, &j, &rec, gpus);
	return 0;
}

/* ---- the end ---- */

/* A group's place in the sort: its figures computed once (comparing the groups themselves
 * summed each one's waste 40 times over a million of them), in whole milliseconds: a sum
 * of the same jobs read in another order differs in its last bits, which must not reorder
 * two groups that print the same */
typedef struct group_ord {
	long long waste, alloc;
	const char *key;
	uint32_t idx;
} group_ord_t;

/* Wasted GPU-hours, most first; then allocated, most first; then the key (user, account,
 * ...), byte order: a total order, so two runs and two orders of the same lines print the
 * same table (a tie before fell to the hash table's slot order, which the order the
 * groups came in moves where keys collide) */
static int cmp_group(const void *a, const void *b)
{
	const group_ord_t *x = a, *y = b;
	if (x->waste != y->waste)
		return x->waste > y->waste ? -1 : 1;
	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* The keys copied into one block in the groups' order, so that every output reads them in
 * the order it writes them: in the order first seen, each of OpenMetrics' four families
 * missed the cache on every key (strchrnul on the keys was 14 % of a million groups' time).
 * No memory: left where they are. */
static void pack_keys(gp_ledger_t *l)
{
	size_t bound = l->nkeys ? (l->nkeys - 1) * (size_t)KEY_BLOCK + l->key_used : 0;
	char *blk = bound ? malloc(bound) : NULL, **one = blk ? malloc(sizeof(*one)) : NULL;
	if (!one) {
		free(blk);
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < l->ngroups; i++) {
		size_t n = strlen(l->groups[i].key) + 1;
		memcpy(blk + o, l->groups[i].key, n);
		l->groups[i].key = blk + o;
		o += n;
	}
	for (size_t i = 0; i < l->nkeys; i++)
		free(l->keys[i]);
	free(l->keys);
	one[0] = blk;
	l->keys = one;
	l->nkeys = 1;
	l->key_used = KEY_BLOCK; /* full: a later key gets a block of its own */
}

/* The groups by wasted GPU-hours, then allocated, then their keys (cmp_group); moved into
 * that order in place, a cycle of the permutation at a time */
static void sort_groups(gp_ledger_t *l)
{
	size_t n = l->ngroups, r = 0;
	group_ord_t *o = n ? malloc(n * sizeof(*o)) : NULL;
	if (!o) /* no memory: the order first seen */
		return;
	for (size_t k = 0; k < l->cap; k++)
		if (l->slot[k]) {
			const gp_ld_group_t *g = &l->groups[l->slot[k] - 1];
			o[r] =
			    (group_ord_t){llround(gp_ld_waste(&g->sums) * 1e3),
			                  llround(g->sums.alloc_s * 1e3), g->key, l->slot[k] - 1};
			r++;
		}
	free(l->slot); /* no lookups after this */
	l->slot = NULL;
	l->cap = 0;
	qsort(o, n, sizeof(*o), cmp_group);
	uint32_t *from = (uint32_t *)o; /* o[i].idx packed in place: the i-th group's index */
	for (size_t i = 0; i < n; i++)
		from[i] = o[i].idx;
	for (size_t i = 0; i < n; i++) {
		if (from[i] == i)
			continue;
		gp_ld_group_t tmp = l->groups[i];
		size_t j = i;
		for (;;) {
			size_t k = from[j];
			from[j] = (uint32_t)j;
			if (k == i) {
				l->groups[j] = tmp;
				break;
			}
			l->groups[j] = l->groups[k];
			j = k;
		}
	}
	free(o);
	pack_keys(l);
}

/* the lists of jobs: most first, a tie by job id (after: qsort keeps no order of its own) */
static int cmp_waste(const void *a, const void *b)
{
	return after(a, b, false) ? 1 : after(b, a, false) ? -1 : 0;
}

static int cmp_unused(const void *a, const void *b)
{
	return after(a, b, true) ? 1 : after(b, a, true) ? -1 : 0;
}

void gp_ledger_finish(gp_ledger_t *l)
{
	sort_groups(l);
	if (l->nwaste)
		qsort(l->waste, l->nwaste, sizeof(*l->waste), cmp_waste);
	if (l->nidle)
		qsort(l->idle, l->nidle, sizeof(*l->idle), cmp_unused);
	if (l->head) { /* a cut line whose rest never came */
		bad_line(l, l->head, "a line cut short at the end");
		free(l->head);
		l->head = NULL;
	}
	if (l->refused_said > REFUSED_SAID)
		gp_err("ledger: %u more records refused (not shown; counted)",
		       l->refused_said - REFUSED_SAID);
	if (l->bad_said > REFUSED_SAID)
		gp_err("ledger: %u more unreadable lines (not shown; counted)",
		       l->bad_said - REFUSED_SAID);
	if (l->dup_said > REFUSED_SAID)
		gp_err("ledger: %u more duplicate lines (not shown; counted once)",
		       l->dup_said - REFUSED_SAID);
	if (l->scaled_said > REFUSED_SAID)
		gp_err("ledger: %u more records scaled down to their allocation (not shown; "
		       "counted)",
		       l->scaled_said - REFUSED_SAID);
}
