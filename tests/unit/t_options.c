/* The plugin's option handling (spank/options.c) inside a stand-in for Slurm's side of
 * spank.h: the options it registers, their callbacks as srun and slurmstepd call them
 * (checks on the client only, idempotent), the site policy and --gpuprof=help, the
 * resolution against GPUPROF_* and the site defaults, and the environment a task gets. */
#include "config.h"
#include "plugin.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the stand-in for Slurm: the context, and what was registered ---- */
static spank_context_t stub_ctx = S_CTX_LOCAL;
static struct spank_option *registered[8];
static int nregistered;

spank_context_t spank_context(void)
{
	return stub_ctx;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	if (nregistered == 8)
		return ESPANK_ERROR;
	registered[nregistered++] = opt;
	return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
	return err == ESPANK_SUCCESS ? "success" : "error";
}

/* ---- the test's side ---- */
static char last_msg[1024];

static void sink(int level, const char *msg)
{
	(void)level;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

static struct spank_option *option(const char *name)
{
	for (int i = 0; i < nregistered; i++)
		if (!strcmp(registered[i]->name, name))
			return registered[i];
	return NULL;
}

/* the callback as srun (remote 0) or slurmstepd (remote 1) calls it */
static int give(const char *name, const char *value, int remote)
{
	struct spank_option *o = option(name);
	last_msg[0] = '\0';
	return o ? o->cb(o->val, value, remote) : -2;
}

static const char *env_vals[16][2];

static const char *fake_get(const char *name, void *arg)
{
	(void)arg;
	for (int i = 0; i < 16 && env_vals[i][0]; i++)
		if (!strcmp(env_vals[i][0], name))
			return env_vals[i][1];
	return NULL;
}

static void fake_env(const char *name, const char *value)
{
	int i = 0;
	while (i < 15 && env_vals[i][0] && strcmp(env_vals[i][0], name))
		i++;
	env_vals[i][0] = name;
	env_vals[i][1] = value;
}

static char exported[1024];

static int capture_set(const char *name, const char *value, void *arg)
{
	(void)arg;
	size_t n = strlen(exported);
	snprintf(exported + n, sizeof(exported) - n, "%s%s=%s", n ? " " : "", name, value);
	return 0;
}

/* resolve into p, then the environment of a task of rank 3 in step 0 */
static int resolve_env(gp_plugin_t *p, char *err, size_t errlen)
{
	char modes[128];
	gp_task_env_t t;
	exported[0] = '\0';
	if (gp_options_resolve(p, fake_get, NULL, err, errlen) < 0)
		return -1;
	gp_opts_task_env(&p->opts, &t, modes, sizeof(modes));
	t.jobdir = "/j";
	t.step = "0";
	t.rank = "3";
	return gp_task_env_export(&t, capture_set, NULL);
}

static void registration(gp_plugin_t *p)
{
	ok(gp_options_register(NULL, p) == 0, "options registered");
	ok(nregistered == 4, "four options (%d)", nregistered);
	static const char *names[] = {"gpuprof", "gpuprof-output", "gpuprof-ranks",
	                              "gpuprof-capture"};
	for (size_t i = 0; i < 4; i++)
		ok(option(names[i]) != NULL, "--%s registered", names[i]);
	ok(option("gpuprof") && option("gpuprof")->has_arg == 2,
	   "--gpuprof takes an optional value");
}

/* before any option is given: the variables and the site defaults */
static void from_environment(gp_plugin_t *p)
{
	char err[600];
	ok(resolve_env(p, err, sizeof(err)) == 0 && p->opts.modes == 0,
	   "no option, no variable: not profiled");
	fake_env(GP_ENV_MODES, "nvtx");
	ok(resolve_env(p, err, sizeof(err)) == 0 &&
	       p->opts.modes == (GP_MODE_TIMING | GP_MODE_NVTX),
	   "GPUPROF_MODES=nvtx: timing and nvtx");
	ok(!p->opts.modes_given, "... from the variable, not the option");
	is_str(p->opts.output, "gpuprof-%j", "the site's output when none given");
	is_str(exported,
	       "GPUPROF_MODES=timing,nvtx GPUPROF_JOBDIR=/j GPUPROF_STEP=0 GPUPROF_RANK=3",
	       "the task's environment");
	fake_env(GP_ENV_OUTPUT, "/o/%u");
	fake_env(GP_ENV_RANKS, "0,8-15");
	fake_env(GP_ENV_CAPTURE, "steps=3-5");
	ok(resolve_env(p, err, sizeof(err)) == 0, "variables for every option");
	is_str(p->opts.output, "/o/%u", "GPUPROF_OUTPUT taken");
	ok(gp_ranks_contains(&p->opts.ranks, 9) && !gp_ranks_contains(&p->opts.ranks, 3),
	   "GPUPROF_RANKS taken");
	ok(strstr(exported, "GPUPROF_CAPTURE=steps=3-5") != NULL, "GPUPROF_CAPTURE passed on");
	static const struct {
		const char *var, *value, *msg;
	} bad[] = {
	    {GP_ENV_MODES, "memm", "GPUPROF_MODES: unknown mode 'memm'"},
	    {GP_ENV_OUTPUT, "o-%q", "GPUPROF_OUTPUT: unknown escape '%q'"},
	    {GP_ENV_RANKS, "1,", "GPUPROF_RANKS:"},
	    {GP_ENV_CAPTURE, "bogus", "GPUPROF_CAPTURE:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *keep = fake_get(bad[i].var, NULL);
		fake_env(bad[i].var, bad[i].value);
		err[0] = '\0';
		ok(resolve_env(p, err, sizeof(err)) == -1, "%s=%s refused", bad[i].var,
		   bad[i].value);
		if (!ok(!strncmp(err, bad[i].msg, strlen(bad[i].msg)), "... naming %s", bad[i].var))
			diag("got '%s'", err);
		fake_env(bad[i].var, keep);
	}
}

/* srun's side: each value checked where the user typed it */
static void client_callbacks(gp_plugin_t *p)
{
	static const struct {
		const char *opt, *value, *msg; /* msg NULL: accepted */
	} cases[] = {
	    {"gpuprof", "mem,nvtx", NULL},
	    {"gpuprof", "memm", "--gpuprof: unknown mode 'memm'"},
	    {"gpuprof", "gpu", "--gpuprof: mode 'gpu' is not allowed on this cluster"},
	    {"gpuprof-output", "out-%j-%h", NULL},
	    {"gpuprof-output", "out-%q", "--gpuprof-output: unknown escape '%q'"},
	    {"gpuprof-output", "out-%", "--gpuprof-output: trailing '%'"},
	    {"gpuprof-output", "a\tb", "--gpuprof-output:"},
	    {"gpuprof-ranks", "0,8-15", NULL},
	    {"gpuprof-ranks", "1,", "--gpuprof-ranks:"},
	    {"gpuprof-ranks", "5-2", "--gpuprof-ranks:"},
	    {"gpuprof-capture", "steps=0-9", NULL},
	    {"gpuprof-capture", "bogus", "--gpuprof-capture:"},
	};
	p->cfg.allowed_modes &= ~GP_MODE_GPU;
	stub_ctx = S_CTX_LOCAL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = give(cases[i].opt, cases[i].value, 0);
		if (!cases[i].msg) {
			ok(rc == 0, "--%s=%s accepted", cases[i].opt, cases[i].value);
			continue;
		}
		ok(rc == -1, "--%s=%s refused", cases[i].opt, cases[i].value);
		if (!ok(!strncmp(last_msg, cases[i].msg, strlen(cases[i].msg)), "... saying %s",
		        cases[i].msg))
			diag("got '%s'", last_msg);
	}
	/* the allocator (salloc) is a client too; slurmstepd checks nothing (the client did) */
	stub_ctx = S_CTX_ALLOCATOR;
	ok(give("gpuprof", "memm", 0) == -1, "salloc: checked");
	stub_ctx = S_CTX_REMOTE;
	ok(give("gpuprof-ranks", "1,", 1) == 0, "slurmstepd: not checked again");
	stub_ctx = S_CTX_LOCAL;
	p->cfg.allowed_modes |= GP_MODE_GPU;
}

/* what the options resolve to, over the variables */
static void options_win(gp_plugin_t *p)
{
	char err[600];
	fake_env(GP_ENV_MODES, "cuda");
	give("gpuprof", "mem,nvtx", 0);
	give("gpuprof", "mem,nvtx", 1); /* slurmstepd calls it again */
	give("gpuprof-output", "/out/%j", 0);
	give("gpuprof-ranks", "2-4", 0);
	give("gpuprof-capture", "steps=0-9", 0);
	ok(resolve_env(p, err, sizeof(err)) == 0, "options resolved");
	ok(p->opts.modes == (GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_MEM) && p->opts.modes_given,
	   "--gpuprof wins over GPUPROF_MODES");
	is_str(p->opts.output, "/out/%j", "--gpuprof-output wins over GPUPROF_OUTPUT");
	ok(gp_ranks_contains(&p->opts.ranks, 3) && !gp_ranks_contains(&p->opts.ranks, 9),
	   "--gpuprof-ranks wins over GPUPROF_RANKS");
	is_str(exported,
	       "GPUPROF_MODES=timing,nvtx,mem GPUPROF_JOBDIR=/j GPUPROF_STEP=0 GPUPROF_RANK=3 "
	       "GPUPROF_CAPTURE=steps=0-9",
	       "the task's environment from the options");
	give("gpuprof", NULL, 0); /* a bare --gpuprof */
	p->cfg.default_modes = GP_MODE_TIMING | GP_MODE_CUDA;
	ok(resolve_env(p, err, sizeof(err)) == 0 && p->opts.modes == p->cfg.default_modes,
	   "a bare --gpuprof: the site's default_modes");
	give("gpuprof", "none", 0);
	ok(resolve_env(p, err, sizeof(err)) == 0 && (p->opts.modes & GP_MODE_NONE),
	   "--gpuprof=none resolves to none");
}

/* --gpuprof=help prints and leaves, like --help, before anything is submitted */
static void help(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		return skip("no pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		give("gpuprof", "help", 0);
		_exit(3); /* not reached when help leaves */
	}
	close(fds[1]);
	char buf[4096] = "";
	size_t got = 0;
	ssize_t n;
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fds[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--gpuprof=help exits 0");
	ok(strstr(buf, "--gpuprof-output=DIR") && strstr(buf, "%h"),
	   "--gpuprof=help describes the options and the template's escapes");
}

int main(void)
{
	static gp_plugin_t p;
	char err[512];
	gp_log_set_sink(sink);
	if (gp_config_load(&p.cfg, "/nonexistent/gpuprof.yaml", true, err, sizeof(err)) < 0)
		diag("config: %s", err);
	p.config_ok = true;
	registration(&p);
	from_environment(&p);
	client_callbacks(&p);
	options_win(&p);
	help();
	gp_config_free(&p.cfg);
	return done_testing();
}
