/*
 * The post-ops' pass (canonical.h): one pass over the whole output, in
 * place, in the output's own layout and type, once the plan has written it
 * (bias and border included). oneDNN's binary primitive runs it: the
 * chain's first op as its operation when that is binary, else the
 * addition of a zero scalar, and the rest of the chain as its post-ops,
 * so every element is loaded and stored once whatever the chain's length.
 * Where oneDNN cannot build that primitive (a type or algorithm a version
 * lacks) and for plans without a primitive, dgrad's own loop runs the
 * chain, in f32 like oneDNN.
 *
 * The pass reads the output as written, so a 16-bit output is rounded
 * before the chain and again after it. Steps that write the whole output
 * carry the chain instead where oneDNN lets them: the bias add and a
 * folded plan's forward convolution; dgrad's own loop (direct.c) applies
 * it to each output row in f32 before the row's one rounding
 * (post_chain_row). Not a backward-data convolution:
 * oneDNN's API refuses any attribute but the scratchpad on backward
 * propagation (3.7.1's conv_attr_check, bwd_attr_mask; 2.6 likewise).
 */
#include "plan_impl.h"

#include <math.h>
#include <string.h>

#include "dtype.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* src1 of a chain that starts with a unary op: x + 0 changes nothing. */
static const float zero_scalar = 0.0f;

static dnnl_alg_kind_t binary_alg(int32_t alg) {
    switch ((dgrad_post_alg_t)alg) {
        case dgrad_post_add: return dnnl_binary_add;
        case dgrad_post_mul: return dnnl_binary_mul;
        case dgrad_post_max: return dnnl_binary_max;
        case dgrad_post_min: return dnnl_binary_min;
        case dgrad_post_div: return dnnl_binary_div;
        default: return dnnl_binary_sub;
    }
}

/* Operand @p po's layout: its canonical dims and strides, a broadcast
 * axis (dim 1, stride 0) placed outermost: oneDNN takes a stride of 0 for
 * a layout of its own and picks its generic kernel. */
static dnnl_status_t operand_md(md_t *md, const dgrad_problem_t *p,
        const dgrad_post_op_t *po) {
    int nd = 2 + p->nsp;
    int64_t strides[2 + DGRAD_MAX_SPATIAL], outer = 1;
    for (int d = 0; d < nd; d++)
        if (po->dims[d] > 1 && po->strides[d] * po->dims[d] > outer)
            outer = po->strides[d] * po->dims[d];
    for (int d = 0; d < nd; d++)
        strides[d] = po->dims[d] > 1 ? po->strides[d] : outer;
    return ACQUIRE(md_strided(md, nd, po->dims, to_dnnl_dt(po->dt),
            strides));
}

/* Whether oneDNN reads a binary post-op's operand right: conformance
 * sweeps found it wrong (both 2.6.3 and 3.7.1, jit and gemm plans alike)
 * for an operand whose strides are not dense, a full operand on an output
 * with an axis of size 1, a per-channel operand on an output of one
 * position with several images, and (2.6.3) an f16 operand in another
 * type's op: those take dgrad's loop. Only a scalar, a dense per-channel
 * vector on an output without unit axes, and a full operand laid out as
 * the output are given to oneDNN. */
static int operand_trusted(const dgrad_problem_t *p,
        const dgrad_post_op_t *po) {
    int nd = 2 + p->nsp, full = 1, scalar = 1, per_channel = 1;
    int64_t out_dims[2 + DGRAD_MAX_SPATIAL] = {p->N, p->Cout};
    for (int i = 0; i < p->nsp; i++) out_dims[2 + i] = p->Y[i];
    if (po->dt == dgrad_f16 && p->dt != dgrad_f16) return 0;
    for (int d = 0; d < nd; d++) {
        if (out_dims[d] == 1 && d != 0) return 0;
        full &= po->dims[d] == out_dims[d]
                && (out_dims[d] == 1 || po->strides[d] == p->out_strides[d]);
        scalar &= po->dims[d] == 1;
        per_channel &= d == 1 ? po->dims[d] == out_dims[d]
                        && po->strides[d] == 1 : po->dims[d] == 1;
    }
    if (per_channel && p->N > 1) {
        int64_t positions = 1;
        for (int i = 0; i < p->nsp; i++) positions *= p->Y[i];
        if (positions == 1) return 0;
    }
    return full || scalar || per_channel;
}

/* Whether two eltwise post-ops of @p po share an algorithm but not its
 * parameters (see eltwise_params_shared). */
static int repeats_an_algorithm(const_dnnl_post_ops_t po) {
    int n = dnnl_post_ops_len(po);
    for (int i = 0; i < n; i++) {
        dnnl_alg_kind_t a, b;
        float a1, a2, b1, b2;
        if (!post_ops_eltwise_at(po, i, &a, &a1, &a2)) continue;
        for (int j = i + 1; j < n; j++)
            if (post_ops_eltwise_at(po, j, &b, &b1, &b2) && a == b
                    && (a1 != b1 || a2 != b2))
                return 1;
    }
    return 0;
}

/* The post-ops of the attribute (plan_impl.h): the chain after its first
 * op when that one is the primitive's operation, up to post-op @p end;
 * binary operands numbered as oneDNN numbers post-ops (one canonical op
 * may take several entries). */
dnnl_status_t post_chain_attr(dgrad_plan_t *plan,
        dnnl_primitive_attr_t attr, int sum_at, int end) {
    post_pass_t *pp = &plan->post;
    const dgrad_problem_t *p = &plan->p;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t s = ACQUIRE(dnnl_post_ops_create(&po));
    for (int i = pp->first_binary; i < end && s == dnnl_success; i++) {
        const dgrad_post_op_t *op = &p->post_ops[i];
        if (!dgrad_post_alg_is_binary(op->alg)) {
            s = post_ops_append_unary(po, op->alg, op->alpha, op->beta);
            continue;
        }
        if (i == sum_at) {
            s = post_ops_append_sum(po);
            continue;
        }
        if (!operand_trusted(p, op)) {
            s = dnnl_unimplemented; /* dgrad's loop reads it right */
            break;
        }
        pp->operand_index[i] = dnnl_post_ops_len(po);
        md_free(&pp->operand_md[i]); /* made again: a summing twin's */
        s = operand_md(&pp->operand_md[i], p, op);
        if (s == dnnl_success)
            s = post_ops_append_binary(po, binary_alg(op->alg),
                    md_ref(&pp->operand_md[i]));
    }
    if (s == dnnl_success && repeats_an_algorithm(po) && eltwise_params_shared())
        s = dnnl_unimplemented; /* dgrad's loop computes it right */
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    return s;
}

/* The bias add writes the whole output itself (nothing after it, no
 * border): it can carry the chain. */
static int bias_add_is_final(const dgrad_plan_t *plan) {
    return plan->p.has_bias && plan->bias_add.prim && plan->full_box
            && !plan->staged && !plan->fold.mode && !plan->direct
            && !step_exists(&plan->out.reorder);
}

/* The chain as post-ops of @p step, the step that writes the whole output
 * (every op of the chain then a post-op), remade by @p remake: no pass of
 * its own. dnnl_unimplemented when oneDNN will not build it that way. */
static dnnl_status_t fuse_into(dgrad_plan_t *plan, const step_t *step,
        dnnl_status_t (*remake)(dgrad_plan_t *, const_dnnl_primitive_attr_t)) {
    post_pass_t *pp = &plan->post;
    dnnl_primitive_attr_t attr = NULL;
    pp->first_binary = 0;
    dnnl_status_t s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) s = post_chain_attr(plan, attr, -1, plan->p.n_post_ops);
    if (s == dnnl_success) s = remake(plan, attr);
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) {
        pp->fused = 1;
        pp->fused_into = step;
        pp->own = 0;
        return s;
    }
    for (int i = 0; i < DGRAD_MAX_POST_OPS; i++) md_free(&pp->operand_md[i]);
    return s;
}

/* A folded plan computes the whole output in the forward convolution
 * (the phase reorders only move values): a chain of unary ops, which
 * commute with moving, can ride on the convolution, after its bias; any
 * chain where the convolution writes the output itself. */
static int fold_can_carry(const dgrad_plan_t *plan) {
    if (!plan->fold.mode || !plan->full_box || !plan->conv.prim) return 0;
    if (plan->fold.writes_output) return 1;
    for (int i = 0; i < plan->p.n_post_ops; i++)
        if (dgrad_post_alg_is_binary(plan->p.post_ops[i].alg)) return 0;
    return 1;
}

/* dgrad's own loop writes every output row once, in f32, and can apply
 * the whole chain to it there (post_chain_row) when it covers the whole
 * output (no border to fill after it). */
int direct_can_carry(const dgrad_plan_t *plan) {
    return plan->direct && plan->full_box;
}

dnnl_status_t post_pass_init(dgrad_plan_t *plan) {
    post_pass_t *pp = &plan->post;
    const dgrad_problem_t *p = &plan->p;
    /* Made once: a timed candidate has its chain already (timing.c). */
    if (!p->n_post_ops || pp->active) return dnnl_success;
    pp->active = 1;
    pp->own = 1;
    if (plan->empty) return dnnl_success;
    if (!pp->passed && direct_can_carry(plan)) {
        pp->fused = 1;
        pp->fused_into = NULL; /* no oneDNN step: the loop itself */
        pp->own = 0;
        return dnnl_success;
    }
    /* Contexts made while the plan was timed lack the pass's memory
     * objects: the plan is not shared yet, so they go. */
    plan_drop_contexts(plan);
    if (!pp->passed && bias_add_is_final(plan)) {
        dnnl_status_t f = fuse_into(plan, &plan->bias_add,
                bias_add_with_attr);
        if (f == dnnl_success || f == dnnl_out_of_memory) return f;
    }
    if (!pp->passed && fold_can_carry(plan)) {
        dnnl_status_t f = fuse_into(plan, &plan->conv, fold_conv_with_attr);
        if (f == dnnl_success || f == dnnl_out_of_memory) return f;
    }
    int64_t dims[2 + DGRAD_MAX_SPATIAL] = {p->N, p->Cout},
            ones[2 + DGRAD_MAX_SPATIAL] = {1, 1, 1, 1, 1};
    for (int i = 0; i < p->nsp; i++) dims[2 + i] = p->Y[i];
    int nd = 2 + p->nsp;
    pp->first_binary = dgrad_post_alg_is_binary(p->post_ops[0].alg);
    if (pp->first_binary && !operand_trusted(p, &p->post_ops[0]))
        return dnnl_success; /* dgrad's loop */
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = ACQUIRE(md_strided(&pp->out_md, nd, dims,
            to_dnnl_dt(p->dt), p->out_strides));
    if (s == dnnl_success)
        s = pp->first_binary ? operand_md(&pp->src1_md, p, &p->post_ops[0])
                             : ACQUIRE(md_strided(&pp->src1_md, nd, ones,
                                     dnnl_f32, ones));
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) s = post_chain_attr(plan, attr, -1, plan->p.n_post_ops);
    if (s == dnnl_success)
        s = ACQUIRE(binary_pd(&pd, engine,
                pp->first_binary ? binary_alg(p->post_ops[0].alg)
                                 : dnnl_binary_add,
                md_ref(&pp->out_md), md_ref(&pp->src1_md),
                md_ref(&pp->out_md), attr));
    if (s == dnnl_success) s = make_step(&pp->step, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) {
        pp->own = 0;
        return s;
    }
    /* Not this oneDNN's: dgrad's loop. Running out of memory fails the
     * planning as a whole (ACQUIRE recorded it). */
    step_free(&pp->step);
    return s == dnnl_out_of_memory ? s : dnnl_success;
}

const char *dgrad_plan_chain_carrier(const dgrad_plan_t *plan) {
    if (!plan || !plan->post.active) return "none";
    const post_pass_t *pp = &plan->post;
    if (pp->fused)
        return !pp->fused_into ? "own loop"
                : pp->fused_into == &plan->bias_add ? "bias add"
                                                    : "convolution";
    return pp->own ? "own pass" : "pass";
}

void post_pass_free(post_pass_t *pp) {
    step_free(&pp->step);
    md_free(&pp->out_md);
    md_free(&pp->src1_md);
    for (int i = 0; i < DGRAD_MAX_POST_OPS; i++) md_free(&pp->operand_md[i]);
}

/* ------------------------------------------------------ the primitive */

dnnl_status_t post_pass_memories(exec_ctx_t *c) {
    const post_pass_t *pp = &c->plan->post;
    if (!pp->step.prim && !pp->fused) return dnnl_success;
    /* fused: only the operands (the carrying step has its own) */
    md_ref_t md[POST_SLOTS] = {NULL};
    if (!pp->fused) {
        md[0] = md[2] = md_ref(&pp->out_md);
        md[1] = md_ref(&pp->src1_md);
        md[3] = pp->step.scratch_bytes ? md_ref(&pp->step.scratch_md) : NULL;
    }
    for (int i = 0; i < DGRAD_MAX_POST_OPS; i++)
        md[4 + i] = md_ref(&pp->operand_md[i]);
    dnnl_status_t s = dnnl_success;
    for (int k = 0; k < POST_SLOTS && s == dnnl_success; k++)
        if (md[k])
            s = ACQUIRE(dnnl_memory_create(&c->post_mem[k].mem, md[k],
                    engine, DNNL_MEMORY_NONE));
    return s;
}

/* ---------------------------------------------------- dgrad's own loop */

static float unary(const dgrad_post_op_t *po, float x) {
    const float a = (float)po->alpha, b = (float)po->beta;
    switch ((dgrad_post_alg_t)po->alg) {
        case dgrad_post_abs: return fabsf(x);
        case dgrad_post_clip: return x < a ? a : x > b ? b : x;
        case dgrad_post_elu: return x > 0 ? x : a * expm1f(x);
        case dgrad_post_exp: return expf(x);
        case dgrad_post_gelu_erf:
            return 0.5f * x * (1 + erff(x * 0.70710678f));
        case dgrad_post_gelu_tanh:
            return 0.5f * x * (1 + tanhf(0.79788456f
                                        * (x + 0.044715f * x * x * x)));
        /* a x + b in double: no rounding between the product and the
         * sum, as the vector form's FMA (b - a x cancels near 0) */
        case dgrad_post_hardsigmoid:
            return (float)fmax(0, fmin(1, (double)a * x + b));
        case dgrad_post_hardswish:
            return x * (float)fmax(0, fmin(1, (double)a * x + b));
        case dgrad_post_relu: return x > 0 ? x : a * x;
        case dgrad_post_log: return logf(x);
        case dgrad_post_logistic: return 1 / (1 + expf(-x));
        case dgrad_post_mish: return x * tanhf(log1pf(expf(x)));
        case dgrad_post_round: return nearbyintf(x);
        case dgrad_post_soft_relu: {
            /* log(1 + e^t) / a, t = a x, as (t > 0 ? x : 0) + log(1 +
             * e^-|t|) / a: nothing overflows (math_avx512.h's form) */
            float t = a * x;
            return (t > 0 ? x : 0) + log1pf(expf(-fabsf(t))) / a;
        }
        case dgrad_post_sqrt: return sqrtf(x);
        case dgrad_post_square: return x * x;
        case dgrad_post_tanh: return tanhf(x);
        default: return NAN;
    }
}

static float binary(int32_t alg, float x, float y) {
    switch ((dgrad_post_alg_t)alg) {
        case dgrad_post_add: return x + y;
        case dgrad_post_mul: return x * y;
        case dgrad_post_max: return fmaxf(x, y);
        case dgrad_post_min: return fminf(x, y);
        case dgrad_post_div: return x / y;
        default: return x - y;
    }
}

/* The chain on a row (post_chain_row), where dgrad's own loop has just
 * written it: with AVX-512, the common algorithms as vector loops whose
 * tail is one masked vector. Rows there are short (111 values on the 3D
 * specification example at 56^3), and a ReLU loop compiled for the
 * baseline ISA, its tail scalar and branching, took that problem from
 * 10.5 to 20.1 ms on one thread when this was written; the `/bare`
 * column of `OMP_NUM_THREADS=1 DGRAD_OWN_LOOP=only dgrad bench --no-raw
 * --post-ops relu --data-format NCX g4mb1ic20id56oc8od111kd3sd2pd1`
 * shows the cost now. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "math_avx512.h"

#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* Returns 0 where the algorithm has no vector loop here. */
AVX512 static int unary_row_avx512(const dgrad_post_op_t *po, int64_t len,
        float *x) {
    const __m512 a = _mm512_set1_ps((float)po->alpha),
                 b = _mm512_set1_ps((float)po->beta), zero = _mm512_setzero_ps();
    int alg = po->alg;
    switch (alg) {
        case dgrad_post_abs: case dgrad_post_clip: case dgrad_post_elu:
        case dgrad_post_exp: case dgrad_post_gelu_erf:
        case dgrad_post_gelu_tanh:
        case dgrad_post_hardsigmoid: case dgrad_post_hardswish:
        case dgrad_post_relu: case dgrad_post_log: case dgrad_post_logistic:
        case dgrad_post_mish: case dgrad_post_round:
        case dgrad_post_soft_relu: case dgrad_post_sqrt:
        case dgrad_post_square: case dgrad_post_tanh: break;
        default: return 0;
    }
    for (int64_t m = 0; m < len; m += 16) {
        __mmask16 k = tail_mask(len - m);
        __m512 v = _mm512_maskz_loadu_ps(k, x + m), r;
        if (alg == dgrad_post_relu) {
            /* x > 0 ? x : alpha x (NaN: alpha NaN = NaN) */
            r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ),
                    _mm512_mul_ps(a, v), v);
        } else if (alg == dgrad_post_clip) {
            r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, b, _CMP_GT_OQ), v, b);
            r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a, _CMP_LT_OQ), r, a);
        } else if (alg == dgrad_post_abs) {
            r = _mm512_abs_ps(v);
        } else if (alg == dgrad_post_square) {
            r = _mm512_mul_ps(v, v);
        } else if (alg == dgrad_post_exp) {
            r = exp_avx512(v);
        } else if (alg == dgrad_post_logistic) {
            r = logistic_avx512(v);
        } else if (alg == dgrad_post_tanh) {
            r = tanh_avx512(v);
        } else if (alg == dgrad_post_elu) {
            r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ),
                    _mm512_mul_ps(a, expm1_avx512(v)), v);
        } else if (alg == dgrad_post_log) {
            r = log_avx512(v);
        } else if (alg == dgrad_post_soft_relu) {
            r = softplus_avx512(v, a);
        } else if (alg == dgrad_post_mish) {
            r = _mm512_mul_ps(v, mish_ratio_avx512(v));
        } else if (alg == dgrad_post_hardsigmoid
                || alg == dgrad_post_hardswish) {
            /* unary()'s fmaxf(0, fminf(1, a x + b)): min returns 1 for a
             * NaN, as fminf does */
            r = _mm512_max_ps(_mm512_min_ps(_mm512_fmadd_ps(a, v, b),
                                      _mm512_set1_ps(1.0f)),
                    zero);
            if (alg == dgrad_post_hardswish) r = _mm512_mul_ps(v, r);
        } else if (alg == dgrad_post_round) {
            r = _mm512_roundscale_ps(v,
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        } else if (alg == dgrad_post_sqrt) {
            r = _mm512_sqrt_ps(v);
        } else if (alg == dgrad_post_gelu_erf) {
            r = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v),
                    one_plus_erf_avx512(
                            _mm512_mul_ps(v, _mm512_set1_ps(0.70710678f))));
        } else {
            /* GELU (tanh): unary()'s formula, its tanh the vector one */
            __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
            __m512 t = tanh_avx512(_mm512_mul_ps(_mm512_set1_ps(0.79788456f),
                    _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), cube, v)));
            r = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v),
                    _mm512_add_ps(_mm512_set1_ps(1.0f), t));
        }
        _mm512_mask_storeu_ps(x + m, k, r);
    }
    return 1;
}

/* The operand @p y along the row: consecutive (@p ys 1) or one value
 * (@p ys 0). Returns 0 where there is no vector loop here (Maximum and
 * Minimum, whose NaN rule is fmaxf's, and other strides). */
AVX512 static int binary_row_avx512(int32_t alg, int64_t len, float *x,
        const float *y, int64_t ys) {
    if ((ys != 0 && ys != 1)
            || (alg != dgrad_post_add && alg != dgrad_post_mul
                    && alg != dgrad_post_sub && alg != dgrad_post_div))
        return 0;
    const __m512 one = _mm512_set1_ps(y[0]);
    for (int64_t m = 0; m < len; m += 16) {
        __mmask16 k = tail_mask(len - m);
        __m512 v = _mm512_maskz_loadu_ps(k, x + m);
        /* masked-off lanes of a divisor are 1, not 0 */
        __m512 w = ys ? _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), k, y + m)
                      : one;
        __m512 r = alg == dgrad_post_add ? _mm512_add_ps(v, w)
                : alg == dgrad_post_mul ? _mm512_mul_ps(v, w)
                : alg == dgrad_post_sub ? _mm512_sub_ps(v, w)
                                        : _mm512_div_ps(v, w);
        _mm512_mask_storeu_ps(x + m, k, r);
    }
    return 1;
}

static int have_avx512(void) { return cpu_has_avx512f(); }
#endif

/* One op of the chain over @p len f32 values along the last spatial axis. */
static void unary_row(const dgrad_post_op_t *po, int64_t len, float *x) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx512() && unary_row_avx512(po, len, x)) return;
#endif
    for (int64_t m = 0; m < len; m++) x[m] = unary(po, x[m]);
}

/* The same for a binary op, its operand at stride @p ys along the row. */
static void binary_row(int32_t alg, int64_t len, float *x, const float *y,
        int64_t ys) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx512() && binary_row_avx512(alg, len, x, y, ys)) return;
#endif
    for (int64_t m = 0; m < len; m++) x[m] = binary(alg, x[m], y[m * ys]);
}

int post_chain_epilogue(const dgrad_problem_t *p, epilogue_t *ep) {
    const dgrad_post_op_t *po = &p->post_ops[0];
    if (p->n_post_ops == 0
            || (po->alg != dgrad_post_relu && po->alg != dgrad_post_clip))
        return 0;
    ep->on = 1;
    ep->clip = po->alg == dgrad_post_clip;
    ep->a = (float)po->alpha;
    ep->b = (float)po->beta;
    return 1;
}

void post_chain_row(const dgrad_problem_t *p, const void *const *operands,
        int from, const int64_t *idx, int64_t len, float *row, float *tmp) {
    post_chain_run(p, operands, from, idx, 1 + p->nsp, len, row, tmp);
}

void post_chain_run(const dgrad_problem_t *p, const void *const *operands,
        int from, const int64_t *idx, int axis, int64_t len, float *row,
        float *tmp) {
    int last = 1 + p->nsp;
    for (int i = 0, k = 0; i < p->n_post_ops; i++) {
        const dgrad_post_op_t *po = &p->post_ops[i];
        if (i < from) {
            k += dgrad_post_alg_is_binary(po->alg);
            continue;
        }
        if (!dgrad_post_alg_is_binary(po->alg)) {
            unary_row(po, len, row);
            continue;
        }
        int64_t o = 0;
        for (int d = 0; d <= last; d++)
            o += (po->dims[d] == 1 ? 0 : idx[d]) * po->strides[d];
        int64_t ys = po->dims[axis] == 1 ? 0 : po->strides[axis];
        const void *y = operands[k++];
        if (po->dt == dgrad_f32) {
            binary_row(po->alg, len, row, (const float *)y + o, ys);
        } else {
            for (int64_t m = 0; m < len; m++)
                tmp[m] = (float)dgrad_load(y, po->dt, o + m * ys);
            binary_row(po->alg, len, row, tmp, 1);
        }
    }
}

/* The chain on every element of block (n, c), starting from the
 * output's value, or from @p *start when given: row by row along the
 * last axis, in pieces of OWN_PIECE values, through post_chain_row. Each
 * piece's operands are read before it is stored, so an in-place Add's
 * operand may be @p out itself. */
#define OWN_PIECE 256
static void own_block(const dgrad_problem_t *p, const void *const *operands,
        int64_t n, int64_t c, const float *start, void *out) {
    int l = p->nsp - 1;
    for (int i = 0; i <= l; i++)
        if (p->Y[i] <= 0) return;
    float row[OWN_PIECE], tmp[OWN_PIECE];
    int64_t idx[2 + DGRAD_MAX_SPATIAL] = {n, c}, xs = p->out_strides[2 + l];
    for (;;) {
        int64_t off = n * p->out_strides[0] + c * p->out_strides[1];
        for (int i = 0; i < l; i++) off += idx[2 + i] * p->out_strides[2 + i];
        for (int64_t x0 = 0; x0 < p->Y[l]; x0 += OWN_PIECE) {
            int64_t len = p->Y[l] - x0 < OWN_PIECE ? p->Y[l] - x0 : OWN_PIECE;
            for (int64_t m = 0; m < len; m++)
                row[m] = start ? *start
                               : (float)dgrad_load(out, p->dt,
                                         off + (x0 + m) * xs);
            idx[2 + l] = x0;
            post_chain_row(p, operands, 0, idx, len, row, tmp);
            for (int64_t m = 0; m < len; m++)
                dgrad_store(out, p->dt, off + (x0 + m) * xs, row[m]);
        }
        int i = l - 1;
        while (i >= 0 && ++idx[2 + i] == p->Y[i]) idx[2 + i--] = 0;
        if (i < 0) break;
    }
}

/* Output channel blocks [@p b0, @p b1) (image and channel), each from
 * its output (@p border 0) or, where the output is all border, from the
 * bias (as fill_border writes it: in the output's type) or zero. */
static void own_blocks(const dgrad_problem_t *p, const void *const *operands,
        const void *bias, int border, void *out, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
        int64_t c = b % p->Cout;
        float start = bias ? (float)dgrad_load(bias, p->dt, c * p->bias_stride)
                           : 0.0f;
        own_block(p, operands, b / p->Cout, c, border ? &start : NULL, out);
    }
}

static void own_run(const dgrad_plan_t *plan, const void *const *operands,
        const void *bias, int border, void *out) {
    const dgrad_problem_t *p = &plan->p;
    int64_t blocks = p->N * p->Cout, elems = blocks;
    for (int i = 0; i < p->nsp; i++) elems *= p->Y[i];
    if (elems < PLAN_PARALLEL_MIN_ELEMS) {
        own_blocks(p, operands, bias, border, out, 0, blocks);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; b++)
        own_blocks(p, operands, bias, border, out, b, b + 1);
}

void post_pass_own_run(const dgrad_plan_t *plan, const void *const *operands,
        void *out) {
    own_run(plan, operands, NULL, 0, out);
}

void post_pass_own_run_on_border(const dgrad_plan_t *plan,
        const void *const *operands, const void *bias, void *out) {
    own_run(plan, operands, bias, 1, out);
}

/* ----------------------------------------------------------- running */

dnnl_status_t post_pass_run(exec_ctx_t *c, const void *const *operands,
        void *out) {
    const dgrad_plan_t *plan = c->plan;
    const post_pass_t *pp = &plan->post;
    /* accumulating: the output's writer added the chain (the Add alone) */
    if (!pp->active || pp->fused || c->accumulating) return dnnl_success;
    /* A failure while a candidate is timed fails the planning (as
     * run_step's do), not just that candidate. */
    if (pp->own) {
        dnnl_status_t s = DGRAD_FALLIBLE(dnnl_success);
        if (s != dnnl_success) {
            planning_fail(s);
            return s;
        }
        post_pass_own_run(plan, operands, out);
        return dnnl_success;
    }
    const dgrad_problem_t *p = &plan->p;
    dnnl_exec_arg_t args[POST_SLOTS];
    int n = 0;
    const void *ptr[POST_SLOTS] = {out,
            pp->first_binary ? operands[0] : &zero_scalar, out, c->scratch};
    int arg[POST_SLOTS] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST,
            DNNL_ARG_SCRATCHPAD};
    for (int i = pp->first_binary, k = pp->first_binary; i < p->n_post_ops;
            i++) {
        if (!dgrad_post_alg_is_binary(p->post_ops[i].alg)) continue;
        ptr[4 + i] = operands[k++];
        arg[4 + i] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(pp->operand_index[i])
                | DNNL_ARG_SRC_1;
    }
    dnnl_status_t s = dnnl_success;
    for (int k = 0; k < POST_SLOTS && s == dnnl_success; k++) {
        if (!c->post_mem[k].mem) continue;
        args[n].arg = arg[k];
        s = bind(&c->post_mem[k], ptr[k], &args[n].memory);
        n++;
    }
    if (s == dnnl_success)
        s = DGRAD_FALLIBLE(dnnl_primitive_execute(pp->step.prim, c->stream,
                n, args));
    if (s == dnnl_success) s = dnnl_stream_wait(c->stream);
    if (s != dnnl_success) planning_fail(s);
    return s;
}
