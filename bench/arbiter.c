/*
 * Where dgrad's output and a baseline's differ, the reference decides.
 * A baseline is another implementation, not an oracle: oneDNN 3.7's own
 * reorders and oneDNN Graph get some problems wrong (README, "oneDNN 3"),
 * and a benchmark that failed dgrad for agreeing with the reference would
 * report the baseline's defect as dgrad's. The elements where the two
 * differ most are computed by the reference (dgrad_reference_point, in
 * double, on the same buffers read in the user's layouts), which costs
 * a few dot products whatever the problem's size.
 */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "dtype.h"
#include "reference.h"

/* Elements the reference computes: the largest differences. */
#define ARBITER_POINTS 32

/* The canonical problem of @p d on dense buffers in the user's layouts
 * (DESIGN.md section 1; src/canonical.h lists the canonical orders).
 * Derived here rather than through the dialect layer that dgrad itself
 * uses, so that a layout mistake there cannot make the arbiter side with
 * dgrad. */
static void canonical_problem(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wl, dgrad_problem_t *p) {
    int nsp = d->nsp;
    int64_t cig = d->ic / d->g, cog = d->oc / d->g;
    memset(p, 0, sizeof *p);
    p->nsp = nsp;
    p->dt = dt;
    p->N = d->mb;
    p->G = d->g;
    p->Cin = d->ic;
    p->Cout = d->oc;
    for (int a = 0; a < nsp; a++) {
        p->X[a] = d->i[a];
        p->Y[a] = d->o[a];
        p->K[a] = d->k[a];
        p->S[a] = d->s[a];
        p->D[a] = d->d[a] + 1;
        p->PB[a] = d->p[a];
    }
    /* Activations: [N][C][X...] or [N][X...][C], strides in canonical
     * order [N, C, X...]. */
    const int64_t *ext[2] = {p->X, p->Y};
    int64_t chans[2] = {p->Cin, p->Cout}, *st[2] = {p->in_strides,
            p->out_strides};
    for (int t = 0; t < 2; t++) {
        int64_t inner = layout == bench_nxc ? chans[t] : 1;
        for (int a = nsp - 1; a >= 0; a--) {
            st[t][2 + a] = inner;
            inner *= ext[t][a];
        }
        st[t][1] = layout == bench_nxc ? 1 : inner;
        st[t][0] = layout == bench_nxc ? inner : inner * chans[t];
    }
    /* Weights, canonical [G, Cin/G, Cout/G, K...]: OIX is
     * [Cin][Cout/G][K...], XIO is [K...][Cout/G][Cin]. */
    int64_t *w = p->wei_strides, inner = 1;
    if (wl == bench_oix) {
        for (int a = nsp - 1; a >= 0; a--) {
            w[3 + a] = inner;
            inner *= d->k[a];
        }
        w[2] = inner;
        w[1] = inner * cog;
        w[0] = w[1] * cig;
    } else {
        w[1] = 1;
        w[0] = cig;
        w[2] = d->ic;
        inner = d->ic * cog;
        for (int a = nsp - 1; a >= 0; a--) {
            w[3 + a] = inner;
            inner *= d->k[a];
        }
    }
}

/* The chain (NULL: none) as the canonical problem's post-ops, from the
 * bench's own reading of it (post_ops.c), and its binary operands in
 * chain order as dgrad_reference_post_ops reads them. */
static void canonical_chain(const bench_chain_t *chain,
        const void *const *operands, const bench_desc_t *d,
        dgrad_data_type_t dt, bench_layout_t layout, dgrad_problem_t *p,
        const void **binary_operands) {
    int k = 0;
    for (int i = 0; chain && i < chain->n; i++) {
        const bench_post_op_t *op = &chain->ops[i];
        dgrad_post_op_t *c = &p->post_ops[i];
        c->alg = op->alg;
        c->alpha = op->alpha;
        c->beta = op->beta;
        if (!dgrad_post_alg_is_binary(op->alg)) continue;
        c->dt = bench_operand_dt(op, dt);
        bench_operand_canonical(op, d, layout == bench_nxc, c->dims,
                c->strides);
        binary_operands[k++] = operands[i];
    }
    p->n_post_ops = chain ? chain->n : 0;
}

/* Canonical indices (n, c, y) of element @p i of the dense output in the
 * user's layout. */
static void output_index(const dgrad_problem_t *p, bench_layout_t layout,
        size_t i, int64_t *n, int64_t *c, int64_t *y) {
    int64_t rest = (int64_t)i;
    if (layout == bench_nxc) {
        *c = rest % p->Cout;
        rest /= p->Cout;
    }
    for (int a = p->nsp - 1; a >= 0; a--) {
        y[a] = rest % p->Y[a];
        rest /= p->Y[a];
    }
    if (layout == bench_ncx) {
        *c = rest % p->Cout;
        rest /= p->Cout;
    }
    *n = rest;
}

bench_verdict_t bench_arbiter_decide(const bench_desc_t *d,
        dgrad_data_type_t dt, bench_layout_t layout, bench_wlayout_t wl,
        const void *in, const void *wei, const void *out,
        const void *base_out, dgrad_data_type_t base_dt, size_t n,
        double tolerance, const bench_chain_t *chain,
        const void *const *operands) {
    bench_verdict_t v = {0, 0, 0};
    size_t at[ARBITER_POINTS];
    double diff[ARBITER_POINTS];
    int k = 0;
    /* The largest differences, kept sorted (descending) by insertion. */
    for (size_t i = 0; i < n; i++) {
        double e = fabs(dgrad_load(out, dt, (int64_t)i)
                - dgrad_load(base_out, base_dt, (int64_t)i));
        if (isnan(e)) e = INFINITY;
        if (!(e > tolerance)) continue;
        if (k == ARBITER_POINTS && !(e > diff[k - 1])) continue;
        int j = k < ARBITER_POINTS ? k++ : k - 1;
        while (j > 0 && diff[j - 1] < e) {
            diff[j] = diff[j - 1];
            at[j] = at[j - 1];
            j--;
        }
        diff[j] = e;
        at[j] = i;
    }
    dgrad_problem_t p;
    const void *binary_operands[BENCH_MAX_POST_OPS];
    canonical_problem(d, dt, layout, wl, &p);
    canonical_chain(chain, operands, d, dt, layout, &p, binary_operands);
    for (int j = 0; j < k; j++) {
        int64_t nn = 0, c = 0, y[DGRAD_MAX_SPATIAL] = {0};
        output_index(&p, layout, at[j], &nn, &c, y);
        double ref = dgrad_reference_point(&p, in, wei, NULL, nn, c, y, NULL);
        ref = dgrad_reference_post_ops(&p, binary_operands, nn, c, y, ref);
        double got = dgrad_load(out, dt, (int64_t)at[j]);
        double base = dgrad_load(base_out, base_dt, (int64_t)at[j]);
        v.checked++;
        v.dgrad_wrong += !(fabs(got - ref) <= tolerance);
        v.baseline_wrong += !(fabs(base - ref) <= tolerance);
    }
    return v;
}
