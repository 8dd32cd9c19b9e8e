/* gpuprof ledger --running: the cluster's running profiled jobs with their live figures
 * (livejob.h), so an admin sees the jobs that waste GPUs now: squeue's running jobs (or a
 * file of its lines), each one's job directory in its WorkDir (gpuprof-<id>, the default
 * template) or, for a job the site profiled without its asking, under site_output (its
 * %u and %j; a template with another escape is not followed); a job whose
 * --gpuprof-output put it elsewhere is not found until it ends and its record names it.
 * The least busy first. */
#include "config.h"
#include "ledger_running.h"
#include "json.h"
#include "livejob.h"
#include "log.h"
#include "path.h"
#include "wrap.h"

#include <errno.h>
#include <pwd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct running {
	char id[32], user[64], account[64], partition[64], elapsed[32];
	gp_live_job_t j;
} running_t;

static int cmp_busy(const void *a, const void *b)
{
	const running_t *x = a, *y = b;
	double bx = x->j.with_last ? x->j.last_busy_pct : 1e9;
	double by = y->j.with_last ? y->j.last_busy_pct : 1e9;
	return bx < by ? -1 : bx > by ? 1 : strcmp(x->id, y->id);
}

/* The live figures of r's job in dir, read by root's rules as the report's: no link of a
 * user's to another's directory (gp_live_job_load), the directory the job's user's
 * (or root's; where squeue's user is one of this node's), and only live files that name
 * this job; false when none is left (each refusal said). */
static bool load_ours(running_t *r, const char *dir, const char *user)
{
	char err[8448], other[32];
	if (gp_live_job_load(&r->j, dir, NULL, 0, err, sizeof(err)) < 0) {
		gp_warn("ledger: --running: job %s: %s", r->id, err);
		return false;
	}
	struct passwd *pw = geteuid() == 0 ? getpwnam(user) : NULL;
	/* root's own directory: no user planted it (a user's link to one is refused above) */
	if (pw && r->j.n && r->j.owner != 0 && r->j.owner != pw->pw_uid) {
		gp_warn("ledger: --running: job %s: %s is uid %u's, not its user %s's (uid %u): "
		        "left out",
		        r->id, dir, (unsigned)r->j.owner, user, (unsigned)pw->pw_uid);
		gp_live_job_free(&r->j);
		return false;
	}
	unsigned n = r->j.n, gone = gp_live_job_only(&r->j, r->id, other, sizeof(other));
	if (gone)
		gp_warn("ledger: --running: job %s: %u of the %u live file(s) in %s are of job %s: "
		        "left out",
		        r->id, gone, n, dir, other);
	if (r->j.n)
		return true;
	gp_live_job_free(&r->j);
	return false;
}

/* One squeue line, JOBID|USER|ACCOUNT|PARTITION|ELAPSED|WORKDIR: its live figures into r;
 * false when the job has none (not profiled, or no file yet). */
static bool one_job(char *line, running_t *r, const char *site_output)
{
	char *f[6], *save = NULL, dir[8192];
	int n = 0;
	line[strcspn(line, "\n")] = '\0';
	for (char *p = line; n < 6; p = NULL) {
		char *t = strtok_r(p, "|", &save);
		if (!t)
			break;
		f[n++] = t;
	}
	if (n < 6 || !*f[0] || strspn(f[0], "0123456789_+[]-") != strlen(f[0]))
		return false;
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", f[0]);
	snprintf(r->user, sizeof(r->user), "%s", f[1]);
	snprintf(r->account, sizeof(r->account), "%s", f[2]);
	snprintf(r->partition, sizeof(r->partition), "%s", f[3]);
	snprintf(r->elapsed, sizeof(r->elapsed), "%s", f[4]);
	snprintf(dir, sizeof(dir), "%s/gpuprof-%s", f[5], f[0]);
	if (access(dir, X_OK) == 0 && load_ours(r, dir, f[1]))
		return true;
	/* profiled by the site, unasked: under site_output, by its user and job alone */
	gp_tmpl_vars_t v = {.job = f[0], .user = f[1]};
	if (!site_output || !strchr(site_output, '%'))
		return false;
	for (const char *p = strchr(site_output, '%'); p; p = strchr(p + 2, '%'))
		if (p[1] != 'u' && p[1] != 'j' && p[1] != '%')
			return false; /* %x and the others: not in squeue's line */
	return gp_tmpl_expand(site_output, &v, dir, sizeof(dir)) == 0 && access(dir, X_OK) == 0 &&
	       load_ours(r, dir, f[1]);
}

/* squeue's running jobs, or the lines of path; -1 when neither could be read */
static FILE *open_lines(const char *path, pid_t *pid)
{
	*pid = 0;
	if (path)
		return !strcmp(path, "-") ? stdin : fopen(path, "r");
	int fd[2];
	if (pipe(fd) < 0)
		return NULL;
	char *argv[] = {"squeue", "-h", "-t", "RUNNING", "-o", "%A|%u|%a|%P|%M|%Z", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	int e = posix_spawnp(pid, "squeue", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (e) {
		close(fd[0]);
		errno = e;
		return NULL;
	}
	return fdopen(fd[0], "r");
}

static void text_lines(const running_t *v, unsigned n, FILE *f)
{
	fprintf(f,
	        "gpuprof ledger --running: %u running profiled job(s), live figures, the least "
	        "busy GPUs first\n",
	        n);
	fprintf(f, "%-12s %-10s %-10s %-10s %-12s %7s %9s %9s %6s %6s  %s\n", "JOB", "USER",
	        "ACCOUNT", "PARTITION", "ELAPSED", "RANKS", "NOW ms", "MEDIAN ms", "xMED", "BUSY%",
	        "FIRST FINDING");
	for (unsigned i = 0; i < n; i++) {
		const gp_live_job_t *j = &v[i].j;
		char ranks[24], now[16] = "-", med[16] = "-", x[16] = "-", busy[16] = "-";
		snprintf(ranks, sizeof(ranks), "%u/%u", j->running, j->n);
		if (j->now_ms > 0)
			snprintf(now, sizeof(now), "%.2f", j->now_ms);
		if (j->median_ms > 0)
			snprintf(med, sizeof(med), "%.2f", j->median_ms);
		if (j->now_ms > 0 && j->median_ms > 0)
			snprintf(x, sizeof(x), "%.2f", j->now_ms / j->median_ms);
		if (j->with_last)
			snprintf(busy, sizeof(busy), "%.0f", j->last_busy_pct);
		fprintf(f, "%-12s %-10.10s %-10.10s %-10.10s %-12s %7s %9s %9s %6s %6s  ", v[i].id,
		        v[i].user, v[i].account, v[i].partition, v[i].elapsed, ranks, now, med, x,
		        busy);
		if (j->first_find >= 0)
			fprintf(f, "rank %d %s: %s\n", j->r[j->first_find].rank,
			        j->r[j->first_find].find[0].id, j->r[j->first_find].find[0].text);
		else
			fprintf(f, "-\n");
	}
}

/* The table to out, made safe for a terminal as top and report make theirs
 * (gp_text_shown): a live file's finding id and text are a user's strings, and squeue's
 * fields are partly theirs too, shown to root. */
static void text_out(const running_t *v, unsigned n, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	text_lines(v, n, m);
	if (fclose(m) == 0 && buf)
		fwrite(buf, 1, gp_text_shown(buf, len), out);
	free(buf);
}

static void json_out(const running_t *v, unsigned n, FILE *f)
{
	fprintf(f, "{\"running\": [");
	for (unsigned i = 0; i < n; i++) {
		const gp_live_job_t *j = &v[i].j;
		fprintf(f, "%s{\"job\": ", i ? ", " : "");
		gp_json_str(f, v[i].id);
		fprintf(f, ", \"user\": ");
		gp_json_str(f, v[i].user);
		fprintf(f, ", \"account\": ");
		gp_json_str(f, v[i].account);
		fprintf(f, ", \"partition\": ");
		gp_json_str(f, v[i].partition);
		fprintf(f, ", \"dir\": ");
		gp_json_str(f, j->dir);
		fprintf(f, ", \"ranks\": %u, \"ranks_running\": %u, \"ranks_gone\": %u, ", j->n,
		        j->running, j->nstale);
		/* null where a figure is not finite (JSON has none) or not measured */
		fprintf(f, "\"elapsed_s\": ");
		gp_json_fixed(f, j->elapsed_s, 0);
		fprintf(f, ", \"step_median_ms\": ");
		/* not measured: null, never 0 (no steps yet, no NVML sample) */
		gp_json_num(f, j->median_ms > 0, j->median_ms, 4);
		fprintf(f, ", \"step_last_ms\": ");
		gp_json_num(f, j->now_ms > 0, j->now_ms, 4);
		fprintf(f, ", \"busy_pct\": ");
		gp_json_num(f, j->with_gpus, j->busy_pct, 2);
		fprintf(f, ", \"last_busy_pct\": ");
		gp_json_num(f, j->with_last, j->last_busy_pct, 2);
		fprintf(f, ", \"gpus_seen\": %u, \"first_finding\": ", j->with_gpus);
		gp_json_str(f, j->first_find >= 0 ? j->r[j->first_find].find[0].id : "");
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
}

int gp_ledger_running(const char *from, const char *format, const char *site_output, FILE *out)
{
	pid_t pid;
	char line[16384];
	running_t *v = NULL;
	unsigned n = 0, cap = 0;
	FILE *in = open_lines(from, &pid);
	if (!in)
		return gp_err("ledger: --running: %s: %s", from ? from : "squeue", strerror(errno));
	while (fgets(line, sizeof(line), in)) {
		if (n == cap) {
			running_t *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		n += one_job(line, &v[n], site_output);
	}
	if (in != stdin)
		fclose(in);
	int st = 0, rc = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = gp_err("ledger: --running: squeue failed; its message is above");
	if (!rc) {
		qsort(v, n, sizeof(*v), cmp_busy);
		(strcmp(format, "json") ? text_out : json_out)(v, n, out);
	}
	for (unsigned i = 0; i < n; i++)
		gp_live_job_free(&v[i].j);
	free(v);
	return rc;
}
