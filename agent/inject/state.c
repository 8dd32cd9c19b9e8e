/* The library's state (inject_int.h): defined apart from every part that uses it, so that
 * no two parts depend on each other through it. Each part owns the fields it writes. */
#include "config.h"
#include "inject_int.h"

gp_inj_state_t gp_inj;
__thread gp_inj_thr_t gp_inj_thr = {.lane = -1}; /* no lane until one is taken */
