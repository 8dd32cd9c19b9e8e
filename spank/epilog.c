/* Job epilog (root, "slurmstepd spank epilog"): salvage spools of agents that died,
 * refresh the report, and put a one-line summary into the job's AdminComment so that
 * `sacct -o AdminComment` links the job to its report. The job directory is only ever
 * touched by children that dropped to the job's uid; root reads only its own record. */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Record written by stepd.c, STATE_DIR/JOB.STEP: "uid gid\nspool\njobdir\n". Only a
 * regular file of root's that nobody else can write is believed. */
static int read_record(int dfd, const char *name, uid_t *uid, gid_t *gid, char *spool, char *jobdir,
                       size_t len)
{
	char buf[8800];
	unsigned u, g;
	struct stat st;
	int fd, n;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return gp_err("state record %s is not a file of root's alone; ignored", name);
	}
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *l2 = strchr(buf, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
	if (sscanf(buf, "%u %u", &u, &g) != 2 || !l3)
		return -1;
	*l2++ = '\0';
	*l3++ = '\0';
	l3[strcspn(l3, "\n")] = '\0';
	*uid = u;
	*gid = g;
	snprintf(spool, len, "%s", l2);
	snprintf(jobdir, len, "%s", l3);
	return 0;
}

/* One step's record: salvage its spools and refresh its report, as the user. Returns
 * the summary line in summary (may stay empty). */
static void epilog_step(uint32_t job, uid_t uid, gid_t gid, const char *spool, const char *jobdir,
                        char *summary, size_t slen)
{
	char jobarg[32];
	snprintf(jobarg, sizeof(jobarg), "%u", job);
	char *salv[] = {gp_plugin.cfg.cli_path, "salvage", "--job",        jobarg, "--spool",
	                (char *)spool,          "--into",  (char *)jobdir, NULL};
	gp_exec_as_user(uid, gid, salv, NULL, 0, 60);
	char *rep[] = {gp_plugin.cfg.cli_path, "report",       "--quiet",
	               "--summary-line",       (char *)jobdir, NULL};
	char out[ADMIN_COMMENT_MAX] = "";
	if (gp_exec_as_user(uid, gid, rep, out, sizeof(out), 120) == 0) {
		out[strcspn(out, "\n")] = '\0';
		if (!strncmp(out, "gpuprof:", 8)) /* only ever the report's own line */
			snprintf(summary, slen, "%s", out);
	}
}

int gp_epilog(spank_t sp)
{
	uint32_t job = 0;
	char summary[ADMIN_COMMENT_MAX] = "", prefix[32];
	if (!gp_plugin.config_ok)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		const char *j = getenv("SLURM_JOB_ID");
		if (!j)
			return 0;
		job = (uint32_t)strtoul(j, NULL, 10);
	}
	int dfd = open(gp_plugin.state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0; /* nothing profiled on this node yet */
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		gp_err("state directory %s is not root's alone; ignored", gp_plugin.state_dir);
		close(dfd);
		return 0;
	}
	DIR *d = fdopendir(dup(dfd));
	if (!d) {
		close(dfd);
		return 0;
	}
	snprintf(prefix, sizeof(prefix), "%u.", job);
	bool cli_ok = access(gp_plugin.cfg.cli_path, X_OK) == 0;
	if (!cli_ok)
		gp_err("%s is not executable; job %u gets no report", gp_plugin.cfg.cli_path, job);
	struct dirent *de;
	while ((de = readdir(d))) {
		uid_t uid = 0;
		gid_t gid = 0;
		char jobdir[4096], spool[4096];
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		if (cli_ok &&
		    read_record(dfd, de->d_name, &uid, &gid, spool, jobdir, sizeof(jobdir)) == 0)
			epilog_step(job, uid, gid, spool, jobdir, summary, sizeof(summary));
		unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
	close(dfd);
	/* the last step's summary: after the job has finished slurmctld may refuse it
	 * (the step-end hook on node 0 wrote it while the job still ran) */
	if (summary[0] && gp_plugin.cfg.admin_comment)
		gp_set_admin_comment(job, summary, true);
	return 0;
}
