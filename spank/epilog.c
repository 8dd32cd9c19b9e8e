/* Job epilog (root, "slurmstepd spank epilog"): salvage spools of agents that died,
 * refresh the report, and put a one-line summary into the job's AdminComment so that
 * `sacct -o AdminComment` links the job to its report. The job directory is only ever
 * touched by children that dropped to the job's uid; root reads only its own record. */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Record written by stepd.c: "uid gid\nspool\njobdir\n". */
static int read_record(uint32_t job, uid_t *uid, gid_t *gid, char *spool, char *jobdir, size_t len)
{
	char path[4200], buf[8800];
	unsigned u, g;
	int fd, n;
	snprintf(path, sizeof(path), "%s/%u", gp_plugin.state_dir, job);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
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

int gp_epilog(spank_t sp)
{
	uint32_t job = 0;
	uid_t uid;
	gid_t gid;
	char jobdir[4096], spool[4096], jobarg[32], summary[ADMIN_COMMENT_MAX];
	if (!gp_plugin.config_ok)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		const char *j = getenv("SLURM_JOB_ID");
		if (!j)
			return 0;
		job = (uint32_t)strtoul(j, NULL, 10);
	}
	if (read_record(job, &uid, &gid, spool, jobdir, sizeof(jobdir)) < 0)
		return 0; /* not a profiled job on this node */
	if (access(gp_plugin.cfg.cli_path, X_OK) != 0) {
		gp_err("%s is not executable; job %u gets no report", gp_plugin.cfg.cli_path, job);
		goto out;
	}
	snprintf(jobarg, sizeof(jobarg), "%u", job);
	/* salvage spools of agents that were killed, as the user */
	char *salv[] = {gp_plugin.cfg.cli_path,
	                "salvage",
	                "--job",
	                jobarg,
	                "--spool",
	                spool,
	                "--into",
	                jobdir,
	                NULL};
	gp_exec_as_user(uid, gid, salv, NULL, 0, 60);
	char *rep[] = {gp_plugin.cfg.cli_path, "report", "--quiet", "--summary-line", jobdir, NULL};
	summary[0] = '\0';
	if (gp_exec_as_user(uid, gid, rep, summary, sizeof(summary), 120) == 0) {
		summary[strcspn(summary, "\n")] = '\0';
		if (summary[0] && gp_plugin.cfg.admin_comment)
			gp_set_admin_comment(job, summary);
	}
out : {
	char path[4200];
	snprintf(path, sizeof(path), "%s/%u", gp_plugin.state_dir, job);
	unlink(path);
}
	return 0;
}
