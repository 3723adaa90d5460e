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
#define CO_BLOCK_WIDE 12
#define CO_BLOCK_MAX CO_BLOCK_WIDE

/* One term of a phase of a row: input run (offset of m = 0 in elements,
 * may lie before the run), valid for m in [lo, hi), and its weight for
 * each output channel of the block. */
typedef struct term {
    int64_t off, lo, hi;
    float w[CO_BLOCK_MAX];
} term_t;

/* The vector kernels: phase values of a block of channels, and both
 * phases of stride 2 at once, written into the output rows. */
typedef void (*phase_values_fn)(const void *, const term_t *, int,
        const float *, int64_t, float *const *);
typedef void (*phase_pair_fn)(const void *, const term_t *, int,
        const term_t *, int, const float *, const epilogue_t *, int64_t,
        float *const *);

/* The AVX2 kernels for type index @p type (0 f32, 1 bf16, 2 f16) and a
 * block of @p cb channels, for phases of @p count positions (x86-64 with
 * GCC or Clang; the caller checks the CPU: cpu_has_avx2_fma). */
phase_values_fn direct_avx2_values(int type, int cb, int64_t count);
phase_pair_fn direct_avx2_pair(int type, int cb, int64_t count);

#endif
