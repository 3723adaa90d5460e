/*
 * The conformance model's post-op chains: oneDNN Graph's element-wise ops
 * by name and attributes -> the reference's canonical algorithms and
 * parameters, and their operands -> broadcast views of the output. Written
 * from oneDNN 3.7.1's operation specifications (doc/graph/operations/
 * *.md: formulas, attribute tables) and dgrad.h's contract for
 * dgrad_op_append_post_op, not from src/post_ops.c, so that a slip there
 * shows as a mismatch instead of being shared by dgrad and its oracle.
 *
 * Readings of the specifications:
 * - Clamp min/max, Elu alpha, HardSigmoid alpha/beta and LeakyReLU alpha
 *   are required; SoftPlus beta is optional (1). HardSwish is HardSigmoid
 *   with alpha 1/6 and beta 1/2 (src * min(max(src + 3, 0), 6) / 6).
 *   ReLU is LeakyReLU with alpha 0.
 * - Elu's alpha is "arbitrary non-negative": a negative one is invalid.
 *   SoftPlus divides by beta: 0 is invalid.
 * - GELU takes no attribute in 3.7.1; dgrad.h adds an optional mode
 *   (gelu_erf, the 3.7.1 formula, or gelu_tanh), as later oneDNN Graph
 *   versions do, and the model follows dgrad.h there.
 * - Binary ops broadcast by numpy's rules (auto_broadcast numpy, the
 *   default) or not at all (none: equal shapes). In a chain the other
 *   operand broadcasts to the output, never the other way (the output
 *   keeps its shape).
 * - BiasAdd adds a 1-D bias along the channel axis its data_format names
 *   in the tensor it is applied to (NXC, the default: the last axis; NCX:
 *   axis 1), whatever the dialect of the op before it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "conform.h"

static int fail(char *why, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t size, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, size, fmt, args);
    va_end(args);
    return 0;
}

enum { UNARY, BINARY, BIAS_ADD };

/* What an attribute sets. */
enum { SET_ALPHA, SET_BETA, SET_MODE, SET_BROADCAST, SET_FORMAT };

typedef struct spec_attr {
    const char *name;
    int sets;
    int required;
} spec_attr_t;

typedef struct spec {
    const char *kind;
    int form;
    int32_t alg;
    double alpha, beta; /* fixed or default parameters */
    spec_attr_t attrs[2];
} spec_t;

static const spec_t specs[] = {
        {"Abs", UNARY, dgrad_post_abs, 0, 0, {{0}}},
        {"Clamp", UNARY, dgrad_post_clip, 0, 0,
                {{"min", SET_ALPHA, 1}, {"max", SET_BETA, 1}}},
        {"Elu", UNARY, dgrad_post_elu, 0, 0, {{"alpha", SET_ALPHA, 1}}},
        {"Exp", UNARY, dgrad_post_exp, 0, 0, {{0}}},
        {"GELU", UNARY, dgrad_post_gelu_erf, 0, 0, {{"mode", SET_MODE, 0}}},
        {"HardSigmoid", UNARY, dgrad_post_hardsigmoid, 0, 0,
                {{"alpha", SET_ALPHA, 1}, {"beta", SET_BETA, 1}}},
        {"HardSwish", UNARY, dgrad_post_hardswish, 1.0 / 6.0, 0.5, {{0}}},
        {"LeakyReLU", UNARY, dgrad_post_relu, 0, 0, {{"alpha", SET_ALPHA, 1}}},
        {"Log", UNARY, dgrad_post_log, 0, 0, {{0}}},
        {"Mish", UNARY, dgrad_post_mish, 0, 0, {{0}}},
        {"ReLU", UNARY, dgrad_post_relu, 0, 0, {{0}}},
        {"Round", UNARY, dgrad_post_round, 0, 0, {{0}}},
        {"Sigmoid", UNARY, dgrad_post_logistic, 0, 0, {{0}}},
        /* log(1 + exp(beta x)) / beta: the reference's alpha is beta */
        {"SoftPlus", UNARY, dgrad_post_soft_relu, 1, 0, {{"beta", SET_ALPHA, 0}}},
        {"Sqrt", UNARY, dgrad_post_sqrt, 0, 0, {{0}}},
        {"Square", UNARY, dgrad_post_square, 0, 0, {{0}}},
        {"Tanh", UNARY, dgrad_post_tanh, 0, 0, {{0}}},
        {"Add", BINARY, dgrad_post_add, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"Multiply", BINARY, dgrad_post_mul, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"Maximum", BINARY, dgrad_post_max, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"Minimum", BINARY, dgrad_post_min, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"Divide", BINARY, dgrad_post_div, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"Subtract", BINARY, dgrad_post_sub, 0, 0, {{"auto_broadcast", SET_BROADCAST, 0}}},
        {"BiasAdd", BIAS_ADD, dgrad_post_add, 0, 0, {{"data_format", SET_FORMAT, 0}}},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static const spec_t *spec_of(const char *kind) {
    for (size_t i = 0; i < N_SPECS; i++)
        if (!strcmp(specs[i].kind, kind)) return &specs[i];
    return NULL;
}

int cf_model_post_kind_operands(const char *kind) {
    const spec_t *s = spec_of(kind);
    return !s ? -1 : s->form != UNARY;
}

/* A finite f32 attribute value: the whole text a number. */
static int parse_f32(const char *text, double *v) {
    char *end;
    *v = strtod(text, &end);
    return end != text && !*end && isfinite(*v);
}

/* Post-op @p i's attributes into @p v; *numpy and *nxc for the operand. */
static int read_attrs(const cf_post_t *po, int i, const spec_t *s,
        cf_post_view_t *v, int *numpy, int *nxc, char *why, size_t size) {
    int seen[2] = {0, 0};
    for (int a = 0; a < po->n_attrs; a++) {
        const char *name = po->attrs[a].name, *text = po->attrs[a].value;
        int k = 0;
        while (k < 2 && !(s->attrs[k].name && !strcmp(s->attrs[k].name, name)))
            k++;
        if (k == 2)
            return fail(why, size, "post-op %d %s: '%s' is not one of its "
                    "attributes (%s%s%s)", i + 1, s->kind, name,
                    s->attrs[0].name ? s->attrs[0].name : "it has none",
                    s->attrs[1].name ? ", " : "",
                    s->attrs[1].name ? s->attrs[1].name : "");
        seen[k] = 1;
        double x;
        switch (s->attrs[k].sets) {
            case SET_ALPHA:
            case SET_BETA:
                if (!parse_f32(text, &x))
                    return fail(why, size, "post-op %d %s: %s '%s' is not a "
                            "finite number", i + 1, s->kind, name, text);
                *(s->attrs[k].sets == SET_ALPHA ? &v->alpha : &v->beta) = x;
                break;
            case SET_MODE:
                if (strcmp(text, "gelu_erf") && strcmp(text, "gelu_tanh"))
                    return fail(why, size, "post-op %d GELU: mode '%s' is "
                            "not gelu_erf or gelu_tanh", i + 1, text);
                v->alg = strcmp(text, "gelu_tanh") ? dgrad_post_gelu_erf
                                                   : dgrad_post_gelu_tanh;
                break;
            case SET_BROADCAST:
                if (strcmp(text, "numpy") && strcmp(text, "none"))
                    return fail(why, size, "post-op %d %s: auto_broadcast "
                            "'%s' is not numpy or none", i + 1, s->kind, text);
                *numpy = !strcmp(text, "numpy");
                break;
            default:
                if (strcmp(text, "NXC") && strcmp(text, "NCX"))
                    return fail(why, size, "post-op %d BiasAdd: data_format "
                            "'%s' is not NXC or NCX", i + 1, text);
                *nxc = !strcmp(text, "NXC");
                break;
        }
    }
    for (int k = 0; k < 2; k++)
        if (s->attrs[k].name && s->attrs[k].required && !seen[k])
            return fail(why, size, "post-op %d %s: attribute %s is required",
                    i + 1, s->kind, s->attrs[k].name);
    if (v->alg == dgrad_post_elu && v->alpha < 0)
        return fail(why, size, "post-op %d Elu: alpha %g is negative (the "
                "specification: non-negative)", i + 1, v->alpha);
    if (v->alg == dgrad_post_soft_relu && v->alpha == 0)
        return fail(why, size, "post-op %d SoftPlus: beta 0 (the formula "
                "divides by it)", i + 1);
    return 1;
}

/* The operand of post-op @p i against the output dims @p out (dialect
 * order, rank R): checked, and its view. */
static int read_operand(const cf_geom_t *g, const cf_post_t *po, int i,
        const spec_t *s, int numpy, int nxc, const int64_t *out,
        cf_post_view_t *v, char *why, size_t size) {
    const cf_tensor_t *t = &po->operand;
    const int R = 2 + g->nsp, r = t->ndims;
    char a[96], b[96];
    if (po->operand_dt && !cf_is_compute_type(po->operand_dt))
        return fail(why, size, "post-op %d %s: operand type %s is not f32, "
                "bf16 or f16", i + 1, s->kind,
                dgrad_data_type_name(po->operand_dt));
    if (r < 1 || r > R)
        return fail(why, size, "post-op %d %s: operand rank %d is not 1 to "
                "%d", i + 1, s->kind, r, R);
    for (int d = 0; d < r; d++)
        if (t->dims[d] < 1 || (t->has_strides && t->strides[d] < 0))
            return fail(why, size, "post-op %d %s: operand dims %s (each "
                    "at least 1, strides not negative)", i + 1, s->kind,
                    cf_format_ints(a, sizeof a, t->dims, r));
    v->rank = r;
    int upos[2 + CF_MAX_SPATIAL]; /* output axis (dialect order) -> operand */
    for (int u = 0; u < R; u++) upos[u] = -1;
    if (s->form == BIAS_ADD) {
        int ch = nxc ? R - 1 : 1;
        if (r != 1 || t->dims[0] != out[ch])
            return fail(why, size, "post-op %d BiasAdd: operand dims %s are "
                    "not one value per channel of axis %d (data_format %s) "
                    "of the output %s", i + 1,
                    cf_format_ints(a, sizeof a, t->dims, r), ch,
                    nxc ? "NXC" : "NCX", cf_format_ints(b, sizeof b, out, R));
        upos[ch] = 0;
    } else {
        int lead = R - r;
        if (!numpy && r != R)
            return fail(why, size, "post-op %d %s: auto_broadcast none needs "
                    "the output's rank %d, the operand has %d", i + 1, s->kind,
                    R, r);
        for (int q = 0; q < r; q++) {
            int64_t od = out[lead + q], td = t->dims[q];
            if (numpy ? td != 1 && td != od : td != od)
                return fail(why, size, "post-op %d %s: operand dims %s do not "
                        "%s the output %s", i + 1, s->kind,
                        cf_format_ints(a, sizeof a, t->dims, r),
                        numpy ? "broadcast (numpy, from the last axis) to"
                              : "equal (auto_broadcast none)",
                        cf_format_ints(b, sizeof b, out, R));
            upos[lead + q] = q;
        }
    }
    v->bias_axis = -1;
    for (int d = 0; d < R; d++) {
        int u = cf_model_act_pos(g, d);
        v->pos[d] = upos[u];
        v->dims[d] = upos[u] < 0 ? 1 : t->dims[upos[u]];
        if (s->form == BIAS_ADD && upos[u] == 0) v->bias_axis = d;
    }
    return 1;
}

int cf_model_post_ops(const cf_case_t *c, cf_geom_t *g, char *why,
        size_t size) {
    g->n_post = 0;
    if (c->n_post > DGRAD_MAX_POST_OPS)
        return fail(why, size, "%d post-ops: a chain holds at most %d",
                c->n_post, DGRAD_MAX_POST_OPS);
    int64_t out[2 + CF_MAX_SPATIAL];
    cf_model_output_dims(g, out);
    for (int i = 0; i < c->n_post; i++) {
        const cf_post_t *po = &c->post[i];
        const spec_t *s = spec_of(po->kind);
        if (!s)
            return fail(why, size, "post-op %d: '%s' is not a oneDNN Graph "
                    "op of a post-op chain", i + 1, po->kind);
        cf_post_view_t *v = &g->post[i];
        memset(v, 0, sizeof *v);
        v->alg = s->alg;
        v->alpha = s->alpha;
        v->beta = s->beta;
        v->bias_axis = -1;
        int numpy = 1, nxc = 1; /* the specifications' defaults */
        if (!read_attrs(po, i, s, v, &numpy, &nxc, why, size)) return 0;
        v->operand = s->form != UNARY;
        if (v->operand != po->has_operand)
            return fail(why, size, "post-op %d %s %s an operand", i + 1,
                    s->kind, v->operand ? "takes" : "takes no");
        if (v->operand
                && !read_operand(g, po, i, s, numpy, nxc, out, v, why, size))
            return 0;
    }
    g->n_post = c->n_post;
    return 1;
}

void cf_model_post_strides(const cf_geom_t *g, int i, const int64_t *user,
        int64_t *canon) {
    const cf_post_view_t *v = &g->post[i];
    for (int d = 0; d < 2 + g->nsp; d++)
        canon[d] = v->pos[d] < 0 || v->dims[d] == 1 ? 0 : user[v->pos[d]];
}

int cf_model_same_post(const cf_geom_t *a, const cf_geom_t *b) {
    if (a->n_post != b->n_post) return 0;
    for (int i = 0; i < a->n_post; i++) {
        const cf_post_view_t *x = &a->post[i], *y = &b->post[i];
        if (x->alg != y->alg || x->alpha != y->alpha || x->beta != y->beta
                || x->operand != y->operand
                || (x->operand && memcmp(x->dims, y->dims,
                                          (size_t)(2 + a->nsp) * sizeof *x->dims)))
            return 0;
    }
    return 1;
}

void cf_model_translate_post(const cf_case_t *c, const cf_geom_t *g,
        const cf_geom_t *t, cf_case_t *out) {
    const int R = 2 + g->nsp;
    out->n_post = c->n_post;
    for (int i = 0; i < c->n_post; i++) {
        const cf_post_t *src = &c->post[i];
        const cf_post_view_t *v = &g->post[i];
        cf_post_t *dst = &out->post[i];
        memset(dst, 0, sizeof *dst);
        snprintf(dst->kind, sizeof dst->kind, "%s", src->kind);
        dst->n_attrs = src->n_attrs;
        memcpy(dst->attrs, src->attrs, sizeof dst->attrs);
        dst->has_operand = src->has_operand;
        dst->operand_dt = src->operand_dt;
        if (!v->operand) continue;
        cf_tensor_t *o = &dst->operand;
        if (v->bias_axis >= 0) {
            int u = cf_model_act_pos(t, v->bias_axis);
            if (u == 1 || u == R - 1) { /* still a channel axis there */
                o->ndims = 1;
                o->dims[0] = v->dims[v->bias_axis];
                dst->n_attrs = 1;
                snprintf(dst->attrs[0].name, sizeof dst->attrs[0].name,
                        "data_format");
                snprintf(dst->attrs[0].value, sizeof dst->attrs[0].value,
                        "%s", u == 1 ? "NCX" : "NXC");
                continue;
            }
            /* the bias as the full-rank operand of an Add */
            snprintf(dst->kind, sizeof dst->kind, "Add");
            dst->n_attrs = 0;
        }
        o->ndims = R;
        for (int d = 0; d < R; d++) o->dims[cf_model_act_pos(t, d)] = v->dims[d];
    }
}
