/* What each driver call a step marker makes costs (agent/inject/marker.c), against how many
 * streams the context has (PyTorch makes 32 low- and 32 high-priority non-blocking streams
 * per device, plus the program's) and whether the GPU is busy: a marker_check --cost loop
 * paid 2.4 us a marker, the seed MLP under PyTorch ~10 us more.
 * Usage: marker_calls [N_STREAMS] [busy]   prints "call median_ns p95_ns" lines; built with
 * -DMARKER_CALLS_LIB -shared, marker_calls_run(busy) from ctypes (bench/field/marker_calls.py). */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

static unsigned long long now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
}

static void report(const char *name, std::vector<unsigned long long> &v)
{
	std::sort(v.begin(), v.end());
	printf("%-28s %6llu %6llu\n", name, v[v.size() / 2], v[v.size() * 95 / 100]);
}

/* One marker's calls, timed: out[0..5] as the lines above (for a program's own loop) */
extern "C" void marker_calls_once(unsigned long long *out)
{
	static CUevent ev[64];
	static int n;
	if (!ev[0])
		for (int i = 0; i < 64; i++)
			cuEventCreate(&ev[i], CU_EVENT_BLOCKING_SYNC);
	unsigned long long a = now_ns();
	CUcontext c;
	cuCtxGetCurrent(&c);
	unsigned long long b = now_ns();
	CUstreamCaptureStatus s;
	cuStreamIsCapturing(CU_STREAM_LEGACY, &s);
	unsigned long long d = now_ns();
	cuStreamIsCapturing(CU_STREAM_PER_THREAD, &s);
	unsigned long long e = now_ns();
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	cuThreadExchangeStreamCaptureMode(&m);
	cuThreadExchangeStreamCaptureMode(&m);
	unsigned long long f = now_ns();
	cuEventRecord(ev[n++ % 64], CU_STREAM_LEGACY);
	unsigned long long g = now_ns();
	out[0] = b - a, out[1] = d - b, out[2] = e - d, out[3] = f - e, out[4] = g - f,
	out[5] = g - a;
}

/* The loop in the calling process's current context (also built as a shared library:
 * called through ctypes from a PyTorch program between its steps). */
extern "C" int marker_calls_run(int busy)
{
	const int N = 4000;
	std::vector<unsigned long long> t[6];
	unsigned long long out[6];
	for (int i = 0; i < N; i++) {
		if (busy && i % 50 == 0) { /* work queued ahead: ~1 ms of spinning kernels */
			for (int k = 0; k < 20; k++)
				spin<<<1, 1>>>(100000);
		}
		marker_calls_once(out);
		for (int k = 0; k < 6; k++)
			t[k].push_back(out[k]);
		if (i % 64 == 63)
			cudaDeviceSynchronize();
	}
	printf("# busy %d\n", busy);
	report("cuCtxGetCurrent", t[0]);
	report("cuStreamIsCapturing(legacy)", t[1]);
	report("cuStreamIsCapturing(ptds)", t[2]);
	report("ExchangeCaptureMode x2", t[3]);
	report("cuEventRecord(legacy)", t[4]);
	report("all", t[5]);
	cudaDeviceSynchronize();
	fflush(stdout);
	return 0;
}

#ifndef MARKER_CALLS_LIB
int main(int argc, char **argv)
{
	int ns = argc > 1 ? atoi(argv[1]) : 0;
	bool busy = argc > 2 && !strcmp(argv[2], "busy");
	cudaFree(0);
	std::vector<cudaStream_t> st(ns);
	for (int i = 0; i < ns; i++)
		cudaStreamCreateWithFlags(&st[i],
		                          i % 2 ? cudaStreamNonBlocking : cudaStreamDefault);
	printf("# streams %d\n", ns);
	return marker_calls_run(busy);
}
#endif
