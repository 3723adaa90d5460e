/*
 * The canonical problem every dialect is normalised into (DESIGN.md
 * section 1): the one thing the dialect layer hands to the oneDNN layer
 * and to the reference, neither of which knows a dialect.
 */
#ifndef DGRAD_CANONICAL_H
#define DGRAD_CANONICAL_H

#include <stdint.h>

#include "dgrad/dgrad.h"

#define DGRAD_MAX_SPATIAL 3

/* The canonical problem. The plan cache keys it field by field, so padding
 * bytes never matter.
 * Tensors, in canonical dimension order:
 *   in   [N, Cin, X...]           (diff_dst / data / X)
 *   wei  [G, Cin/G, Cout/G, K...] (W[g][ci][co][k])
 *   out  [N, Cout, Y...]          (diff_src / output / Y)
 *   bias [Cout]                   (ONNX only)
 * Strides are in elements and may be anything non-negative. */
typedef struct dgrad_problem {
    int32_t nsp;               /* spatial rank 1..3 */
    dgrad_data_type_t dt;      /* data, weights, bias and output */
    int64_t N, G, Cin, Cout;   /* channel counts over all groups */
    int64_t X[DGRAD_MAX_SPATIAL], K[DGRAD_MAX_SPATIAL];
    int64_t S[DGRAD_MAX_SPATIAL], D[DGRAD_MAX_SPATIAL];
    int64_t PB[DGRAD_MAX_SPATIAL], Y[DGRAD_MAX_SPATIAL];
    int64_t in_strides[2 + DGRAD_MAX_SPATIAL];
    int64_t wei_strides[3 + DGRAD_MAX_SPATIAL];
    int64_t out_strides[2 + DGRAD_MAX_SPATIAL];
    int32_t has_bias;
    int64_t bias_stride;
} dgrad_problem_t;

/* Natural output size F = S*(X-1) + (K-1)*D + 1 of axis @p i (resolve has
 * checked that it does not overflow). */
static inline int64_t dgrad_problem_natural_size(const dgrad_problem_t *p,
        int i) {
    return p->S[i] * (p->X[i] - 1) + (p->K[i] - 1) * p->D[i] + 1;
}

#endif
