/* What Slurm itself says about the job, through its C API instead of the job's
 * environment or scontrol's text: the account and partition the site policy is about
 * (SLURM_JOB_ACCOUNT is the user's to set), and the AdminComment, read and written as a
 * field (`scontrol show job -o` puts JobName, Command and WorkDir, which the user
 * writes, before it; any " AdminComment=" among them took its place).
 *
 * The functions come from the libslurmfull that slurmstepd (and the job epilog's
 * slurmstepd) already has loaded: looked up at run time, so the plugin links nothing of
 * Slurm's and works the same under 22.05 and 24.11. The structures are those of the
 * slurm.h we are built against, which is the running Slurm's (a SPANK plugin is built
 * per Slurm version). */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>

typedef int (*load_job_fn)(job_info_msg_t **, uint32_t, uint16_t);
typedef void (*free_job_fn)(job_info_msg_t *);
typedef void (*init_desc_fn)(job_desc_msg_t *);
typedef int (*update_job_fn)(job_desc_msg_t *);
typedef int (*get_errno_fn)(void);

static struct {
	bool tried, ok;
	load_job_fn load;
	free_job_fn free_info;
	init_desc_fn init_desc;
	update_job_fn update;
	get_errno_fn get_errno;
} api;

typedef void (*slurm_init_fn)(const char *);

static bool have_api(void)
{
	if (!api.tried) {
		api.tried = true;
		/* in our own child: the library's plugins (hash, auth) may not be set up in
		 * the process that loaded us (24.11's epilog); a second init is harmless */
		slurm_init_fn init = (slurm_init_fn)dlsym(RTLD_DEFAULT, "slurm_init");
		if (init)
			init(NULL);
		api.load = (load_job_fn)dlsym(RTLD_DEFAULT, "slurm_load_job");
		api.free_info = (free_job_fn)dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg");
		api.init_desc = (init_desc_fn)dlsym(RTLD_DEFAULT, "slurm_init_job_desc_msg");
		api.update = (update_job_fn)dlsym(RTLD_DEFAULT, "slurm_update_job");
		api.get_errno = (get_errno_fn)dlsym(RTLD_DEFAULT, "slurm_get_errno");
		api.ok = api.load && api.free_info && api.init_desc && api.update;
		if (!api.ok)
			gp_debug("Slurm's job API is not loaded in this process");
	}
	return api.ok;
}

static int job_info_here(uint32_t job, gp_slurm_job_t *out)
{
	job_info_msg_t *msg = NULL;
	memset(out, 0, sizeof(*out));
	if (!have_api())
		return -1;
	if (api.load(&msg, job, SHOW_ALL) != 0 || !msg) {
		gp_debug("slurm_load_job(%u) failed", job);
		return -1;
	}
	int rc = -1;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const slurm_job_info_t *j = &msg->job_array[i];
		if (j->job_id != job)
			continue;
		snprintf(out->account, sizeof(out->account), "%s", j->account ? j->account : "");
		snprintf(out->partition, sizeof(out->partition), "%s",
		         j->partition ? j->partition : "");
		snprintf(out->admin_comment, sizeof(out->admin_comment), "%s",
		         j->admin_comment ? j->admin_comment : "");
		out->admin_comment_cut =
		    j->admin_comment && strlen(j->admin_comment) >= sizeof(out->admin_comment);
		rc = 0;
		break;
	}
	api.free_info(msg);
	return rc;
}

/* Other tools' text, without an older gpuprof summary (re-runs replace, never pile up):
 * ours is always the last part, "gpuprof: ..." after "; " or alone. */
static void strip_ours(char *s)
{
	char *p = NULL;
	for (char *q = s; (q = strstr(q, "gpuprof:")); q++)
		if (q == s || (q >= s + 2 && !strncmp(q - 2, "; ", 2)))
			p = q;
	if (!p)
		return;
	while (p > s && (p[-1] == ' ' || p[-1] == ';'))
		p--;
	*p = '\0';
}

/* After the job has finished slurmctld refuses updates; the accounting database takes
 * them (what `sacctmgr modify job` does, without its parser, which lowercased values
 * and matched every job when the id was empty): one job id, this cluster only. */
typedef void *(*list_create_fn)(void (*)(void *));
typedef void *(*list_append_fn)(void *, void *);
typedef void (*list_destroy_fn)(void *);
typedef void *(*conn_get_fn)(uint16_t *);
typedef int (*conn_commit_fn)(void *, bool);
typedef int (*conn_close_fn)(void **);
typedef void *(*job_modify_fn)(void *, slurmdb_job_cond_t *, slurmdb_job_rec_t *);
typedef slurmdb_job_rec_t *(*job_rec_create_fn)(void);
typedef void (*job_rec_destroy_fn)(void *);
typedef int (*load_conf_fn)(time_t, slurm_conf_t **);
typedef void (*free_conf_fn)(slurm_conf_t *);

#define SYM(name) dlsym(RTLD_DEFAULT, name)

static int set_in_database(uint32_t job, char *value)
{
	list_create_fn list_create = (list_create_fn)SYM("slurm_list_create");
	list_append_fn list_append = (list_append_fn)SYM("slurm_list_append");
	list_destroy_fn list_destroy = (list_destroy_fn)SYM("slurm_list_destroy");
	conn_get_fn conn_get = (conn_get_fn)SYM("slurmdb_connection_get");
	conn_commit_fn conn_commit = (conn_commit_fn)SYM("slurmdb_connection_commit");
	conn_close_fn conn_close = (conn_close_fn)SYM("slurmdb_connection_close");
	job_modify_fn job_modify = (job_modify_fn)SYM("slurmdb_job_modify");
	job_rec_create_fn rec_create = (job_rec_create_fn)SYM("slurmdb_create_job_rec");
	job_rec_destroy_fn rec_destroy = (job_rec_destroy_fn)SYM("slurmdb_destroy_job_rec");
	load_conf_fn load_conf = (load_conf_fn)SYM("slurm_load_ctl_conf");
	free_conf_fn free_conf = (free_conf_fn)SYM("slurm_free_ctl_conf");
	if (!list_create || !list_append || !list_destroy || !conn_get || !conn_commit ||
	    !conn_close || !job_modify || !rec_create || !rec_destroy || !load_conf || !free_conf)
		return -1;
	/* the value goes into SQL in slurmdbd: nothing that could end its quoting */
	if (strpbrk(value, "'\"\\`"))
		return -1;
	slurm_conf_t *conf = NULL;
	char cluster[256];
	if (load_conf((time_t)0, &conf) != 0 || !conf || !conf->cluster_name) {
		if (conf)
			free_conf(conf);
		return -1;
	}
	snprintf(cluster, sizeof(cluster), "%s", conf->cluster_name);
	free_conf(conf);

	int rc = -1;
	slurm_selected_step_t step = {.array_task_id = NO_VAL, .het_job_offset = NO_VAL};
	step.step_id.job_id = job;
	step.step_id.step_id = NO_VAL;
	step.step_id.step_het_comp = NO_VAL;
	slurmdb_job_cond_t cond;
	memset(&cond, 0, sizeof(cond));
	void *steps = list_create(NULL), *clusters = list_create(NULL);
	slurmdb_job_rec_t *rec = rec_create();
	void *db = conn_get(NULL);
	if (steps && clusters && rec && db) {
		list_append(steps, &step);
		list_append(clusters, cluster);
		cond.step_list = steps;
		cond.cluster_list = clusters;
		rec->admin_comment = value;
		void *changed = job_modify(db, &cond, rec);
		rec->admin_comment = NULL; /* ours, not Slurm's to free */
		if (changed) {
			rc = conn_commit(db, true) == 0 ? 0 : -1;
			list_destroy(changed);
		}
	}
	if (rec)
		rec_destroy(rec);
	if (steps)
		list_destroy(steps);
	if (clusters)
		list_destroy(clusters);
	if (db)
		conn_close(&db);
	return rc;
}

static int set_admin_comment_here(uint32_t job, const char *summary, bool ended)
{
	gp_slurm_job_t info;
	char val[GP_ADMIN_COMMENT_MAX];
	if (strncmp(summary, "gpuprof:", 8)) /* only ever our own line */
		return -1;
	char ours[ADMIN_COMMENT_MAX];
	snprintf(ours, sizeof(ours), "%s", summary);
	for (char *c = ours; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return -1;
		if (*c == '\'' || *c == '"' || *c == '\\' || *c == '`')
			*c = '_'; /* a path of the user's: never quoting for anyone's parser */
	}
	summary = ours;
	if (job_info_here(job, &info) < 0)
		return -1;
	if (info.admin_comment_cut) {
		gp_warn("job %u: AdminComment longer than %d bytes; left as it is", job,
		        GP_ADMIN_COMMENT_MAX);
		return -1;
	}
	strip_ours(info.admin_comment);
	/* others' text is never cut: when both do not fit, ours is left out */
	int n = snprintf(val, sizeof(val), "%s%s%s", info.admin_comment,
	                 info.admin_comment[0] ? "; " : "", summary);
	if (n < 0 || (size_t)n >= sizeof(val)) {
		gp_warn("job %u: no room for the gpuprof summary in AdminComment", job);
		return -1;
	}
	job_desc_msg_t desc;
	api.init_desc(&desc);
	desc.job_id = job;
	desc.admin_comment = val;
	int e = 0;
	if (api.update(&desc) != 0)
		e = api.get_errno ? api.get_errno() : -1;
	bool finished = e == ESLURM_JOB_FINISHED || e == ESLURM_ALREADY_DONE;
	/* After the job (the epilog) the accounting record may already have been written
	 * without it, whether or not slurmctld still took the update: write it there too. */
	if (ended || finished) {
		if (set_in_database(job, val) == 0)
			return 0;
		gp_debug("job %u: its accounting record could not be updated", job);
		return e ? -2 : 0;
	}
	if (e)
		gp_debug("job %u: AdminComment not set (Slurm error %d)", job, e);
	return e ? -1 : 0;
}

/* ---- run in a child (gp_run_isolated): results come back through the pipe ---- */

static int info_child(void *arg, int fd)
{
	gp_slurm_job_t info;
	if (job_info_here(*(uint32_t *)arg, &info) < 0)
		return 1;
	dprintf(fd, "%s\n%s\n", info.account, info.partition);
	return 0;
}

int gp_slurm_job_info(uint32_t job, gp_slurm_job_t *out)
{
	char buf[600] = "";
	memset(out, 0, sizeof(*out));
	if (gp_run_isolated(info_child, &job, buf, sizeof(buf), 10) != 0)
		return -1;
	char *nl = strchr(buf, '\n');
	if (!nl)
		return -1;
	*nl++ = '\0';
	nl[strcspn(nl, "\n")] = '\0';
	snprintf(out->account, sizeof(out->account), "%s", buf);
	snprintf(out->partition, sizeof(out->partition), "%s", nl);
	return 0;
}

struct ac_arg {
	uint32_t job;
	const char *summary;
	bool ended;
};

static int comment_child(void *arg, int fd)
{
	const struct ac_arg *a = arg;
	int rc = set_admin_comment_here(a->job, a->summary, a->ended);
	dprintf(fd, "%d\n", rc);
	return rc == 0 ? 0 : 1;
}

int gp_set_admin_comment(uint32_t job, const char *summary, bool ended)
{
	char buf[32] = "";
	struct ac_arg a = {job, summary, ended};
	gp_run_isolated(comment_child, &a, buf, sizeof(buf), 20);
	return buf[0] ? atoi(buf) : -1;
}
