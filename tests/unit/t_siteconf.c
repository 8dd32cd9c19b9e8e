/* Site configuration loader: documented keys, types, defaults; errors name file:line. */
#include "config.h"
#include "siteconf.h"
#include "env.h"
#include "modes.h"
#include "settings.h"
#include "tap.h"

#include <stdlib.h>
#include <unistd.h>

static char path[64];

static int load(const char *text, gp_config_t *cfg, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return gp_config_load(cfg, path, false, err, errlen);
}

static const struct {
	const char *text;
	const char *msg; /* substring, with the line number */
} bad[] = {
    {"enabled: maybe\n", ":1: 'enabled' must be true or false, not 'maybe'"},
    {"enabled: true\nbogus: 1\n", ":2: unknown key 'bogus'"},
    {"finding_notes: [a, b]\n", ":1: 'finding_notes' must be a mapping of id: text"},
    {"finding_notes:\n  idle_gaps: [x]\n", ":2: 'finding_notes': expected text"},
    {"finding_notes:\n  a: x\n  a: y\n", ":3: 'finding_notes': 'a' is given twice"},
    {"finding_notes:\n  a: \"x\\ty\"\n", "'finding_notes': "},
    {"default_modes: nvtx,memm\n", ":1: 'default_modes': unknown mode 'memm'"},
    {"default_modes: help\n", "'help' is not a mode here"},
    {"nvml_hz: fast\n", ":1: 'nvml_hz' must be a whole number"},
    {"nvml_hz: -1\n", "'nvml_hz' must be a whole number"},
    {"max_bytes_per_rank: 12Q\n", "'max_bytes_per_rank' must be a size"},
    {"users_deny: bob\n", "'users_deny' must be a list"},
    {"output: [a, b]\n", "'output' must be a single value"},
    {"partition_modes:\n  gpu: nvtx\n  debug: bad\n", ":3: 'partition_modes': unknown mode 'bad'"},
    {"- a\n- b\n", "top level must be a mapping"},
    {"enabled: 'unterminated\n", "YAML syntax error"},
    {"a: 1\n---\nb: 2\n", "unknown key 'a'"},
    /* issue 15: a second value never silently wins, sizes never overflow, bounds hold */
    {"users_deny: [alice]\nenabled: true\nusers_deny: [bob]\n",
     ":3: 'users_deny' is given twice (first on line 1)"},
    {"partition_modes:\n  gpu: nvtx\n  gpu: all\n", ":3: 'partition_modes': 'gpu' is given twice"},
    {"max_bytes_per_rank: 8388608T\n", ":1: 'max_bytes_per_rank' must be a size"},
    {"max_bytes_per_rank: 99999999999999999999\n", "'max_bytes_per_rank' must be a size"},
    {"max_bytes_per_rank: +5M\n", "'max_bytes_per_rank' must be a size"},
    {"nvml_hz: 0\n", ":1: 'nvml_hz' must be a whole number from 1 to 100, not '0'"},
    {"nvml_hz: 1000\n", "'nvml_hz' must be a whole number from 1 to 100"},
    {"output: /scratch/%q/x\n", ":1: 'output': unknown escape '%q'"},
    {"output: /scratch/x%\n", ":1: 'output': trailing '%'"},
    {"torch_history_entries: -5\n", "'torch_history_entries' must be a whole number"},
    {"pytorch: maybe\n", ":1: 'pytorch'"},
    /* issue 48: profiling every GPU job by site policy */
    {"profile_all_jobs: true\n", ":1: 'profile_all_jobs' needs 'site_output'"},
    {"enabled: true\nprofile_all_accounts:\n  ml: true\n",
     ":2: 'profile_all_accounts' needs 'site_output'"},
    {"profile_all_partitions:\n  gpu: maybe\n",
     ":2: 'profile_all_partitions': 'gpu' must be true or false"},
    {"profile_all_partitions: [gpu]\n",
     ":1: 'profile_all_partitions' must be a mapping of name: true or false"},
    {"site_output: gpuprof/%u/%j\n", ":1: 'site_output': must be absolute"},
    {"site_output: /srv/gpuprof/%j\n", "needs a directory that is %u alone"},
    {"site_output: /srv/gpuprof/%u-%j\n", "needs a directory that is %u alone"},
    {"site_output: /srv/%x/%u/%j\n", "an escape before the user's directory %u"},
    {"site_output: /srv/gpuprof/%u\n", "needs the job's directory below %u"},
    {"site_output: /%u/%j\n", "%u cannot be a directory of / itself"},
    {"site_output: /srv/../%u/%j\n", "'.' and '..' are not allowed"},
    {"site_output: /srv/gp/%u/%q\n", ":1: 'site_output': unknown escape '%q'"},
    {"site_group: 'a b'\n", ":1: 'site_group': 'a b' is not a group name"},
    {"site_group: a/b\n", "is not a group name"},
    {"site_quota_per_user: lots\n", ":1: 'site_quota_per_user' must be a size"},
    {"profile_all_opt_out: perhaps\n", ":1: 'profile_all_opt_out' must be true or false"},
};

int main(void)
{
	gp_config_t cfg;
	char err[512];
	snprintf(path, sizeof(path), "/tmp/gp-t-siteconf.%d.yaml", (int)getpid());

	gp_config_defaults(&cfg);
	ok(cfg.enabled && !cfg.required && cfg.nvml_hz == 10 && cfg.warmup_steps == 3 &&
	       cfg.pytorch && cfg.torch_history_entries == 100000,
	   "defaults");
	ok(!strcmp(cfg.output, "gpuprof-%j"), "default output template");
	ok(cfg.max_bytes_per_rank == 1ll << 30 && cfg.allowed_modes == GP_MODES_KNOWN &&
	       cfg.default_modes == (GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_CUDA | GP_MODE_MEM) &&
	       cfg.admin_comment && cfg.report_at_end && !cfg.group_readable,
	   "defaults parsed from the table (1G, every mode with layers, ...)");

	/* the table: every default parses as its own type; keys and variables unique; every
	 * setting passed to a task has a variable and a field to pass */
	int badd = 0, dup = 0, task = 0;
	for (unsigned i = 0; i < gp_nsettings; i++) {
		const gp_setting_t *s = &gp_settings[i];
		char why[256];
		long long v[2];
		if (s->type != GP_T_LIST && s->type != GP_T_MODEMAP && s->type != GP_T_TEXTMAP &&
		    s->type != GP_T_BOOLMAP && gp_setting_parse(s, s->def, v, why, sizeof(why)) < 0)
			badd++, diag("%s", why);
		for (unsigned j = i + 1; j < gp_nsettings; j++)
			dup +=
			    (s->key && gp_settings[j].key && !strcmp(s->key, gp_settings[j].key)) ||
			    (s->env && gp_settings[j].env && !strcmp(s->env, gp_settings[j].env));
		task += (s->flags & GP_SET_TASK) && (!s->env || s->off == GP_SET_NOCONF);
		badd += !s->doc || !*s->doc || (!s->key && !s->env);
	}
	ok(!badd && !dup && !task, "settings table: %u entries, defaults parse, names unique",
	   gp_nsettings);

	/* the value in force: the variable's when valid, else the default (said once) */
	unsetenv(GP_ENV_NVML_HZ);
	ok(gp_setting_long(GP_ENV_NVML_HZ) == 10, "unset variable: the default");
	setenv(GP_ENV_NVML_HZ, "25", 1);
	ok(gp_setting_long(GP_ENV_NVML_HZ) == 25, "set: its value");
	setenv(GP_ENV_NVML_HZ, "5000", 1);
	ok(gp_setting_long(GP_ENV_NVML_HZ) == 10, "out of bounds: the default");
	setenv(GP_ENV_NVML_HZ, "", 1);
	ok(gp_setting_long(GP_ENV_NVML_HZ) == 10, "empty: the default");
	setenv(GP_ENV_MAXBYTES, "512M", 1);
	ok(gp_setting_long(GP_ENV_MAXBYTES) == 512ll << 20, "a size with its suffix");
	setenv(GP_ENV_MAXBYTES, "1073741824", 1);
	ok(gp_setting_long(GP_ENV_MAXBYTES) == 1ll << 30, "a size in bytes, as the plugin writes");
	setenv(GP_ENV_GROUP_READABLE, "1", 1);
	setenv(GP_ENV_STEP_MARKERS, "off", 1);
	ok(gp_setting_bool(GP_ENV_GROUP_READABLE) && !gp_setting_bool(GP_ENV_STEP_MARKERS),
	   "booleans: 1 and off");
	unsetenv(GP_ENV_STEP_MARKERS);
	ok(gp_setting_bool(GP_ENV_STEP_MARKERS), "unset boolean: its default (true)");
	setenv(GP_ENV_WARMUP, "abc", 1);
	ok(gp_setting_long(GP_ENV_WARMUP) == 3, "a number that does not parse: the default");
	ok(gp_setting_default_long("warmup_steps") == 3, "a site key's default, parsed");

	/* what the plugin passes to a task: the config's values, as the readers parse them */
	cfg.max_bytes_per_rank = 3ll << 20;
	cfg.group_readable = true;
	char tv[64];
	const gp_setting_t *mb = gp_setting_env(GP_ENV_MAXBYTES);
	ok(gp_config_env_text(&cfg, mb, tv, sizeof(tv)) == 0 && !strcmp(tv, "3145728"),
	   "max_bytes_per_rank as the task's variable: %s", tv);
	ok(gp_config_env_text(&cfg, gp_setting_key("group_readable"), tv, sizeof(tv)) == 0 &&
	       !strcmp(tv, "1"),
	   "group_readable: %s", tv);
	ok(gp_config_env_text(&cfg, gp_setting_key("users_deny"), tv, sizeof(tv)) < 0,
	   "a list is never passed");
	gp_config_free(&cfg);

	ok(gp_config_load(&cfg, "/nonexistent/gpuprof.yaml", true, err, sizeof(err)) == 0,
	   "missing file means defaults");
	gp_config_free(&cfg);
	ok(gp_config_load(&cfg, "/nonexistent/gpuprof.yaml", false, err, sizeof(err)) == -1,
	   "missing file is an error when required");
	gp_config_free(&cfg);

	int rc = load("# site policy\n"
	              "enabled: yes\n"
	              "required: false\n"
	              "default_modes: nvtx,mem\n"
	              "allowed_modes: timing,nvtx,mem,cuda\n"
	              "partition_modes:\n"
	              "  debug: timing,nvtx\n"
	              "users_deny: [mallory]\n"
	              "accounts_allow:\n"
	              "  - ml\n"
	              "  - hpc\n"
	              "output: /scratch/%u/gpuprof-%j\n"
	              "max_bytes_per_rank: 256M\n"
	              "nvml_hz: 5\n",
	              &cfg, err, sizeof(err));
	if (!ok(rc == 0, "full config loads"))
		diag("%s", err);
	ok(cfg.default_modes == (GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_MEM), "default_modes");
	ok(cfg.max_bytes_per_rank == 256ll << 20, "size with suffix");
	ok(cfg.nvml_hz == 5, "int");
	ok(!strcmp(cfg.output, "/scratch/%u/gpuprof-%j"), "string");
	ok(gp_config_allowed(&cfg, "debug", "ml") == (GP_MODE_TIMING | GP_MODE_NVTX),
	   "partition narrows allowed modes");
	ok(gp_config_allowed(&cfg, "gpu", "ml") ==
	       (GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_MEM | GP_MODE_CUDA),
	   "other partition gets site allowed modes");
	const char *why = NULL;
	ok(!gp_config_admits(&cfg, "mallory", "ml", &why) && strstr(why, "users_deny"),
	   "denied user");
	ok(!gp_config_admits(&cfg, "alice", "physics", &why) && strstr(why, "accounts_allow"),
	   "account not allowed");
	ok(gp_config_admits(&cfg, "alice", "hpc", &why), "admitted");
	gp_config_describe(&cfg, err, sizeof(err));
	ok(strstr(err, "default_modes=timing,nvtx,mem") != NULL, "describe shows policy");
	gp_config_free(&cfg);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		rc = load(bad[i].text, &cfg, err, sizeof(err));
		ok(rc == -1, "bad config %zu rejected", i);
		if (!ok(strstr(err, bad[i].msg) && strstr(err, path), "message %zu names file:line",
		        i))
			diag("got: %s", err);
		ok(cfg.enabled && cfg.nvml_hz == 10, "defaults restored after error %zu", i);
		gp_config_free(&cfg);
	}
	rc = load("", &cfg, err, sizeof(err));
	ok(rc == 0 && cfg.enabled, "empty file means defaults");
	ok(!cfg.profile_all_jobs && cfg.profile_all_opt_out && !*cfg.site_output &&
	       !*cfg.site_group && cfg.site_quota_per_user == 20ll << 30 &&
	       !gp_config_profile_any(&cfg) && !gp_config_profile_all(&cfg, "gpu", "ml"),
	   "by default no job is profiled unasked (20G quota, opting out allowed)");
	gp_config_free(&cfg);

	/* profile_all_jobs with its maps: a false in either wins, then a true, then the
	 * cluster's value */
	rc = load("profile_all_jobs: true\n"
	          "profile_all_partitions:\n  debug: false\n  gpu: true\n"
	          "profile_all_accounts:\n  ml: true\n  private: no\n"
	          "profile_all_opt_out: false\n"
	          "site_output: /srv/gpuprof/%u/%j\n"
	          "site_group: gpuadmins\n"
	          "site_quota_per_user: 5G\n",
	          &cfg, err, sizeof(err));
	if (!ok(rc == 0, "profile_all_jobs with site_output and the maps loads"))
		diag("%s", err);
	ok(gp_config_profile_all(&cfg, "batch", "physics") &&
	       !gp_config_profile_all(&cfg, "debug", "ml") &&
	       !gp_config_profile_all(&cfg, "gpu", "private") &&
	       gp_config_profile_all(&cfg, NULL, NULL) && !cfg.profile_all_opt_out &&
	       !strcmp(cfg.site_group, "gpuadmins") && cfg.site_quota_per_user == 5ll << 30,
	   "a false entry wins over the cluster's true and over another map's true");
	gp_config_describe(&cfg, err, sizeof(err));
	ok(strstr(err, "every GPU job profiled into /srv/gpuprof/%u/%j (no opting out)") != NULL,
	   "describe says every GPU job is profiled, where, and that none opts out");
	gp_config_free(&cfg);
	rc = load("profile_all_partitions:\n  gpu: true\n"
	          "profile_all_accounts:\n  ml: yes\n"
	          "site_output: /srv/gpuprof/%u/%x/%j\n",
	          &cfg, err, sizeof(err));
	ok(rc == 0 && gp_config_profile_any(&cfg) && gp_config_profile_all(&cfg, "gpu", NULL) &&
	       gp_config_profile_all(&cfg, "cpu", "ml") &&
	       !gp_config_profile_all(&cfg, "cpu", "physics") &&
	       !gp_config_profile_all(&cfg, NULL, NULL),
	   "per partition and per account alone, the cluster's value off");
	gp_config_free(&cfg);

	/* finding_notes: gpuprof ledger's note per finding id */
	rc =
	    load("finding_notes:\n  input_bound: \"https://hpc.example.edu/dl\"\n  sync_stall: Log "
	         "less often.\n",
	         &cfg, err, sizeof(err));
	ok(rc == 0 && cfg.finding_notes.n == 2 &&
	       !strcmp(gp_config_note(&cfg, "input_bound"), "https://hpc.example.edu/dl") &&
	       !strcmp(gp_config_note(&cfg, "sync_stall"), "Log less often.") &&
	       !gp_config_note(&cfg, "straggler"),
	   "finding_notes: id: text, looked up by id (none for another)");
	gp_config_free(&cfg);

	/* the file the packages install as /etc/gpuprof.yaml says "every value below is the
	 * default": it must not narrow anything (issue 32: it dropped layers) */
	gp_config_t def, shipped;
	gp_config_defaults(&def);
	rc = gp_config_load(&shipped, GP_TOP_SRCDIR "/etc/gpuprof.yaml", false, err, sizeof(err));
	if (!ok(rc == 0, "the shipped etc/gpuprof.yaml loads"))
		diag("%s", err);
	ok(shipped.allowed_modes == def.allowed_modes && (shipped.allowed_modes & GP_MODE_LAYERS),
	   "shipped allowed_modes is the default, layers included");
	ok(shipped.enabled == def.enabled && shipped.required == def.required &&
	       shipped.default_modes == def.default_modes && !strcmp(shipped.output, def.output) &&
	       !strcmp(shipped.spool_dir, def.spool_dir) &&
	       shipped.max_bytes_per_rank == def.max_bytes_per_rank &&
	       shipped.nvml_hz == def.nvml_hz && shipped.warmup_steps == def.warmup_steps &&
	       !strcmp(shipped.step_range, def.step_range) &&
	       shipped.group_readable == def.group_readable &&
	       shipped.profile_all_jobs == def.profile_all_jobs &&
	       shipped.profile_all_opt_out == def.profile_all_opt_out &&
	       !strcmp(shipped.site_output, def.site_output) &&
	       shipped.site_quota_per_user == def.site_quota_per_user &&
	       shipped.admin_comment == def.admin_comment &&
	       shipped.report_at_end == def.report_at_end && shipped.pytorch == def.pytorch &&
	       shipped.torch_history_entries == def.torch_history_entries &&
	       !shipped.partition_modes.n && !shipped.account_modes.n && !shipped.users_allow.n &&
	       !shipped.users_deny.n && !shipped.accounts_allow.n && !shipped.accounts_deny.n &&
	       !shipped.finding_notes.n,
	   "every value the shipped file sets is the default");
	gp_config_free(&shipped);
	gp_config_free(&def);
	unlink(path);
	return done_testing();
}
