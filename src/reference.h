/*
 * Reference: the canonical gather of DESIGN.md section 1 in plain C,
 * accumulating in double, for f32/bf16/f16 and any strides. The oracle of
 * every test; never used by the execution path.
 */
#ifndef DGRAD_REFERENCE_H
#define DGRAD_REFERENCE_H

#include "canonical.h"

/* Computes the whole output (every element, zeros where no term lands);
 * the problem has no binary post-op (see dgrad_reference_compute_fused).
 * @param bias NULL or p->Cout values with stride p->bias_stride.
 * @param out  Written in p->dt with p->out_strides.
 * @param abs_sum NULL, or a dense array of N*Cout*prod(Y) doubles (canonical
 *     row-major order [N][Cout][Y...]) receiving the sum of |terms| of each
 *     element (for tolerances). */
void dgrad_reference_compute(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, void *out, double *abs_sum);

/* The same with the problem's post-ops: @p operands holds one buffer per
 * binary post-op, in chain order (NULL when there is none). @p abs_sum
 * gets the terms' magnitudes before the post-ops. */
void dgrad_reference_compute_fused(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, const void *const *operands,
        void *out, double *abs_sum);

/* The post-op chain applied in double to the value @p x of output element
 * (n, c, y). */
double dgrad_reference_post_ops(const dgrad_problem_t *p,
        const void *const *operands, int64_t n, int64_t c, const int64_t *y,
        double x);

/* Computes one output element in double, before the post-ops: canonical
 * indices n, c (over all groups) and y[0..nsp). @p abs_sum may be NULL. */
double dgrad_reference_point(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, int64_t n, int64_t c,
        const int64_t *y, double *abs_sum);

#endif
