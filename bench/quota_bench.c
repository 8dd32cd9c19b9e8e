/* gp_site_prepare (spank/site.c, spank/quota.c) timed as slurmstepd calls it in
 * init_post_opt for each step the site profiles: the step start's cost of
 * site_quota_per_user against a user's directory that bench/quota.sh filled. Built and run
 * by bench/quota.sh (root: the walk runs as the user, the record in a state directory of
 * root's).  usage: quota_bench CONFIG STATE_DIR USER STEPS */
#include "config.h"
#include "plugin.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static gp_plugin_t p;
	char err[600];
	if (argc != 5)
		return fprintf(stderr, "usage: quota_bench CONFIG STATE_DIR USER STEPS\n"), 2;
	struct passwd *pw = getpwnam(argv[3]);
	if (!pw || gp_config_load(&p.cfg, argv[1], false, err, sizeof(err)) < 0)
		return fprintf(stderr, "quota_bench: %s\n", pw ? err : "no such user"), 2;
	p.config_ok = true;
	p.state_dir = argv[2];
	p.uid = pw->pw_uid;
	p.gid = pw->pw_gid;
	p.ngroups = -1;
	for (int i = 0, n = atoi(argv[4]); i < n; i++) {
		p.job_id = 1000 + (unsigned)i;
		double t0 = now_ms();
		int rc = gp_site_prepare(&p, pw->pw_name, 1);
		printf("step %d: %.2f ms, rc %d, cap %lld\n", i, now_ms() - t0, rc,
		       p.site_rank_cap);
	}
	return 0;
}
