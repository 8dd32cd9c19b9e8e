/* Site policy (etc/gpuprof.yaml), loaded with libyaml. Keys, types and defaults live in
 * one table in config.c and doc/admin.md. An unknown key or a wrong type is an error
 * naming file and line; a missing file means defaults. */
#ifndef GP_SITECONF_H
#define GP_SITECONF_H

#include <stdbool.h>
#include <stddef.h>

struct gp_setting;

#define GP_CONFIG_MAXLIST 64
#define GP_CONFIG_MAXMAP  64

typedef struct gp_strlist {
	unsigned n;
	char *v[GP_CONFIG_MAXLIST];
} gp_strlist_t;

/* name: modes (GP_T_MODEMAP), or name: 0/1 in modes (GP_T_BOOLMAP) */
typedef struct gp_modemap {
	unsigned n;
	char *key[GP_CONFIG_MAXMAP];
	unsigned modes[GP_CONFIG_MAXMAP];
} gp_modemap_t;

/* name: text (finding_notes: a finding's id and the site's note on it) */
typedef struct gp_textmap {
	unsigned n;
	char *key[GP_CONFIG_MAXMAP];
	char *text[GP_CONFIG_MAXMAP];
} gp_textmap_t;

typedef struct gp_config {
	bool enabled;
	bool required;
	unsigned default_modes;
	unsigned allowed_modes;
	gp_modemap_t partition_modes; /* allowed modes per partition */
	gp_modemap_t account_modes;   /* allowed modes per account */
	gp_strlist_t users_allow, users_deny, accounts_allow, accounts_deny;
	bool profile_all_jobs;               /* every task with GPUs, without --gpuprof */
	gp_modemap_t profile_all_partitions; /* per partition: 0/1 over profile_all_jobs */
	gp_modemap_t profile_all_accounts;   /* per account */
	bool profile_all_opt_out;            /* --gpuprof=none keeps a job out of it */
	char *site_output;                   /* their job directory: /ROOT/%u/... */
	char *site_group;                    /* who else reads it ("": the user alone) */
	long long site_quota_per_user;       /* bytes under ROOT/USER; 0: no cap */
	long site_quota_cache;               /* seconds a node reuses its walk; 0: each step */
	char *output;                        /* job directory template */
	char *spool_dir;                     /* node-local spool; "" = $TMPDIR, else /tmp */
	long long max_bytes_per_rank;
	long nvml_hz;
	long warmup_steps;
	char *step_range;
	long live_interval; /* seconds between a rank's live figures; 0: none */
	bool group_readable;
	bool admin_comment;
	bool report_at_end;
	long report_timeout; /* seconds the detached end-of-step and epilog report may take */
	bool pytorch;        /* the PyTorch integration (agent/python) */
	long torch_history_entries; /* its allocator history ring; 0: no history */
	bool torch_layers;          /* its module ranges while kernels are traced */
	char *agent_path;           /* default: the installed gpuprof-agent */
	char *inject_path;          /* default: the installed libgpuprof-inject.so */
	char *cli_path;             /* default: the installed gpuprof */
	gp_textmap_t finding_notes; /* gpuprof ledger: a site's note per finding id */
} gp_config_t;

/* Fill cfg with defaults. */
void gp_config_defaults(gp_config_t *cfg);
/* Load path over the defaults. Missing file (ENOENT) is not an error when
 * missing_ok. Returns -1 with a message "path:line: ..." in err. On error cfg holds the
 * defaults (no partial config). */
int gp_config_load(gp_config_t *cfg, const char *path, bool missing_ok, char *err, size_t errlen);
void gp_config_free(gp_config_t *cfg);
/* Modes allowed for this partition/account (site allowed_modes narrowed by the maps). */
unsigned gp_config_allowed(const gp_config_t *cfg, const char *partition, const char *account);
/* Whether a job of this partition/account that did not ask is profiled by the site
 * (profile_all_jobs and its maps: an entry of false in either map wins, then one of
 * true, then profile_all_jobs). NULL partition/account: no entry of theirs. */
bool gp_config_profile_all(const gp_config_t *cfg, const char *partition, const char *account);
/* Whether any job at all may be profiled by the site (the client's notice). */
bool gp_config_profile_any(const gp_config_t *cfg);
/* Is this user/account admitted by the allow/deny lists? reason set on denial. */
bool gp_config_admits(const gp_config_t *cfg, const char *user, const char *account,
                      const char **reason);
/* A site setting's value in cfg as its environment variable carries it to a task
 * (settings.h, GP_SET_TASK): -1 for a list or a mapping. */
int gp_config_env_text(const gp_config_t *cfg, const struct gp_setting *s, char *buf, size_t len);
/* The site's note on finding id (finding_notes), NULL when none. */
const char *gp_config_note(const gp_config_t *cfg, const char *id);
/* Print the policy in force, for --gpuprof=help. */
int gp_config_describe(const gp_config_t *cfg, char *buf, size_t len);

#endif
