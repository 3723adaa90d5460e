#include "reference.h"

#include "dtype.h"

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
                dgrad_store(out, p->dt, off, v);
                if (abs_sum) abs_sum[idx] = mag;
                idx++;
                int i = p->nsp - 1;
                while (i >= 0 && ++y[i] == p->Y[i]) y[i--] = 0;
                if (i < 0) break;
            }
        }
}
