/* The library's state (inject_int.h): defined apart from every part that uses it, so that
 * no two parts depend on each other through it. Each part owns the fields it writes. */
#include "config.h"
#include "inject_int.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

gp_inj_state_t gp_inj;

/* A thread's state (inject_int.h): its slot of gp_inj_tslots, or its own copy here */
gp_inj_tslot_t gp_inj_tslots[1u << GP_INJ_TSLOT_BITS];
typedef struct thr_tls {
	gp_inj_thr_t *cur; /* where this thread's state is (NULL: not decided yet) */
	gp_inj_thr_t own;
} thr_tls_t;
static __thread thr_tls_t thr_tls GP_INJ_TLS = {.own = {.lane = -1}}; /* no lane yet */
static pthread_key_t tslot_key;
static bool tslot_key_ok;

/* The thread ends: its state back into TLS (a later destructor may still push a range),
 * then its slot to the next thread. A slot under this thread pointer is freed whoever
 * took it: this thread, or one that ended on this stack without this call (a thread on
 * its stack inherits its key's value; no live thread shares the thread pointer). Signals
 * blocked: a handler's NVTX call in between would change the copy being left. */
static void tslot_end(void *p)
{
#if defined(__x86_64__)
	gp_inj_tslot_t *s = p;
	thr_tls_t *l = &thr_tls;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (atomic_load_explicit(&s->tp, memory_order_relaxed) == gp_inj_tp()) {
		if (l->cur == &s->thr) {
			l->own = s->thr;
			l->cur = &l->own;
		}
		atomic_store_explicit(&s->tp, 0, memory_order_release);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#else
	(void)p;
#endif
}

/* At load, not at a thread's first call */
__attribute__((constructor)) static void tslot_key_make(void)
{
	tslot_key_ok = pthread_key_create(&tslot_key, tslot_end) == 0;
}

/* The thread's first call: its slot, if it is free or an ended thread's on this same
 * control block (no live thread shares a thread pointer, so nobody else writes it), and
 * glibc's control block has the thread's id where gp_inj_tcb_tid reads it. The slot is
 * 1 (no thread pointer) while it is filled in, and given back at once if the key that
 * frees it cannot be set; else the TLS copy. */
static void thr_place(thr_tls_t *l)
{
	l->cur = &l->own;
#if defined(__x86_64__)
	uintptr_t tp = gp_inj_tp(), v;
	int32_t tid = (int32_t)syscall(SYS_gettid);
	gp_inj_tslot_t *s = gp_inj_tslot_of(tp);
	if (!tslot_key_ok || gp_inj_tcb_tid() != tid)
		return;
	v = atomic_load_explicit(&s->tp, memory_order_acquire);
	if (v == tp)
		atomic_store_explicit(&s->tp, 1, memory_order_relaxed);
	else if (v != 0 || !atomic_compare_exchange_strong(&s->tp, &v, 1))
		return;
	if (pthread_setspecific(tslot_key, s) != 0) {
		atomic_store_explicit(&s->tp, 0, memory_order_release);
		return;
	}
	s->thr = l->own;
	atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
	atomic_store_explicit(&s->tp, tp, memory_order_release);
	l->cur = &s->thr;
#endif
}

gp_inj_thr_t *gp_inj_thr_slow(void)
{
	thr_tls_t *l = &thr_tls;
	if (l->cur)
		return l->cur;
	/* signals blocked: a handler's NVTX call in between would find half a state */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!l->cur)
		thr_place(l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return l->cur;
}

/* In a forked child, its only thread: the parent's other threads are gone, and a new
 * thread here may get one of their stacks, so their thread pointers; its own slot stays */
void gp_inj_thr_fork_child(void)
{
#if defined(__x86_64__)
	uintptr_t tp = gp_inj_tp();
	gp_inj_thr_t *mine = thr_tls.cur;
	for (size_t i = 0; i < sizeof(gp_inj_tslots) / sizeof(gp_inj_tslots[0]); i++) {
		gp_inj_tslot_t *s = &gp_inj_tslots[i];
		/* this thread's own (not one an ended thread left on its stack) stays, under the
		 * child's thread id (glibc set it at fork) */
		if (atomic_load_explicit(&s->tp, memory_order_relaxed) == tp && mine == &s->thr)
			atomic_store_explicit(&s->tid, gp_inj_tcb_tid(), memory_order_relaxed);
		else
			atomic_store_explicit(&s->tp, 0, memory_order_relaxed);
	}
#endif
}
