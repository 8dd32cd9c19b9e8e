/* A real nvtx3 client for the NVTX tests (built against the CUDA toolkit's headers; no GPU
 * needed). Each scenario prints what it produced so the test can compare with the rank
 * file: "produced push=N pop=N start=N end=N mark=N". */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>
#if __has_include(<cuda.h>) && __has_include(<cuda_runtime_api.h>)
#define HAVE_CUDA_HEADERS 1 /* the NVTX CUDA/CUDA runtime naming headers need them */
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#endif

static long push, pop, start_, end_, mark;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void add(long *c, long n)
{
	pthread_mutex_lock(&mu);
	*c += n;
	pthread_mutex_unlock(&mu);
}

static void pause_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* ranges per thread; paced (a pause every 250 pairs, at most ~2M records/s in all) so
 * the agent keeps up, or in one burst to overflow the ring on purpose */
static int paced = 1;

static void *ranges_thread(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 0; i < n; i++) {
		nvtxRangePushA("work");
		nvtxRangePop();
		if (paced && i % 250 == 249)
			pause_ms(1);
	}
	add(&push, n);
	add(&pop, n);
	return NULL;
}

/* a thread that ends inside a range it pushed, after one closed range with a payload and
 * a colour (lanes: the range is one record, the open one a push at the thread's end) */
/* pushes whose returned level was not the thread's own nesting (a thread that found
 * another's state: agent/inject/state.c gives a thread's slot to the next) */
static long bad_levels;

static void *churn_thread(void *arg)
{
	(void)arg;
	if (nvtxRangePushA("churn_open") != 0)
		add(&bad_levels, 1);
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "churn_closed";
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = 42;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00;
	a.category = 7;
	if (nvtxRangePushEx(&a) != 1)
		add(&bad_levels, 1);
	nvtxRangePop();
	return NULL;
}

/* 12 threads at once, more than the ring's 8 lanes, each holding its ranges open a while */
static void *many_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		if (nvtxRangePushA("many") != 0 || nvtxRangePushA("many_inner") != 1)
			add(&bad_levels, 1);
		nvtxRangePop();
		nvtxRangePop();
		if (i % 100 == 99)
			pause_ms(1);
	}
	return NULL;
}

/* more threads at once than the library's table of thread states has slots (256), each
 * ending inside a range: then as many again, on the stacks (so the thread pointers) of
 * the ended ones */
static pthread_barrier_t tslot_bar;
static void *tslot_thread(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&tslot_bar);
	for (int i = 0; i < 10; i++) {
		if (nvtxRangePushA("tslot") != 0 || nvtxRangePushA("tslot_inner") != 1)
			add(&bad_levels, 1);
		nvtxRangePop();
		nvtxRangePop();
	}
	if (nvtxRangePushA("tslot_open") != 0)
		add(&bad_levels, 1);
	return NULL;
}

/* a thread that ends inside a range with a raw exit (no key destructors: its state is
 * left where the library keeps it), then one on its stack, whose levels start at 0 */
static void *raw_exit_thread(void *arg)
{
	(void)arg;
	if (nvtxRangePushA("raw_open") != 0)
		add(&bad_levels, 1);
	syscall(SYS_exit, 0);
	return NULL;
}
static void *after_raw_thread(void *arg)
{
	(void)arg;
	if (nvtxRangePushA("after_raw") != 0 || nvtxRangePushA("after_raw_inner") != 1)
		add(&bad_levels, 1);
	nvtxRangePop();
	nvtxRangePop();
	return NULL;
}

static nvtxRangeId_t shared_ids[1000];

static void *ender(void *arg)
{
	for (int i = 0; i < 1000; i++)
		nvtxRangeEnd(shared_ids[i]);
	add(&end_, 1000);
	return NULL;
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static volatile sig_atomic_t steps_stop;

static void steps_on_term(int sig)
{
	(void)sig;
	steps_stop = 1;
}

/* The periods of steps a..i-1 (start[] holds i + 1 starts): their median, and when the
 * first began, as the program's own clock says. */
static void print_half(int half, const double *start, int a, int i, double *per, double t0,
                       const char *how)
{
	int k = 0;
	for (int j = a; j < i; j++)
		per[k++] = (start[j + 1] - start[j]) * 1e3;
	qsort(per, (size_t)k, sizeof(double), cmp_double);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	double unix_now = (double)rt.tv_sec + rt.tv_nsec / 1e9;
	printf("steps half=%d n=%d median_ms=%.4f from_s=%.3f from_unix=%.3f%s\n", half, k,
	       k == 0  ? 0
	       : k % 2 ? per[k / 2]
	               : (per[k / 2 - 1] + per[k / 2]) / 2,
	       start[a] - t0, unix_now - (mono_s() - start[a]), how);
	fflush(stdout);
}

/* steps N MS1 MS2 [S]: N steps ("train_step" with a nested "fwd"), each taking MS1 ms, then
 * MS2 ms from the step N/2 on (a planted slowdown); S: a pause before the first step (a
 * start-up). It prints its own timing of each half, the period from a step's start to the
 * next one's (what gpuprof's live figures measure), as each half ends:
 * "steps half=H n=K median_ms=M from_s=F from_unix=U" (the half's first step began F s
 * after the program did, at Unix time U). A SIGTERM (a time limit) prints the half so far
 * (" stopped") and ends the program by that signal. */
static int planted_steps(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 40;
	double ms[2] = {argc > 3 ? atof(argv[3]) : 20, argc > 4 ? atof(argv[4]) : 40};
	double t0 = mono_s(), pre = argc > 5 ? atof(argv[5]) : 0;
	double *start = calloc((size_t)n + 1, sizeof(double)),
	       *per = calloc((size_t)n, sizeof(double));
	if (!start || !per || n < 4)
		return 2;
	signal(SIGTERM, steps_on_term);
	pause_ms((int)(pre * 1000));
	for (int i = 0; i <= n; i++) {
		start[i] = mono_s();
		if (steps_stop) {
			print_half(i > n / 2 ? 2 : 1, start, i > n / 2 ? n / 2 : 0, i, per, t0,
			           " stopped");
			signal(SIGTERM, SIG_DFL);
			raise(SIGTERM);
		}
		if (i == n / 2 || i == n) /* the half that ended */
			print_half(i == n ? 2 : 1, start, i == n ? n / 2 : 0, i, per, t0, "");
		if (i == n)
			break;
		nvtxRangePushA("train_step");
		nvtxRangePushA("fwd");
		double until = start[i] + ms[i >= n / 2] / 1e3;
		while (mono_s() < until - 0.002)
			pause_ms(1);
		while (mono_s() < until) /* the last 2 ms spun: the step's time is exact */
			;
		nvtxRangePop();
		nvtxRangePop();
	}
	free(start);
	free(per);
	return 0;
}

/* stepseq SPEC: steps ("train_step" with a nested "fwd") whose lengths SPEC gives, segment
 * by segment, "N*MS" (N steps of MS ms), "N*MS/MS2" (N steps alternating MS and MS2) or
 * "N*MS/MS2:K" (every K-th step MS2: gradient accumulation's), separated by commas:
 * "200*5,100*14.5" is a level shift at step 200. At the end it prints its own timing of each
 * segment, the period from a step's start to the next one's: "seg k=K first_step=S n=N median_ms=M
 * from_s=F" (its first step began F s after the program did). */
static int step_sequence(const char *spec)
{
	enum { MAXSEG = 16 };
	int cnt[MAXSEG], every[MAXSEG], nseg = 0, n = 0;
	double a[MAXSEG], b[MAXSEG];
	for (const char *p = spec; p && *p && nseg < MAXSEG; nseg++) {
		char *e;
		cnt[nseg] = (int)strtol(p, &e, 10);
		if (*e != '*')
			return 2;
		a[nseg] = b[nseg] = strtod(e + 1, &e);
		every[nseg] = 2;
		if (*e == '/')
			b[nseg] = strtod(e + 1, &e);
		if (*e == ':')
			every[nseg] = (int)strtol(e + 1, &e, 10);
		if (every[nseg] < 1)
			return 2;
		n += cnt[nseg];
		p = *e == ',' ? e + 1 : NULL;
	}
	double t0 = mono_s(), *start = calloc((size_t)n + 1, sizeof(double)),
	       *per = calloc((size_t)n + 1, sizeof(double));
	if (!start || !per || n < 2)
		return 2;
	for (int g = 0, i = 0; g < nseg; g++)
		for (int j = 0; j < cnt[g]; j++, i++) {
			start[i] = mono_s();
			nvtxRangePushA("train_step");
			nvtxRangePushA("fwd");
			double until =
			    start[i] + (j % every[g] == every[g] - 1 ? b[g] : a[g]) / 1e3;
			while (mono_s() < until - 0.002)
				pause_ms(1);
			while (mono_s() < until)
				;
			nvtxRangePop();
			nvtxRangePop();
		}
	start[n] = mono_s();
	for (int g = 0, i = 0; g < nseg; i += cnt[g++]) {
		int k = 0;
		for (int j = i; j < i + cnt[g]; j++)
			per[k++] = (start[j + 1] - start[j]) * 1e3;
		qsort(per, (size_t)k, sizeof(double), cmp_double);
		printf("seg k=%d first_step=%d n=%d median_ms=%.4f from_s=%.4f\n", g, i, k,
		       k % 2 ? per[k / 2] : (per[k / 2 - 1] + per[k / 2]) / 2, start[i] - t0);
	}
	free(start);
	free(per);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	bool all = !strcmp(what, "all");
	if (!strcmp(what, "steps"))
		return planted_steps(argc, argv);
	if (!strcmp(what, "stepseq"))
		return step_sequence(argc > 2 ? argv[2] : "");
	if (!strcmp(what, "segv") || !strcmp(what, "exit4")) {
		/* 20 steps, then an end no exit hook sees: a signal, or _exit (what the
		 * environment-only fallback cannot record itself) */
		for (int i = 0; i < 20; i++) {
			nvtxRangePushA("train_step");
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
			nvtxRangePop();
		}
		struct timespec ts = {0, 500 * 1000 * 1000}; /* the library's drainer writes them */
		nanosleep(&ts, NULL);
		if (!strcmp(what, "exit4"))
			_exit(4);
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		return 1;
	}
	if (!strcmp(what, "worker")) {
		/* one of a launcher's ranks (torchrun's workers set RANK): 20 + 5 x RANK steps
		 * (or $STEPS) and a range named after its rank, so names swapped between processes
		 * show; rank 2 exits 3 */
		const char *r = getenv("RANK");
		int rank = r ? atoi(r) : 0;
		char name[32];
		snprintf(name, sizeof(name), "worker_r%d", rank);
		nvtxRangePushA(name);
		nvtxRangePop();
		int steps = getenv("STEPS") ? atoi(getenv("STEPS")) : 20 + 5 * rank;
		for (int i = 0; i < steps; i++) {
			nvtxRangePushA("train_step");
			pause_ms(5);
			nvtxRangePop();
		}
		printf("worker %d done\n", rank);
		fflush(stdout);
		if (getenv("DIE")) /* killed, not exit(): only a zombie tells how it ended */
			raise(SIGKILL);
		if (getenv("EXIT"))
			return atoi(getenv("EXIT"));
		return rank == 2 ? 3 : 0;
	}
	if (!strcmp(what, "domainopen")) {
		/* a library's range left open in its own domain (NCCL leaves some), then the
		 * program's steps in the default domain: they are still outermost there */
		nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
		nvtxEventAttributes_t a = {0};
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_ASCII;
		a.message.ascii = "ncclCommInitRank";
		nvtxDomainRangePushEx(d, &a);
		for (int i = 0; i < 20; i++) {
			nvtxRangePushA("train_step");
			nvtxRangePushA("inner");
			pause_ms(2);
			nvtxRangePop();
			nvtxRangePop();
		}
		return 0;
	}
	if (!strcmp(what, "tworanges")) {
		/* two outermost ranges: the more frequent is not the step when the program
		 * names the other (GPUPROF_STEP_RANGE=eval_step) */
		for (int i = 0; i < 100; i++) {
			nvtxRangePushA("train_step");
			nvtxRangePop();
			if (i % 5 == 0) {
				nvtxRangePushA("eval_step");
				pause_ms(1);
				nvtxRangePop();
			}
		}
		return 0;
	}
	if (!strcmp(what, "execchild")) {
		/* a helper the program starts (exec'd: not a forked copy) that touches NVTX
		 * first and so takes the task's ring, while the program trains beside it: the
		 * program's 100 steps must be the rank's, the helper listed beside it */
		pid_t pid = fork();
		if (pid == 0) {
			setenv("STEPS", "60", 1);
			execl(argv[0], argv[0], "worker", (char *)NULL);
			_exit(127);
		}
		pause_ms(100); /* the helper attaches first */
		for (int i = 0; i < 100; i++) {
			nvtxRangePushA("parent_step");
			pause_ms(1);
			nvtxRangePop();
		}
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(what, "prefetch")) { /* a helper: many short ranges of its own */
		for (int i = 0; i < 2000; i++) {
			nvtxRangePushA("prefetch");
			pause_ms(0);
			nvtxRangePop();
		}
		return 0;
	}
	if (!strcmp(what, "busyhelper")) {
		/* the program trains 50 steps of 5 ms while a helper it starts records 2000
		 * short 'prefetch' ranges: more ranges than the trainer's steps, but the
		 * program the agent started is the one that trained (issue 51 item 6) */
		pid_t pid = fork();
		if (pid == 0) {
			execl(argv[0], argv[0], "prefetch", (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 50; i++) {
			nvtxRangePushA("train_step");
			pause_ms(5);
			nvtxRangePop();
		}
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(what, "earlyfork")) {
		/* a worker forked before the process's first NVTX call (DataLoader workers
		 * often are): it loads the library afresh in the child, with the parent's
		 * environment, and calls NVTX first; the parent's own ranges must still be the
		 * ones recorded, and the worker's none */
		int go[2];
		if (pipe(go) < 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 100; i++) {
				nvtxRangePushA("worker_range");
				nvtxRangePop();
			}
			if (write(go[1], "x", 1) != 1)
				_exit(1);
			pause_ms(300); /* alive while the parent attaches */
			_exit(0);
		}
		char c;
		if (read(go[0], &c, 1) != 1)
			return 1;
		for (int i = 0; i < 10; i++) {
			nvtxRangePushA("parent_step");
			nvtxRangePop();
		}
		waitpid(pid, NULL, 0);
		add(&push, 10);
		add(&pop, 10);
		printf("produced push=10 pop=10 start=0 end=0 mark=0\n");
		return 0;
	}
	nvtxNameOsThreadA(0, "client-main");
	if (!strcmp(what, "burst"))
		paced = 0;
	if (all || !strcmp(what, "threads") || !strcmp(what, "burst")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, ranges_thread, (void *)(intptr_t)250000);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	if (all || !strcmp(what, "strings")) {
		char name[32];
		for (int i = 0; i < 100000; i++) {
			snprintf(name, sizeof(name), "distinct_%d", i);
			nvtxRangePushA(name);
			nvtxRangePop();
			if (i % 500 == 499)
				pause_ms(1);
		}
		add(&push, 100000);
		add(&pop, 100000);
	}
	if (all || !strcmp(what, "cross")) {
		pthread_t t;
		for (int i = 0; i < 1000; i++)
			shared_ids[i] = nvtxRangeStartA("cross_thread");
		add(&start_, 1000);
		pthread_create(&t, NULL, ender, NULL);
		pthread_join(t, NULL);
	}
	if (all || !strcmp(what, "domains")) {
		nvtxDomainHandle_t d = nvtxDomainCreateA("my_domain");
		nvtxStringHandle_t reg = nvtxDomainRegisterStringA(d, "registered_range");
		nvtxEventAttributes_t a = {0};
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
		a.message.registered = reg;
		a.colorType = NVTX_COLOR_ARGB;
		a.color = 0xff00ff00;
		a.category = 7;
		a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
		a.payload.ullValue = 42;
		nvtxDomainNameCategoryA(d, 7, "seven");
		for (int i = 0; i < 10; i++) {
			nvtxDomainRangePushEx(d, &a);
			nvtxDomainMarkEx(d, &a);
			nvtxDomainRangePop(d);
		}
		add(&push, 10);
		add(&pop, 10);
		add(&mark, 10);
		nvtxRangePushW(L"w\u00efde_range");
		nvtxRangePop();
		add(&push, 1);
		add(&pop, 1);
		nvtxMarkA("a_mark");
		add(&mark, 1);
		nvtxDomainDestroy(d);
	}
	if (all || !strcmp(what, "deep")) {
		for (int i = 0; i < 1000; i++)
			nvtxRangePushA("nest");
		for (int i = 0; i < 1000; i++)
			nvtxRangePop();
		add(&push, 1000);
		add(&pop, 1000);
	}
	if (!strcmp(what, "deeper")) { /* past the 4096 levels recorded: counted */
		for (int i = 0; i < 5000; i++)
			nvtxRangePushA("nest");
		for (int i = 0; i < 5000; i++)
			nvtxRangePop();
		add(&push, 5000);
		add(&pop, 5000);
	}
	if (!strcmp(what, "names")) { /* more distinct names than the string table holds */
		char name[32];
		for (int i = 0; i < 300000; i++) {
			snprintf(name, sizeof(name), "name_%d", i);
			nvtxRangePushA(name);
			nvtxRangePop();
			if (i % 500 == 499)
				pause_ms(1);
		}
		add(&push, 300000);
		add(&pop, 300000);
	}
	if (all || !strcmp(what, "fork")) {
		/* a DataLoader-style worker: forked, not exec'd; it must not write into the
		 * parent's ring (the library silences it in pthread_atfork's child handler) */
		nvtxRangePushA("parent_range");
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 100; i++) {
				nvtxRangePushA("child_range");
				nvtxRangePop();
			}
			_exit(0);
		}
		waitpid(pid, NULL, 0);
		nvtxRangePop();
		add(&push, 1);
		add(&pop, 1);
	}
	if (all || !strcmp(what, "streams")) {
#ifdef HAVE_CUDA_HEADERS
		/* handles only: no CUDA here, so the library cannot map them to CUPTI ids */
		nvtxNameCudaStreamA((cudaStream_t)(uintptr_t)0x1234, "prefetch_stream");
		nvtxNameCuStreamA((CUstream)(uintptr_t)0x5678, "comm_stream");
		nvtxNameCudaStreamW((cudaStream_t)(uintptr_t)0x9abc, L"w\u00efde_stream");
#else
		printf("no_stream_naming (built without cuda.h)\n");
#endif
	}
	if (!strcmp(what, "badnames")) {
		/* names that are not UTF-8, as a program may pass them (NVTX takes bytes): a
		 * lone 0xff, an overlong '/', a surrogate, a cut sequence, control characters,
		 * and valid UTF-8 beside them; 12 steps so the report has steps to name */
		static const char *names[] = {"step\xff",    "fwd\xc0\xaf",     "bwd\xed\xa0\x80",
		                              "opt\xe2\x82", "ctl\x01\x1f\"\\", "caf\xc3\xa9"};
		nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main\xfe\xfd");
		for (int s = 0; s < 12; s++) {
			nvtxRangePushA(names[0]);
			for (int k = 1; k < 6; k++) {
				nvtxRangePushA(names[k]);
				nvtxMarkA(names[k]);
				nvtxRangePop();
			}
			nvtxRangePop();
		}
		printf("badnames done\n");
		return 0;
	}
	if (!strcmp(what, "churn")) {
		/* 20 threads one after another, each ending inside a range: each gives its lane
		 * back for the next; then 12 threads at once */
		pthread_t t[12];
		for (int i = 0; i < 20; i++) {
			pthread_create(&t[0], NULL, churn_thread, NULL);
			pthread_join(t[0], NULL);
		}
		for (int i = 0; i < 12; i++)
			pthread_create(&t[i], NULL, many_thread, NULL);
		for (int i = 0; i < 12; i++)
			pthread_join(t[i], NULL);
		add(&push, 20 * 2 + 12 * 2000);
		add(&pop, 20 + 12 * 2000);
	}
	if (!strcmp(what, "tslots")) {
		enum { N = 300 };
		static pthread_t t[N];
		for (int round = 0; round < 2; round++) {
			pthread_barrier_init(&tslot_bar, NULL, N);
			for (int i = 0; i < N; i++)
				pthread_create(&t[i], NULL, tslot_thread, NULL);
			for (int i = 0; i < N; i++)
				pthread_join(t[i], NULL);
			pthread_barrier_destroy(&tslot_bar);
		}
		add(&push, 2 * N * 21);
		add(&pop, 2 * N * 20);
	}
	if (!strcmp(what, "rawexit")) {
		pthread_t t;
		for (int i = 0; i < 3; i++) {
			pthread_create(&t, NULL, raw_exit_thread, NULL);
			pthread_join(t, NULL);
			pthread_create(&t, NULL, after_raw_thread, NULL);
			pthread_join(t, NULL);
		}
		add(&push, 3 * 3);
		add(&pop, 3 * 2);
	}
	if (all || !strcmp(what, "pops")) {
		int rc = 0;
		for (int i = 0; i < 100; i++)
			rc |= nvtxRangePop() >= 0; /* nothing pushed: NVTX says negative */
		printf("unbalanced_pop_nonnegative %d\n", rc);
	}
	printf("produced push=%ld pop=%ld start=%ld end=%ld mark=%ld\n", push, pop, start_, end_,
	       mark);
	printf("bad_levels %ld\n", bad_levels);
	return 0;
}
