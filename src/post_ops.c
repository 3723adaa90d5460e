/*
 * Post-ops in the dialect layer: the oneDNN Graph ops that may follow a
 * transposed convolution in one partition, by name and attributes ->
 * canonical algorithms (canonical.h), and their operands -> canonical
 * broadcast views of the output (resolve_post_ops, a step of resolve.c).
 *
 * Decisions the specification leaves open:
 * - Every dialect takes the same post-ops, named as oneDNN Graph names
 *   them: a graph compiler fuses the ops of its graph, whatever dialect
 *   the transposed convolution came from.
 * - A binary op's other operand broadcasts to the output (numpy rules,
 *   counted from the last axis), never the output to it: the chain
 *   cannot change the output's shape. auto_broadcast "none" asks for the
 *   output's dims exactly.
 * - BiasAdd's data_format says where its channel axis is in the tensor it
 *   is applied to (NXC: the last axis), as for oneDNN Graph's BiasAdd
 *   alone; its operand has that axis's length.
 * - GELU takes an optional mode, gelu_erf (the default) or gelu_tanh, as
 *   newer oneDNN Graph versions do.
 * - Binary operands are f32, bf16 or f16, whatever the op's type.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect_impl.h"

enum { UNARY, BINARY, BIAS };

typedef struct post_op_info {
    const char *name;
    int form;
    int32_t alg;
    double alpha, beta; /* defaults */
    /* The attributes that set alpha and beta (NULL: fixed), and whether
     * they are required. */
    const char *alpha_attr, *beta_attr;
    int alpha_required, beta_required;
} post_op_info_t;

static const post_op_info_t infos[] = {
        {"Abs", UNARY, dgrad_post_abs, 0, 0, NULL, NULL, 0, 0},
        {"Clamp", UNARY, dgrad_post_clip, 0, 0, "min", "max", 1, 1},
        {"Elu", UNARY, dgrad_post_elu, 0, 0, "alpha", NULL, 1, 0},
        {"Exp", UNARY, dgrad_post_exp, 0, 0, NULL, NULL, 0, 0},
        {"GELU", UNARY, dgrad_post_gelu_erf, 0, 0, NULL, NULL, 0, 0},
        {"HardSigmoid", UNARY, dgrad_post_hardsigmoid, 0, 0, "alpha", "beta",
                1, 1},
        {"HardSwish", UNARY, dgrad_post_hardswish, 1.0 / 6, 0.5, NULL, NULL,
                0, 0},
        {"LeakyReLU", UNARY, dgrad_post_relu, 0, 0, "alpha", NULL, 1, 0},
        {"Log", UNARY, dgrad_post_log, 0, 0, NULL, NULL, 0, 0},
        {"Mish", UNARY, dgrad_post_mish, 0, 0, NULL, NULL, 0, 0},
        {"ReLU", UNARY, dgrad_post_relu, 0, 0, NULL, NULL, 0, 0},
        {"Round", UNARY, dgrad_post_round, 0, 0, NULL, NULL, 0, 0},
        {"Sigmoid", UNARY, dgrad_post_logistic, 0, 0, NULL, NULL, 0, 0},
        {"SoftPlus", UNARY, dgrad_post_soft_relu, 1, 0, "beta", NULL, 0, 0},
        {"Sqrt", UNARY, dgrad_post_sqrt, 0, 0, NULL, NULL, 0, 0},
        {"Square", UNARY, dgrad_post_square, 0, 0, NULL, NULL, 0, 0},
        {"Tanh", UNARY, dgrad_post_tanh, 0, 0, NULL, NULL, 0, 0},
        {"Add", BINARY, dgrad_post_add, 0, 0, NULL, NULL, 0, 0},
        {"Multiply", BINARY, dgrad_post_mul, 0, 0, NULL, NULL, 0, 0},
        {"Maximum", BINARY, dgrad_post_max, 0, 0, NULL, NULL, 0, 0},
        {"Minimum", BINARY, dgrad_post_min, 0, 0, NULL, NULL, 0, 0},
        {"Divide", BINARY, dgrad_post_div, 0, 0, NULL, NULL, 0, 0},
        {"Subtract", BINARY, dgrad_post_sub, 0, 0, NULL, NULL, 0, 0},
        {"BiasAdd", BIAS, dgrad_post_add, 0, 0, NULL, NULL, 0, 0},
};

static const post_op_info_t *info_named(const char *name) {
    for (int i = 0; i < N_CHOICES(infos); i++)
        if (!strcmp(infos[i].name, name)) return &infos[i];
    return NULL;
}

/* The attribute names an op takes, for messages ("none" when it takes
 * none). */
static const char *attr_list(const post_op_info_t *in, char *buf,
        size_t size) {
    const char *names[2] = {in->alpha_attr, in->beta_attr};
    if (in->form == BINARY) names[0] = "auto_broadcast";
    if (in->form == BIAS) names[0] = "data_format";
    if (in->alg == dgrad_post_gelu_erf) names[0] = "mode";
    snprintf(buf, size, "%s%s%s", names[0] ? names[0] : "none",
            names[1] ? ", " : "", names[1] ? names[1] : "");
    return buf;
}

static dgrad_status_t post_error(const dgrad_op_desc_t *desc,
        dgrad_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static dgrad_status_t post_error(const dgrad_op_desc_t *desc,
        dgrad_status_t status, const char *fmt, ...) {
    char msg[700];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    const kind_info_t *ki = kind_info(desc->kind);
    return op_error(ki ? ki->name : "post-op", status, "post-op %d %s",
            (int)desc->n_post_ops + 1, msg);
}

/* A finite number, the whole text. */
static int parse_double(const char *text, double *v) {
    char *end;
    *v = strtod(text, &end);
    return end != text && !*end && isfinite(*v);
}

/* One attribute of post-op @p in into @p po. */
static dgrad_status_t set_attr(const dgrad_op_desc_t *desc,
        const post_op_info_t *in, dgrad_post_op_desc_t *po, const char *name,
        const char *value, int *seen) {
    char list[64];
    if (in->form == BINARY && !strcmp(name, "auto_broadcast")) {
        if (strcmp(value, "numpy") && strcmp(value, "none"))
            return post_error(desc, dgrad_invalid_arguments, "(%s): "
                    "auto_broadcast '%.32s' is not one of numpy, none",
                    in->name, value);
        po->numpy = !strcmp(value, "numpy");
        return dgrad_success;
    }
    if (in->form == BIAS && !strcmp(name, "data_format")) {
        if (strcmp(value, "NXC") && strcmp(value, "NCX"))
            return post_error(desc, dgrad_invalid_arguments, "(%s): "
                    "data_format '%.32s' is not one of NXC, NCX", in->name,
                    value);
        po->channels_last = !strcmp(value, "NXC");
        return dgrad_success;
    }
    if (in->alg == dgrad_post_gelu_erf && !strcmp(name, "mode")) {
        if (strcmp(value, "gelu_erf") && strcmp(value, "gelu_tanh"))
            return post_error(desc, dgrad_invalid_arguments, "(%s): mode "
                    "'%.32s' is not one of gelu_erf, gelu_tanh", in->name,
                    value);
        po->alg = strcmp(value, "gelu_erf") ? dgrad_post_gelu_tanh
                                             : dgrad_post_gelu_erf;
        return dgrad_success;
    }
    int which = in->alpha_attr && !strcmp(name, in->alpha_attr) ? 1
            : in->beta_attr && !strcmp(name, in->beta_attr) ? 2 : 0;
    if (!which)
        return post_error(desc, dgrad_invalid_arguments, "(%s): unknown "
                "attribute '%.32s' (it has: %s)", in->name, name,
                attr_list(in, list, sizeof list));
    double v;
    if (!parse_double(value, &v))
        return post_error(desc, dgrad_invalid_arguments, "(%s): %s '%.32s' "
                "is not a finite number", in->name, name, value);
    if (in->alg == dgrad_post_elu && v < 0)
        return post_error(desc, dgrad_invalid_arguments, "(%s): alpha (%g) "
                "must be non-negative (oneDNN Graph's Elu)", in->name, v);
    if (in->alg == dgrad_post_soft_relu && v == 0)
        return post_error(desc, dgrad_invalid_arguments, "(%s): beta must "
                "not be 0 (the result is log(1 + exp(beta x)) / beta)",
                in->name);
    *(which == 1 ? &po->alpha : &po->beta) = v;
    *seen |= which;
    return dgrad_success;
}

dgrad_status_t dgrad_op_desc_append_post_op(dgrad_op_desc_t *desc,
        const char *kind, size_t n_attrs, const char *const *names,
        const char *const *values) {
    if (!desc || !kind || (n_attrs && (!names || !values)))
        return dgrad_error(dgrad_invalid_arguments, "appending a post-op: "
                "%s is NULL", !desc ? "op description" : !kind ? "kind"
                        : !names ? "names" : "values");
    if (!kind_info(desc->kind))
        return dgrad_error(dgrad_invalid_arguments, "appending a post-op: "
                "unknown op kind (%d)", (int)desc->kind);
    const post_op_info_t *in = info_named(kind);
    if (!in)
        return post_error(desc, dgrad_invalid_arguments, "'%.32s' is not a "
                "post-op dgrad fuses (Abs, Clamp, Elu, Exp, GELU, "
                "HardSigmoid, HardSwish, LeakyReLU, Log, Mish, ReLU, Round, "
                "Sigmoid, SoftPlus, Sqrt, Square, Tanh, Add, Multiply, "
                "Maximum, Minimum, Divide, Subtract, BiasAdd)", kind);
    if (desc->n_post_ops >= DGRAD_MAX_POST_OPS)
        return post_error(desc, dgrad_invalid_arguments, "(%s): a chain "
                "holds at most %d post-ops", in->name, DGRAD_MAX_POST_OPS);
    dgrad_post_op_desc_t po;
    memset(&po, 0, sizeof po);
    snprintf(po.kind, sizeof po.kind, "%s", in->name);
    po.alg = in->alg;
    po.alpha = in->alpha;
    po.beta = in->beta;
    po.has_operand = in->form != UNARY;
    po.bias_add = in->form == BIAS;
    po.channels_last = 1; /* BiasAdd's default data_format: NXC */
    po.numpy = 1;
    int seen = 0;
    for (size_t a = 0; a < n_attrs; a++) {
        if (!names[a] || !values[a])
            return post_error(desc, dgrad_invalid_arguments, "(%s): "
                    "attribute %zu has a NULL %s", in->name, a,
                    !names[a] ? "name" : "value");
        dgrad_status_t st = set_attr(desc, in, &po, names[a], values[a],
                &seen);
        if (st != dgrad_success) return st;
    }
    const char *missing = in->alpha_required && !(seen & 1) ? in->alpha_attr
            : in->beta_required && !(seen & 2) ? in->beta_attr : NULL;
    if (missing)
        return post_error(desc, dgrad_invalid_arguments, "(%s): attribute %s "
                "is required", in->name, missing);
    desc->post_ops[desc->n_post_ops++] = po;
    return dgrad_success;
}

int dgrad_post_op_kind_known(const char *kind) {
    return kind && info_named(kind) != NULL;
}

int dgrad_op_desc_post_operands(const dgrad_op_desc_t *desc) {
    int n = 0;
    for (int i = 0; i < desc->n_post_ops; i++) n += desc->post_ops[i].has_operand;
    return n;
}

/* ------------------------------------------ resolve step: the operands */

static int is_float(dgrad_data_type_t t) {
    return t == dgrad_f32 || t == dgrad_bf16 || t == dgrad_f16;
}

/* Operand @p t of post-op @p i against the output @p o (dialect order):
 * checked, then described in canonical order into @p po. */
static dgrad_status_t map_operand(const ctx_t *c, int i, int input,
        const dgrad_logical_tensor_t *t, const dgrad_logical_tensor_t *o,
        dgrad_post_op_t *po) {
    const dgrad_post_op_desc_t *pd = &c->desc->post_ops[i];
    char a[200], b[200];
    const char *what = pd->kind;
    int R = o->ndims, r = t->ndims;
    if (t->layout_type != dgrad_layout_type_strided)
        return op_error(c->op, dgrad_invalid_arguments, "post-op %d (%s) "
                "operand (input %d) layout must be strided", i + 1, what,
                input);
    if (!is_float(t->data_type))
        return op_error(c->op, dgrad_invalid_data_type, "post-op %d (%s) "
                "operand (input %d) data type (%s) is not one of f32, bf16, "
                "f16", i + 1, what, input, dgrad_data_type_name(t->data_type));
    if (r < 1 || r > R || !all_dims_known(t))
        return op_error(c->op, dgrad_invalid_shape, "post-op %d (%s) "
                "operand (input %d) rank (%d) must be 1 to %d, its dims "
                "known", i + 1, what, input, r, R);
    for (int d = 0; d < r; d++)
        if (t->dims[d] < 1 || t->strides[d] < 0)
            return op_error(c->op, dgrad_invalid_shape, "post-op %d (%s) "
                    "operand (input %d) dims (%s) must be at least 1 and "
                    "its strides (%s) non-negative", i + 1, what, input,
                    DIMS(a, t->dims, r), DIMS(b, t->strides, r));
    /* Position in the operand of each output axis, -1 when broadcast. */
    int pos[DGRAD_MAX_NDIMS];
    for (int d = 0; d < R; d++) pos[d] = -1;
    if (pd->bias_add) {
        int ch = pd->channels_last ? R - 1 : 1;
        if (r != 1 || (o->dims[ch] != DGRAD_UNKNOWN_DIM
                              && t->dims[0] != o->dims[ch]))
            return op_error(c->op, dgrad_invalid_shape, "post-op %d "
                    "(BiasAdd) operand (input %d) dims (%s) must be one "
                    "value per channel: %s dims are (%s), data_format %s",
                    i + 1, input, DIMS(a, t->dims, r), tname(c, T_OUT),
                    DIMS(b, o->dims, R), pd->channels_last ? "NXC" : "NCX");
        pos[ch] = 0;
    } else {
        int lead = R - r, ok = pd->numpy || r == R;
        for (int d = 0; d < r && ok; d++) {
            int64_t od = o->dims[lead + d], td = t->dims[d];
            ok = od == DGRAD_UNKNOWN_DIM ? 1 : pd->numpy ? td == 1 || td == od
                                                        : td == od;
            if (td != 1 || !pd->numpy) pos[lead + d] = d;
        }
        if (!ok)
            return op_error(c->op, dgrad_invalid_shape, "post-op %d (%s) "
                    "operand (input %d) dims (%s) do not broadcast to %s "
                    "dims (%s): %s", i + 1, what, input, DIMS(a, t->dims, r),
                    tname(c, T_OUT), DIMS(b, o->dims, R), pd->numpy
                            ? "counted from the last axis, each must be 1 "
                              "or equal"
                            : "auto_broadcast none asks for equal dims");
    }
    po->dt = t->data_type;
    for (int d = 0; d < 2 + c->nsp; d++) {
        int q = pos[act_pos(c, d)];
        po->dims[d] = q < 0 ? 1 : t->dims[q];
        po->strides[d] = q < 0 || t->dims[q] == 1 ? 0 : t->strides[q];
    }
    return dgrad_success;
}

/* A chain that starts by adding one value per output channel (BiasAdd, or
 * Add of a [C, 1...] operand) to an op without a bias: that addition is
 * the op's bias, the same sum in the same place (before the rest of the
 * chain, in f32 at least), so the lowering sees a biased op with a
 * shorter chain, and the bias rides wherever a bias can (a folded plan's
 * convolution, the bias add that carries the chain). Only in the op's
 * type: the problem has one type for data, weights, bias and output. */
static void bias_from_first_post_op(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    const dgrad_post_op_t *po = &p->post_ops[0];
    c->r.bias_from_post_op = 0;
    if (p->has_bias || p->n_post_ops == 0 || po->alg != dgrad_post_add
            || po->dt != p->dt || po->dims[0] != 1 || po->dims[1] != p->Cout)
        return;
    for (int d = 0; d < p->nsp; d++)
        if (po->dims[2 + d] != 1) return;
    p->has_bias = 1;
    p->bias_stride = po->strides[1];
    p->n_post_ops--;
    memmove(&p->post_ops[0], &p->post_ops[1],
            (size_t)p->n_post_ops * sizeof p->post_ops[0]);
    memset(&p->post_ops[p->n_post_ops], 0, sizeof p->post_ops[0]);
    c->r.bias_from_post_op = 1;
}

dgrad_status_t resolve_post_ops(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    int k = 0;
    for (int i = 0; i < c->desc->n_post_ops; i++) {
        const dgrad_post_op_desc_t *pd = &c->desc->post_ops[i];
        dgrad_post_op_t *po = &p->post_ops[i];
        memset(po, 0, sizeof *po);
        po->alg = pd->alg;
        po->alpha = pd->alpha;
        po->beta = pd->beta;
        if (pd->has_operand) {
            dgrad_status_t st = map_operand(c, i, (int)c->n_inputs + k,
                    &c->operands[k], &c->r.output, po);
            if (st != dgrad_success) return st;
            k++;
        }
    }
    p->n_post_ops = c->desc->n_post_ops;
    bias_from_first_post_op(c);
    return dgrad_success;
}
