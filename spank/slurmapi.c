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
#include "acctrec.h"
#include "admincomment.h"
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
		snprintf(out->system_comment, sizeof(out->system_comment), "%s",
		         j->system_comment ? j->system_comment : "");
		out->system_comment_cut =
		    j->system_comment && strlen(j->system_comment) >= sizeof(out->system_comment);
		rc = 0;
		break;
	}
	api.free_info(msg);
	return rc;
}

/* After the job has finished slurmctld refuses updates; the accounting database takes
 * them (what `sacctmgr modify job` does, without its parser, which lowercased values
 * and matched every job when the id was empty): one job id, this cluster only. The
 * record is read first: until slurmctld's completion has reached it, a value written
 * there would be replaced by the AdminComment slurmctld holds (the completion writes
 * its own), and a job too young may have no record yet. */
typedef void *(*list_create_fn)(void (*)(void *));
typedef void *(*list_append_fn)(void *, void *);
typedef void (*list_destroy_fn)(void *);
typedef int (*list_count_fn)(void *);
typedef void *(*list_peek_fn)(void *);
typedef void *(*conn_get_fn)(uint16_t *);
typedef int (*conn_commit_fn)(void *, bool);
typedef int (*conn_close_fn)(void **);
typedef void *(*job_modify_fn)(void *, slurmdb_job_cond_t *, slurmdb_job_rec_t *);
typedef void *(*jobs_get_fn)(void *, slurmdb_job_cond_t *);
typedef slurmdb_job_rec_t *(*job_rec_create_fn)(void);
typedef void (*job_rec_destroy_fn)(void *);
typedef int (*load_conf_fn)(time_t, slurm_conf_t **);
typedef void (*free_conf_fn)(slurm_conf_t *);

#define SYM(name) dlsym(RTLD_DEFAULT, name)

typedef struct db {
	list_create_fn list_create;
	list_append_fn list_append;
	list_destroy_fn list_destroy;
	list_count_fn list_count;
	list_peek_fn list_peek;
	conn_get_fn conn_get;
	conn_commit_fn conn_commit;
	conn_close_fn conn_close;
	job_modify_fn job_modify;
	jobs_get_fn jobs_get;
	job_rec_create_fn rec_create;
	job_rec_destroy_fn rec_destroy;
	void *conn;
	char cluster[256];
	uint32_t job;
	unsigned polls;
	slurm_selected_step_t step;
	void *steps, *clusters;
	slurmdb_job_cond_t cond;
} db_t;

static void db_close(db_t *d)
{
	if (d->steps)
		d->list_destroy(d->steps);
	if (d->clusters)
		d->list_destroy(d->clusters);
	if (d->conn)
		d->conn_close(&d->conn);
	d->steps = d->clusters = d->conn = NULL;
}

/* Why the accounting database could not be had, for the finisher's log */
static int db_fail(uint32_t job, const char *what)
{
	int e = errno;
	const slurm_conf_t *conf = SYM("slurm_conf");
	gp_warn("job %u: the accounting database: %s (errno %d; this process's "
	        "AccountingStorageType '%s', Host '%s')",
	        job, what, e,
	        conf && conf->accounting_storage_type ? conf->accounting_storage_type : "(none)",
	        conf && conf->accounting_storage_host ? conf->accounting_storage_host : "(none)");
	return -1;
}

/* Slurm 24.11's slurmstepd holds only the part of slurm.conf that slurmd hands it
 * (src/slurmd/common/slurmstepd_init.c), and AccountingStorageHost and Port are not in it:
 * in its process (the finisher is forked from it) slurmdb_connection_get had no address
 * and returned NULL, so the record never reached the database. 22.05's slurmstepd read
 * slurm.conf whole. Where this process's configuration has no host, slurmctld's (the copy
 * just loaded) gives it, in strings of Slurm's own allocator (it may free them). */
typedef char *(*xstrdup_fn)(const char *);
static void dbd_address_from(const slurm_conf_t *ctld)
{
	slurm_conf_t *own = SYM("slurm_conf");
	xstrdup_fn dup = (xstrdup_fn)SYM("slurm_xstrdup");
	if (!own || !dup || own->accounting_storage_host || !ctld->accounting_storage_host)
		return;
	own->accounting_storage_host = dup(ctld->accounting_storage_host);
	if (!own->accounting_storage_backup_host && ctld->accounting_storage_backup_host)
		own->accounting_storage_backup_host = dup(ctld->accounting_storage_backup_host);
	if (!own->accounting_storage_port)
		own->accounting_storage_port = ctld->accounting_storage_port;
	gp_debug("slurmdbd's address from slurmctld's configuration: %s:%u",
	         own->accounting_storage_host, (unsigned)own->accounting_storage_port);
}

static int db_open(db_t *d, uint32_t job)
{
	memset(d, 0, sizeof(*d));
	d->list_create = (list_create_fn)SYM("slurm_list_create");
	d->list_append = (list_append_fn)SYM("slurm_list_append");
	d->list_destroy = (list_destroy_fn)SYM("slurm_list_destroy");
	d->list_count = (list_count_fn)SYM("slurm_list_count");
	d->list_peek = (list_peek_fn)SYM("slurm_list_peek");
	d->conn_get = (conn_get_fn)SYM("slurmdb_connection_get");
	d->conn_commit = (conn_commit_fn)SYM("slurmdb_connection_commit");
	d->conn_close = (conn_close_fn)SYM("slurmdb_connection_close");
	d->job_modify = (job_modify_fn)SYM("slurmdb_job_modify");
	d->jobs_get = (jobs_get_fn)SYM("slurmdb_jobs_get");
	d->rec_create = (job_rec_create_fn)SYM("slurmdb_create_job_rec");
	d->rec_destroy = (job_rec_destroy_fn)SYM("slurmdb_destroy_job_rec");
	load_conf_fn load_conf = (load_conf_fn)SYM("slurm_load_ctl_conf");
	free_conf_fn free_conf = (free_conf_fn)SYM("slurm_free_ctl_conf");
	if (!d->list_create || !d->list_append || !d->list_destroy || !d->list_count ||
	    !d->list_peek || !d->conn_get || !d->conn_commit || !d->conn_close || !d->job_modify ||
	    !d->jobs_get || !d->rec_create || !d->rec_destroy || !load_conf || !free_conf)
		return db_fail(job, "Slurm's database API is not loaded in this process");
	slurm_conf_t *conf = NULL;
	if (load_conf((time_t)0, &conf) != 0 || !conf || !conf->cluster_name) {
		if (conf)
			free_conf(conf);
		return db_fail(job, "slurm_load_ctl_conf failed");
	}
	snprintf(d->cluster, sizeof(d->cluster), "%s", conf->cluster_name);
	dbd_address_from(conf);
	free_conf(conf);
	d->job = job;
	d->step = (slurm_selected_step_t){.array_task_id = NO_VAL, .het_job_offset = NO_VAL};
	d->step.step_id.job_id = job;
	d->step.step_id.step_id = NO_VAL;
	d->step.step_id.step_het_comp = NO_VAL;
	d->steps = d->list_create(NULL);
	d->clusters = d->list_create(NULL);
	d->conn = d->conn_get(NULL);
	if (!d->steps || !d->clusters || !d->conn) {
		int rc = db_fail(job, "no connection (slurmdb_connection_get)"); /* errno first */
		db_close(d);
		return rc;
	}
	d->list_append(d->steps, &d->step);
	d->list_append(d->clusters, d->cluster);
	d->cond.step_list = d->steps;
	d->cond.cluster_list = d->clusters;
	d->cond.flags = JOBCOND_FLAG_NO_STEP;
	d->cond.db_flags = SLURMDB_JOB_FLAG_NOTSET; /* 0 would match only jobs with no flags */
	return 0;
}

/* The job's record: 1 with its AdminComment and SystemComment (got->) once slurmctld's
 * completion is in it (an end time), 0 while it is not (or there is no record yet), -1 on
 * error. */
static int db_get(db_t *d, gp_slurm_job_t *got)
{
	void *l = d->jobs_get(d->conn, &d->cond);
	if (!l)
		return db_fail(d->job, "slurmdb_jobs_get failed");
	int rc = 0;
	int n = d->list_count(l);
	slurmdb_job_rec_t *j = n > 0 ? d->list_peek(l) : NULL;
	/* finished in the record: its state (the end time of a running job reads "now") */
	bool done = j && j->jobid == d->job && (j->state & JOB_STATE_BASE) >= JOB_COMPLETE;
	if (done || !d->polls++) /* the first look and the last */
		gp_debug("job %u: accounting record %s, AdminComment '%s'", d->job,
		         !j     ? "not found"
		         : done ? "complete"
		                : "not complete (waiting)",
		         j && j->admin_comment ? j->admin_comment : "");
	if (done) {
		const char *ac = j->admin_comment ? j->admin_comment : "";
		const char *sc = j->system_comment ? j->system_comment : "";
		snprintf(got->admin_comment, sizeof(got->admin_comment), "%s", ac);
		got->admin_comment_cut = strlen(ac) >= sizeof(got->admin_comment);
		snprintf(got->system_comment, sizeof(got->system_comment), "%s", sc);
		got->system_comment_cut = strlen(sc) >= sizeof(got->system_comment);
		rc = 1;
	}
	d->list_destroy(l);
	/* slurmdbd reads for a connection inside one transaction: without ending it, every
	 * later read sees the record as the first one did, and the completion never comes */
	d->conn_commit(d->conn, false);
	return rc;
}

/* ac, sc: the new AdminComment and SystemComment, NULL: left as they are */
static int db_set(db_t *d, char *ac, char *sc)
{
	/* the values go into SQL in slurmdbd: nothing that could end its quoting */
	if ((ac && strpbrk(ac, "'\"\\`")) || (sc && strpbrk(sc, "'\"\\`")) || (!ac && !sc))
		return -1;
	slurmdb_job_rec_t *rec = d->rec_create();
	if (!rec)
		return -1;
	int rc = -1;
	rec->admin_comment = ac;
	rec->system_comment = sc;
	void *changed = d->job_modify(d->conn, &d->cond, rec);
	rec->admin_comment = rec->system_comment = NULL; /* ours, not Slurm's to free */
	if (changed) {
		if (d->list_count(changed) > 0)
			rc = d->conn_commit(d->conn, true) == 0 ? 0 : -1;
		d->list_destroy(changed);
	}
	d->rec_destroy(rec);
	return rc;
}

/* The values to write, from the fields as they are (have; its AdminComment's entries of
 * ours are stripped here): *ac_out / *sc_out point at ac / sc, or stay NULL where that
 * field is left alone. -1 when neither is written. */
static int compose(uint32_t job, gp_slurm_job_t *have, const char *summary, const char *record,
                   char *ac, char *sc, size_t len, char **ac_out, char **sc_out)
{
	*ac_out = *sc_out = NULL;
	/* jobstats' value first: a large job's runs past what we hold (5 000 bytes seen) */
	if (summary && gp_ac_has_js1(have->admin_comment))
		gp_info("job %u: AdminComment holds jobstats' JS1 summary; our line left out (the "
		        "record is in SystemComment)",
		        job);
	else if (summary && have->admin_comment_cut)
		gp_warn("job %u: AdminComment longer than %d bytes; left as it is", job,
		        GP_ADMIN_COMMENT_MAX);
	else if (summary && gp_ac_compose(have->admin_comment, summary, ac, len) < 0)
		gp_warn("job %u: no room for the gpuprof summary in AdminComment", job);
	else if (summary)
		*ac_out = ac;
	if (record && have->system_comment_cut)
		gp_warn("job %u: SystemComment longer than %d bytes; left as it is", job,
		        GP_ADMIN_COMMENT_MAX);
	else if (record && gp_rec_compose(have->system_comment, record, sc, len) < 0)
		gp_warn("job %u: no room for the gpuprof record in SystemComment", job);
	else if (record)
		*sc_out = sc;
	return *ac_out || *sc_out ? 0 : -1;
}

/* The finished job's accounting record, once slurmctld's completion is in it: waits up
 * to wait_s seconds for that. ctld: the job as slurmctld holds it (NULL: slurmctld no
 * longer knows it). Its completion writes slurmctld's AdminComment into the record; a
 * record with an end time but another value (seen: a job whose AdminComment was set while
 * it ran, read 0.1 s after its end) is not complete yet, unless another tool (jobstats'
 * epilog) has written it since. */
static int set_in_database(uint32_t job, const char *summary, const char *record,
                           const gp_slurm_job_t *ctld, int wait_s)
{
	db_t d;
	static gp_slurm_job_t have;
	static char ac[GP_ADMIN_COMMENT_MAX], sc[GP_ADMIN_COMMENT_MAX];
	if (db_open(&d, job) < 0)
		return -1;
	int rc = -1;
	for (int waited = 0;; waited++) {
		int got = db_get(&d, &have);
		if (got < 0)
			break;
		if (got == 1 && !have.admin_comment_cut)
			gp_ac_strip_ours(have.admin_comment);
		bool same = !ctld || ctld->admin_comment_cut || have.admin_comment_cut ||
		            gp_ac_has_js1(have.admin_comment) ||
		            !strcmp(have.admin_comment, ctld->admin_comment);
		if (got == 1 && (same || waited >= wait_s)) {
			if (!same) {
				gp_warn("job %u: the accounting record's AdminComment is not "
				        "slurmctld's after %d s; slurmctld's kept",
				        job, wait_s);
				memcpy(have.admin_comment, ctld->admin_comment,
				       sizeof(have.admin_comment));
			}
			char *ac_out, *sc_out;
			if (compose(job, &have, summary, record, ac, sc, sizeof(ac), &ac_out,
			            &sc_out) == 0)
				rc = db_set(&d, ac_out, sc_out);
			break;
		}
		if (waited >= wait_s) {
			gp_warn("job %u: no completed accounting record after %d s; AdminComment "
			        "and SystemComment not written",
			        job, wait_s);
			break;
		}
		sleep(1);
	}
	db_close(&d);
	return rc;
}

static int set_comments_here(uint32_t job, const char *summary, const char *record, bool ended,
                             int wait_s)
{
	static gp_slurm_job_t info;
	static char ac[GP_ADMIN_COMMENT_MAX], sc[GP_ADMIN_COMMENT_MAX];
	/* only ever our own line, made one entry here, root-side: the line comes from a
	 * report that ran as the user (whose text, the job directory, is in it) */
	char ours[ADMIN_COMMENT_MAX * 3];
	if (summary && gp_ac_entry(summary, ours, sizeof(ours)) < 0)
		summary = NULL;
	else if (summary)
		summary = ours;
	if (!summary && !record)
		return -1;
	int e = 0;
	bool known = job_info_here(job, &info) == 0;
	if (known && !info.admin_comment_cut)
		gp_ac_strip_ours(info.admin_comment);
	if (!ended && summary) {
		/* slurmctld, while the job runs: its completion then carries the line. The
		 * record waits for the job's end (the epilog's report is the job's last, and
		 * slurmctld takes SystemComment from no job update, 22.05 and 24.11 alike) */
		char *ac_out, *sc_out;
		if (!known) {
			e = ESLURM_INVALID_JOB_ID; /* purged: only the database has it */
		} else if (compose(job, &info, summary, NULL, ac, sc, sizeof(ac), &ac_out,
		                   &sc_out) < 0) {
			return record ? 1 : -1; /* AdminComment left as it is */
		} else {
			job_desc_msg_t desc;
			api.init_desc(&desc);
			desc.job_id = job;
			desc.admin_comment = ac_out;
			/* Slurm 24.11's libslurm has no slurm_get_errno: errno holds it there */
			errno = 0;
			if (api.update(&desc) != 0)
				e = api.get_errno ? api.get_errno() : errno ? errno : -1;
		}
		if (!e)
			return record ? 1 : 0; /* the record waits for the job's end */
		if (e != ESLURM_JOB_FINISHED && e != ESLURM_ALREADY_DONE &&
		    e != ESLURM_INVALID_JOB_ID) {
			gp_debug("job %u: AdminComment not set (Slurm error %d)", job, e);
			return -1;
		}
	} else if (!ended && known) {
		return 1; /* a record alone while the job runs: the epilog's */
	}
	/* the job has ended: its accounting record */
	if (set_in_database(job, summary, record, known ? &info : NULL, wait_s) == 0)
		return 0;
	gp_debug("job %u: its accounting record could not be updated", job);
	return -2;
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

int gp_set_job_comments(uint32_t job, const char *summary, const char *record, bool ended,
                        int wait_s)
{
	return set_comments_here(job, summary, record, ended, wait_s);
}
