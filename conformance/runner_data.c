/*
 * The runner's case data: the operands of a run as logical tensors, and a
 * case's values once per data type in canonical dense order ([N, Cin,
 * X...], [G, Cin/G, Cout/G, K...], [Cout]), already rounded to the type,
 * so the reference sees exactly the values dgrad sees and only
 * accumulation and output rounding can differ. Each run scatters them into
 * its own layout; gaps of padded layouts hold NaN, so that reading them
 * (inputs) or writing them (output) shows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "problem.h"
#include "reference.h"
#include "runner.h"

/* ------------------------------------------------------------ operands */

/* Elements a buffer of @p lt spans; INT64_MAX when that overflows (the
 * invalid cases have such dims). */
int64_t cf_span_of(const dgrad_logical_tensor_t *lt) {
    int64_t last = 0, term;
    for (int d = 0; d < lt->ndims; d++) {
        if (lt->dims[d] < 1) return 0;
        if (__builtin_mul_overflow(lt->dims[d] - 1, lt->strides[d], &term)
                || __builtin_add_overflow(last, term, &last) || last == INT64_MAX)
            return INT64_MAX;
    }
    return last + 1;
}


void cf_fill_nan(void *buf, dgrad_data_type_t dt, int64_t n) {
    for (int64_t i = 0; i < n; i++) dgrad_store(buf, dt, i, NAN);
}

/* ------------------------------------------------------ canonical data */


void cf_cdata_free(cdata_t *d) {
    free(d->in);
    free(d->wei);
    free(d->bias);
    if (!d->shared_ref) {
        free(d->ref);
        free(d->abs_sum);
        free(d->pre);
    }
    free(d->expected);
    free(d->oracle);
    for (int k = 0; k < d->n_operands; k++) free(d->operand[k]);
    memset(d, 0, sizeof *d);
}

void cf_ref_cache_free(cf_ref_cache_t *cache) {
    free(cache->ref);
    free(cache->abs_sum);
    free(cache->pre);
    memset(cache, 0, sizeof *cache);
}

void cf_canon_dims(const cf_geom_t *g, int role, int64_t *dims, int *nd) {
    const int nsp = g->nsp;
    if (role == 0) { /* data */
        dims[0] = g->N, dims[1] = g->Cin;
        for (int i = 0; i < nsp; i++) dims[2 + i] = g->X[i];
        *nd = 2 + nsp;
    } else if (role == 1) { /* weights */
        dims[0] = g->G, dims[1] = g->Cin / g->G, dims[2] = g->Cout / g->G;
        for (int i = 0; i < nsp; i++) dims[3 + i] = g->K[i];
        *nd = 3 + nsp;
    } else if (role == 2) { /* bias */
        dims[0] = g->Cout;
        *nd = 1;
    } else { /* output */
        dims[0] = g->N, dims[1] = g->Cout;
        for (int i = 0; i < nsp; i++) dims[2 + i] = g->Y[i];
        *nd = 2 + nsp;
    }
}

/* Small integers in [-3, 3]: exact in every type for the products, and
 * sums stay exact in f32. */
static double next_value(unsigned *state) {
    *state = *state * 1103515245u + 12345u;
    return (double)((int)((*state >> 16) % 7u) - 3);
}

/* Canonical strides of the user's dense row-major values of a case tensor. */
static void given_canon_strides(const cf_geom_t *g, int role,
        const cf_tensor_t *t, int64_t *canon) {
    int64_t dense[DGRAD_MAX_NDIMS];
    cf_dense_strides(t->dims, t->ndims, dense);
    if (role == 1) cf_model_wei_strides(g, dense, canon);
    else if (role == 2) canon[0] = dense[0];
    else cf_model_act_strides(g, dense, canon);
}

/* @p v as type @p dt holds it (undef: unchanged). */
static double round_to(dgrad_data_type_t dt, double v) {
    uint16_t h;
    switch (dt) {
        case dgrad_f32: return (float)v;
        case dgrad_bf16: h = dgrad_f32_to_bf16((float)v); return dgrad_bf16_to_f32(h);
        case dgrad_f16: h = dgrad_f32_to_f16((float)v); return dgrad_f16_to_f32(h);
        default: return v;
    }
}

/* One canonical tensor in dt: @p nd dims @p dims, from the case's values
 * (at canonical strides @p canon into them) or generated; @p nonzero:
 * generated zeros become 2 (a divisor). */
static int fill_dims(const int64_t *dims, int nd, const int64_t *canon,
        const cf_tensor_t *t, dgrad_data_type_t dt,
        dgrad_data_type_t values_dt, int nonzero, unsigned *state,
        void **out, int64_t *count, int *exact, int *lossless) {
    *count = cf_dims_count(dims, nd);
    *out = malloc((size_t)(*count > 0 ? *count : 1) * dgrad_data_type_size(dt));
    if (!*out) return 0;
    odo_t o;
    odo_init(&o, dims, nd);
    int64_t i = 0;
    do {
        double v = t->data ? t->data[odo_offset(&o, canon)] : next_value(state);
        if (!t->data && nonzero && v == 0) v = 2;
        dgrad_store(*out, dt, i, v);
        if (dgrad_load(*out, dt, i) != round_to(values_dt, v)) *exact = 0;
        if (dgrad_load(*out, dt, i) != v) *lossless = 0;
        i++;
    } while (odo_next(&o) && i < *count);
    return 1;
}

/* One canonical tensor in dt, from the case's values or generated. */
static int fill_canon(const cf_geom_t *g, int role, const cf_tensor_t *t,
        dgrad_data_type_t dt, dgrad_data_type_t values_dt, unsigned *state,
        void **out, int64_t *count, int *exact, int *lossless) {
    int64_t dims[DGRAD_MAX_NDIMS], canon[DGRAD_MAX_NDIMS];
    int nd;
    cf_canon_dims(g, role, dims, &nd);
    if (t->data) given_canon_strides(g, role, t, canon);
    return fill_dims(dims, nd, canon, t, dt, values_dt, 0, state, out, count,
            exact, lossless);
}

/* The operand of post-op @p i: its canonical view, from the case's values
 * (dense over the operand's dims) or generated. */
static int fill_operand(const cf_geom_t *g, int i, const cf_post_t *po,
        dgrad_data_type_t dt, dgrad_data_type_t values_dt, unsigned *state,
        void **out, int64_t *count, int *exact, int *lossless) {
    int64_t dense[DGRAD_MAX_NDIMS], canon[DGRAD_MAX_NDIMS];
    cf_dense_strides(po->operand.dims, po->operand.ndims, dense);
    cf_model_post_strides(g, i, dense, canon);
    return fill_dims(g->post[i].dims, 2 + g->nsp, canon, &po->operand, dt,
            values_dt, g->post[i].alg == dgrad_post_div, state, out, count,
            exact, lossless);
}

/* The canonical problem of @p g in @p dt on dense canonical buffers, with
 * the chain (each operand's view dense in its type). */
static void canonical_problem(const cf_case_t *c, const cf_geom_t *g,
        dgrad_data_type_t dt, dgrad_problem_t *p) {
    int64_t cd[DGRAD_MAX_NDIMS];
    int cnd;
    memset(p, 0, sizeof *p);
    p->nsp = g->nsp;
    p->dt = dt;
    p->N = g->N, p->G = g->G, p->Cin = g->Cin, p->Cout = g->Cout;
    for (int a = 0; a < g->nsp; a++) {
        p->X[a] = g->X[a], p->K[a] = g->K[a], p->S[a] = g->S[a];
        p->D[a] = g->D[a], p->PB[a] = g->PB[a], p->Y[a] = g->Y[a];
    }
    cf_canon_dims(g, 0, cd, &cnd);
    cf_dense_strides(cd, cnd, p->in_strides);
    cf_canon_dims(g, 1, cd, &cnd);
    cf_dense_strides(cd, cnd, p->wei_strides);
    cf_canon_dims(g, 3, cd, &cnd);
    cf_dense_strides(cd, cnd, p->out_strides);
    p->has_bias = g->has_bias;
    p->bias_stride = 1;
    p->n_post_ops = g->n_post;
    for (int i = 0; i < g->n_post; i++) {
        const cf_post_view_t *v = &g->post[i];
        dgrad_post_op_t *po = &p->post_ops[i];
        po->alg = v->alg;
        po->alpha = v->alpha;
        po->beta = v->beta;
        if (!v->operand) continue;
        po->dt = c->post[i].operand_dt ? c->post[i].operand_dt : dt;
        memcpy(po->dims, v->dims, (size_t)(2 + g->nsp) * sizeof *v->dims);
        cf_dense_strides(po->dims, 2 + g->nsp, po->strides);
    }
}

/* Canonical data and reference of case @p c (geometry @p g) in @p dt. */
int cf_cdata_make(const cf_case_t *c, const cf_geom_t *g,
        dgrad_data_type_t dt, cdata_t *d, cf_ref_cache_t *cache) {
    memset(d, 0, sizeof *d);
    d->dt = dt;
    d->exact = d->lossless = 1;
    unsigned state = c->seed * 2654435761u + 1u;
    dgrad_data_type_t vdt = c->values_dt;
    if (!fill_canon(g, 0, &c->data, dt, vdt, &state, &d->in, &d->n_in,
                &d->exact, &d->lossless)
            || !fill_canon(g, 1, &c->weights, dt, vdt, &state, &d->wei,
                    &d->n_wei, &d->exact, &d->lossless)
            || (g->has_bias && !fill_canon(g, 2, &c->bias, dt, vdt, &state,
                        &d->bias, &d->n_bias, &d->exact, &d->lossless)))
        return 0;
    /* The operands come after the op's own data (cases without a chain
     * keep their values), each in its own type. */
    canonical_problem(c, g, dt, &d->prob);
    for (int i = 0; i < g->n_post; i++) {
        if (!g->post[i].operand) continue;
        int k = d->n_operands++;
        if (!fill_operand(g, i, &c->post[i], d->prob.post_ops[i].dt, vdt,
                    &state, &d->operand[k], &d->n_operand[k], &d->exact,
                    &d->lossless))
            return 0;
    }
    int64_t dims[DGRAD_MAX_NDIMS];
    int nd;
    odo_t o;
    int64_t i;
    cf_canon_dims(g, 3, dims, &nd);
    d->n_out = cf_dims_count(dims, nd);
    if (d->lossless && cache->ref) {
        d->ref = cache->ref;
        d->abs_sum = cache->abs_sum;
        d->pre = cache->pre;
        d->shared_ref = 1;
        goto expected;
    }
    d->ref = malloc((size_t)d->n_out * sizeof(double));
    d->abs_sum = malloc((size_t)d->n_out * sizeof(double));
    if (g->n_post) d->pre = malloc((size_t)d->n_out * sizeof(double));
    if (!d->ref || !d->abs_sum || (g->n_post && !d->pre)) return 0;

    /* The oracle's reference on the dense canonical buffers, in double:
     * the op's value (dgrad_reference_point), then the chain on it
     * (dgrad_reference_post_ops), as dgrad_reference_compute_fused
     * composes them, kept unrounded for the tolerance. */
    const void *ops[CF_MAX_POST];
    for (int k = 0; k < d->n_operands; k++) ops[k] = d->operand[k];
    odo_init(&o, dims, nd);
    i = 0;
    do {
        double v = dgrad_reference_point(&d->prob, d->in, d->wei,
                g->has_bias ? d->bias : NULL, o.idx[0], o.idx[1], &o.idx[2],
                &d->abs_sum[i]);
        if (g->n_post) {
            d->pre[i] = v;
            v = dgrad_reference_post_ops(&d->prob, ops, o.idx[0], o.idx[1],
                    &o.idx[2], v);
        }
        d->ref[i] = v;
        i++;
    } while (odo_next(&o));
    if (d->lossless) { /* the case keeps it for the other types */
        cache->ref = d->ref;
        cache->abs_sum = d->abs_sum;
        cache->pre = d->pre;
        d->shared_ref = 1;
    }
expected:
    if (c->has_expected && c->expected.data) {
        int64_t canon[DGRAD_MAX_NDIMS];
        d->expected = malloc((size_t)d->n_out * sizeof(double));
        if (!d->expected) return 0;
        given_canon_strides(g, 3, &c->expected, canon);
        odo_init(&o, dims, nd);
        i = 0;
        do d->expected[i++] = c->expected.data[odo_offset(&o, canon)];
        while (odo_next(&o));
    }
    return 1;
}

void *cf_scatter(const cf_geom_t *g, int role,
        const dgrad_logical_tensor_t *lt, const void *canon_buf,
        int64_t max_elements, int64_t *span_out) {
    dgrad_data_type_t dt = lt->data_type;
    size_t es = dgrad_data_type_size(dt);
    int64_t span = cf_span_of(lt);
    int64_t dims[DGRAD_MAX_NDIMS], cs[DGRAD_MAX_NDIMS];
    int nd;
    cf_canon_dims(g, role, dims, &nd);
    *span_out = span;
    if (span > max_elements) return NULL;
    void *buf = malloc((size_t)(span > 0 ? span : 1) * es);
    if (!buf) return NULL;
    cf_fill_nan(buf, dt, span);
    if (role == 1) cf_model_wei_strides(g, lt->strides, cs);
    else if (role == 2) cs[0] = lt->strides[0];
    else cf_model_act_strides(g, lt->strides, cs);
    odo_t o;
    odo_init(&o, dims, nd);
    int64_t i = 0;
    do {
        memcpy((char *)buf + (size_t)odo_offset(&o, cs) * es,
                (const char *)canon_buf + (size_t)i * es, es);
        i++;
    } while (odo_next(&o));
    return buf;
}

void *cf_scatter_operand(const cf_geom_t *g, int i,
        const dgrad_logical_tensor_t *lt, const void *canon_buf,
        int64_t max_elements, int64_t *span_out) {
    dgrad_data_type_t dt = lt->data_type;
    size_t es = dgrad_data_type_size(dt);
    int64_t span = cf_span_of(lt), cs[DGRAD_MAX_NDIMS];
    *span_out = span;
    if (span > max_elements) return NULL;
    void *buf = malloc((size_t)(span > 0 ? span : 1) * es);
    if (!buf) return NULL;
    cf_fill_nan(buf, dt, span);
    cf_model_post_strides(g, i, lt->strides, cs);
    odo_t o;
    odo_init(&o, g->post[i].dims, 2 + g->nsp);
    int64_t k = 0;
    do {
        memcpy((char *)buf + (size_t)odo_offset(&o, cs) * es,
                (const char *)canon_buf + (size_t)k * es, es);
        k++;
    } while (odo_next(&o));
    return buf;
}
