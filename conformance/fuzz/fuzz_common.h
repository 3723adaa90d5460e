/*
 * Shared by the fuzz targets: every case a reader delivers goes through
 * attribute/shape resolution twice, by the dialect layer (src/problem.c,
 * attributes set by name as the plugin does) and by the conformance model,
 * and when both accept it they must agree on the canonical problem (its
 * post-op chain included); a
 * disagreement aborts, so that libFuzzer keeps the input. Tiny problems
 * also run the reference on the resolved problem.
 */
#ifndef DGRAD_CONFORM_FUZZ_COMMON_H
#define DGRAD_CONFORM_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "problem.h"
#include "reference.h"

/* Resolves @p c through the dialect layer; 1 on success. */
static int fuzz_problem(const cf_case_t *c, dgrad_resolved_t *r) {
    dgrad_op_desc_t desc;
    if (dgrad_op_desc_init(&desc, c->kind) != dgrad_success) return 0;
    for (int i = 0; i < c->n_attrs; i++)
        if (dgrad_op_desc_set_by_name(&desc, c->attrs[i].name,
                    c->attrs[i].value) != dgrad_success)
            return 0;
    for (int i = 0; i < c->n_post; i++) {
        const char *names[CF_POST_ATTRS], *values[CF_POST_ATTRS];
        for (int a = 0; a < c->post[i].n_attrs; a++) {
            names[a] = c->post[i].attrs[a].name;
            values[a] = c->post[i].attrs[a].value;
        }
        if (dgrad_op_desc_append_post_op(&desc, c->post[i].kind,
                    (size_t)c->post[i].n_attrs, names, values)
                != dgrad_success)
            return 0;
    }
    /* The operands as the runner builds them, in f32. */
    run_inputs_t ri;
    dgrad_logical_tensor_t out;
    cf_build_inputs(c, dgrad_f32, &ri);
    cf_lt_fill(&out, 3, dgrad_f32, &c->output, dgrad_property_type_variable);
    return dgrad_problem_resolve(&desc, ri.n, ri.lts, &out,
                   c->third == cf_third_shape ? c->shape_values : NULL,
                   c->third == cf_third_shape ? (size_t)c->n_shape : 0, r)
            == dgrad_success;
}

static void fuzz_disagree(const char *what, const cf_case_t *c, int axis,
        long long a, long long b) {
    fprintf(stderr, "%s: %s on axis %d: dialect layer %lld, model %lld\n",
            c->name, what, axis, a, b);
    abort();
}

/* The reference on a tiny resolved problem, on zero-filled buffers of the
 * spans the problem's strides reach. */
static void fuzz_reference(const dgrad_problem_t *p) {
    if (p->N > 64 || p->Cin > 64 || p->Cout > 64 || p->bias_stride > 64) return;
    int64_t out = p->N * p->Cout, in = 0, wei = 0, o = 0;
    for (int i = 0; i < p->nsp; i++) out *= p->Y[i]; /* resolve checked it fits */
    if (out > 4096) return;
    int64_t dims_in[5] = {p->N, p->Cin, p->X[0], p->X[1], p->X[2]};
    int64_t dims_out[5] = {p->N, p->Cout, p->Y[0], p->Y[1], p->Y[2]};
    int64_t dims_w[6] = {p->G, p->Cin / p->G, p->Cout / p->G, p->K[0], p->K[1], p->K[2]};
    for (int d = 0; d < 2 + p->nsp; d++) {
        in += (dims_in[d] - 1) * p->in_strides[d];
        o += (dims_out[d] - 1) * p->out_strides[d];
    }
    for (int d = 0; d < 3 + p->nsp; d++) wei += (dims_w[d] - 1) * p->wei_strides[d];
    if (in > 65536 || o > 65536 || wei > 65536) return;
    float *bi = calloc((size_t)in + 1, 4), *bw = calloc((size_t)wei + 1, 4);
    float *bo = calloc((size_t)o + 1, 4), *bb = calloc((size_t)p->Cout * (p->bias_stride + 1) + 1, 4);
    double *abs_sum = malloc((size_t)out * sizeof(double) + 1);
    if (bi && bw && bo && bb && abs_sum)
        dgrad_reference_compute(p, bi, bw, p->has_bias ? bb : NULL, bo, abs_sum);
    free(bi), free(bw), free(bo), free(bb), free(abs_sum);
}

static void fuzz_check_case(const cf_case_t *c) {
    dgrad_resolved_t r;
    cf_geom_t g;
    char why[256];
    int lib = fuzz_problem(c, &r);
    int model = cf_model_resolve(c, &g, why, sizeof why);
    if (!lib || !model || r.deferred) return;
    const dgrad_problem_t *p = &r.problem;
    if (p->G != g.G) fuzz_disagree("groups", c, -1, p->G, g.G);
    for (int i = 0; i < p->nsp; i++) {
        if (p->Y[i] != g.Y[i]) fuzz_disagree("output size", c, i, p->Y[i], g.Y[i]);
        if (p->PB[i] != g.PB[i]) fuzz_disagree("crop", c, i, p->PB[i], g.PB[i]);
    }
    /* The chains: algorithms, parameters and operand views. A leading
     * per-channel addition may have become the problem's bias
     * (bias_from_post_op): the model's first post-op is then compared
     * with the bias. */
    int shift = r.bias_from_post_op;
    if (p->n_post_ops + shift != g.n_post)
        fuzz_disagree("post-op count", c, -1, p->n_post_ops + shift, g.n_post);
    run_inputs_t ri;
    cf_build_inputs(c, dgrad_f32, &ri);
    for (int i = 0, k = (int)ri.n_own; i < g.n_post; i++) {
        const cf_post_view_t *b = &g.post[i];
        int64_t cs[2 + CF_MAX_SPATIAL];
        if (b->operand) cf_model_post_strides(&g, i, ri.lts[k++].strides, cs);
        if (i < shift) {
            if (!p->has_bias || b->alg != dgrad_post_add || !b->operand)
                fuzz_disagree("post-op taken as the bias", c, i, p->has_bias,
                        b->alg);
            for (int d = 0; d < 2 + p->nsp; d++)
                if (b->dims[d] != (d == 1 ? p->Cout : 1))
                    fuzz_disagree("bias post-op dim", c, d, b->dims[d],
                            d == 1 ? p->Cout : 1);
            if (p->Cout > 1 && p->bias_stride != cs[1])
                fuzz_disagree("bias post-op stride", c, 1, p->bias_stride,
                        cs[1]);
            continue;
        }
        const dgrad_post_op_t *a = &p->post_ops[i - shift];
        if (a->alg != b->alg) fuzz_disagree("post-op algorithm", c, i, a->alg, b->alg);
        if (a->alpha != b->alpha || a->beta != b->beta)
            fuzz_disagree("post-op alpha/beta (x1e6)", c, i,
                    (long long)(a->alpha * 1e6 + a->beta), (long long)(b->alpha * 1e6 + b->beta));
        if (!b->operand) continue;
        for (int d = 0; d < 2 + p->nsp; d++) {
            if (a->dims[d] != b->dims[d])
                fuzz_disagree("post-op operand dim", c, d, a->dims[d], b->dims[d]);
            if (a->dims[d] > 1 && a->strides[d] != cs[d])
                fuzz_disagree("post-op operand stride", c, d, a->strides[d], cs[d]);
        }
    }
    if (!p->n_post_ops) fuzz_reference(p); /* the chain needs operands */
    /* The translation into oneDNN Graph's dialect resolves to the same. */
    cf_case_t t;
    dgrad_resolved_t rt;
    if (cf_model_translate(c, &g, 1, 1, &t, why, sizeof why)) {
        if (!fuzz_problem(&t, &rt)) {
            fprintf(stderr, "%s: the dialect layer rejects the translation: %s\n",
                    c->name, dgrad_last_error_message());
            abort();
        }
        for (int i = 0; i < p->nsp; i++)
            if (rt.problem.PB[i] != p->PB[i] || rt.problem.Y[i] != p->Y[i])
                fuzz_disagree("translated crop/size", c, i, rt.problem.PB[i],
                        p->PB[i]);
    }
}

static void fuzz_on_case(cf_sink_t *s, const cf_case_t *c) { fuzz_check_case(c); }
static void fuzz_on_skip(cf_sink_t *s, const char *a, const char *b, const char *c) {}
static void fuzz_on_error(cf_sink_t *s, const char *a, const char *b) {}

static cf_sink_t fuzz_sink = {fuzz_on_case, fuzz_on_skip, fuzz_on_error};

#endif
