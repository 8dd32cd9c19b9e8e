/* Leaving a Slurm job's cgroups (see cgroup.h). */
#include "config.h"
#include "cgroup.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Write pid into dir/cgroup.procs. */
static int move_to(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32], v[24];
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return -1;
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int n = snprintf(v, sizeof(v), "%d", (int)pid);
	int rc = write(fd, v, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

int gp_cgroup_leave_jobs(const char *proc_cgroup, const char *root, pid_t pid)
{
	FILE *f = fopen(proc_cgroup, "re");
	char line[PATH_MAX + 64];
	int left = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		char *path = c2 + 1, *job = strstr(path, "/job_");
		if (!job || strstr(path, "/.."))
			continue;
		char dir[PATH_MAX];
		*job = '\0';
		if (c2 == c1 + 1) { /* v2: "0::/system.slice/slurmstepd.scope/job_N/step_0/..." */
			snprintf(dir, sizeof(dir), "%s%s/system", root, path);
			if (move_to(dir, pid) == 0) {
				left++;
				continue;
			}
			/* a cgroup with controllers enabled for its children holds no process
			 * itself (EBUSY): then the root, which may */
			snprintf(dir, sizeof(dir), "%s%s", root, path);
			if (move_to(dir, pid) == 0 || move_to(root, pid) == 0)
				left++;
		} else { /* v1: "4:freezer:/slurm/uid_U/job_N/..." -> that hierarchy's root */
			*c2 = '\0';
			const char *ctl = c1 + 1;
			if (!strncmp(ctl, "name=", 5))
				ctl += 5;
			if (!*ctl || strchr(ctl, '/'))
				continue;
			snprintf(dir, sizeof(dir), "%s/%s", root, ctl);
			if (move_to(dir, pid) == 0)
				left++;
		}
	}
	fclose(f);
	return left;
}
