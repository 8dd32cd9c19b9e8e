/* The rules in the order the engine runs them (findings.h): how the job ended first, the
 * straggler before the rules whose findings it explains. A new rule is a file's struct and
 * a line here. */
#include "config.h"
#include "findings.h"

#include <string.h>

const gp_rule_t *const gp_rules[] = {
    &gp_rule_not_observed,    &gp_rule_gpu_unused, &gp_rule_cuda_oom,      &gp_rule_time_limit,
    &gp_rule_incomplete,      &gp_rule_killed,     &gp_rule_failed,        &gp_rule_gpu_fault,
    &gp_rule_gpu_shared,      &gp_rule_straggler,  &gp_rule_slowdown,      &gp_rule_sync_stall,
    &gp_rule_input_bound,     &gp_rule_idle_gaps,  &gp_rule_fragmentation, &gp_rule_comm,
    &gp_rule_pageable,        &gp_rule_fp32,       &gp_rule_host_ahead,    &gp_rule_memory_leak,
    &gp_rule_optimizer_state, &gp_rule_near_limit,
};
const unsigned gp_nrules = sizeof(gp_rules) / sizeof(gp_rules[0]);

const gp_rule_t *gp_rule_by_id(const char *id)
{
	for (unsigned i = 0; id && i < gp_nrules; i++)
		if (!strcmp(gp_rules[i]->id, id))
			return gp_rules[i];
	return NULL;
}
