/* The CUPTI module's call-stack tables (agent/inject/stacks.c), built here with 8 slots
 * each: real stacks of this program (libunwind), distinct by their depth; a stack is
 * defined once and has one id; allocation stacks and launch sites have tables of their
 * own, with ids apart, so a full allocation table leaves the sites theirs (and the
 * reverse); every stack that finds no room counted (GP_LOSS_STACKS). */
#include "config.h"
#include "cupti_int.h"
#include "tap.h"

#include <stdlib.h>

static int defined, frames;
static uint64_t lost;
static void emit(const gp_event_t *e)
{
	defined += e->type == GP_EV_STACK && e->u16 == 0;
	frames += e->type == GP_EV_FRAME;
}
static uint32_t intern(const char *s, size_t n)
{
	(void)s, (void)n;
	return 1;
}
static void count_drop(unsigned c, uint64_t n)
{
	if (c == GP_LOSS_STACKS)
		lost += n;
}
int gp_py_frames(char names[][GP_PY_NAME], int max)
{
	(void)names, (void)max;
	return 0;
}

/* a stack DEPTH frames deeper than the caller's: distinct for each depth */
static volatile int sink;
__attribute__((noinline)) static uint32_t at_depth(int depth, bool site)
{
	uint32_t id = depth ? at_depth(depth - 1, site)
	                    : (site ? gp_site_stack_capture() : gp_stack_capture());
	sink++; /* no tail call: every level keeps its frame */
	return id;
}

/* each depth twice, from one call site: the second time the same stack */
static void take(bool site, uint32_t ids[12][2])
{
	for (int i = 0; i < 24; i++)
		ids[i / 2][i % 2] = at_depth(i / 2, site);
}

static int kept(uint32_t ids[12][2], bool *same)
{
	int n = 0;
	*same = true;
	for (int d = 0; d < 12; d++) {
		n += ids[d][0] != 0;
		*same = *same && ids[d][0] == ids[d][1];
	}
	return n;
}

int main(void)
{
	static gp_inject_api_t api;
	api = (gp_inject_api_t){.emit = emit, .intern = intern, .count_drop = count_drop, .gen = 3};
	gp_cu_api = &api;
	uint32_t a[12][2], s[12][2];
	bool same;
	take(false, a);
	int got = kept(a, &same);
	ok(got == 8 && lost == 8,
	   "allocation stacks: 8 of 12 distinct stacks kept, the other 4 "
	   "counted lost each time (%d kept, %llu lost)",
	   got, (unsigned long long)lost);
	ok(defined == 8 && same, "each kept stack defined once, the same id the second time (%d)",
	   defined);
	ok(a[0][0] >> 12 == 3 && !(a[0][0] >> 31),
	   "an allocation stack's id carries the generation (0x%x)", a[0][0]);

	/* the allocation table is full: the launch sites still have theirs */
	take(true, s);
	got = kept(s, &same);
	ok(got == 8 && lost == 16,
	   "launch sites: 8 kept past a full allocation table, 4 more lost "
	   "each time (%d kept, %llu lost)",
	   got, (unsigned long long)lost);
	ok(s[0][0] >> 31 && (s[0][0] & 0x7fffffff) >> 12 == 3 && s[0][0] != a[0][0],
	   "a site's id apart from the allocations' (0x%x, 0x%x)", s[0][0], a[0][0]);
	ok(defined == 16 && same, "each kept site defined once, the same id the second time (%d)",
	   defined);
	ok(frames > 16, "with its frames (%d)", frames);
	return done_testing();
}
