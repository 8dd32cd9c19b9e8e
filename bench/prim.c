/* The cost of the hot path's primitives on this host: rdtsc, an uncontended CAS,
 * clock_gettime, a 64-byte store into a 16 MiB ring, and rdtsc + store + CAS together
 * (bench/results/performance-history.md, session 17). Build: gcc -O2 -o prim bench/prim.c */
#include <x86intrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include <cpuid.h>
static double now()
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}
_Atomic unsigned long head;
int main()
{
	unsigned long s = 0;
	int N = 5000000;
	unsigned a, b, c, d;
	char brand[49] = {0};
	for (unsigned i = 0; i < 3; i++) {
		__get_cpuid(0x80000002 + i, &a, &b, &c, &d);
		memcpy(brand + 16 * i, &a, 4);
		memcpy(brand + 16 * i + 4, &b, 4);
		memcpy(brand + 16 * i + 8, &c, 4);
		memcpy(brand + 16 * i + 12, &d, 4);
	}
	printf("cpu: %s\n", brand);
	size_t R = 1 << 24;
	char *ring = aligned_alloc(64, R);
	memset(ring, 0, R);
	for (int r = 0; r < 3; r++) {
		double t0 = now();
		for (int i = 0; i < N; i++)
			s += __rdtsc();
		double t1 = now();
		for (int i = 0; i < N; i++) {
			unsigned long p = atomic_load_explicit(&head, memory_order_relaxed);
			atomic_compare_exchange_weak_explicit(
			    &head, &p, p + 1, memory_order_relaxed, memory_order_relaxed);
		}
		double t2 = now();
		struct timespec ts;
		for (int i = 0; i < N; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			s += ts.tv_nsec;
		}
		double t3 = now();
		for (int i = 0; i < N; i++) {
			unsigned long *l = (unsigned long *)(ring + ((size_t)i * 64 & (R - 1)));
			l[0] = i;
			l[1] = i;
			l[2] = i;
			l[3] = i;
		}
		double t4 = now();
		for (int i = 0; i < N; i++) {
			unsigned long *l = (unsigned long *)(ring + ((size_t)i * 64 & (R - 1)));
			__builtin_prefetch(ring + (((size_t)i + 16) * 64 & (R - 1)), 1, 3);
			l[0] = __rdtsc();
			l[1] = i;
			unsigned long p = atomic_load_explicit(&head, memory_order_relaxed);
			atomic_compare_exchange_weak_explicit(
			    &head, &p, p + 1, memory_order_relaxed, memory_order_relaxed);
		}
		double t5 = now();
		printf("rdtsc %.2f ns  cas %.2f ns  clock_gettime %.2f ns  64B-line store %.2f ns  "
		       "rdtsc+store+cas %.2f ns\n",
		       (t1 - t0) / N, (t2 - t1) / N, (t3 - t2) / N, (t4 - t3) / N, (t5 - t4) / N);
	}
	return s == 1;
}
