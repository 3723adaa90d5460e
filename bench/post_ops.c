/*
 * --post-ops: the chain a problem runs with, read from oneDNN Graph's op
 * names or benchdnn's --attr-post-ops spelling; its operands' shapes; and
 * the unfused chain, one oneDNN pass over the output per post-op.
 *
 * The canonical form of each post-op (algorithm, alpha, beta, operand
 * dims and strides) is derived here from the spelling, not through
 * dgrad's dialect layer (src/post_ops.c), so that the raw baseline, the
 * unfused passes and the arbiter do not inherit a mistake of dgrad's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "bench.h"
#include "canonical.h"
#include "plan/onednn_compat.h"

/* ---------------------------------------------------------------- spelling */

/* A name a post-op may be written with: oneDNN Graph's op (any case) or
 * benchdnn's eltwise and binary names. Positional arguments set the
 * attributes in attrs[] in order, which are canonical alpha then beta. */
typedef struct spelling {
    const char *name;
    const char *kind;     /* the oneDNN Graph op dgrad is given */
    int32_t alg;          /* dgrad_post_alg_t */
    const char *attrs[2]; /* what positional arguments set */
    int required;         /* how many of them must be given */
    double alpha, beta;   /* canonical defaults */
} spelling_t;

static const spelling_t spellings[] = {
        {"abs", "Abs", dgrad_post_abs, {NULL, NULL}, 0, 0, 0},
        {"clamp", "Clamp", dgrad_post_clip, {"min", "max"}, 2, 0, 0},
        {"clip", "Clamp", dgrad_post_clip, {"min", "max"}, 2, 0, 0},
        {"elu", "Elu", dgrad_post_elu, {"alpha", NULL}, 1, 0, 0},
        {"exp", "Exp", dgrad_post_exp, {NULL, NULL}, 0, 0, 0},
        {"gelu", "GELU", dgrad_post_gelu_erf, {NULL, NULL}, 0, 0, 0},
        {"gelu_erf", "GELU", dgrad_post_gelu_erf, {NULL, NULL}, 0, 0, 0},
        {"gelu_tanh", "GELU", dgrad_post_gelu_tanh, {NULL, NULL}, 0, 0, 0},
        {"hardsigmoid", "HardSigmoid", dgrad_post_hardsigmoid,
                {"alpha", "beta"}, 2, 0, 0},
        {"hardswish", "HardSwish", dgrad_post_hardswish, {NULL, NULL}, 0,
                1.0 / 6, 0.5},
        {"leakyrelu", "LeakyReLU", dgrad_post_relu, {"alpha", NULL}, 1, 0, 0},
        {"log", "Log", dgrad_post_log, {NULL, NULL}, 0, 0, 0},
        {"logistic", "Sigmoid", dgrad_post_logistic, {NULL, NULL}, 0, 0, 0},
        {"mish", "Mish", dgrad_post_mish, {NULL, NULL}, 0, 0, 0},
        /* benchdnn's relu:ALPHA is a leaky one */
        {"relu", "ReLU", dgrad_post_relu, {"alpha", NULL}, 0, 0, 0},
        {"round", "Round", dgrad_post_round, {NULL, NULL}, 0, 0, 0},
        {"sigmoid", "Sigmoid", dgrad_post_logistic, {NULL, NULL}, 0, 0, 0},
        {"soft_relu", "SoftPlus", dgrad_post_soft_relu, {"beta", NULL}, 0,
                1, 0},
        {"softplus", "SoftPlus", dgrad_post_soft_relu, {"beta", NULL}, 0, 1,
                0},
        {"sqrt", "Sqrt", dgrad_post_sqrt, {NULL, NULL}, 0, 0, 0},
        {"square", "Square", dgrad_post_square, {NULL, NULL}, 0, 0, 0},
        {"tanh", "Tanh", dgrad_post_tanh, {NULL, NULL}, 0, 0, 0},
        {"add", "Add", dgrad_post_add, {NULL, NULL}, 0, 0, 0},
        {"sum", "Add", dgrad_post_add, {NULL, NULL}, 0, 0, 0},
        {"bias", "BiasAdd", dgrad_post_add, {NULL, NULL}, 0, 0, 0},
        {"biasadd", "BiasAdd", dgrad_post_add, {NULL, NULL}, 0, 0, 0},
        {"mul", "Multiply", dgrad_post_mul, {NULL, NULL}, 0, 0, 0},
        {"multiply", "Multiply", dgrad_post_mul, {NULL, NULL}, 0, 0, 0},
        {"max", "Maximum", dgrad_post_max, {NULL, NULL}, 0, 0, 0},
        {"maximum", "Maximum", dgrad_post_max, {NULL, NULL}, 0, 0, 0},
        {"min", "Minimum", dgrad_post_min, {NULL, NULL}, 0, 0, 0},
        {"minimum", "Minimum", dgrad_post_min, {NULL, NULL}, 0, 0, 0},
        {"div", "Divide", dgrad_post_div, {NULL, NULL}, 0, 0, 0},
        {"divide", "Divide", dgrad_post_div, {NULL, NULL}, 0, 0, 0},
        {"sub", "Subtract", dgrad_post_sub, {NULL, NULL}, 0, 0, 0},
        {"subtract", "Subtract", dgrad_post_sub, {NULL, NULL}, 0, 0, 0},
};

/* An operand's broadcast policy: benchdnn's names and dgrad's. */
static const struct {
    const char *name;
    bench_operand_t operand;
} policies[] = {
        {"common", bench_operand_scalar}, {"scalar", bench_operand_scalar},
        {"per_oc", bench_operand_channel}, {"per_dim_1", bench_operand_channel},
        {"per_channel", bench_operand_channel},
        {"per_position", bench_operand_position},
        {"per_spatial", bench_operand_position},
        {"per_tensor", bench_operand_full}, {"full", bench_operand_full},
};

static int parse_number(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v) ? 0 : -1;
}

/* One post-op: NAME[:ARG...] in @p item. */
static int parse_one(const char *item, bench_post_op_t *op, char *err,
        size_t err_size) {
    char buf[128], *args[3];
    int n_args = 0;
    if (strlen(item) >= sizeof buf) {
        snprintf(err, err_size, "post-op '%.40s...': longer than %zu "
                "characters", item, sizeof buf - 1);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", item);
    for (char *c = strchr(buf, ':'); c; c = strchr(c + 1, ':')) {
        if (n_args == 3) {
            snprintf(err, err_size, "post-op '%s': more than 3 arguments",
                    item);
            return -1;
        }
        *c = 0;
        args[n_args++] = c + 1;
    }
    const spelling_t *sp = NULL;
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        if (!strcasecmp(buf, spellings[i].name)) sp = &spellings[i];
    if (!sp) {
        snprintf(err, err_size, "post-op '%s': unknown name '%s' (oneDNN "
                "Graph's Abs, Clamp, Elu, Exp, GELU, HardSigmoid, HardSwish, "
                "LeakyReLU, Log, Mish, ReLU, Round, Sigmoid, SoftPlus, Sqrt, "
                "Square, Tanh, Add, Multiply, Maximum, Minimum, Divide, "
                "Subtract, BiasAdd, or benchdnn's names: see bench/README.md)",
                item, buf);
        return -1;
    }
    memset(op, 0, sizeof *op);
    snprintf(op->kind, sizeof op->kind, "%s", sp->kind);
    op->alg = sp->alg;
    op->alpha = sp->alpha;
    op->beta = sp->beta;
    if (op->alg == dgrad_post_gelu_tanh) {
        snprintf(op->names[0], sizeof op->names[0], "mode");
        snprintf(op->values[0], sizeof op->values[0], "gelu_tanh");
        op->n_attrs = 1;
    }
    if (dgrad_post_alg_is_binary(op->alg)) {
        int is_sum = !strcasecmp(sp->name, "sum");
        op->operand = !strcmp(sp->kind, "BiasAdd") ? bench_operand_channel
                : bench_operand_full;
        for (int a = 0; a < n_args; a++) {
            double v;
            if (!strcmp(args[a], "f32")) op->operand_dt = dgrad_f32;
            else if (!strcmp(args[a], "bf16")) op->operand_dt = dgrad_bf16;
            else if (!strcmp(args[a], "f16")) op->operand_dt = dgrad_f16;
            else if (is_sum && a == 0 && !parse_number(args[a], &v) && v == 1)
                continue; /* benchdnn's scale: dgrad's Add has none */
            else {
                int found = 0;
                for (size_t i = 0; i < sizeof policies / sizeof policies[0];
                        i++)
                    if (!strcmp(args[a], policies[i].name)) {
                        op->operand = policies[i].operand;
                        found = 1;
                    }
                if (!found || is_sum || !strcmp(sp->kind, "BiasAdd")) {
                    snprintf(err, err_size, "post-op '%s': argument '%s' is "
                            "not %s", item, args[a], is_sum
                                    ? "a data type or the scale 1 (sum adds "
                                      "a tensor of the output's shape)"
                                    : !strcmp(sp->kind, "BiasAdd")
                                    ? "a data type (a bias is per channel)"
                                    : "a data type (f32, bf16, f16) or a "
                                      "policy (common, per_oc, per_position, "
                                      "per_tensor)");
                    return -1;
                }
            }
        }
        return 0;
    }
    int n_attr_args = (sp->attrs[0] != NULL) + (sp->attrs[1] != NULL);
    int hardswish = op->alg == dgrad_post_hardswish;
    if (n_args < sp->required || (n_args > n_attr_args && !hardswish)
            || n_args > 2) {
        snprintf(err, err_size, "post-op '%s': %s takes %s%d argument%s "
                "(%s%s%s)", item, sp->name,
                sp->required < n_attr_args ? "up to " : "", n_attr_args,
                n_attr_args == 1 ? "" : "s",
                sp->attrs[0] ? sp->attrs[0] : "none",
                sp->attrs[1] ? ", " : "", sp->attrs[1] ? sp->attrs[1] : "");
        return -1;
    }
    for (int a = 0; a < n_args; a++) {
        double v;
        if (parse_number(args[a], &v)) {
            snprintf(err, err_size, "post-op '%s': argument '%s' is not a "
                    "finite number", item, args[a]);
            return -1;
        }
        if (hardswish) {
            /* benchdnn's hardswish:ALPHA:BETA; oneDNN Graph's is fixed */
            if (v != (a == 0 ? 1.0 / 6 : 0.5) && fabs(v - (a == 0 ? 1.0 / 6
                    : 0.5)) > 1e-6) {
                snprintf(err, err_size, "post-op '%s': oneDNN Graph's "
                        "HardSwish is x * min(max(x/6 + 1/2, 0), 1): alpha "
                        "1/6 and beta 0.5 only", item);
                return -1;
            }
            continue;
        }
        if (op->alg == dgrad_post_relu && a == 0 && v != 0)
            snprintf(op->kind, sizeof op->kind, "LeakyReLU");
        else if (op->alg == dgrad_post_relu)
            continue; /* relu:0 is ReLU */
        *(a == 0 ? &op->alpha : &op->beta) = v;
        snprintf(op->names[op->n_attrs], sizeof op->names[0], "%s",
                sp->attrs[a]);
        snprintf(op->values[op->n_attrs], sizeof op->values[0], "%.17g", v);
        op->n_attrs++;
    }
    if (op->alg == dgrad_post_soft_relu && op->alpha == 0) {
        snprintf(err, err_size, "post-op '%s': SoftPlus's beta must not be 0",
                item);
        return -1;
    }
    if (op->alg == dgrad_post_elu && op->alpha < 0) {
        snprintf(err, err_size, "post-op '%s': Elu's alpha must be "
                "non-negative (oneDNN Graph's Elu)", item);
        return -1;
    }
    return 0;
}

int bench_chain_parse(const char *text, bench_chain_t *c, char *err,
        size_t err_size) {
    memset(c, 0, sizeof *c);
    if (strlen(text) >= sizeof c->text) {
        snprintf(err, err_size, "--post-ops: longer than %zu characters",
                sizeof c->text - 1);
        return -1;
    }
    if (strchr(text, ',')) {
        snprintf(err, err_size, "--post-ops '%s': one chain per run (benchdnn's "
                "comma-separated lists of chains are not taken)", text);
        return -1;
    }
    snprintf(c->text, sizeof c->text, "%s", text);
    char buf[sizeof c->text];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *item = strtok_r(buf, "+", &save); item;
            item = strtok_r(NULL, "+", &save)) {
        if (c->n == BENCH_MAX_POST_OPS) {
            snprintf(err, err_size, "--post-ops '%s': more than %d post-ops",
                    text, BENCH_MAX_POST_OPS);
            return -1;
        }
        if (parse_one(item, &c->ops[c->n], err, err_size)) return -1;
        c->n++;
    }
    if (c->n == 0) {
        snprintf(err, err_size, "--post-ops '%s': no post-op", text);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- operands */

double bench_operand_elems(const bench_post_op_t *op, const bench_desc_t *d) {
    double n = 1;
    switch (op->operand) {
    case bench_operand_none: return 0;
    case bench_operand_scalar: return 1;
    case bench_operand_channel: return (double)d->oc;
    case bench_operand_full: n = (double)d->mb * (double)d->oc;
        /* fall through */
    case bench_operand_position:
        for (int a = 0; a < d->nsp; a++) n *= (double)d->o[a];
        return n;
    }
    return 0;
}

dgrad_data_type_t bench_operand_dt(const bench_post_op_t *op,
        dgrad_data_type_t dt) {
    return op->operand_dt != dgrad_data_type_undef ? op->operand_dt : dt;
}

int bench_operand_canonical(const bench_post_op_t *op, const bench_desc_t *d,
        int nxc, int64_t *dims, int64_t *strides) {
    int nd = 2 + d->nsp;
    int full = op->operand == bench_operand_full;
    dims[0] = full ? d->mb : 1;
    dims[1] = full || op->operand == bench_operand_channel ? d->oc : 1;
    for (int a = 0; a < d->nsp; a++)
        dims[2 + a] = full || op->operand == bench_operand_position
                ? d->o[a] : 1;
    /* Dense in the user's order: channels innermost in NXC. */
    int64_t acc = 1;
    if (nxc) {
        strides[1] = acc;
        acc *= dims[1];
    }
    for (int a = nd - 1; a >= 2; a--) {
        strides[a] = acc;
        acc *= dims[a];
    }
    if (!nxc) {
        strides[1] = acc;
        acc *= dims[1];
    }
    strides[0] = acc;
    return nd;
}

/* ---------------------------------------------------------------- passes */

int bench_dnnl_binary_alg(int32_t alg) {
    switch (alg) {
    case dgrad_post_mul: return dnnl_binary_mul;
    case dgrad_post_max: return dnnl_binary_max;
    case dgrad_post_min: return dnnl_binary_min;
    case dgrad_post_div: return dnnl_binary_div;
    case dgrad_post_sub: return dnnl_binary_sub;
    default: return dnnl_binary_add;
    }
}

int bench_dnnl_dt(dgrad_data_type_t dt) {
    return dt == dgrad_bf16 ? dnnl_bf16 : dt == dgrad_f16 ? dnnl_f16
                                                          : dnnl_f32;
}

/* The unfused chain as a oneDNN user runs it: one binary primitive per
 * post-op, in place on the output (src0 = dst). A unary post-op is the
 * eltwise post-op of an add of a zero scalar, which every oneDNN version
 * builds for every algorithm dgrad takes (post_ops_append_unary writes
 * 2.x's missing ones as sequences); it reads and writes the output once,
 * as an eltwise primitive would. */
struct bench_passes {
    int n;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim[BENCH_MAX_POST_OPS];
    dnnl_memory_t src1[BENCH_MAX_POST_OPS];
    dnnl_memory_t out;
    float zero;
};

bench_passes_t *bench_passes_create(const bench_chain_t *c,
        const bench_desc_t *d, dgrad_data_type_t dt, int nxc, void *out,
        void *const *operands, char *err, size_t err_size) {
    bench_passes_t *p = calloc(1, sizeof *p);
    md_t out_md = MD_EMPTY, src1_md = MD_EMPTY;
    int64_t dims[5], strides[5], ones[5] = {1, 1, 1, 1, 1};
    bench_post_op_t whole = {.operand = bench_operand_full};
    const char *what = "engine";
    dnnl_status_t s = p ? dnnl_engine_create(&p->engine, dnnl_cpu, 0)
                        : dnnl_out_of_memory;
    if (s == dnnl_success) s = dnnl_stream_create(&p->stream, p->engine,
            dnnl_stream_default_flags);
    int nd = bench_operand_canonical(&whole, d, nxc, dims, strides);
    if (s == dnnl_success) {
        what = "the output's memory descriptor";
        s = md_strided(&out_md, nd, dims, (dnnl_data_type_t)bench_dnnl_dt(dt),
                strides);
    }
    if (s == dnnl_success)
        s = dnnl_memory_create(&p->out, md_ref(&out_md), p->engine, out);
    if (s != dnnl_success)
        snprintf(err, err_size, "unfused passes: oneDNN %s failed (%s)", what,
                dnnl_status2str(s));
    for (int i = 0; s == dnnl_success && i < c->n; i++) {
        const bench_post_op_t *op = &c->ops[i];
        dnnl_primitive_attr_t attr = NULL;
        dnnl_post_ops_t po = NULL;
        dnnl_primitive_desc_t pd = NULL;
        int binary = dgrad_post_alg_is_binary(op->alg);
        int64_t od[5], os[5];
        what = "the operand's memory descriptor";
        if (binary) {
            bench_operand_canonical(op, d, nxc, od, os);
            s = md_strided(&src1_md, nd, od, (dnnl_data_type_t)bench_dnnl_dt(
                    bench_operand_dt(op, dt)), os);
        } else {
            s = md_strided(&src1_md, nd, ones, dnnl_f32, ones);
        }
        if (s == dnnl_success && !binary) {
            what = "the eltwise post-op";
            s = dnnl_primitive_attr_create(&attr);
            if (s == dnnl_success) s = dnnl_post_ops_create(&po);
            if (s == dnnl_success)
                s = post_ops_append_unary(po, op->alg, op->alpha, op->beta);
            if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr,
                    po);
        }
        if (s == dnnl_success) {
            what = "the binary primitive";
            s = binary_pd(&pd, p->engine, (dnnl_alg_kind_t)
                    bench_dnnl_binary_alg(binary ? op->alg : dgrad_post_add),
                    md_ref(&out_md), md_ref(&src1_md), md_ref(&out_md), attr);
        }
        if (s == dnnl_success) s = dnnl_primitive_create(&p->prim[i], pd);
        if (s == dnnl_success)
            s = dnnl_memory_create(&p->src1[i], md_ref(&src1_md), p->engine,
                    binary ? operands[i] : (void *)&p->zero);
        if (s == dnnl_success) p->n = i + 1;
        dnnl_primitive_desc_destroy(pd);
        dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(attr);
        md_free(&src1_md);
        if (s != dnnl_success)
            snprintf(err, err_size, "unfused pass %d (%s): oneDNN %s failed "
                    "(%s)", i + 1, op->kind, what, dnnl_status2str(s));
    }
    md_free(&out_md);
    if (s != dnnl_success) {
        bench_passes_destroy(p);
        return NULL;
    }
    return p;
}

int bench_passes_execute(bench_passes_t *p) {
    for (int i = 0; i < p->n; i++) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, p->out},
                {DNNL_ARG_SRC_1, p->src1[i]}, {DNNL_ARG_DST, p->out}};
        if (dnnl_primitive_execute(p->prim[i], p->stream, 3, args)
                != dnnl_success)
            return -1;
    }
    return dnnl_stream_wait(p->stream) == dnnl_success ? 0 : -1;
}

void bench_passes_destroy(bench_passes_t *p) {
    if (!p) return;
    for (int i = 0; i < BENCH_MAX_POST_OPS; i++) {
        dnnl_primitive_destroy(p->prim[i]);
        dnnl_memory_destroy(p->src1[i]);
    }
    dnnl_memory_destroy(p->out);
    dnnl_stream_destroy(p->stream);
    dnnl_engine_destroy(p->engine);
    free(p);
}
