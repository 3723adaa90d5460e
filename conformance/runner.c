/*
 * The runner's run modes: every case it receives runs in each requested
 * data type and layout through the backend (a valid case: executed and
 * judged; too large: compiled only; invalid: it must be rejected with its
 * status), as a sink of the readers and the sweep. The data are
 * runner_data.c's, the judging runner_judge.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

void cf_options_default(cf_options_t *o) {
    memset(o, 0, sizeof *o);
    o->dtypes[0] = dgrad_f32;
    o->dtypes[1] = dgrad_bf16;
    o->dtypes[2] = dgrad_f16;
    o->n_dtypes = 3;
    o->layouts = CF_LAYOUT_NATIVE | CF_LAYOUT_NXC_XIO;
    o->max_elements = (int64_t)1 << 25;
}

typedef cf_compiled_t compiled_case_t;

/* The chain of @p c appended to @p op in order. */
static dgrad_status_t append_post_ops(const cf_backend_t *be, const cf_case_t *c,
        void *op, char *msg, size_t size) {
    for (int i = 0; i < c->n_post; i++) {
        const cf_post_t *po = &c->post[i];
        const char *names[CF_POST_ATTRS], *values[CF_POST_ATTRS];
        for (int a = 0; a < po->n_attrs; a++) {
            names[a] = po->attrs[a].name;
            values[a] = po->attrs[a].value;
        }
        dgrad_status_t st = be->op_append_post_op(be->ctx, op, po->kind,
                (size_t)po->n_attrs, names, values);
        if (st != dgrad_success) {
            snprintf(msg, size, "appending post-op %d %s: %s", i + 1,
                    po->kind, be->last_error(be->ctx));
            return st;
        }
    }
    return dgrad_success;
}

/* On failure @p msg says which step failed; release_case in any case. A
 * graph file's case with a chain is a fused partition (runner_fused.c)
 * in its native layout. */
static dgrad_status_t compile_case(const cf_backend_t *be, const cf_case_t *c,
        dgrad_data_type_t dt, compiled_case_t *cc, char *msg, size_t size) {
    cc->op = cc->compiled = cc->partitions = NULL;
    cc->fusion_differs = 0;
    if (c->graph) return cf_compile_fused(be, c, dt, cc, msg, size);
    cf_build_inputs(c, dt, &cc->ri);
    cf_lt_fill(&cc->olt, 3, dt, &c->output, dgrad_property_type_variable);
    dgrad_status_t st = be->op_create(be->ctx, c->kind, c->name, &cc->op);
    if (st != dgrad_success) {
        snprintf(msg, size, "creating the op: %s", be->last_error(be->ctx));
        return st;
    }
    for (int i = 0; i < c->n_attrs; i++) {
        st = be->op_set_attr(be->ctx, cc->op, c->attrs[i].name,
                c->attrs[i].value);
        if (st != dgrad_success) {
            snprintf(msg, size, "setting %s='%s': %s", c->attrs[i].name,
                    c->attrs[i].value, be->last_error(be->ctx));
            return st;
        }
    }
    st = append_post_ops(be, c, cc->op, msg, size);
    if (st != dgrad_success) return st;
    st = be->compile(be->ctx, cc->op, cc->ri.n, cc->ri.lts, &cc->olt,
            &cc->compiled);
    if (st != dgrad_success)
        snprintf(msg, size, "compile: %s", be->last_error(be->ctx));
    return st;
}

static void release_case(const cf_backend_t *be, compiled_case_t *cc) {
    be->compiled_destroy(be->ctx, cc->compiled);
    if (cc->partitions) be->partitions_destroy(be->ctx, cc->partitions);
    else be->op_destroy(be->ctx, cc->op);
}

/* Fails @p res when the dims of @p lt (@p what) are not @p want. */
static int dims_differ(cf_result_t *res, const char *what,
        const dgrad_logical_tensor_t *lt, const int64_t *want, int nd) {
    if (cf_same_dims(lt, want, nd)) return 0;
    char a[80], b[80];
    cf_result_set(res, cf_fail, "wrong_dims", "%s (%s) differ from the "
            "dialect rules' (%s)", what,
            cf_format_ints(a, sizeof a, lt->dims, lt->ndims),
            cf_format_ints(b, sizeof b, want, nd));
    return 1;
}

/* ------------------------------------------------------------- one run */

typedef struct run {
    cf_runner_t *r;
    const cf_case_t *c;
    const cf_geom_t *g;
    const char *layout;
    const cdata_t *d;
} run_t;

/* After a passing run: when an input may share the output's buffer
 * (the Add of dgrad_compiled_op_query_in_place_input), the same case run
 * again with the output buffer holding that operand and passed as it,
 * judged the same way; a failure replaces the result. */
static void judge_in_place(const run_t *x, const cf_backend_t *be,
        const compiled_case_t *cc, const void **inputs, void *out,
        int64_t cap, cf_result_t *res) {
    int64_t k = -1;
    if (!be->in_place_input
            || be->in_place_input(be->ctx, cc->compiled, &k) != dgrad_success
            || k < 0)
        return;
    size_t es = dgrad_data_type_size(cc->olt.data_type);
    int64_t span = cf_span_of(&cc->ri.lts[k]);
    if (span > cap) {
        cf_result_set(res, cf_fail, "wrong_dims", "in place: input %lld "
                "spans %lld elements, the output %lld", (long long)k,
                (long long)span, (long long)cap);
        return;
    }
    memcpy(out, inputs[k], (size_t)span * es);
    const void *own = inputs[k];
    inputs[k] = out;
    dgrad_logical_tensor_t produced;
    memset(&produced, 0, sizeof produced);
    produced.struct_size = sizeof produced;
    dgrad_status_t st = be->execute(be->ctx, cc->compiled, cc->ri.n, inputs,
            out, (size_t)cap * es, &produced);
    inputs[k] = own;
    if (st != dgrad_success) {
        cf_result_set(res, cf_fail, be->status_name(be->ctx, st),
                "execute in place (the output as input %lld): %s",
                (long long)k, be->last_error(be->ctx));
        return;
    }
    cf_result_t again = *res;
    cf_compare(x->g, x->d, &cc->olt, out, cap,
            be->impl_name(be->ctx, cc->compiled), &again);
    if (again.verdict != cf_pass) {
        char detail[CF_MESSAGE];
        snprintf(detail, sizeof detail, "in place (the output as input "
                "%lld): %.900s", (long long)k, again.detail);
        *res = again;
        snprintf(res->detail, sizeof res->detail, "%s", detail);
    }
}

static void run_one(const run_t *x, dgrad_data_type_t dt) {
    const cf_backend_t *be = &x->r->be;
    const cf_case_t *c = x->c;
    const cf_geom_t *g = x->g;
    cf_result_t res;
    cf_result_init(&res, c, dt, x->layout);
    char msg[CF_MESSAGE] = "";
    void *bufs[3 + CF_MAX_POST] = {NULL};
    void *out = NULL;
    compiled_case_t cc;
    dgrad_logical_tensor_t produced;
    int64_t want_dims[DGRAD_MAX_NDIMS];
    const int nd = 2 + g->nsp;
    cf_model_output_dims(g, want_dims);

    dgrad_status_t st = compile_case(be, c, dt, &cc, msg, sizeof msg);
    if (cc.fusion_differs) {
        cf_result_set(&res, cf_fail, "fusion_mismatch", "%s", msg);
        goto done;
    }
    if (st != dgrad_success) {
        cf_result_set(&res, cf_fail, be->status_name(be->ctx, st), "%s", msg);
        goto done;
    }
    int deferred = !cf_dims_known(&cc.olt);
    if (!deferred
            && dims_differ(&res, "compiled output dims", &cc.olt, want_dims, nd))
        goto done;
    int64_t span;
    const void *canon[3] = {x->d->in, x->d->wei, x->d->bias};
    for (int k = 0; k < 2 || (k == 2 && c->third == cf_third_bias); k++) {
        bufs[k] = cf_scatter(x->g, k, &cc.ri.lts[k], canon[k],
                x->r->opt.max_elements, &span);
        if (!bufs[k]) {
            cf_result_set(&res, cf_fail, "out_of_memory", "input %d spans %lld "
                    "elements (limit %lld)", k, (long long)span,
                    (long long)x->r->opt.max_elements);
            goto done;
        }
    }
    /* The operands, each scattered from its canonical view. */
    for (size_t k = cc.ri.n_own, i = 0; k < cc.ri.n; k++, i++) {
        while (!g->post[i].operand) i++;
        bufs[k] = cf_scatter_operand(g, (int)i, &cc.ri.lts[k],
                x->d->operand[k - cc.ri.n_own], x->r->opt.max_elements, &span);
        if (!bufs[k]) {
            cf_result_set(&res, cf_fail, "out_of_memory", "post-op %d's "
                    "operand spans %lld elements (limit %lld)", (int)i + 1,
                    (long long)span, (long long)x->r->opt.max_elements);
            goto done;
        }
    }
    const void *inputs[3 + CF_MAX_POST] = {bufs[0], bufs[1],
            c->third == cf_third_shape ? (const void *)cc.ri.shape_buf : bufs[2]};
    for (size_t k = cc.ri.n_own; k < cc.ri.n; k++) inputs[k] = bufs[k];
    size_t es = dgrad_data_type_size(dt);
    int64_t cap = deferred ? x->d->n_out : cf_span_of(&cc.olt);
    if (cap > x->r->opt.max_elements || !(out = malloc((size_t)cap * es))) {
        cf_result_set(&res, cf_fail, "out_of_memory", "output of %lld elements",
                (long long)cap);
        goto done;
    }
    /* Constant weights: the second execution uses the weights dgrad
     * converted and kept at the first. */
    for (int e = 0; e < (c->constant_weights ? 2 : 1); e++) {
        cf_fill_nan(out, dt, cap);
        memset(&produced, 0, sizeof produced);
        produced.struct_size = sizeof produced;
        st = be->execute(be->ctx, cc.compiled, cc.ri.n, inputs, out,
                (size_t)cap * es, &produced);
        if (st != dgrad_success) {
            cf_result_set(&res, cf_fail, be->status_name(be->ctx, st),
                    "execute: %s", be->last_error(be->ctx));
            goto done;
        }
    }
    if (deferred) {
        if (dims_differ(&res, "output dims produced", &produced, want_dims,
                    nd))
            goto done;
        if (cf_span_of(&produced) > cap) {
            cf_result_set(&res, cf_fail, "wrong_dims", "output produced spans "
                    "%lld elements, more than the %lld it may", 
                    (long long)cf_span_of(&produced), (long long)cap);
            goto done;
        }
        cc.olt = produced;
    }
    cf_compare(x->g, x->d, &cc.olt, out, cap,
            be->impl_name(be->ctx, cc.compiled), &res);
    if (res.verdict == cf_pass && !deferred)
        judge_in_place(x, be, &cc, inputs, out, cap, &res);
done:
    release_case(be, &cc);
    for (int k = 0; k < 3 + CF_MAX_POST; k++) free(bufs[k]);
    free(out);
    cf_report_add(x->r->report, &res);
}

/* A case that must be rejected with c->expect_error. */
static void run_invalid(cf_runner_t *r, const cf_case_t *c,
        dgrad_data_type_t dt) {
    const cf_backend_t *be = &r->be;
    cf_result_t res;
    cf_result_init(&res, c, dt, "native");
    char msg[CF_MESSAGE] = "";
    enum { MAX_BUFS = 4 + CF_MAX_POST };
    void *bufs[MAX_BUFS] = {NULL};
    compiled_case_t cc;
    dgrad_status_t st = compile_case(be, c, dt, &cc, msg, sizeof msg);
    if (st == dgrad_success) {
        /* Accepted at compile: the rule may be one execute checks (shape
         * values). Buffers sized from the tensors, zero-filled; an output
         * still unknown gets room for 2^16 elements (an op that wrongly
         * needs more fails on the capacity, which still is a failure).
         * The output's buffer is the last. */
        int64_t lim = r->opt.max_elements;
        size_t n = cc.ri.n, o = n;
        int ok = 1;
        for (size_t k = 0; k <= n && ok; k++) {
            const dgrad_logical_tensor_t *lt = k == o ? &cc.olt : &cc.ri.lts[k];
            int64_t span = k == o ? (cf_dims_known(lt) ? cf_span_of(lt)
                                                       : (int64_t)1 << 16)
                                  : k == 2 && c->third == cf_third_shape
                    ? 1 : cf_span_of(lt);
            dgrad_data_type_t t = k == o ? dt : lt->data_type;
            ok = span <= lim && (bufs[k] = calloc((size_t)span + 1,
                                         dgrad_data_type_size(t ? t : dt)));
            if (k == o) lim = span; /* the output's capacity, below */
        }
        if (!ok) {
            snprintf(msg, sizeof msg, "compile accepted the case and its "
                    "tensors are too large to execute");
        } else {
            const void *inputs[3 + CF_MAX_POST];
            for (size_t k = 0; k < n; k++)
                inputs[k] = k == 2 && c->third == cf_third_shape
                        ? (const void *)cc.ri.shape_buf : bufs[k];
            dgrad_logical_tensor_t produced;
            memset(&produced, 0, sizeof produced);
            produced.struct_size = sizeof produced;
            st = be->execute(be->ctx, cc.compiled, n, inputs, bufs[o],
                    (size_t)lim * dgrad_data_type_size(dt), &produced);
            snprintf(msg, sizeof msg, "%s%s", st == dgrad_success
                    ? "compile and execute accepted the case" : "execute: ",
                    st == dgrad_success ? "" : be->last_error(be->ctx));
        }
    }
    const char *got = st == dgrad_success ? "success" : be->status_name(be->ctx, st);
    if (st != dgrad_success && !strcmp(got, c->expect_error))
        cf_result_set(&res, cf_pass, got, "rejected as expected: %s", msg);
    else
        cf_result_set(&res, cf_fail, got, "expected %s: %s", c->expect_error, msg);
    release_case(be, &cc);
    for (int k = 0; k < MAX_BUFS; k++) free(bufs[k]);
    cf_report_add(r->report, &res);
}

/* A case too large to execute: compiled, output dims checked, skipped. */
static void run_compile_only(cf_runner_t *r, const cf_case_t *c,
        const cf_geom_t *g, dgrad_data_type_t dt, int64_t elements) {
    const cf_backend_t *be = &r->be;
    cf_result_t res;
    cf_result_init(&res, c, dt, "native");
    char msg[CF_MESSAGE] = "";
    compiled_case_t cc;
    int64_t want[DGRAD_MAX_NDIMS];
    cf_model_output_dims(g, want);
    dgrad_status_t st = compile_case(be, c, dt, &cc, msg, sizeof msg);
    if (cc.fusion_differs)
        cf_result_set(&res, cf_fail, "fusion_mismatch", "%s", msg);
    else if (st != dgrad_success)
        cf_result_set(&res, cf_fail, be->status_name(be->ctx, st), "%s", msg);
    else if (!cf_dims_known(&cc.olt)
            || !dims_differ(&res, "compiled output dims", &cc.olt, want,
                    2 + g->nsp))
        cf_result_set(&res, cf_skip, "too_large", "a tensor spans %lld elements "
                "(more than --max-elements %lld): compiled and output dims "
                "checked, not executed", (long long)elements,
                (long long)r->opt.max_elements);
    release_case(be, &cc);
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
        cf_result_init(&res, c, r->opt.dtypes[t], layout);
        cf_result_set(&res, v, status, "%s", detail);
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
    if ((c->n_post && !r->be.op_append_post_op)
            || (c->graph && !r->be.partition_fused)) {
        report_all(r, c, "native", cf_skip, "skipped", "the case has a "
                "post-op chain, and the plugin's ABI is older than 1.2 "
                "(no op_append_post_op, no fused partitions)");
        return;
    }
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
        cf_canon_dims(&g, role, dims, &nd);
        int64_t n = cf_dims_count(dims, nd);
        if (n < 0 || n > biggest) biggest = n < 0 ? INT64_MAX : n;
    }
    run_inputs_t ri;
    dgrad_logical_tensor_t olt;
    cf_build_inputs(c, dgrad_f32, &ri);
    cf_lt_fill(&olt, 3, dgrad_f32, &c->output, dgrad_property_type_variable);
    int64_t spans[3] = {cf_span_of(&ri.lts[0]), cf_span_of(&ri.lts[1]),
            olt.layout_type == dgrad_layout_type_strided && cf_dims_known(&olt)
                    ? cf_span_of(&olt) : 0};
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
                || memcmp(tg[v].Y, g.Y, sizeof g.Y) || tg[v].G != g.G
                || !cf_model_same_post(&tg[v], &g)) {
            snprintf(msg, sizeof msg, "internal: the translation does not "
                    "resolve to the same problem (%s)", why);
            report_all(r, c, variants[v].label, cf_fail, "internal", msg);
            free(t);
            continue;
        }
        tr[v] = t;
    }
    cf_ref_cache_t cache = {NULL, NULL, NULL};
    for (int k = 0; k < r->opt.n_dtypes; k++) {
        dgrad_data_type_t dt = r->opt.dtypes[k];
        cdata_t d;
        if (!cf_cdata_make(c, &g, dt, &d, &cache)) {
            cf_cdata_free(&d);
            cf_result_t res;
            cf_result_init(&res, c, dt, "native");
            cf_result_set(&res, cf_fail, "out_of_memory", "preparing the data");
            cf_report_add(r->report, &res);
            continue;
        }
        if (r->opt.oracle == cf_oracle_onednn_graph) {
            char refused[512];
            int got = g.n_post ? 0 : cf_oracle_graph(c, &g, &d, refused,
                    sizeof refused);
            if (g.n_post) /* oracle_graph.c builds the op alone */
                snprintf(refused, sizeof refused, "the oracle builds no "
                        "post-op chain (the case has %d post-ops)", g.n_post);
            if (got <= 0) {
                cf_result_t res;
                cf_result_init(&res, c, dt, "-");
                cf_result_set(&res, got < 0 ? cf_fail : cf_skip,
                        got < 0 ? "out_of_memory" : "oracle_refused",
                        "oracle oneDNN Graph: %s", refused);
                cf_report_add(r->report, &res);
                cf_cdata_free(&d);
                continue;
            }
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
        cf_cdata_free(&d);
    }
    cf_ref_cache_free(&cache);
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
    cf_result_plain(&res, cf_skip, suite, name, "skipped", reason);
    cf_report_add(r->report, &res);
}

static void on_error(cf_sink_t *s, const char *suite, const char *message) {
    cf_runner_t *r = (cf_runner_t *)s;
    cf_result_t res;
    cf_result_plain(&res, cf_fail, suite, suite, "unreadable", message);
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
