/* Structure-aware libFuzzer target for the whole report: the input bytes are read as a
 * list of events, written through the common writer into a valid, checksummed rank file
 * (so mutations reach the analysis instead of dying at a checksum), and the job is then
 * loaded, diagnosed and rendered in every format: text, JSON, HTML, Chrome trace,
 * memory_viz. Any input must finish without a crash, leak, hang or undefined behaviour.
 *
 * Input layout: byte 0 picks header variants (warm-up steps, a step_range, whether
 * monotonic_ns is present); then records of
 *   type(1) tid(1) u8(1) u16(2) dts(2) then for each of a, b, c, d a selector byte:
 *   0-191: the value is the byte itself; 192-223: two bytes follow (x 1000);
 *   224-255: eight bytes follow (raw, for extremes).
 * Timestamps advance by dts x 1000 ns from the header's monotonic time, except that a
 * dts of 0xffff means a raw 8-byte timestamp follows. */
#include "config.h"
#include "job.h"
#include "event.h"
#include "path.h"
#include "rankfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	const uint8_t *p;
	size_t n;
} in_t;

static int take(in_t *in, void *out, size_t k)
{
	if (in->n < k)
		return -1;
	memcpy(out, in->p, k);
	in->p += k;
	in->n -= k;
	return 0;
}

static uint64_t value(in_t *in)
{
	uint8_t sel = 0;
	if (take(in, &sel, 1) < 0)
		return 0;
	if (sel < 192)
		return sel;
	if (sel < 224) {
		uint16_t v = 0;
		take(in, &v, 2);
		return (uint64_t)v * 1000;
	}
	uint64_t v = 0;
	take(in, &v, 8);
	return v;
}

static char dir[128];

static void rm_job(void)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/step0/rank0.gpr", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/step0", dir);
	rmdir(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t mono = 1000000000000ull;
	char path[256], hdr[1024] = "";
	if (!size)
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/gp-fuzz-report.%d", (int)getpid());
		mkdir(dir, 0700);
	}
	snprintf(path, sizeof(path), "%s/step0", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/step0/rank0.gpr", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	in_t in = {data + 1, size - 1};
	uint8_t v = data[0];
	char b[32];
	gp_rf_hdr_add(hdr, sizeof(hdr), "job", "7");
	gp_rf_hdr_add(hdr, sizeof(hdr), "step", "0");
	gp_rf_hdr_add(hdr, sizeof(hdr), "rank", "0");
	gp_rf_hdr_add(hdr, sizeof(hdr), "modes", "timing,nvtx,cuda,mem");
	gp_rf_hdr_add(hdr, sizeof(hdr), "wrapped", "agent");
	snprintf(b, sizeof(b), "%u", v & 7);
	gp_rf_hdr_add(hdr, sizeof(hdr), "warmup_steps", b);
	if (v & 8)
		gp_rf_hdr_add(hdr, sizeof(hdr), "step_range", "s");
	if (!(v & 16)) {
		snprintf(b, sizeof(b), "%llu", (unsigned long long)mono);
		gp_rf_hdr_add(hdr, sizeof(hdr), "monotonic_ns", b);
	}
	gp_rf_writer_t *w = gp_rf_writer_create(fd, hdr, 0);
	if (!w) {
		close(fd);
		return 0;
	}
	gp_rf_append_string(w, 1, "s");
	gp_rf_append_string(w, 2, "ncclKernel_AllReduce");
	gp_rf_append_string(w, 3, "optimizer.step");
	uint64_t ts = mono;
	while (in.n >= 7) {
		gp_event_t e = {0};
		uint16_t dts;
		uint8_t tid;
		take(&in, &e.type, 1);
		take(&in, &tid, 1);
		take(&in, &e.u8, 1);
		take(&in, &e.u16, 2);
		take(&in, &dts, 2);
		e.type %= GP_EV_MAX;
		e.tid = tid;
		if (dts == 0xffff) {
			take(&in, &e.ts, 8);
		} else {
			ts += (uint64_t)dts * 1000;
			e.ts = ts;
		}
		e.a = value(&in);
		e.b = value(&in);
		e.c = value(&in);
		e.d = value(&in);
		if (e.type == GP_EV_NONE)
			continue;
		gp_rf_append(w, &e);
	}
	gp_rf_writer_close(w, false);

	gp_job_t job;
	char err[512];
	FILE *null = fopen("/dev/null", "w");
	if (null &&
	    gp_job_load(&job, dir, NULL, (v & 32) ? "kernels" : "auto", err, sizeof(err)) == 0) {
		gp_job_findings(&job);
		gp_report_text(&job, null);
		gp_report_json(&job, null);
		gp_report_html(&job, null);
		gp_export_chrome(&job, null, NULL, 100000, 0, 0);
		gp_export_memviz(&job, null, NULL, NULL, (v & 64) != 0);
		gp_job_free(&job);
	}
	if (null)
		fclose(null);
	rm_job();
	return 0;
}
