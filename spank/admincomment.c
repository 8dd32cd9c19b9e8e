/* AdminComment: a one-line gpuprof summary appended to what other tools put there, so
 * `sacct -o AdminComment` links the job to its report. Runs as root (scontrol). */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Existing AdminComment without an older gpuprof part, from `scontrol show job -o`. */
static void existing_comment(uint32_t job, char *out, size_t len)
{
	char jobarg[32], *buf = malloc(65536), *p, *end;
	out[0] = '\0';
	if (!buf)
		return;
	snprintf(jobarg, sizeof(jobarg), "%u", job);
	char *argv[] = {"/usr/bin/scontrol", "show", "job", "-o", jobarg, NULL};
	if (gp_exec_capture(argv, buf, 65536, 10) == 0 && (p = strstr(buf, " AdminComment="))) {
		p += strlen(" AdminComment=");
		/* the value runs to the next " Key=" */
		for (end = p; *end && *end != '\n'; end++) {
			if (*end == ' ') {
				char *q = end + 1;
				while ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
				       (*q >= '0' && *q <= '9') || *q == '_' || *q == ':')
					q++;
				if (*q == '=' && q > end + 1)
					break;
			}
		}
		*end = '\0';
		if (strcmp(p, "(null)") != 0)
			snprintf(out, len, "%s", p);
	}
	free(buf);
	for (size_t n = strlen(out); n && out[n - 1] == ' '; n--)
		out[n - 1] = '\0';
	/* drop an older gpuprof summary so re-runs replace rather than pile up */
	if ((p = strstr(out, "gpuprof:")) != NULL) {
		while (p > out && (p[-1] == ' ' || p[-1] == ';'))
			p--;
		*p = '\0';
	}
}

void gp_set_admin_comment(uint32_t job, const char *summary)
{
	char old[ADMIN_COMMENT_MAX], val[ADMIN_COMMENT_MAX + 32], jobarg[48],
	    arg[ADMIN_COMMENT_MAX + 64];
	existing_comment(job, old, sizeof(old));
	snprintf(val, sizeof(val), "%s%s%s", old, old[0] ? "; " : "", summary);
	val[ADMIN_COMMENT_MAX - 1] = '\0';
	snprintf(jobarg, sizeof(jobarg), "jobid=%u", job);
	snprintf(arg, sizeof(arg), "admincomment=%s", val);
	char *argv[] = {"/usr/bin/scontrol", "update", jobarg, arg, NULL};
	/* Only while slurmctld still has the job: after it finished, scontrol refuses
	 * ("Job has already finished") and sacctmgr, the documented alternative, lowercases
	 * the value (paths would be wrong) and matches every job on an empty id. */
	if (gp_exec_capture(argv, NULL, 0, 10) != 0)
		gp_debug("could not set AdminComment of job %u", job);
}
