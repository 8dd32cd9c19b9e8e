/* The table of settings (settings.h) and the readers of their values. */
#include "config.h"
#include "settings.h"
#include "env.h"
#include "modes.h"
#include "siteconf.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OFF(f) offsetof(gp_config_t, f)
#define NOC    GP_SET_NOCONF
#define TASK   GP_SET_TASK
#define USER   GP_SET_USER
/* a bare --gpuprof, and the agent's modes when nothing says otherwise */
#define DEFAULT_MODES "timing,nvtx,cuda,mem"

const gp_setting_t gp_settings[] = {
    /* the site's policy (gpuprof.yaml); some are passed on to every task */
    {"enabled", NULL, GP_T_BOOL, "true", 0, 0, OFF(enabled), 0, "master switch for the cluster",
     NULL},
    {"required", GP_ENV_REQUIRED, GP_T_BOOL, "false", 0, 0, OFF(required), TASK,
     "a task that cannot be profiled fails instead of running unprofiled", NULL},
    {"default_modes", NULL, GP_T_MODES, DEFAULT_MODES, 0, 0, OFF(default_modes), 0,
     "the modes of a bare --gpuprof", NULL},
    {"allowed_modes", NULL, GP_T_MODES, "all,layers", 0, 0, OFF(allowed_modes), 0,
     "what users may ask for; narrowed further per partition or account",
     "every mode, layers included"},
    {"partition_modes", NULL, GP_T_MODEMAP, "", 0, 0, OFF(partition_modes), 0,
     "allowed modes per partition (name: modes), intersected with allowed_modes", NULL},
    {"account_modes", NULL, GP_T_MODEMAP, "", 0, 0, OFF(account_modes), 0,
     "allowed modes per account (name: modes), intersected with allowed_modes", NULL},
    {"users_allow", NULL, GP_T_LIST, "", 0, 0, OFF(users_allow), 0,
     "users who may use gpuprof (* matches everyone; empty: everyone)", NULL},
    {"users_deny", NULL, GP_T_LIST, "", 0, 0, OFF(users_deny), 0,
     "users who may not (wins over users_allow)", NULL},
    {"accounts_allow", NULL, GP_T_LIST, "", 0, 0, OFF(accounts_allow), 0,
     "accounts whose jobs may use gpuprof (* matches every account; empty: all)", NULL},
    {"accounts_deny", NULL, GP_T_LIST, "", 0, 0, OFF(accounts_deny), 0,
     "accounts whose jobs may not (wins over accounts_allow)", NULL},
    {"profile_all_jobs", NULL, GP_T_BOOL, "false", 0, 0, OFF(profile_all_jobs), 0,
     "every task that was allocated GPUs runs under gpuprof with default_modes and the "
     "default capture, without --gpuprof; its job directory goes under site_output (needed). "
     "Tasks without GPUs are never wrapped",
     NULL},
    {"profile_all_partitions", NULL, GP_T_BOOLMAP, "", 0, 0, OFF(profile_all_partitions), 0,
     "profile_all_jobs per partition (name: true or false), over the cluster's value; a "
     "false here or in profile_all_accounts wins",
     NULL},
    {"profile_all_accounts", NULL, GP_T_BOOLMAP, "", 0, 0, OFF(profile_all_accounts), 0,
     "profile_all_jobs per account (name: true or false), as profile_all_partitions", NULL},
    {"profile_all_opt_out", NULL, GP_T_BOOL, "true", 0, 0, OFF(profile_all_opt_out), 0,
     "a user may keep a job out of profile_all_jobs with --gpuprof=none (or GPUPROF_MODES=none); "
     "false: the site's policy holds and the client says so",
     NULL},
    {"site_output", NULL, GP_T_STR, "", 0, 0, OFF(site_output), 0,
     "the job directory of a job profiled by profile_all_jobs that did not name one itself: "
     "an absolute template with a directory of its own for the user, /ROOT/%u/..., e.g. "
     "/srv/gpuprof/%u/%j; ROOT is root's and writable by nobody else (a root-owned sticky /tmp "
     "only on the way to it), the user's directory is "
     "made by root for the user (0700, or 2750 with site_group), the rest as the user",
     NULL},
    {"site_group", NULL, GP_T_STR, "", 0, 0, OFF(site_group), 0,
     "a group whose members may read the job directories under site_output (the user's "
     "directory is made 2750 in that group and the job's files 0640); empty: the user alone",
     NULL},
    {"site_quota_per_user", NULL, GP_T_SIZE, "20G", 0, 0, OFF(site_quota_per_user), 0,
     "the most a user's directory under site_output may hold in what the template could "
     "have made (its job directories, not the user's own files beside them): checked when a "
     "step starts "
     "(a user at it gets no site profile until `gpuprof prune` or the user frees room; "
     "below it each rank's cap is the room left shared by the step's tasks); 0: no cap",
     NULL},
    {"site_quota_cache", NULL, GP_T_INT, "300", 0, 86400, OFF(site_quota_cache), 0,
     "seconds a node reuses its last measure of a user's directory for site_quota_per_user, "
     "with every cap it granted since added (an upper bound of what the directory holds); "
     "a bound that leaves too little room measures again at once; 0: measure at every step",
     NULL},
    {"output", GP_ENV_OUTPUT, GP_T_STR, "gpuprof-%j", 0, 0, OFF(output), USER,
     "the job directory, a template (doc/admin.md, Templates: %j job id, %u user, %x job "
     "name, %s step, %n node, %h its short name); relative to the submit directory (the "
     "user's --gpuprof-output or variable wins)",
     NULL},
    {"spool_dir", NULL, GP_T_STR, "", 0, 0, OFF(spool_dir), 0,
     "node-local spool for rings and rank files in flight, a node's template (%n this "
     "host's name, %h its short name); empty: the job's $TMPDIR when absolute, else /tmp. "
     "Each recording process's ring takes 20 504 KiB there (16 MiB of shared slots, 4 MiB "
     "of per-thread lanes), reserved when it is made, plus its rank file in flight",
     NULL},
    {"max_bytes_per_rank", GP_ENV_MAXBYTES, GP_T_SIZE, "1G", 0, 0, OFF(max_bytes_per_rank), TASK,
     "cap per rank file; records past it are dropped and counted in the report", NULL},
    {"nvml_hz", GP_ENV_NVML_HZ, GP_T_INT, "10", 1, 100, OFF(nvml_hz), TASK,
     "NVML samples per second in mode gpu (mode timing keeps 1 per second)", NULL},
    {"warmup_steps", GP_ENV_WARMUP, GP_T_INT, "3", 0, 1000000, OFF(warmup_steps), TASK,
     "steps excluded from the step statistics", NULL},
    {"step_range", GP_ENV_STEP_RANGE, GP_T_STR, "", 0, 0, OFF(step_range), TASK,
     "the NVTX range that marks a step; empty: the outermost range of the program's own "
     "domain that repeats and holds its GPU work (not a side thread's loop)",
     NULL},
    {"live_interval", GP_ENV_LIVE_INTERVAL, GP_T_INT, "30", 0, 86400, OFF(live_interval),
     TASK | USER,
     "seconds between a running rank's live figures (rank<R>.live.json beside its rank file: "
     "steps, step time, GPU busy, memory, losses and findings so far and in the last "
     "interval, read by `gpuprof top` and the report of a running job); 0: none",
     NULL},
    {"group_readable", GP_ENV_GROUP_READABLE, GP_T_BOOL, "false", 0, 0, OFF(group_readable), TASK,
     "job files 0750/0640 instead of 0700/0600", NULL},
    {"admin_comment", NULL, GP_T_BOOL, "true", 0, 0, OFF(admin_comment), 0,
     "a one-line summary in the job's AdminComment (sacct -o AdminComment)", NULL},
    {"report_at_end", NULL, GP_T_BOOL, "true", 0, 0, OFF(report_at_end), 0,
     "report.txt and report.json in the job directory when the steps and the job end", NULL},
    {"report_timeout", NULL, GP_T_INT, "600", 10, 86400, OFF(report_timeout), 0,
     "seconds the end-of-step and epilog report may take (it runs detached: neither srun nor "
     "the node's teardown waits for it); then it is killed, and the epilog's AdminComment "
     "says there is no report",
     NULL},
    {"pytorch", GP_ENV_PYTORCH, GP_T_BOOL, "true", 0, 0, OFF(pytorch), TASK | USER,
     "the PyTorch integration: a sitecustomize hook first on the task's PYTHONPATH, acting "
     "only in programs that import torch (steps from optimizer.step(), optimizer state, "
     "the caching allocator's figures and memory_viz snapshots)",
     NULL},
    {"torch_history_entries", GP_ENV_TORCH_HISTORY, GP_T_INT, "100000", 0, 10000000,
     OFF(torch_history_entries), TASK | USER,
     "entries of PyTorch's allocator history ring in mode mem (recorded in windows); 0: "
     "no history",
     NULL},
    {"torch_layers", GP_ENV_TORCH_LAYERS, GP_T_BOOL, "true", 0, 0, OFF(torch_layers), TASK | USER,
     "in mode cuda, PyTorch's module ranges while kernels are traced (a capture window): "
     "each traced kernel under the module that launched it, forward and backward; the hooks "
     "are registered at a window's first optimizer step and removed at its end (no cost "
     "between windows), never once torch.compile has run (mode layers: all along)",
     NULL},
    {"torch_ops", GP_ENV_TORCH_OPS, GP_T_BOOL, "true", 0, 0, OFF(torch_ops), TASK | USER,
     "in mode cuda, PyTorch's operation ranges in the first 3 steps of each capture window "
     "after the warm-up: "
     "each torch call the program makes named by its source line (\"linear @ train.py:42 "
     "(step)\"), its backward by the same line, for the report's kernel time by operation "
     "and by source line; a torch-function mode pushed at a window's first optimizer step "
     "and popped 3 steps later (no cost between), never once torch.compile has run (mode "
     "layers: all along); a program with no optimizer step (inference) gets them in its "
     "top-level module calls 4-6 (a global module hook, removed after them)",
     NULL},
    {"agent_path", NULL, GP_T_STR, GP_AGENT_PATH, 0, 0, OFF(agent_path), 0,
     "the gpuprof-agent to run (plugstack.conf's agent= wins)", "the installed one"},
    {"inject_path", GP_ENV_INJECT, GP_T_STR, GP_INJECT_PATH, 0, 0, OFF(inject_path), TASK,
     "the libgpuprof-inject.so to inject (plugstack.conf's inject= wins)", "the installed one"},
    {"cli_path", NULL, GP_T_STR, GP_CLI_PATH, 0, 0, OFF(cli_path), 0,
     "the gpuprof that writes the step-end and epilog reports and salvages dead agents' "
     "spools (plugstack.conf's cli= wins)",
     "the installed one"},
    {"finding_notes", NULL, GP_T_TEXTMAP, "", 0, 0, OFF(finding_notes), 0,
     "the site's note per finding id (id: text or URL), shown by gpuprof ledger beside the "
     "jobs that wasted most, as jobstats' notes",
     NULL},
    /* the environment only: what a user (or a benchmark) sets for one job */
    {NULL, GP_ENV_MODES, GP_T_MODES, DEFAULT_MODES, 0, 0, NOC, USER,
     "the modes when --gpuprof gives none (srun/sbatch), and `gpuprof run`'s default", NULL},
    {NULL, GP_ENV_RANKS, GP_T_STR, "", 0, 0, NOC, USER,
     "the ranks to profile, as --gpuprof-ranks (empty: all)", NULL},
    {NULL, GP_ENV_CAPTURE, GP_T_STR, "sampled", 0, 0, NOC, USER,
     "when kernels are traced (mode cuda): sampled[=LEN/EVERY] (the start-up, the warm-up "
     "and 20 more steps, then 20 of every 500; by cost where no steps are seen), all, "
     "steps=A-B[,C-D...] (0-based, inclusive) or cudaprofilerapi (between "
     "cudaProfilerStart and Stop); between windows steps are timed by step markers",
     NULL},
    {NULL, GP_ENV_CUPTI, GP_T_STR, "", 0, 0, NOC, USER,
     "the libcupti to load where the dynamic linker does not find one (doc/admin.md)", NULL},
    {NULL, GP_ENV_ALLOC_STACKS, GP_T_BOOL, "false", 0, 0, NOC, USER,
     "take CUPTI's one callback slot for allocation call stacks even in a PyTorch, JAX or "
     "TensorFlow process (their own profilers then lose CUDA activity)",
     NULL},
    {NULL, GP_ENV_STEP_MARKERS, GP_T_BOOL, "true", 0, 0, NOC, USER,
     "step completion markers (a CUDA event at the end of each outermost NVTX range) in "
     "modes without cuda; false: the headline is the host period",
     NULL},
    {NULL, GP_ENV_LAUNCH_SITES, GP_T_INT, "4096", 0, 1000000, NOC, USER,
     "in mode cuda, in a program no framework integration names (CUDA C/C++): the call "
     "stack of the first N kernel launches of each of the first 2 capture windows, for the "
     "report's kernel time by calling function and source line; 0: none. CUPTI's one callback "
     "subscriber is "
     "held for them until the second window ends, then given back for the program's own "
     "CUPTI tools",
     NULL},
    {NULL, GP_ENV_CUPTI_FLUSH_MS, GP_T_INT, "0", 0, 10000, NOC, USER,
     "CUPTI's flush period in ms (10 or more); 0: 200 while kernels are traced, 1000 when "
     "only memory is",
     NULL},
    {NULL, GP_ENV_CUPTI_API, GP_T_STR, "auto", 0, 0, NOC, USER,
     "how CUDA API calls are traced in mode cuda: calls (an activity record of each call "
     "the report reads, enabled for the whole run), windows (CUPTI's runtime and driver "
     "kinds, enabled only while kernels are traced), off (benchmarks), auto (windows with "
     "sampled capture, else calls)",
     NULL},
    {NULL, GP_ENV_CUPTI_DETACH, GP_T_STR, "auto", 0, 0, NOC, USER,
     "with sampled capture, give CUPTI back between windows (cuptiFinalize at the exit of "
     "the program's next synchronising runtime call (cudaStreamSynchronize, cudaDeviceSynchronize, "
     "cudaEventSynchronize, cudaMemcpy: a program that never makes one is never detached) "
     "once the GPU has finished a window's work; its memory "
     "records attached again at once): a CUPTI that once traced kernels costs every later "
     "launch about 1.5 us on the H200 host, kinds disabled or not. true, false, or auto "
     "(on in plain CUDA programs and PyTorch with the driver and CUPTI of CUDA 12.6 or later, "
     "off in JAX and TensorFlow; never after steps= windows; in PyTorch only after a window "
     "a step marker follows: a step-less loop's detach corrupted the heap in 14 of 46 runs "
     "on the H100, CUDA 13.0)",
     NULL},
    {NULL, GP_ENV_CUPTI_DETACH_POLL_MS, GP_T_INT, "100", 0, 10000, NOC, USER,
     "a detach after a window that no step marker follows (an inference loop, "
     "generate() calls): every N ms the worker looks whether the window's launches all have "
     "their kernel records, and detaches then (H200, generate() loops: 0.10-0.18 s after the "
     "window in 7 of 8 runs, 2.4 s in one; 5.2 s in a loop whose allocator history ended "
     "meanwhile); 0 waits 10 s for a marker instead, which a short job outlasts with CUPTI "
     "attached. No detach begins while the PyTorch integration works on the allocator; "
     "none of these in PyTorch under GPUPROF_CUPTI_DETACH=auto",
     NULL},
    {NULL, GP_ENV_CUPTI_DISCARD, GP_T_BOOL, "false", 0, 0, NOC, USER,
     "benchmarks: enable the same CUPTI kinds but free the buffers unread (the CUPTI "
     "floor)",
     NULL},
    {NULL, GP_ENV_AGENT, GP_T_STR, "", 0, 0, NOC, USER,
     "`gpuprof run`: the agent to exec (empty: beside gpuprof, else the installed one)", NULL},
    {NULL, GP_ENV_REPORT_THREADS, GP_T_INT, "0", 0, 1024, NOC, USER,
     "threads `gpuprof report` and the exports read rank files with; 0: every online core", NULL},
    {NULL, GP_ENV_REPORT_SUMMARIES, GP_T_BOOL, "true", 0, 0, NOC, USER,
     "the agent writes each rank's summary (rankR.gps) at capture end, and `gpuprof "
     "report` reads it where it is valid and writes it where missing; false: no agent "
     "writes one, every rank file is read and nothing is written",
     NULL},
    {NULL, GP_ENV_SUMMARY_MIN, GP_T_SIZE, "16K", 0, 0, NOC, USER,
     "the smallest rank file the agent and `gpuprof report` write a summary for: below "
     "it the summary (~20 KiB) is larger than the rank file and reading the rank file "
     "costs the report under 0.6 ms",
     NULL},
    {NULL, GP_ENV_DEBUG, GP_T_BOOL, "false", 0, 0, NOC, USER,
     "debug lines on stderr from every part", NULL},
};
const unsigned gp_nsettings = sizeof(gp_settings) / sizeof(gp_settings[0]);
_Static_assert(sizeof(gp_settings) / sizeof(gp_settings[0]) <= GP_SETTINGS_MAX, "GP_SETTINGS_MAX");

/* the setting whose name at offset off (key or env) is name */
static const gp_setting_t *setting_by(size_t off, const char *name)
{
	for (unsigned i = 0; name && i < gp_nsettings; i++) {
		const char *n = *(const char *const *)((const char *)&gp_settings[i] + off);
		if (n && !strcmp(n, name))
			return &gp_settings[i];
	}
	return NULL;
}

const gp_setting_t *gp_setting_key(const char *key)
{
	return setting_by(offsetof(gp_setting_t, key), key);
}

const gp_setting_t *gp_setting_env(const char *env)
{
	return setting_by(offsetof(gp_setting_t, env), env);
}

int gp_parse_bool(const char *v, bool *out)
{
	static const char *t[] = {"true", "yes", "on", "1"}, *f[] = {"false", "no", "off", "0"};
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, t[i]))
			return *out = true, 0;
		if (!strcasecmp(v, f[i]))
			return *out = false, 0;
	}
	return -1;
}

/* "64M", "1G", "1024" -> bytes; -1 when not a size or past 2^62 (8388608T overflowed) */
int gp_parse_size(const char *v, long long *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || n < 0 || *v < '0' || *v > '9')
		return -1;
	int shift = 0;
	const char *suf = "KMGT", *at = *end ? strchr(suf, *end & ~0x20) : NULL;
	if (at) {
		shift = 10 * (int)(at - suf + 1);
		end++;
	}
	if (n > (1LL << 62) >> shift)
		return -1;
	n <<= shift;
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		return -1;
	*out = n;
	return 0;
}

int gp_setting_parse(const gp_setting_t *s, const char *v, void *out, char *why, size_t whylen)
{
	const char *name = s->key ? s->key : s->env;
	switch (s->type) {
	case GP_T_BOOL:
		if (gp_parse_bool(v, out) == 0)
			return 0;
		snprintf(why, whylen, "'%s' must be true or false, not '%s'", name, v);
		return -1;
	case GP_T_MODES: {
		char w[256];
		unsigned m = 0;
		if (gp_modes_parse(v, &m, w, sizeof(w)) == 0 && !(m & GP_MODE_HELP))
			return *(unsigned *)out = m, 0;
		snprintf(why, whylen, "'%s': %s", name,
		         (m & GP_MODE_HELP) ? "'help' is not a mode here" : w);
		return -1;
	}
	case GP_T_INT: {
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (!errno && end != v && !*end && n >= s->lo && n <= s->hi)
			return *(long *)out = n, 0;
		snprintf(why, whylen, "'%s' must be a whole number from %ld to %ld, not '%s'", name,
		         s->lo, s->hi, v);
		return -1;
	}
	case GP_T_SIZE:
		if (gp_parse_size(v, out) == 0)
			return 0;
		snprintf(why, whylen,
		         "'%s' must be a size such as 512M or 2G (at most 4194304T), not '%s'",
		         name, v);
		return -1;
	case GP_T_STR:
		return 0;
	default:
		snprintf(why, whylen, "'%s' is a list or mapping", name);
		return -1;
	}
}

/* The variable's text when it is set and parses, else the default's; v parsed into out. */
static const char *in_force(const char *env, void *out)
{
	const gp_setting_t *s = gp_setting_env(env);
	char why[512];
	if (!s)
		return NULL;
	const char *v = getenv(env);
	if (v && !*v)
		v = NULL; /* set but empty: as if unset */
	if (v && gp_setting_parse(s, v, out, why, sizeof(why)) == 0)
		return v;
	if (v) { /* once per process and setting: a hot reader must not flood stderr */
		static _Atomic unsigned long said;
		unsigned long bit = 1ul << ((unsigned)(s - gp_settings) % 64);
		if (!(atomic_fetch_or(&said, bit) & bit))
			fprintf(stderr, "gpuprof: %s=%s: %s; the default (%s) is used\n", env, v,
			        why, *s->def ? s->def : "empty");
	}
	gp_setting_parse(s, s->def, out, why, sizeof(why));
	return s->def;
}

bool gp_setting_bool(const char *env)
{
	bool b = false;
	in_force(env, &b);
	return b;
}

long long gp_setting_long(const char *env)
{
	const gp_setting_t *s = gp_setting_env(env);
	long l = 0;
	long long ll = 0;
	if (!s)
		return 0;
	in_force(env, s->type == GP_T_SIZE ? (void *)&ll : (void *)&l);
	return s->type == GP_T_SIZE ? ll : l;
}

const char *gp_setting_str(const char *env)
{
	const char *v = in_force(env, NULL);
	return v ? v : "";
}

long long gp_setting_default_long(const char *key)
{
	const gp_setting_t *s = gp_setting_key(key);
	char why[256];
	long l = 0;
	long long ll = 0;
	if (!s || gp_setting_parse(s, s->def, s->type == GP_T_SIZE ? (void *)&ll : (void *)&l, why,
	                           sizeof(why)) < 0)
		return 0;
	return s->type == GP_T_SIZE ? ll : l;
}

static const char *type_name(const gp_setting_t *s, char *b, size_t len)
{
	static const char *names[] = {"bool",
	                              "modes",
	                              "string",
	                              "int",
	                              "size",
	                              "list",
	                              "mapping name: modes",
	                              "mapping id: text",
	                              "mapping name: bool"};
	if (s->type == GP_T_INT)
		snprintf(b, len, "int %ld..%ld", s->lo, s->hi);
	else
		snprintf(b, len, "%s", names[s->type]);
	return b;
}

/* man: backslashes doubled, a leading dot or quote escaped */
static void man_text(FILE *f, const char *t)
{
	if (*t == '.' || *t == '\'')
		fputs("\\&", f);
	for (; *t; t++)
		if (*t == '\\')
			fputs("\\e", f);
		else if (*t == '-')
			fputs("\\-", f);
		else
			fputc(*t, f);
}

int gp_settings_print(FILE *f, const char *which, const char *format)
{
	bool site = !strcmp(which, "site");
	if (!site && strcmp(which, "env"))
		return -1;
	bool md = !strcmp(format, "markdown"), man = !strcmp(format, "man");
	if (!md && !man && strcmp(format, "text"))
		return -1;
	if (md)
		fputs(site
		          ? "| key | type | default | variable | meaning |\n|---|---|---|---|---|\n"
		          : "| variable | type | default | site key | meaning "
		            "|\n|---|---|---|---|---|\n",
		      f);
	for (unsigned i = 0; i < gp_nsettings; i++) {
		const gp_setting_t *s = &gp_settings[i];
		char tb[64];
		const char *name = site ? s->key : s->env, *other = site ? s->env : s->key;
		char ob[96];
		if (!site && other && (s->flags & GP_SET_TASK)) /* the plugin sets it */
			snprintf(ob, sizeof(ob), "%s (set for every task)", other), other = ob;
		const char *def = s->shown ? s->shown : *s->def ? s->def : "\"\"";
		if (!name || (!site && !(s->flags & (GP_SET_USER | GP_SET_TASK))))
			continue;
		if (s->type == GP_T_LIST || s->type == GP_T_MODEMAP || s->type == GP_T_TEXTMAP ||
		    s->type == GP_T_BOOLMAP)
			def = "empty";
		type_name(s, tb, sizeof(tb));
		if (md)
			fprintf(f, "| %s | %s | %s | %s | %s |\n", name, tb, def,
			        other ? other : "-", s->doc);
		else if (man) {
			fprintf(f, ".TP\n.B %s\n(%s, default ", name, tb);
			man_text(f, def);
			if (other) {
				fprintf(f, "; %s ", site ? "variable" : "site key");
				man_text(f, other);
			}
			fputs(")\n", f);
			man_text(f, s->doc);
			fputs(".\n", f);
		} else
			fprintf(f, "%-22s %-16s %-22s %s\n", name, tb, def, s->doc);
	}
	return ferror(f) ? -1 : 0;
}
