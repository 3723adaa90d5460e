/*
 * The runner: every case it receives runs in each requested data type and
 * layout through the backend, and is compared element by element with the
 * reference of the oracle library on the canonical problem the conformance
 * model resolved.
 *
 * Data live once per case and data type in canonical dense order
 * ([N, Cin, X...], [G, Cin/G, Cout/G, K...], [Cout]), already rounded to the
 * type, so the reference sees exactly the values dgrad sees and only
 * accumulation and output rounding can differ. Each run scatters them into
 * its own layout; gaps of padded layouts hold NaN, so that reading them
 * (inputs) or writing them (output) shows.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "dtype.h"
#include "problem.h"
#include "reference.h"

struct cf_runner {
    cf_sink_t sink; /* first: the callbacks cast back */
    cf_options_t opt;
    cf_backend_t be;
    cf_report_t *report;
};

void cf_options_default(cf_options_t *o) {
    memset(o, 0, sizeof *o);
    o->dtypes[0] = dgrad_f32;
    o->dtypes[1] = dgrad_bf16;
    o->dtypes[2] = dgrad_f16;
    o->n_dtypes = 3;
    o->layouts = CF_LAYOUT_NATIVE | CF_LAYOUT_NXC_XIO;
    o->max_elements = (int64_t)1 << 25;
}

/* ------------------------------------------------------------- results */

static void result_init(cf_result_t *res, const cf_case_t *c,
        dgrad_data_type_t dt, const char *layout) {
    memset(res, 0, sizeof *res);
    res->verdict = cf_pass;
    snprintf(res->suite, sizeof res->suite, "%s", c->suite);
    snprintf(res->name, sizeof res->name, "%s", c->name);
    snprintf(res->dtype, sizeof res->dtype, "%s", dgrad_data_type_name(dt));
    snprintf(res->layout, sizeof res->layout, "%s", layout);
    snprintf(res->status, sizeof res->status, "ok");
    snprintf(res->first, sizeof res->first, "-");
    res->max_abs = res->max_rel = -1.0;
}

static void result_set(cf_result_t *res, cf_verdict_t v, const char *status,
        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void result_set(cf_result_t *res, cf_verdict_t v, const char *status,
        const char *fmt, ...) {
    res->verdict = v;
    snprintf(res->status, sizeof res->status, "%s", status);
    va_list args;
    va_start(args, fmt);
    vsnprintf(res->detail, sizeof res->detail, fmt, args);
    va_end(args);
}

/* ------------------------------------------------------ tensors, buffers */

/* Elements a buffer of @p lt spans; INT64_MAX when that overflows (the
 * invalid cases have such dims). */
static int64_t span_of(const dgrad_logical_tensor_t *lt) {
    int64_t last = 0, term;
    for (int d = 0; d < lt->ndims; d++) {
        if (lt->dims[d] < 1) return 0;
        if (__builtin_mul_overflow(lt->dims[d] - 1, lt->strides[d], &term)
                || __builtin_add_overflow(last, term, &last) || last == INT64_MAX)
            return INT64_MAX;
    }
    return last + 1;
}

/* Dense row-major strides (saturating: huge dims of invalid cases). */
static void dense_strides(const int64_t *dims, int nd, int64_t *s) {
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        s[d] = acc;
        if (__builtin_mul_overflow(acc, dims[d] > 0 ? dims[d] : 1, &acc))
            acc = INT64_MAX;
    }
}

static int dims_known(const dgrad_logical_tensor_t *lt) {
    if (lt->ndims < 1) return 0;
    for (int d = 0; d < lt->ndims; d++)
        if (lt->dims[d] < 0) return 0;
    return 1;
}

/* The logical tensor of a case operand (strided dense unless told). */
static void lt_fill(dgrad_logical_tensor_t *lt, size_t id,
        dgrad_data_type_t dt, const cf_tensor_t *t,
        dgrad_property_type_t prop) {
    memset(lt, 0, sizeof *lt);
    lt->struct_size = sizeof *lt;
    lt->id = id;
    lt->data_type = dt;
    lt->property = prop;
    lt->ndims = t->ndims;
    lt->layout_type = t->layout_any ? dgrad_layout_type_any
                                    : dgrad_layout_type_strided;
    if (t->ndims < 1 || t->ndims > DGRAD_MAX_NDIMS) return;
    memcpy(lt->dims, t->dims, (size_t)t->ndims * sizeof(int64_t));
    if (t->layout_any || !dims_known(lt)) return;
    if (t->has_strides)
        memcpy(lt->strides, t->strides, (size_t)t->ndims * sizeof(int64_t));
    else
        dense_strides(t->dims, t->ndims, lt->strides);
}

static dgrad_data_type_t other_type(dgrad_data_type_t dt) {
    return dt == dgrad_f32 ? dgrad_bf16 : dgrad_f32;
}

/* Builds the inputs of a run: logical tensors, and the shape values. */
typedef struct run_inputs {
    size_t n;
    dgrad_logical_tensor_t lts[3];
    int64_t shape_buf[DGRAD_MAX_NDIMS]; /* values in shape_dt */
} run_inputs_t;

static void build_inputs(const cf_case_t *c, dgrad_data_type_t dt,
        run_inputs_t *ri) {
    memset(ri, 0, sizeof *ri);
    lt_fill(&ri->lts[0], 0, c->data_dt ? c->data_dt : dt, &c->data,
            dgrad_property_type_variable);
    lt_fill(&ri->lts[1], 1, c->mixed_types ? other_type(dt) : dt, &c->weights,
            c->constant_weights ? dgrad_property_type_constant
                                : dgrad_property_type_variable);
    ri->n = 2;
    if (c->third == cf_third_shape) {
        cf_tensor_t t;
        memset(&t, 0, sizeof t);
        t.ndims = 1;
        t.dims[0] = c->n_shape;
        lt_fill(&ri->lts[2], 2, c->shape_dt, &t, dgrad_property_type_variable);
        for (int i = 0; i < c->n_shape; i++) {
            if (c->shape_dt == dgrad_s32) ((int32_t *)ri->shape_buf)[i] = (int32_t)c->shape_values[i];
            else if (c->shape_dt == dgrad_s64) ri->shape_buf[i] = c->shape_values[i];
            else dgrad_store(ri->shape_buf, c->shape_dt, i, (double)c->shape_values[i]);
        }
        ri->n = 3;
    } else if (c->third == cf_third_bias) {
        lt_fill(&ri->lts[2], 2, dt, &c->bias, dgrad_property_type_variable);
        ri->n = 3;
    }
}

/* Creates the op and sets its attributes, in order. */
static dgrad_status_t build_op(const cf_backend_t *be, const cf_case_t *c,
        void **op, char *msg, size_t size) {
    *op = NULL;
    dgrad_status_t st = be->op_create(be->ctx, c->kind, c->name, op);
    if (st != dgrad_success) {
        snprintf(msg, size, "creating the op: %s", be->last_error(be->ctx));
        return st;
    }
    for (int i = 0; i < c->n_attrs; i++) {
        st = be->op_set_attr(be->ctx, *op, c->attrs[i].name, c->attrs[i].value);
        if (st != dgrad_success) {
            snprintf(msg, size, "setting %s='%s': %s", c->attrs[i].name,
                    c->attrs[i].value, be->last_error(be->ctx));
            return st;
        }
    }
    return dgrad_success;
}

static void fill_nan(void *buf, dgrad_data_type_t dt, int64_t n) {
    for (int64_t i = 0; i < n; i++) dgrad_store(buf, dt, i, NAN);
}

/* ------------------------------------------------------ canonical data */

typedef struct cdata {
    dgrad_data_type_t dt;
    int64_t n_in, n_wei, n_bias, n_out;
    void *in, *wei, *bias;         /* canonical dense, in dt */
    double *ref, *abs_sum;         /* canonical dense output */
    double *expected;              /* canonical dense, or NULL */
    /* The inputs are the file's own: rounding the given values to dt gave
     * what rounding them to the file's type does, so its expected data
     * apply to this run. */
    int exact;
    /* No value changed in rounding to dt: the reference is the one of the
     * exact values, shared by every such type (ref/abs_sum not owned). */
    int lossless, shared_ref;
} cdata_t;

static void cdata_free(cdata_t *d) {
    free(d->in);
    free(d->wei);
    free(d->bias);
    if (!d->shared_ref) {
        free(d->ref);
        free(d->abs_sum);
    }
    free(d->expected);
    memset(d, 0, sizeof *d);
}

/* Odometer over dims. */
typedef struct odo {
    int nd;
    int64_t dims[DGRAD_MAX_NDIMS], idx[DGRAD_MAX_NDIMS];
} odo_t;

static void odo_init(odo_t *o, const int64_t *dims, int nd) {
    memset(o, 0, sizeof *o);
    o->nd = nd;
    memcpy(o->dims, dims, (size_t)nd * sizeof(int64_t));
}

static int odo_next(odo_t *o) {
    for (int i = o->nd - 1; i >= 0; i--) {
        if (++o->idx[i] < o->dims[i]) return 1;
        o->idx[i] = 0;
    }
    return 0;
}

static int64_t odo_offset(const odo_t *o, const int64_t *strides) {
    int64_t off = 0;
    for (int i = 0; i < o->nd; i++) off += o->idx[i] * strides[i];
    return off;
}

static void canon_dims(const cf_geom_t *g, int role, int64_t *dims, int *nd) {
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
    dense_strides(t->dims, t->ndims, dense);
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

/* One canonical tensor in dt, from the case's values or generated. */
static int fill_canon(const cf_geom_t *g, int role, const cf_tensor_t *t,
        dgrad_data_type_t dt, dgrad_data_type_t values_dt, unsigned *state,
        void **out, int64_t *count, int *exact, int *lossless) {
    int64_t dims[DGRAD_MAX_NDIMS], canon[DGRAD_MAX_NDIMS];
    int nd;
    canon_dims(g, role, dims, &nd);
    *count = cf_dims_count(dims, nd);
    *out = malloc((size_t)(*count > 0 ? *count : 1) * dgrad_data_type_size(dt));
    if (!*out) return 0;
    if (t->data) given_canon_strides(g, role, t, canon);
    odo_t o;
    odo_init(&o, dims, nd);
    int64_t i = 0;
    do {
        double v = t->data ? t->data[odo_offset(&o, canon)] : next_value(state);
        dgrad_store(*out, dt, i, v);
        if (dgrad_load(*out, dt, i) != round_to(values_dt, v)) *exact = 0;
        if (dgrad_load(*out, dt, i) != v) *lossless = 0;
        i++;
    } while (odo_next(&o) && i < *count);
    return 1;
}

/* Canonical data and reference of case @p c (geometry @p g) in @p dt.
 * @p cache: the reference of the exact values, when an earlier type
 * computed it (both NULL before); a lossless type fills or reuses it. */
static int cdata_make(const cf_case_t *c, const cf_geom_t *g,
        dgrad_data_type_t dt, cdata_t *d, double **cache_ref,
        double **cache_abs) {
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
    int64_t dims[DGRAD_MAX_NDIMS];
    int nd;
    odo_t o;
    int64_t i;
    canon_dims(g, 3, dims, &nd);
    d->n_out = cf_dims_count(dims, nd);
    if (d->lossless && *cache_ref) {
        d->ref = *cache_ref;
        d->abs_sum = *cache_abs;
        d->shared_ref = 1;
        goto expected;
    }
    d->ref = malloc((size_t)d->n_out * sizeof(double));
    d->abs_sum = malloc((size_t)d->n_out * sizeof(double));
    if (!d->ref || !d->abs_sum) return 0;

    /* The oracle's reference on the dense canonical buffers. */
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    p.nsp = g->nsp;
    p.dt = dt;
    p.N = g->N, p.G = g->G, p.Cin = g->Cin, p.Cout = g->Cout;
    for (int a = 0; a < g->nsp; a++) {
        p.X[a] = g->X[a], p.K[a] = g->K[a], p.S[a] = g->S[a];
        p.D[a] = g->D[a], p.PB[a] = g->PB[a], p.Y[a] = g->Y[a];
    }
    int64_t cd[DGRAD_MAX_NDIMS];
    int cnd;
    canon_dims(g, 0, cd, &cnd);
    dense_strides(cd, cnd, p.in_strides);
    canon_dims(g, 1, cd, &cnd);
    dense_strides(cd, cnd, p.wei_strides);
    dense_strides(dims, nd, p.out_strides);
    p.has_bias = g->has_bias;
    p.bias_stride = 1;
    odo_init(&o, dims, nd);
    i = 0;
    do {
        d->ref[i] = dgrad_reference_point(&p, d->in, d->wei,
                g->has_bias ? d->bias : NULL, o.idx[0], o.idx[1], &o.idx[2],
                &d->abs_sum[i]);
        i++;
    } while (odo_next(&o));
    if (d->lossless) { /* the case keeps it for the other types */
        *cache_ref = d->ref;
        *cache_abs = d->abs_sum;
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

/* Per-element tolerance: the output rounding (the type's unit roundoff)
 * and the f32 accumulation (a few f32 unit roundoffs), both bounded by the
 * sum of |terms|. Exact for small integers whose sums fit the type. */
static double tolerance(dgrad_data_type_t dt, double abs_sum) {
    return (dgrad_data_type_unit_roundoff(dt) + 16.0 / 16777216.0) * abs_sum;
}

/* ------------------------------------------------------------- one run */

typedef struct run {
    cf_runner_t *r;
    const cf_case_t *c;
    const cf_geom_t *g;
    const char *layout;
    const cdata_t *d;
} run_t;

/* Scatters canonical tensor @p role into a buffer of logical tensor @p lt
 * (whose canonical strides the model gives); gaps hold NaN. */
static void *scatter(const run_t *x, int role, const dgrad_logical_tensor_t *lt,
        const void *canon_buf, int64_t *span_out) {
    dgrad_data_type_t dt = lt->data_type;
    size_t es = dgrad_data_type_size(dt);
    int64_t span = span_of(lt);
    int64_t dims[DGRAD_MAX_NDIMS], cs[DGRAD_MAX_NDIMS];
    int nd;
    canon_dims(x->g, role, dims, &nd);
    *span_out = span;
    if (span > x->r->opt.max_elements) return NULL;
    void *buf = malloc((size_t)(span > 0 ? span : 1) * es);
    if (!buf) return NULL;
    fill_nan(buf, dt, span);
    if (role == 1) cf_model_wei_strides(x->g, lt->strides, cs);
    else if (role == 2) cs[0] = lt->strides[0];
    else cf_model_act_strides(x->g, lt->strides, cs);
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

static void format_index(const cf_geom_t *g, const int64_t *cidx, char *buf,
        size_t size) {
    int64_t u[DGRAD_MAX_NDIMS];
    for (int d = 0; d < 2 + g->nsp; d++) u[cf_model_act_pos(g, d)] = cidx[d];
    char tmp[80];
    snprintf(buf, size, "[%s]", cf_format_ints(tmp, sizeof tmp, u, 2 + g->nsp));
}

static int same_dims(const dgrad_logical_tensor_t *lt, const int64_t *dims,
        int nd) {
    if (lt->ndims != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (lt->dims[d] != dims[d]) return 0;
    return 1;
}

/* Compares the output with the reference (and the file's expected data
 * when the inputs were exact in this type); checks the gaps. */
static void compare(const run_t *x, const dgrad_logical_tensor_t *olt,
        const void *out, int64_t cap, const char *impl, cf_result_t *res) {
    const cf_geom_t *g = x->g;
    const cdata_t *d = x->d;
    dgrad_data_type_t dt = olt->data_type;
    int64_t dims[DGRAD_MAX_NDIMS], cs[DGRAD_MAX_NDIMS];
    int nd;
    canon_dims(g, 3, dims, &nd);
    cf_model_act_strides(g, olt->strides, cs);
    int use_expected = d->expected && d->exact;
    unsigned char *mask = calloc((size_t)cap / 8 + 1, 1);
    if (!mask) {
        result_set(res, cf_fail, "out_of_memory", "comparing");
        return;
    }
    double max_abs = 0, max_rel = 0;
    int64_t n_bad = 0, model_bad = -1;
    char first[96] = "-";
    double bad_got = 0, bad_want = 0, bad_tol = 0;
    odo_t o;
    odo_init(&o, dims, nd);
    int64_t i = 0;
    do {
        int64_t off = odo_offset(&o, cs);
        if (off >= 0 && off < cap) mask[off / 8] |= (unsigned char)(1u << (off % 8));
        double got = (off >= 0 && off < cap) ? dgrad_load(out, dt, off) : NAN;
        double want = use_expected ? d->expected[i] : d->ref[i];
        double tol = tolerance(dt, d->abs_sum[i])
                + (use_expected ? 1e-6 * fabs(want) : 0.0);
        double err = fabs(got - want);
        if (isnan(err)) err = INFINITY;
        double rel = want != 0 ? err / fabs(want) : (err > 0 ? INFINITY : 0);
        if (err > max_abs) max_abs = err;
        if (rel > max_rel) max_rel = rel;
        if (err > tol) {
            if (!n_bad) {
                format_index(g, o.idx, first, sizeof first);
                bad_got = got, bad_want = want, bad_tol = tol;
            }
            n_bad++;
        }
        /* The model against the file's own expected data. */
        if (use_expected && model_bad < 0
                && fabs(d->ref[i] - want) > tol)
            model_bad = i;
        i++;
    } while (odo_next(&o));
    res->max_abs = max_abs;
    res->max_rel = max_rel;
    snprintf(res->first, sizeof res->first, "%s", first);
    int64_t gap = -1;
    for (int64_t off = 0; off < cap && gap < 0; off++)
        if (!(mask[off / 8] & (1u << (off % 8)))
                && !isnan(dgrad_load(out, dt, off)))
            gap = off;
    free(mask);
    if (model_bad >= 0)
        result_set(res, cf_fail, "model_mismatch", "the conformance model's "
                "reference (%g) differs from the file's expected value (%g) "
                "at canonical element %lld: the model or the case is wrong",
                d->ref[model_bad], d->expected[model_bad],
                (long long)model_bad);
    else if (n_bad)
        result_set(res, cf_fail, "mismatch", "%lld of %lld elements: got %g, "
                "want %g, tolerance %g (%s, impl %s)", (long long)n_bad,
                (long long)d->n_out, bad_got, bad_want, bad_tol,
                use_expected ? "vs the file's expected data"
                             : "vs the reference", impl);
    else if (gap >= 0)
        result_set(res, cf_fail, "gap_written", "wrote offset %lld of the "
                "output, which is not an element of its layout", (long long)gap);
    else
        snprintf(res->detail, sizeof res->detail, "impl %s%s", impl,
                use_expected ? ", matches the file's expected data" : "");
}

static void run_one(const run_t *x, dgrad_data_type_t dt) {
    const cf_backend_t *be = &x->r->be;
    const cf_case_t *c = x->c;
    const cf_geom_t *g = x->g;
    cf_result_t res;
    result_init(&res, c, dt, x->layout);
    char msg[CF_MESSAGE] = "";
    void *op = NULL, *compiled = NULL, *bufs[3] = {NULL, NULL, NULL};
    void *out = NULL;
    run_inputs_t ri;
    build_inputs(c, dt, &ri);
    dgrad_logical_tensor_t olt, produced;
    lt_fill(&olt, 3, dt, &c->output, dgrad_property_type_variable);
    int64_t want_dims[DGRAD_MAX_NDIMS];
    const int nd = 2 + g->nsp;
    cf_model_output_dims(g, want_dims);

    dgrad_status_t st = build_op(be, c, &op, msg, sizeof msg);
    if (st == dgrad_success) {
        st = be->compile(be->ctx, op, ri.n, ri.lts, &olt, &compiled);
        if (st != dgrad_success)
            snprintf(msg, sizeof msg, "compile: %s", be->last_error(be->ctx));
    }
    if (st != dgrad_success) {
        result_set(&res, cf_fail, be->status_name(be->ctx, st), "%s", msg);
        goto done;
    }
    int deferred = !dims_known(&olt);
    if (!deferred && !same_dims(&olt, want_dims, nd)) {
        char a[80], b[80];
        result_set(&res, cf_fail, "wrong_dims", "compiled output dims (%s) "
                "differ from the dialect rules' (%s)",
                cf_format_ints(a, sizeof a, olt.dims, olt.ndims),
                cf_format_ints(b, sizeof b, want_dims, nd));
        goto done;
    }
    int64_t span;
    const void *canon[3] = {x->d->in, x->d->wei, x->d->bias};
    for (int k = 0; k < 2 || (k == 2 && c->third == cf_third_bias); k++) {
        bufs[k] = scatter(x, k, &ri.lts[k], canon[k], &span);
        if (!bufs[k]) {
            result_set(&res, cf_fail, "out_of_memory", "input %d spans %lld "
                    "elements (limit %lld)", k, (long long)span,
                    (long long)x->r->opt.max_elements);
            goto done;
        }
    }
    const void *inputs[3] = {bufs[0], bufs[1],
            c->third == cf_third_shape ? (const void *)ri.shape_buf : bufs[2]};
    size_t es = dgrad_data_type_size(dt);
    int64_t cap = deferred ? x->d->n_out : span_of(&olt);
    if (cap > x->r->opt.max_elements || !(out = malloc((size_t)cap * es))) {
        result_set(&res, cf_fail, "out_of_memory", "output of %lld elements",
                (long long)cap);
        goto done;
    }
    /* Constant weights: the second execution uses the weights dgrad
     * converted and kept at the first. */
    for (int e = 0; e < (c->constant_weights ? 2 : 1); e++) {
        fill_nan(out, dt, cap);
        memset(&produced, 0, sizeof produced);
        produced.struct_size = sizeof produced;
        st = be->execute(be->ctx, compiled, ri.n, inputs, out,
                (size_t)cap * es, &produced);
        if (st != dgrad_success) {
            result_set(&res, cf_fail, be->status_name(be->ctx, st),
                    "execute: %s", be->last_error(be->ctx));
            goto done;
        }
    }
    if (deferred) {
        if (!same_dims(&produced, want_dims, nd)) {
            char a[80], b[80];
            result_set(&res, cf_fail, "wrong_dims", "output dims produced (%s) "
                    "differ from the dialect rules' (%s)",
                    cf_format_ints(a, sizeof a, produced.dims, produced.ndims),
                    cf_format_ints(b, sizeof b, want_dims, nd));
            goto done;
        }
        if (span_of(&produced) > cap) {
            result_set(&res, cf_fail, "wrong_dims", "output produced spans "
                    "%lld elements, more than the %lld it may", 
                    (long long)span_of(&produced), (long long)cap);
            goto done;
        }
        olt = produced;
    }
    compare(x, &olt, out, cap, be->impl_name(be->ctx, compiled), &res);
done:
    be->compiled_destroy(be->ctx, compiled);
    be->op_destroy(be->ctx, op);
    for (int k = 0; k < 3; k++) free(bufs[k]);
    free(out);
    cf_report_add(x->r->report, &res);
}

/* A case that must be rejected with c->expect_error. */
static void run_invalid(cf_runner_t *r, const cf_case_t *c,
        dgrad_data_type_t dt) {
    const cf_backend_t *be = &r->be;
    cf_result_t res;
    result_init(&res, c, dt, "native");
    char msg[CF_MESSAGE] = "";
    void *op = NULL, *compiled = NULL, *bufs[4] = {NULL, NULL, NULL, NULL};
    run_inputs_t ri;
    build_inputs(c, dt, &ri);
    dgrad_logical_tensor_t olt;
    lt_fill(&olt, 3, dt, &c->output, dgrad_property_type_variable);
    dgrad_status_t st = build_op(be, c, &op, msg, sizeof msg);
    if (st == dgrad_success) {
        st = be->compile(be->ctx, op, ri.n, ri.lts, &olt, &compiled);
        if (st != dgrad_success)
            snprintf(msg, sizeof msg, "compile: %s", be->last_error(be->ctx));
    }
    if (st == dgrad_success) {
        /* Accepted at compile: the rule may be one execute checks (shape
         * values). Buffers sized from the tensors, zero-filled; an output
         * still unknown gets room for 2^16 elements (an op that wrongly
         * needs more fails on the capacity, which still is a failure). */
        int64_t lim = r->opt.max_elements;
        int64_t spans[4] = {span_of(&ri.lts[0]), span_of(&ri.lts[1]),
                c->third == cf_third_bias ? span_of(&ri.lts[2]) : 1,
                dims_known(&olt) ? span_of(&olt) : (int64_t)1 << 16};
        dgrad_data_type_t dts[4] = {ri.lts[0].data_type, ri.lts[1].data_type,
                dt, dt};
        int ok = 1;
        for (int k = 0; k < 4 && ok; k++)
            ok = spans[k] <= lim && (bufs[k] = calloc((size_t)spans[k] + 1,
                                             dgrad_data_type_size(dts[k])));
        if (!ok) {
            snprintf(msg, sizeof msg, "compile accepted the case and its "
                    "tensors are too large to execute");
        } else {
            const void *inputs[3] = {bufs[0], bufs[1],
                    c->third == cf_third_shape ? (const void *)ri.shape_buf
                                               : bufs[2]};
            dgrad_logical_tensor_t produced;
            memset(&produced, 0, sizeof produced);
            produced.struct_size = sizeof produced;
            st = be->execute(be->ctx, compiled, ri.n, inputs, bufs[3],
                    (size_t)spans[3] * dgrad_data_type_size(dt), &produced);
            snprintf(msg, sizeof msg, "%s%s", st == dgrad_success
                    ? "compile and execute accepted the case" : "execute: ",
                    st == dgrad_success ? "" : be->last_error(be->ctx));
        }
    }
    const char *got = st == dgrad_success ? "success" : be->status_name(be->ctx, st);
    if (st != dgrad_success && !strcmp(got, c->expect_error))
        result_set(&res, cf_pass, got, "rejected as expected: %s", msg);
    else
        result_set(&res, cf_fail, got, "expected %s: %s", c->expect_error, msg);
    be->compiled_destroy(be->ctx, compiled);
    be->op_destroy(be->ctx, op);
    for (int k = 0; k < 4; k++) free(bufs[k]);
    cf_report_add(r->report, &res);
}

/* A case too large to execute: compiled, output dims checked, skipped. */
static void run_compile_only(cf_runner_t *r, const cf_case_t *c,
        const cf_geom_t *g, dgrad_data_type_t dt, int64_t elements) {
    const cf_backend_t *be = &r->be;
    cf_result_t res;
    result_init(&res, c, dt, "native");
    char msg[CF_MESSAGE] = "";
    void *op = NULL, *compiled = NULL;
    run_inputs_t ri;
    build_inputs(c, dt, &ri);
    dgrad_logical_tensor_t olt;
    lt_fill(&olt, 3, dt, &c->output, dgrad_property_type_variable);
    int64_t want[DGRAD_MAX_NDIMS];
    cf_model_output_dims(g, want);
    dgrad_status_t st = build_op(be, c, &op, msg, sizeof msg);
    if (st == dgrad_success) {
        st = be->compile(be->ctx, op, ri.n, ri.lts, &olt, &compiled);
        if (st != dgrad_success)
            snprintf(msg, sizeof msg, "compile: %s", be->last_error(be->ctx));
    }
    char a[80], b[80];
    if (st != dgrad_success)
        result_set(&res, cf_fail, be->status_name(be->ctx, st), "%s", msg);
    else if (dims_known(&olt) && !same_dims(&olt, want, 2 + g->nsp))
        result_set(&res, cf_fail, "wrong_dims", "compiled output dims (%s) "
                "differ from the dialect rules' (%s)",
                cf_format_ints(a, sizeof a, olt.dims, olt.ndims),
                cf_format_ints(b, sizeof b, want, 2 + g->nsp));
    else
        result_set(&res, cf_skip, "too_large", "a tensor spans %lld elements "
                "(more than --max-elements %lld): compiled and output dims "
                "checked, not executed", (long long)elements,
                (long long)r->opt.max_elements);
    be->compiled_destroy(be->ctx, compiled);
    be->op_destroy(be->ctx, op);
    cf_report_add(r->report, &res);
}

/* ------------------------------------------------------------- a case */

typedef struct variant {
    const char *label;
    unsigned flag;
    int nxc, xio;
} variant_t;

static const variant_t variants[] = {
        {"NCX/OIX", CF_LAYOUT_NCX_OIX, 0, 0},
        {"NCX/XIO", CF_LAYOUT_NCX_XIO, 0, 1},
        {"NXC/OIX", CF_LAYOUT_NXC_OIX, 1, 0},
        {"NXC/XIO", CF_LAYOUT_NXC_XIO, 1, 1},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

static void report_all(cf_runner_t *r, const cf_case_t *c, const char *layout,
        cf_verdict_t v, const char *status, const char *detail) {
    for (int t = 0; t < r->opt.n_dtypes; t++) {
        cf_result_t res;
        result_init(&res, c, r->opt.dtypes[t], layout);
        result_set(&res, v, status, "%s", detail);
        cf_report_add(r->report, &res);
    }
}

/* The file's output dims, when it gives them, against the model's. */
static int check_file_dims(cf_runner_t *r, const cf_case_t *c,
        const cf_geom_t *g) {
    const cf_tensor_t *t = c->has_expected ? &c->expected : &c->output;
    int64_t want[DGRAD_MAX_NDIMS];
    cf_model_output_dims(g, want);
    if (t->ndims < 1) return 1;
    int same = t->ndims == 2 + g->nsp;
    for (int d = 0; same && d < t->ndims; d++)
        same = t->dims[d] < 0 || t->dims[d] == want[d];
    if (same) return 1;
    char a[80], b[80], msg[CF_MESSAGE];
    snprintf(msg, sizeof msg, "%s: the file's output dims (%s) differ from "
            "what the dialect rules give (%s)", c->where,
            cf_format_ints(a, sizeof a, t->dims, t->ndims),
            cf_format_ints(b, sizeof b, want, 2 + g->nsp));
    report_all(r, c, "native", cf_fail, "model_mismatch", msg);
    return 0;
}

static void run_case_in_types(cf_runner_t *r, const cf_case_t *c) {
    if (c->expect_error[0]) {
        for (int t = 0; t < r->opt.n_dtypes; t++)
            run_invalid(r, c, r->opt.dtypes[t]);
        return;
    }
    cf_geom_t g;
    char why[CF_MESSAGE / 2], msg[CF_MESSAGE + CF_WHERE];
    if (!cf_model_resolve(c, &g, why, sizeof why)) {
        snprintf(msg, sizeof msg, "%s: the case is not valid under the "
                "dialect rules (conformance model): %s", c->where, why);
        report_all(r, c, "native", cf_fail, "invalid_case", msg);
        return;
    }
    if (!check_file_dims(r, c, &g)) return;
    /* Element counts, and the spans the file's strides give the buffers. */
    int64_t dims[DGRAD_MAX_NDIMS], biggest = 0;
    int nd;
    for (int role = 0; role < 4; role++) {
        canon_dims(&g, role, dims, &nd);
        int64_t n = cf_dims_count(dims, nd);
        if (n < 0 || n > biggest) biggest = n < 0 ? INT64_MAX : n;
    }
    run_inputs_t ri;
    dgrad_logical_tensor_t olt;
    build_inputs(c, dgrad_f32, &ri);
    lt_fill(&olt, 3, dgrad_f32, &c->output, dgrad_property_type_variable);
    int64_t spans[3] = {span_of(&ri.lts[0]), span_of(&ri.lts[1]),
            olt.layout_type == dgrad_layout_type_strided && dims_known(&olt)
                    ? span_of(&olt) : 0};
    for (int k = 0; k < 3; k++)
        if (spans[k] > biggest) biggest = spans[k];
    if (biggest > r->opt.max_elements) {
        for (int t = 0; t < r->opt.n_dtypes; t++)
            run_compile_only(r, c, &g, r->opt.dtypes[t], biggest);
        return;
    }

    /* The layouts to run: the case as written, and its translations into
     * the oneDNN Graph dialect (skipped when that cannot express it). */
    cf_case_t *tr[N_VARIANTS] = {NULL};
    cf_geom_t tg[N_VARIANTS];
    for (size_t v = 0; v < N_VARIANTS; v++) {
        if (!(r->opt.layouts & variants[v].flag)) continue;
        if (c->kind == dgrad_op_convolution_backward_data
                && g.nxc == variants[v].nxc && g.xio == variants[v].xio)
            continue; /* the native run already is this layout */
        cf_case_t *t = malloc(sizeof *t);
        if (!t) continue;
        if (!cf_model_translate(c, &g, variants[v].nxc, variants[v].xio, t,
                    why, sizeof why)) {
            snprintf(msg, sizeof msg, "not expressible in oneDNN Graph's "
                    "dialect: %s", why);
            report_all(r, c, variants[v].label, cf_skip, "skipped", msg);
            free(t);
            continue;
        }
        /* The translation must resolve to the very same problem. */
        if (!cf_model_resolve(t, &tg[v], why, sizeof why)
                || memcmp(tg[v].PB, g.PB, sizeof g.PB)
                || memcmp(tg[v].Y, g.Y, sizeof g.Y) || tg[v].G != g.G) {
            snprintf(msg, sizeof msg, "internal: the translation does not "
                    "resolve to the same problem (%s)", why);
            report_all(r, c, variants[v].label, cf_fail, "internal", msg);
            free(t);
            continue;
        }
        tr[v] = t;
    }
    double *cache_ref = NULL, *cache_abs = NULL;
    for (int k = 0; k < r->opt.n_dtypes; k++) {
        dgrad_data_type_t dt = r->opt.dtypes[k];
        cdata_t d;
        if (!cdata_make(c, &g, dt, &d, &cache_ref, &cache_abs)) {
            cdata_free(&d);
            cf_result_t res;
            result_init(&res, c, dt, "native");
            result_set(&res, cf_fail, "out_of_memory", "preparing the data");
            cf_report_add(r->report, &res);
            continue;
        }
        if (r->opt.layouts & CF_LAYOUT_NATIVE) {
            run_t x = {r, c, &g, "native", &d};
            run_one(&x, dt);
        }
        for (size_t v = 0; v < N_VARIANTS; v++) {
            if (!tr[v]) continue;
            run_t x = {r, tr[v], &tg[v], variants[v].label, &d};
            run_one(&x, dt);
        }
        cdata_free(&d);
    }
    free(cache_ref);
    free(cache_abs);
    for (size_t v = 0; v < N_VARIANTS; v++) free(tr[v]);
}

/* A case that names its one type (a batch line's --dt) runs in that type
 * only, when --dtypes has it; every other case in each --dtypes type. */
static void run_case(cf_runner_t *r, const cf_case_t *c) {
    if (r->opt.filter && !strstr(c->name, r->opt.filter)) return;
    if (!c->run_dt) {
        run_case_in_types(r, c);
        return;
    }
    const cf_options_t all = r->opt;
    int listed = 0;
    for (int t = 0; t < all.n_dtypes; t++) listed |= all.dtypes[t] == c->run_dt;
    if (!listed) {
        char reason[160];
        snprintf(reason, sizeof reason, "the case runs in %s only (its --dt), "
                "which --dtypes leaves out", dgrad_data_type_name(c->run_dt));
        r->sink.on_skip(&r->sink, c->suite, c->name, reason);
        return;
    }
    r->opt.dtypes[0] = c->run_dt;
    r->opt.n_dtypes = 1;
    run_case_in_types(r, c);
    r->opt = all;
}

/* --------------------------------------------------------------- sink */

static void on_case(cf_sink_t *s, const cf_case_t *c) {
    run_case((cf_runner_t *)s, c);
}

static void on_skip(cf_sink_t *s, const char *suite, const char *name,
        const char *reason) {
    cf_runner_t *r = (cf_runner_t *)s;
    if (r->opt.filter && !strstr(name, r->opt.filter)) return;
    cf_result_t res;
    memset(&res, 0, sizeof res);
    res.verdict = cf_skip;
    snprintf(res.suite, sizeof res.suite, "%s", suite);
    snprintf(res.name, sizeof res.name, "%s", name);
    snprintf(res.dtype, sizeof res.dtype, "-");
    snprintf(res.layout, sizeof res.layout, "-");
    snprintf(res.status, sizeof res.status, "skipped");
    snprintf(res.first, sizeof res.first, "-");
    snprintf(res.detail, sizeof res.detail, "%s", reason);
    res.max_abs = res.max_rel = -1;
    cf_report_add(r->report, &res);
}

static void on_error(cf_sink_t *s, const char *suite, const char *message) {
    cf_runner_t *r = (cf_runner_t *)s;
    cf_result_t res;
    memset(&res, 0, sizeof res);
    res.verdict = cf_fail;
    snprintf(res.suite, sizeof res.suite, "%s", suite);
    snprintf(res.name, sizeof res.name, "%s", suite);
    snprintf(res.dtype, sizeof res.dtype, "-");
    snprintf(res.layout, sizeof res.layout, "-");
    snprintf(res.status, sizeof res.status, "unreadable");
    snprintf(res.first, sizeof res.first, "-");
    snprintf(res.detail, sizeof res.detail, "%s", message);
    res.max_abs = res.max_rel = -1;
    cf_report_add(r->report, &res);
}

cf_runner_t *cf_runner_create(const cf_options_t *o, const cf_backend_t *b,
        cf_report_t *report) {
    cf_runner_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->sink.on_case = on_case;
    r->sink.on_skip = on_skip;
    r->sink.on_error = on_error;
    r->opt = *o;
    r->be = *b;
    r->report = report;
    return r;
}

cf_sink_t *cf_runner_sink(cf_runner_t *r) { return &r->sink; }

void cf_runner_destroy(cf_runner_t *r) { free(r); }
