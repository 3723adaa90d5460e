/*
 * The runner's judging: results, and an output compared element by
 * element with the reference of the oracle library on the canonical
 * problem the conformance model resolved (and with the file's expected
 * data where they apply), within a tolerance derived from the type.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "reference.h"
#include "runner.h"

/* ------------------------------------------------------------- results */

void cf_result_init(cf_result_t *res, const cf_case_t *c,
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

void cf_result_set(cf_result_t *res, cf_verdict_t v, const char *status,
        const char *fmt, ...) {
    res->verdict = v;
    snprintf(res->status, sizeof res->status, "%s", status);
    va_list args;
    va_start(args, fmt);
    vsnprintf(res->detail, sizeof res->detail, fmt, args);
    va_end(args);
}

void cf_result_plain(cf_result_t *res, cf_verdict_t v, const char *suite,
        const char *name, const char *status, const char *detail) {
    memset(res, 0, sizeof *res);
    res->verdict = v;
    snprintf(res->suite, sizeof res->suite, "%s", suite);
    snprintf(res->name, sizeof res->name, "%s", name);
    snprintf(res->dtype, sizeof res->dtype, "-");
    snprintf(res->layout, sizeof res->layout, "-");
    snprintf(res->status, sizeof res->status, "%s", status);
    snprintf(res->first, sizeof res->first, "-");
    snprintf(res->detail, sizeof res->detail, "%s", detail);
    res->max_abs = res->max_rel = -1;
}

/* Per-element tolerance: the output rounding (the type's unit roundoff)
 * and the f32 accumulation (a few f32 unit roundoffs), both bounded by the
 * sum of |terms|. Exact for small integers whose sums fit the type. */
static double tolerance(dgrad_data_type_t dt, double abs_sum) {
    return (dgrad_data_type_unit_roundoff(dt) + 16.0 / 16777216.0) * abs_sum;
}

/* @p v as type @p dt stores it (overflow: an infinity). */
static double rounded(dgrad_data_type_t dt, double v) {
    unsigned char buf[8] = {0};
    dgrad_store(buf, dt, 0, v);
    return dgrad_load(buf, dt, 0);
}

/* An element after a post-op chain (its canonical index @p idx, flat
 * @p i). dgrad computes the chain in f32 on the op's result, which a
 * 16-bit output may round first (an unfused pass reads the stored value),
 * and oneDNN's f32 exp, tanh, erf ... are good to a few f32 ulps. So the
 * element is right when it lies between the chain's values at the
 * candidates for its input (the exact result, the result plus and minus
 * the op's own tolerance, the result rounded to the type), widened by the
 * output's rounding and 1e-5 relative and absolute for the f32 chain; NaN
 * where a candidate is NaN; an infinity where one overflows the type with
 * that sign, or where the widened range reaches beyond the type's range.
 * *@p tol_out: the widening, for the report. */
static int chain_ok(const cdata_t *d, dgrad_data_type_t dt,
        const int64_t *idx, int64_t i, double got, double *tol_out) {
    const void *ops[CF_MAX_POST];
    for (int k = 0; k < d->n_operands; k++) ops[k] = d->operand[k];
    double pre = d->pre[i], t = tolerance(dt, d->abs_sum[i]);
    const double ins[4] = {pre, pre - t, pre + t, rounded(dt, pre)};
    double lo = INFINITY, hi = -INFINITY;
    int nan_ok = 0, pos_inf = 0, neg_inf = 0;
    for (int k = 0; k < 4; k++) {
        double w = dgrad_reference_post_ops(&d->prob, ops, idx[0], idx[1],
                &idx[2], ins[k]);
        double wr = rounded(dt, w);
        if (isnan(w)) nan_ok = 1;
        else if (isinf(wr)) *(wr > 0 ? &pos_inf : &neg_inf) = 1;
        else {
            if (w < lo) lo = w;
            if (w > hi) hi = w;
        }
    }
    double big = lo <= hi ? fmax(fabs(lo), fabs(hi)) : 0;
    double tol = (dgrad_data_type_unit_roundoff(dt) + 1e-5) * big + 1e-5;
    *tol_out = tol;
    if (isnan(got)) return nan_ok;
    if (isinf(got))
        return got > 0 ? pos_inf || (lo <= hi && isinf(rounded(dt, hi + tol)))
                       : neg_inf || (lo <= hi && isinf(rounded(dt, lo - tol)));
    return lo <= hi && got >= lo - tol && got <= hi + tol;
}

/* The model's chain against a file's expected value: equal within the
 * printed digits and the libraries' last bits (NaN to NaN, infinities by
 * sign). */
static int chain_expected_ok(double ref, double want) {
    if (isnan(ref) || isnan(want)) return isnan(ref) && isnan(want);
    if (isinf(ref) || isinf(want)) return ref == want;
    return fabs(ref - want) <= 1e-6 * fabs(want) + 1e-9;
}

static void format_index(const cf_geom_t *g, const int64_t *cidx, char *buf,
        size_t size) {
    int64_t u[DGRAD_MAX_NDIMS];
    for (int d = 0; d < 2 + g->nsp; d++) u[cf_model_act_pos(g, d)] = cidx[d];
    char tmp[80];
    snprintf(buf, size, "[%s]", cf_format_ints(tmp, sizeof tmp, u, 2 + g->nsp));
}

int cf_same_dims(const dgrad_logical_tensor_t *lt, const int64_t *dims,
        int nd) {
    if (lt->ndims != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (lt->dims[d] != dims[d]) return 0;
    return 1;
}

void cf_compare(const cf_geom_t *g, const cdata_t *d,
        const dgrad_logical_tensor_t *olt, const void *out, int64_t cap,
        const char *impl, cf_result_t *res) {
    dgrad_data_type_t dt = olt->data_type;
    int64_t dims[DGRAD_MAX_NDIMS], cs[DGRAD_MAX_NDIMS];
    int nd;
    cf_canon_dims(g, 3, dims, &nd);
    cf_model_act_strides(g, olt->strides, cs);
    /* oneDNN Graph's output is rounded to the type as dgrad's is: each is
     * within the tolerance of the exact value, so they are within twice
     * it of each other. */
    const double *oracle = d->oracle;
    int use_expected = !oracle && d->expected && d->exact;
    int chain = d->prob.n_post_ops > 0 && !oracle;
    unsigned char *mask = calloc((size_t)cap / 8 + 1, 1);
    if (!mask) {
        cf_result_set(res, cf_fail, "out_of_memory", "comparing");
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
        double want = oracle ? oracle[i]
                : use_expected ? d->expected[i] : d->ref[i];
        double tol = (oracle ? 2 : 1) * tolerance(dt, d->abs_sum[i])
                + (use_expected ? 1e-6 * fabs(want) : 0.0);
        double err = fabs(got - want);
        if (isnan(err)) err = isnan(got) && isnan(want) ? 0 : INFINITY;
        if (isinf(got) && got == want) err = 0;
        double rel = want != 0 ? err / fabs(want) : (err > 0 ? INFINITY : 0);
        if (err > max_abs) max_abs = err;
        if (rel > max_rel) max_rel = rel;
        /* With a chain, the chain's own rule (chain_ok) against the
         * reference; the file's expected data must agree with the
         * reference (below). */
        int bad = chain ? !chain_ok(d, dt, o.idx, i, got, &tol) : err > tol;
        if (bad) {
            if (!n_bad) {
                format_index(g, o.idx, first, sizeof first);
                bad_got = got, bad_want = chain ? d->ref[i] : want;
                bad_tol = tol;
            }
            n_bad++;
        }
        /* The model against the file's own expected data. */
        if (use_expected && model_bad < 0
                && (chain ? !chain_expected_ok(d->ref[i], want)
                          : fabs(d->ref[i] - want) > tol))
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
    /* Where dgrad differs from oneDNN Graph, the reference decides which
     * is wrong: oneDNN Graph alone is reported (skipped with its
     * difference), dgrad is a failure. */
    if (oracle && n_bad && model_bad < 0) {
        double want_ref = 0, got_ref = 0;
        int64_t ref_bad = 0;
        odo_init(&o, dims, nd);
        i = 0;
        do {
            int64_t off = odo_offset(&o, cs);
            double got = (off >= 0 && off < cap) ? dgrad_load(out, dt, off)
                                                 : NAN;
            double err = fabs(got - d->ref[i]);
            if (!(err <= tolerance(dt, d->abs_sum[i]))) {
                if (!ref_bad) got_ref = got, want_ref = d->ref[i];
                ref_bad++;
            }
            i++;
        } while (odo_next(&o));
        if (!ref_bad) {
            cf_result_set(res, cf_skip, "oracle_wrong", "oneDNN Graph differs "
                    "from the reference at %lld of %lld elements (first %s: "
                    "oneDNN Graph %g, reference and dgrad %g); dgrad matches "
                    "the reference (impl %s)", (long long)n_bad,
                    (long long)d->n_out, first, bad_want, bad_got, impl);
            return;
        }
        cf_result_set(res, cf_fail, "mismatch", "%lld of %lld elements differ "
                "from oneDNN Graph and %lld from the reference (first: got "
                "%g, reference %g; impl %s)", (long long)n_bad,
                (long long)d->n_out, (long long)ref_bad, got_ref, want_ref,
                impl);
        return;
    }
    if (model_bad >= 0)
        cf_result_set(res, cf_fail, "model_mismatch", "the conformance model's "
                "reference (%g) differs from the file's expected value (%g) "
                "at canonical element %lld: the model or the case is wrong",
                d->ref[model_bad], d->expected[model_bad],
                (long long)model_bad);
    else if (n_bad)
        cf_result_set(res, cf_fail, "mismatch", "%lld of %lld elements: got %g, "
                "want %g, tolerance %g (%s, impl %s)", (long long)n_bad,
                (long long)d->n_out, bad_got, bad_want, bad_tol,
                oracle ? "vs oneDNN Graph"
                : chain ? "vs the reference's post-op chain, the range of "
                          "its input's candidates"
                : use_expected ? "vs the file's expected data"
                               : "vs the reference", impl);
    else if (gap >= 0)
        cf_result_set(res, cf_fail, "gap_written", "wrote offset %lld of the "
                "output, which is not an element of its layout", (long long)gap);
    else
        snprintf(res->detail, sizeof res->detail, "impl %s%s", impl,
                oracle ? ", matches oneDNN Graph"
                : use_expected ? ", matches the file's expected data" : "");
}
