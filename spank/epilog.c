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

/* Record written by stepd.c, STATE_DIR/JOB.STEP: "uid gid node\nspool\njobdir\n" (an
 * older plugin's has no node: taken as 0). Only a regular file of root's that nobody
 * else can write is believed. */
static int read_record(int dfd, const char *name, uid_t *uid, gid_t *gid, unsigned *node,
                       char *spool, char *jobdir, size_t len)
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
	*node = 0;
	if (sscanf(buf, "%u %u %u", &u, &g, node) < 2 || !l3)
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

/* One step's record: salvage its spools as the user. Returns how many were salvaged. */
static int salvage_step(const gp_plugin_t *p, uint32_t job, const gp_creds_t *who,
                        const char *spool, const char *jobdir)
{
	char jobarg[32], out[256] = "";
	int n = 0;
	snprintf(jobarg, sizeof(jobarg), "%u", job);
	char *salv[] = {p->cfg.cli_path, "salvage", "--job",        jobarg, "--spool",
	                (char *)spool,   "--into",  (char *)jobdir, NULL};
	gp_exec_as_user(who, salv, out, sizeof(out), 60);
	return sscanf(out, "gpuprof: salvaged %d", &n) == 1 ? n : 0;
}

int gp_epilog(spank_t sp, const gp_plugin_t *p)
{
	uint32_t job = 0;
	char prefix[32];
	if (!p->config_ok)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		const char *j = getenv("SLURM_JOB_ID");
		if (!j)
			return 0;
		job = (uint32_t)strtoul(j, NULL, 10);
	}
	int dfd = open(p->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0; /* nothing profiled on this node yet */
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		gp_err("state directory %s is not root's alone; ignored", p->state_dir);
		close(dfd);
		return 0;
	}
	DIR *d = fdopendir(dup(dfd));
	if (!d) {
		close(dfd);
		return 0;
	}
	snprintf(prefix, sizeof(prefix), "%u.", job);
	bool cli_ok = access(p->cfg.cli_path, X_OK) == 0;
	if (!cli_ok)
		gp_err("%s is not executable; job %u gets no report", p->cfg.cli_path, job);
	/* salvage every step's spools here; then the job's report, once per job directory,
	 * by node 0 (whose step-end report may have missed what salvage recovers) and by
	 * any node that recovered ranks (node 0 may have reported before them): detached,
	 * the node is not held up by it */
	struct {
		gp_creds_t who;
		char jobdir[4096];
	} rep[8];
	unsigned nrep = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		uid_t uid = 0;
		gid_t gid = 0;
		unsigned node = 0;
		char jobdir[4096], spool[4096];
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		if (cli_ok && read_record(dfd, de->d_name, &uid, &gid, &node, spool, jobdir,
		                          sizeof(jobdir)) == 0) {
			/* the epilog has no groups of the job's: the user database's */
			const gp_creds_t who = {uid, gid, -1, NULL};
			int n = salvage_step(p, job, &who, spool, jobdir);
			unsigned i;
			for (i = 0; i < nrep && strcmp(rep[i].jobdir, jobdir); i++)
				;
			bool want = (node == 0 || n > 0) && i == nrep && p->cfg.report_at_end;
			if (want && nrep == 8) /* said, not dropped silently */
				gp_warn("job %u: more than 8 job directories; %s gets no epilog "
				        "report (gpuprof report %s)",
				        job, jobdir, jobdir);
			else if (want) {
				rep[nrep].who = who;
				snprintf(rep[nrep++].jobdir, sizeof(rep[0].jobdir), "%s", jobdir);
			}
		}
		unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
	close(dfd);
	for (unsigned i = 0; i < nrep; i++)
		gp_finish_detached(p, job, &rep[i].who, rep[i].jobdir, true);
	return 0;
}
