/* The injected library's services (cupti_int.h: gp_cu_api), set by gp_cupti_start:
 * defined apart from the parts that call them, so that none depends on another for it. */
#include "config.h"
#include "cupti_int.h"

const gp_inject_api_t *gp_cu_api;
