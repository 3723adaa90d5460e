/*
 * What the rows loop (direct.c) shares with its AVX2 kernels
 * (direct_avx2.c): the block sizes, a row's terms and the kernels'
 * signatures.
 */
#ifndef DGRAD_PLAN_DIRECT_ROWS_H
#define DGRAD_PLAN_DIRECT_ROWS_H

#include <stdint.h>

#include "plan_impl.h"

/* Output channels computed together (they share every input load), and
 * vectors of 16 positions per term visit; the AVX2 kernels for both
 * phases of stride 2 take up to CO_BLOCK_WIDE (block_width). */
#define CO_BLOCK 4
#define VEC_BLOCK 4
#define CO_BLOCK_WIDE 12
#define CO_BLOCK_MAX CO_BLOCK_WIDE

/* On padded copies (direct_stage.c) a term may be read up to here: the
 * end of its phase's last step, for steps of 1, 2, 3, 4 or 8 vectors of
 * 8 positions (the AVX2 kernels'). */
static inline int64_t direct_padded_end(int64_t count) {
    int64_t by8 = (count + 63) / 64 * 64, by3 = (count + 23) / 24 * 24;
    return by3 > by8 ? by3 : by8;
}

/* One term of a phase of a row: input run (offset of m = 0 in elements,
 * may lie before the run; in the staged rows where the plan stages
 * them), valid for m in [lo, hi), and its weight for each output channel
 * of the block (on padded copies [0, direct_padded_end(count)): zeros
 * stand for the positions out of range). Where rows are staged, also the
 * input row it reads (its first element in the user's tensor), that
 * row's position on the last outer axis and its slot but for that
 * position (direct_stage.c). */
typedef struct term {
    int64_t off, lo, hi;
    int64_t row, xl, slot;
    float w[CO_BLOCK_MAX];
} term_t;

/* Positions [lo, hi) that every one of @p n terms covers (hi may pass
 * the phase's count: kernels cut it at the end of their steps). Taken
 * once per term list (kept with it in direct.c's cache): over the 3D
 * example's 33 terms a row it was 7% of the loop (6.85 -> 6.40 ms at
 * 56^3, `DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX
 * g4mb1ic20id56oc8od111kd3sd2pd1`, AMD EPYC Zen 3). */
typedef struct terms_span {
    int64_t lo, hi;
} terms_span_t;
static inline terms_span_t direct_terms_common(const term_t *t, int n) {
    terms_span_t c = {0, INT64_MAX};
    for (int k = 0; k < n; k++) {
        if (t[k].lo > c.lo) c.lo = t[k].lo;
        if (t[k].hi < c.hi) c.hi = t[k].hi;
    }
    return c;
}

/* The vector kernels: phase values of a block of channels, and both
 * phases of stride 2 at once (even terms, their common span, odd terms,
 * theirs), written into the output rows. */
typedef void (*phase_values_fn)(const void *, const term_t *, int,
        const float *, int64_t, float *const *);
typedef void (*phase_pair_fn)(const void *, const term_t *, int,
        terms_span_t, const term_t *, int, terms_span_t, const float *,
        const epilogue_t *, int64_t, void *const *);

/* The AVX2 kernels for type index @p type (0 f32, 1 bf16, 2 f16) and a
 * block of @p cb channels, for phases of @p count positions (x86-64 with
 * GCC or Clang; the caller checks the CPU: cpu_has_avx2_fma). */
phase_values_fn direct_avx2_values(int type, int cb, int64_t count,
        int padded);
/* Whether phases of @p count positions for @p cb channels take a kernel
 * of twice the accumulators on padded copies (a short kernel's 4
 * chains leave half the FMA issue idle; direct_stage.c). */
int direct_avx2_padding_pays(int cb, int64_t count);
phase_pair_fn direct_avx2_pair(int type, int cb, int64_t count, int padded);
/* Both phases on f32 rows, rounded as stored into rows of type index
 * @p out_type (1 bf16, 2 f16; the kernel's dst are those rows). */
phase_pair_fn direct_avx2_pair_rounding(int out_type, int cb, int64_t count,
        int padded);

/* Both phases of stride 2 where one phase has one term an input row
 * and the other two, one of which reads the same run (windows of 3 at
 * stride 2: phase @p one_tap, 0 even or 1 odd, has the one tap, and the
 * other phase's second or first tap, as direct_shared_phase says), on
 * padded copies (whole steps, no ranges): the two-tap list is blocks of
 * 2 x @p icg terms (row_terms: one tap's Cin/G rows, then the other's),
 * the one-tap list blocks of @p icg. Every input vector loaded once
 * feeds the 2 x CB FMAs of both terms that read it. Output as
 * phase_pair_fn's. */
typedef void (*phase_shared_fn)(const void *, const term_t *, int,
        const term_t *, int, const float *, const epilogue_t *, int64_t,
        void *const *);
#define SHARED_CO_BLOCK 4
/* The kernel for @p cb (at most SHARED_CO_BLOCK) channels rounding into
 * output type index @p out_type (0 f32, 1 bf16, 2 f16), or NULL: both
 * phases' accumulators of a step take 32 vector registers (the caller
 * checks the CPU: cpu_has_avx512vl, for AVX2 code with registers 16-31). */
phase_shared_fn direct_avx2_pair_shared(int out_type, int cb, int one_tap);

/* The AVX-512 kernels (direct_avx512.c) for blocks of up to CO_BLOCK
 * channels (the pair kernels on f32 rows up to CO_BLOCK_WIDE, else
 * NULL), and the interleaving of an even and an odd phase row into an
 * output row of @p len (the caller checks the CPU: cpu_has_avx512f, and
 * cpu_has_avx512bw for 16-bit types). */
phase_values_fn direct_avx512_values(int type, int cb);
phase_pair_fn direct_avx512_pair(int type, int cb);
void direct_avx512_interleave2(const float *e, const float *o, int64_t len,
        float *out);
/* The AVX-512 kernel sharing each run's loads between both phases
 * (phase_shared_fn) for @p cb (at most CO_BLOCK_WIDE) channels storing
 * rows of output type index @p out_type (0 f32; 1 bf16 and 2 f16,
 * rounded as stored, where the CPU has AVX-512BW and VL), or NULL. */
phase_shared_fn direct_avx512_pair_shared(int out_type, int cb, int one_tap);

/* The tap tables (direct_taps.c). */
/* Where phase @p r of the last axis starts in the output row, and its
 * count; q of its m = 0. */
int64_t direct_phase_geometry(const dgrad_problem_t *p, int64_t r,
        int64_t *count, int64_t *q0);

/* The last axis's tap table entry of phase @p r: the count of taps, then
 * (k, t) pairs. */
const int64_t *direct_last_taps(const dgrad_plan_t *plan, int64_t r);

/* The phase of stride 2 (0 even, 1 odd) with one tap whose input run
 * the other phase's two-tap list reads as well, or -1 (windows of 3 at
 * stride 2 on the last axis). */
int direct_shared_taps(const dgrad_plan_t *plan);

/* Staged input rows (direct_stage.c): the plan's geometry (at plan
 * time: 0 where the rows are read in place), the slot of a term's row,
 * and the copies a term list needs made (@p tags: a thread's record of
 * the row in each slot, cleared per execution by direct_stage_clear,
 * which also writes the zeros around the copies), @p per_row terms to
 * an input row as row_terms lists them (direct.c; the rows loop's pair
 * kernels stage per run instead: direct_stage_run_rows). */
void direct_stage_plan(dgrad_plan_t *plan, int vector_kernels,
        int padding_pays);
/* The slot of the row at @p slot (its slot but for the last outer axis)
 * and position @p xl on that axis. */
static inline int64_t direct_stage_slot_at(const direct_stage_t *st,
        int64_t slot, int64_t xl, int nsp) {
    return slot
            + (nsp > 1 ? (xl & (st->window[nsp - 2] - 1)) * st->xl_slots : 0);
}
static inline int64_t direct_stage_slot(const direct_stage_t *st,
        const term_t *t, int nsp) {
    return direct_stage_slot_at(st, t->slot, t->xl, nsp);
}
void direct_stage_clear(const direct_stage_t *st, float *rows,
        int64_t *tags);
void direct_stage_fill(const direct_stage_t *st, int nsp, const void *in,
        dgrad_data_type_t dt, const term_t *t, int n, int per_row,
        float *rows, int64_t *tags);
/* Stages the rows the output row at outer positions @p y of a run reads
 * on the last outer axis (2D and up; fewer positions than that axis's
 * window), for the group at @p in_group: those outside @p span, the
 * positions the run has staged so far and whose slots still hold them
 * (none where span[0] > span[1]), updated. One check an input row per
 * run, not one a term list's row per output row (direct_stage_fill). */
void direct_stage_run_rows(const dgrad_plan_t *plan, const void *in,
        dgrad_data_type_t dt, int64_t in_group, const int64_t *y,
        int64_t span[2], float *rows, int64_t *tags);

#endif
