/* Internal accessors of the API layer for the other dgrad components
 * (tests, plugin, conformance runner). Not part of the public API. */
#ifndef DGRAD_API_INTERNAL_H
#define DGRAD_API_INTERNAL_H

#include "dgrad/dgrad.h"
#include "onednn.h"
#include "problem.h"

/* The dialect description of an op. */
const dgrad_op_desc_t *dgrad_op_get_desc(const dgrad_op_t *op);

/* For tests: ops compiled afterwards are planned by @p policy (part of
 * the plan-cache key, so no cache clearing is needed); NULL restores the
 * defaults (dgrad_plan_policy_default). */
void dgrad_api_set_policy_for_testing(const dgrad_plan_policy_t *policy);

/* For tests: dgrad_plan_in_place_mode of the compiled op's plan ("none"
 * for a deferred op). */
const char *dgrad_compiled_op_in_place_mode(const dgrad_compiled_op_t *c);

/* For tests: dgrad_plan_chain_carrier of the compiled op's plan ("none"
 * for a deferred op). */
const char *dgrad_compiled_op_chain_carrier(const dgrad_compiled_op_t *c);

/* For tests: dgrad_plan_weights_step of the compiled op's plan ("none"
 * for a deferred op). */
const char *dgrad_compiled_op_weights_step(const dgrad_compiled_op_t *c);

#endif
