/* The library's state (inject_int.h): defined apart from every part that uses it, so that
 * no two parts depend on each other through it. Each part owns the fields it writes. */
#include "config.h"
#include "inject_int.h"

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
 * then its slot to the next thread */
static void tslot_end(void *p)
{
	gp_inj_tslot_t *s = p;
	thr_tls_t *l = &thr_tls;
	l->own = s->thr;
	l->cur = &l->own;
	atomic_store_explicit(&s->tp, 0, memory_order_release);
}

/* At load, not at a thread's first call (which may be in a signal handler) */
__attribute__((constructor)) static void tslot_key_make(void)
{
	tslot_key_ok = pthread_key_create(&tslot_key, tslot_end) == 0;
}

gp_inj_thr_t *gp_inj_thr_slow(void)
{
	thr_tls_t *l = &thr_tls;
	if (l->cur)
		return l->cur;
	l->cur = &l->own;
#if defined(__x86_64__)
	/* the thread's first call: its slot, if free. Taken as 1 (no thread pointer) while
	 * it is filled in, so that a signal handler's call in between finds the TLS copy, and
	 * given back at once if the key that frees it cannot be set. */
	uintptr_t tp = gp_inj_tp(), free = 0;
	gp_inj_tslot_t *s = gp_inj_tslot_of(tp);
	if (tslot_key_ok && atomic_load_explicit(&s->tp, memory_order_relaxed) == 0 &&
	    atomic_compare_exchange_strong(&s->tp, &free, 1)) {
		if (pthread_setspecific(tslot_key, s) == 0) {
			s->thr = l->own;
			atomic_store_explicit(&s->tp, tp, memory_order_release);
			l->cur = &s->thr;
		} else {
			atomic_store_explicit(&s->tp, 0, memory_order_release);
		}
	}
#endif
	return l->cur;
}

/* In a forked child, its only thread: the parent's other threads are gone, and a new
 * thread here may get one of their stacks, so their thread pointers */
void gp_inj_thr_fork_child(void)
{
#if defined(__x86_64__)
	uintptr_t tp = gp_inj_tp();
	for (size_t i = 0; i < sizeof(gp_inj_tslots) / sizeof(gp_inj_tslots[0]); i++)
		if (atomic_load_explicit(&gp_inj_tslots[i].tp, memory_order_relaxed) != tp)
			atomic_store_explicit(&gp_inj_tslots[i].tp, 0, memory_order_relaxed);
#endif
}
