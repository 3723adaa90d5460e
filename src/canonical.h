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

/* Post-ops: applied in order to each output element x after the bias,
 * y = f(x) for the unary algorithms, y = x (op) b for the binary ones,
 * where b is the operand's element at the same canonical index (numpy
 * broadcast: a dim of 1 repeats). alpha and beta as noted (oneDNN's
 * eltwise parameters). */
/* DGRAD_MAX_POST_OPS (dgrad.h) of them at most. */

typedef enum dgrad_post_alg {
    dgrad_post_none = 0,
    dgrad_post_abs,
    dgrad_post_clip,        /* min(max(x, alpha), beta) */
    dgrad_post_elu,         /* x > 0 ? x : alpha * (exp(x) - 1) */
    dgrad_post_exp,
    dgrad_post_gelu_erf,    /* x/2 * (1 + erf(x / sqrt 2)) */
    dgrad_post_gelu_tanh,   /* x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    dgrad_post_hardsigmoid, /* max(0, min(1, alpha x + beta)) */
    dgrad_post_hardswish,   /* x * max(0, min(1, alpha x + beta)) */
    dgrad_post_relu,        /* x > 0 ? x : alpha x */
    dgrad_post_log,
    dgrad_post_logistic,    /* 1 / (1 + exp(-x)) */
    dgrad_post_mish,        /* x * tanh(log(1 + exp(x))) */
    dgrad_post_round,       /* to nearest, ties to even */
    dgrad_post_soft_relu,   /* log(1 + exp(alpha x)) / alpha */
    dgrad_post_sqrt,
    dgrad_post_square,
    dgrad_post_tanh,
    dgrad_post_binary_first, /* the binary ones from here on */
    dgrad_post_add = dgrad_post_binary_first,
    dgrad_post_mul,
    dgrad_post_max,
    dgrad_post_min,
    dgrad_post_div,
    dgrad_post_sub,
    dgrad_post_alg_count,
} dgrad_post_alg_t;

typedef struct dgrad_post_op {
    int32_t alg; /* dgrad_post_alg_t */
    double alpha, beta;
    /* Binary only: the operand's type, canonical dims [N, C, Y...] (each
     * 1 or the output's) and strides in elements. */
    dgrad_data_type_t dt;
    int64_t dims[2 + DGRAD_MAX_SPATIAL];
    int64_t strides[2 + DGRAD_MAX_SPATIAL];
} dgrad_post_op_t;

static inline int dgrad_post_alg_is_binary(int32_t alg) {
    return alg >= dgrad_post_binary_first && alg < dgrad_post_alg_count;
}

/* The canonical problem. The plan cache keys it field by field, so padding
 * bytes never matter.
 * Tensors, in canonical dimension order:
 *   in   [N, Cin, X...]           (diff_dst / data / X)
 *   wei  [G, Cin/G, Cout/G, K...] (W[g][ci][co][k])
 *   out  [N, Cout, Y...]          (diff_src / output / Y)
 *   bias [Cout]                   (the ConvTranspose ops)
 *   one operand per binary post-op, broadcast over out
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
    int32_t n_post_ops;
    dgrad_post_op_t post_ops[DGRAD_MAX_POST_OPS];
} dgrad_problem_t;

/* Whether post-op @p i is an Add whose operand is laid out as the output
 * (every dim the output's, the same strides on each axis of two or more
 * elements, the output's type): the only operand that may share the
 * output's buffer, the output accumulating onto it in place (oneDNN
 * Graph's in-place sum). */
static inline int dgrad_post_op_accumulates_in_place(const dgrad_problem_t *p,
        int i) {
    const dgrad_post_op_t *po = &p->post_ops[i];
    if (po->alg != dgrad_post_add || po->dt != p->dt) return 0;
    for (int d = 0; d < 2 + p->nsp; d++) {
        int64_t dim = d == 0 ? p->N : d == 1 ? p->Cout : p->Y[d - 2];
        if (po->dims[d] != dim || (dim > 1 && po->strides[d] != p->out_strides[d]))
            return 0;
    }
    return 1;
}

/* Operands of the binary post-ops before post-op @p i (an operand's
 * number among the chain's; @p i = n_post_ops counts them all). */
static inline int dgrad_problem_operands_before(const dgrad_problem_t *p,
        int i) {
    int k = 0;
    for (int j = 0; j < i; j++) k += dgrad_post_alg_is_binary(p->post_ops[j].alg);
    return k;
}

/* The first post-op that accumulates in place, or -1. */
static inline int dgrad_problem_in_place_post_op(const dgrad_problem_t *p) {
    for (int i = 0; i < p->n_post_ops; i++)
        if (dgrad_post_op_accumulates_in_place(p, i)) return i;
    return -1;
}

/* Natural output size F = S*(X-1) + (K-1)*D + 1 of axis @p i (resolve has
 * checked that it does not overflow). */
static inline int64_t dgrad_problem_natural_size(const dgrad_problem_t *p,
        int i) {
    return p->S[i] * (p->X[i] - 1) + (p->K[i] - 1) * p->D[i] + 1;
}

#endif
