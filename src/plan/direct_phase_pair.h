/*
 * The phase pair loops' interface (direct_phase_pair.c and its AMX form,
 * direct_phase_pair_amx.c): what direct_loops.c calls and what the two
 * loops share. Include after plan_impl.h.
 */
#ifndef DGRAD_PLAN_DIRECT_PHASE_PAIR_H
#define DGRAD_PLAN_DIRECT_PHASE_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "plan_impl.h"

/* -------------------------------------------------- direct_phase_pair.c */

/* Shifts of a 1D stride-2 row at most (taps of both phases: up to 16 at
 * D = 1). */
#define PP_MAX_SHIFTS 8
/* The input shifts of the problem's taps: output x = 2m + r (phase r)
 * takes tap kw from input position m + s, s = (r + PB - D kw) / 2 for
 * the phase r = (D kw - PB) mod 2; per distinct shift, the tap of each
 * phase there (-1: none), and the least and greatest shift. */
typedef struct pp_shifts {
    int n;
    int64_t s[PP_MAX_SHIFTS];
    int64_t tap[PP_MAX_SHIFTS][2];
    int64_t smin, smax;
} pp_shifts_t;
/* 0 where the taps have more than PP_MAX_SHIFTS shifts. */
int phase_pair_shifts(const dgrad_problem_t *p, pp_shifts_t *sh);
/* Both phase pair loops' table (plan->direct_phase_pair; one allocation,
 * plan_destroy frees it): the shifts, and the user's weight behind each
 * of the @p wn packed ones (-1: 0), which an execution gathers; each
 * loop fills w_idx in its own order. NULL where memory ran out. */
typedef struct phase_pair {
    pp_shifts_t sh;
    int64_t w_last, wn;
    int32_t w_idx[];
} phase_pair_t;
phase_pair_t *phase_pair_table(const dgrad_problem_t *p, int64_t wn);
/* What both phase pair loops need of a plan beyond their CPU and
 * layouts: 1D, stride 2, at most @p max_cog output channels a group and
 * PP_MAX_SHIFTS shifts, a chain that is all epilogue, strides >= 0, the
 * weights' offsets in 32 bits; not on the AVX2 kernels. */
int phase_pair_fits(const dgrad_plan_t *plan, int64_t max_cog);

int direct_phase_pair_applicable(const dgrad_plan_t *plan);
/* Scratch bytes of an execution (the threads share it): a 16-bit input
 * widened. */
size_t direct_phase_pair_scratch(const dgrad_plan_t *plan);
size_t direct_phase_pair_weights_size(const dgrad_plan_t *plan);
/* Its table (plan->direct_phase_pair), made once at plan creation. 0
 * where memory ran out. */
int direct_phase_pair_prepare(dgrad_plan_t *plan);
void direct_phase_pair_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed);
/* The output from @p in, packed weights @p w and f32 @p bias (or NULL),
 * its steps shared over the threads; the chain, where the
 * plan carries it, is the kernels' epilogue. */
void direct_phase_pair_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch);

/* ---------------------------------------------- direct_phase_pair_amx.c */

int direct_phase_pair_amx_applicable(const dgrad_plan_t *plan);
/* Scratch bytes of an execution (the threads share it): the input's
 * channel pairs interleaved. */
size_t direct_phase_pair_amx_scratch(const dgrad_plan_t *plan);
size_t direct_phase_pair_amx_weights_size(const dgrad_plan_t *plan);
/* Its table (plan->direct_phase_pair), made once at plan creation. 0
 * where memory ran out. */
int direct_phase_pair_amx_prepare(dgrad_plan_t *plan);
/* The user's bf16 weights as tiles of A, in bf16 (the front half of
 * @p packed's f32 elements). */
void direct_phase_pair_amx_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed);
/* The output from @p in, packed weights @p w and f32 @p bias (or NULL),
 * its steps shared over the threads; the chain, where the plan carries
 * it, is the epilogue. */
void direct_phase_pair_amx_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch);

#endif
