/* The agent's live figures: the running figures of common/live.c fed by the rank file's
 * writer (every record the agent writes: the ring's, NVML's, its own), written atomically
 * (a temporary file of the agent's, renamed over the last one; never through a link) as
 * rank<R>.live.json beside the rank file, by the agent, which runs as the job's user. All
 * of it is the agent's work, in its own process: the program's threads pay nothing. */
#include "config.h"
#include "live_writer.h"
#include "env.h"
#include "live.h"
#include "log.h"
#include "path.h"
#include "settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct gp_live_writer {
	gp_live_t *live;
	gp_live_rank_t r;
	uint64_t interval_ns, next;
	double cpu_s; /* the agent's CPU at the last file */
	int dfd;
	bool warned;
	mode_t mode;
	char name[96], dir[4200];
};

static double wall_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static double self_cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

gp_live_writer_t *gp_live_writer_start(gp_rf_writer_t *w, const char *dir, const char *step,
                                       const char *rank, mode_t mode)
{
	long long s = gp_setting_long(GP_ENV_LIVE_INTERVAL);
	gp_live_writer_t *lw;
	if (s <= 0 || !w || !(lw = calloc(1, sizeof(*lw))))
		return NULL;
	const char *range = gp_setting_str(GP_ENV_STEP_RANGE);
	lw->live = gp_live_new((double)s, (unsigned)gp_setting_long(GP_ENV_WARMUP), range);
	if (!lw->live) {
		free(lw);
		return NULL;
	}
	lw->interval_ns = (uint64_t)s * 1000000000ull;
	lw->next = gp_now_ns() + lw->interval_ns;
	lw->dfd = -1;
	lw->mode = mode;
	snprintf(lw->name, sizeof(lw->name), "rank%s" GP_LIVE_SUFFIX, rank);
	snprintf(lw->dir, sizeof(lw->dir), "%s", dir);
	gp_live_rank_t *r = &lw->r;
	snprintf(r->job, sizeof(r->job), "%s",
	         getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
	snprintf(r->step, sizeof(r->step), "%s", step);
	r->rank = (int)strtol(rank, NULL, 10);
	gethostname(r->node, sizeof(r->node) - 1);
	r->started = wall_now();
	lw->cpu_s = self_cpu_s();
	gp_rf_writer_observe(w, gp_live_observe, lw->live);
	return lw;
}

uint64_t gp_live_writer_due(const gp_live_writer_t *lw)
{
	return lw ? lw->next : UINT64_MAX;
}

void gp_live_writer_write(gp_live_writer_t *lw, const char *state, pid_t pid, int wait_status,
                          const uint64_t lost[GP_LOSS_N])
{
	char buf[8192];
	if (!lw)
		return;
	uint64_t now = gp_now_ns();
	gp_live_rank_t *r = &lw->r;
	gp_live_set_losses(lw->live, lost);
	gp_live_tick(lw->live, now, r);
	snprintf(r->state, sizeof(r->state), "%s", state);
	r->pid = (int)pid;
	r->wait_status = wait_status;
	r->seq++;
	r->written = wall_now();
	/* the program's start on the wall clock: the live figures count from it */
	r->started = r->written - r->elapsed_s;
	double cpu = self_cpu_s();
	r->agent_cpu_s = cpu;
	r->agent_cpu_last_ms = (cpu - lw->cpu_s) * 1e3;
	lw->cpu_s = cpu;
	lw->next = now + lw->interval_ns;
	size_t n = gp_live_format(r, buf, sizeof(buf));
	if (lw->dfd < 0)
		lw->dfd = open(lw->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (n && lw->dfd >= 0 && gp_write_file_at(lw->dfd, lw->name, buf, n, lw->mode, false) == 0)
		return;
	if (!lw->warned) /* once: the figures go on in the rank file */
		gp_warn("cannot write %s/%s: %s; no live figures", lw->dir, lw->name,
		        n ? strerror(errno) : "too long");
	lw->warned = true;
}

void gp_live_writer_free(gp_live_writer_t *lw, gp_rf_writer_t *w)
{
	if (!lw)
		return;
	if (w)
		gp_rf_writer_observe(w, NULL, NULL);
	if (lw->dfd >= 0)
		close(lw->dfd);
	gp_live_free(lw->live);
	free(lw);
}
