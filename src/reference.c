#include "reference.h"

#include <math.h>

#include "dtype.h"

/* One unary post-op in double, as canonical.h defines it. */
static double unary(const dgrad_post_op_t *po, double x) {
    const double a = po->alpha, b = po->beta;
    switch ((dgrad_post_alg_t)po->alg) {
        case dgrad_post_abs: return fabs(x);
        case dgrad_post_clip: return x < a ? a : x > b ? b : x;
        case dgrad_post_elu: return x > 0 ? x : a * expm1(x);
        case dgrad_post_exp: return exp(x);
        case dgrad_post_gelu_erf: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
        case dgrad_post_gelu_tanh:
            return 0.5 * x * (1 + tanh(0.7978845608028654 /* sqrt(2/pi) */
                                   * (x + 0.044715 * x * x * x)));
        case dgrad_post_hardsigmoid: return fmax(0, fmin(1, a * x + b));
        case dgrad_post_hardswish: return x * fmax(0, fmin(1, a * x + b));
        case dgrad_post_relu: return x > 0 ? x : a * x;
        case dgrad_post_log: return log(x);
        case dgrad_post_logistic: return 1 / (1 + exp(-x));
        case dgrad_post_mish: return x * tanh(log1p(exp(x)));
        case dgrad_post_round: return nearbyint(x);
        case dgrad_post_soft_relu: return log1p(exp(a * x)) / a;
        case dgrad_post_sqrt: return sqrt(x);
        case dgrad_post_square: return x * x;
        case dgrad_post_tanh: return tanh(x);
        default: return NAN;
    }
}

static double binary(int32_t alg, double x, double b) {
    switch ((dgrad_post_alg_t)alg) {
        case dgrad_post_add: return x + b;
        case dgrad_post_mul: return x * b;
        case dgrad_post_max: return fmax(x, b);
        case dgrad_post_min: return fmin(x, b);
        case dgrad_post_div: return x / b;
        case dgrad_post_sub: return x - b;
        default: return NAN;
    }
}

double dgrad_reference_post_ops(const dgrad_problem_t *p,
        const void *const *operands, int64_t n, int64_t c, const int64_t *y,
        double x) {
    int k = 0;
    for (int i = 0; i < p->n_post_ops; i++) {
        const dgrad_post_op_t *po = &p->post_ops[i];
        if (!dgrad_post_alg_is_binary(po->alg)) {
            x = unary(po, x);
            continue;
        }
        /* A broadcast dim (1) always reads index 0. */
        int64_t idx[2 + DGRAD_MAX_SPATIAL] = {n, c};
        for (int d = 0; d < p->nsp; d++) idx[2 + d] = y[d];
        int64_t off = 0;
        for (int d = 0; d < 2 + p->nsp; d++)
            off += (po->dims[d] == 1 ? 0 : idx[d]) * po->strides[d];
        x = binary(po->alg, x, dgrad_load(operands[k++], po->dt, off));
    }
    return x;
}

double dgrad_reference_point(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, int64_t n, int64_t c,
        const int64_t *y, double *abs_sum) {
    const int64_t cin_g = p->Cin / p->G, cout_g = p->Cout / p->G;
    const int64_t g = c / cout_g, co = c % cout_g;
    double acc = 0.0, mag = 0.0;
    if (bias) {
        double b = dgrad_load(bias, p->dt, c * p->bias_stride);
        acc = b;
        mag = b < 0 ? -b : b;
    }
    /* For every kernel tap k: x = (y + PB - k*D) / S must be an integer in
     * [0, X). Iterate the taps of all axes as one odometer. */
    int64_t k[DGRAD_MAX_SPATIAL] = {0, 0, 0};
    for (;;) {
        int64_t in_off = n * p->in_strides[0];
        int64_t wei_off = g * p->wei_strides[0] + co * p->wei_strides[2];
        int valid = 1;
        for (int i = 0; i < p->nsp; i++) {
            int64_t t = y[i] + p->PB[i] - k[i] * p->D[i];
            if (t < 0 || t % p->S[i] != 0 || t / p->S[i] >= p->X[i]) {
                valid = 0;
                break;
            }
            in_off += (t / p->S[i]) * p->in_strides[2 + i];
            wei_off += k[i] * p->wei_strides[3 + i];
        }
        if (valid) {
            for (int64_t ci = 0; ci < cin_g; ci++) {
                double a = dgrad_load(in, p->dt,
                        in_off + (g * cin_g + ci) * p->in_strides[1]);
                double w = dgrad_load(wei, p->dt,
                        wei_off + ci * p->wei_strides[1]);
                double term = a * w;
                acc += term;
                mag += term < 0 ? -term : term;
            }
        }
        int i = p->nsp - 1;
        while (i >= 0 && ++k[i] == p->K[i]) k[i--] = 0;
        if (i < 0) break;
    }
    if (abs_sum) *abs_sum = mag;
    return acc;
}

void dgrad_reference_compute(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, void *out, double *abs_sum) {
    dgrad_reference_compute_fused(p, in, wei, bias, NULL, out, abs_sum);
}

void dgrad_reference_compute_fused(const dgrad_problem_t *p, const void *in,
        const void *wei, const void *bias, const void *const *operands,
        void *out, double *abs_sum) {
    int64_t idx = 0;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t c = 0; c < p->Cout; c++) {
            int64_t y[DGRAD_MAX_SPATIAL] = {0, 0, 0};
            for (;;) {
                int64_t off = n * p->out_strides[0] + c * p->out_strides[1];
                for (int i = 0; i < p->nsp; i++)
                    off += y[i] * p->out_strides[2 + i];
                double mag;
                double v = dgrad_reference_point(
                        p, in, wei, bias, n, c, y, &mag);
                if (p->n_post_ops)
                    v = dgrad_reference_post_ops(p, operands, n, c, y, v);
                dgrad_store(out, p->dt, off, v);
                if (abs_sum) abs_sum[idx] = mag;
                idx++;
                int i = p->nsp - 1;
                while (i >= 0 && ++y[i] == p->Y[i]) y[i--] = 0;
                if (i < 0) break;
            }
        }
}
