/* CSV export (gpuprof export --format=csv --table=TABLE): the job's kernel table, its ranks'
 * figures or its findings, one row each, for a spreadsheet or pandas. Kernels carry their
 * whole demangled name and the same figures the report gives (median, p95 and spread come
 * from gp_kstat_quantile and gp_kstat_stddev, computed once); ranks carry every single
 * value of report.json's rank objects (fields.c), findings every key of theirs. RFC 4180:
 * CRLF line ends, cells quoted where needed. */
#include "config.h"
#include "fields.h"
#include "job.h"
#include "names.h"

#include <stdio.h>
#include <string.h>

static void kernels(const gp_job_t *job, FILE *out)
{
	fputs("name,kind,comm,calls,total_ns,share,mean_ns,median_ns,p95_ns,stddev_ns,min_ns,"
	      "max_ns,launched_in,launched_in_ns\r\n",
	      out);
	for (unsigned i = 0; i < job->nk; i++) {
		const gp_kstat_t *k = &job->k[i];
		gp_csv_str(out, k->name);
		fprintf(out, ",%s,%s,%llu,%llu,%.6f,%.0f,%.0f,%.0f,%.0f,%llu,%llu,",
		        gp_kernel_kind(k->name), k->comm ? "true" : "false",
		        (unsigned long long)k->calls, (unsigned long long)k->total,
		        gp_job_kernel_share(job, i),
		        k->calls ? (double)k->total / (double)k->calls : 0,
		        gp_kstat_quantile(k, 0.5), gp_kstat_quantile(k, 0.95), gp_kstat_stddev(k),
		        (unsigned long long)(k->calls ? k->min : 0), (unsigned long long)k->max);
		gp_csv_str(out, k->in[0].name ? k->in[0].name : "");
		fprintf(out, ",%llu\r\n", (unsigned long long)k->in[0].ns);
	}
}

static void findings(const gp_job_t *job, FILE *out)
{
	static const char *kinds[] = {"outcome", "time", "memory"};
	fputs("id,kind,rank,score,saving_ms,saving_pct,saving_bytes,effect_of,title,evidence,"
	      "threshold,fix\r\n",
	      out);
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		gp_csv_str(out, f->id);
		fprintf(out, ",%s,", f->kind >= 0 && f->kind < 3 ? kinds[f->kind] : "");
		if (f->rank >= 0)
			fprintf(out, "%d", f->rank);
		fprintf(out, ",%.4f,%.4f,%.2f,%.0f,", f->score, f->saving_ms, f->saving_pct,
		        f->saving_bytes);
		const char *cells[] = {f->effect_of, f->title, f->evidence, f->threshold, f->fix};
		for (size_t c = 0; c < sizeof(cells) / sizeof(cells[0]); c++) {
			gp_csv_str(out, cells[c]);
			fputs(c + 1 < sizeof(cells) / sizeof(cells[0]) ? "," : "\r\n", out);
		}
	}
}

int gp_export_csv(const gp_job_t *job, FILE *out, const char *table)
{
	if (!strcmp(table, "kernels")) {
		kernels(job, out);
	} else if (!strcmp(table, "findings")) {
		findings(job, out);
	} else if (!strcmp(table, "ranks")) {
		gp_csv_rank(out, NULL);
		for (unsigned i = 0; i < job->nranks; i++)
			gp_csv_rank(out, &job->ranks[i]);
	} else {
		return -1;
	}
	return ferror(out) ? -1 : 0;
}
