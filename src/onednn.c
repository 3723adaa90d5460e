/*
 * oneDNN lowering of the canonical problem (DESIGN.md sections 1-3).
 *
 * The canonical gather is a oneDNN convolution backward-data:
 *   diff_dst = our `in`  (OC = Cin),
 *   diff_src = our `out` (IC = Cout),
 *   weights  = our W, which is oneDNN's grouped forward weights goi[k]
 *              (o = Cin/G, i = Cout/G); plain oi[k] when G == 1.
 * oneDNN wants non-negative pads and an exact size equation, so the
 * primitive runs only on the sub-box [lo, hi) of the output that can
 * receive terms; the rest is filled with zeros (or the bias) here.
 *
 * Each tensor travels a path  user <-> io <-> conv:
 *   io   = the user's memory as oneDNN sees it (strided desc), or, when
 *          the primitive computes in another type than the user's (f16 on
 *          oneDNN 2.6), an f32 "staging" copy in the user's axis order,
 *          filled by a plain conversion loop here. oneDNN 2.6 does convert
 *          f16 in reorders, but only with its generic simple:any reorder,
 *          measured at ~50 ns per element (80 ms for 8x64x56x56, against
 *          0.5 ms for an f32 jit reorder);
 *   conv = the layout the primitive chose; a oneDNN reorder io <-> conv
 *          runs only when the two differ.
 */
#define _POSIX_C_SOURCE 200809L

#include "onednn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "dtype.h"
#include "error.h"

#define ALIGNMENT 64
#define CACHE_CAPACITY 256
#define MAX_NDIMS (3 + DGRAD_MAX_SPATIAL)

/* One primitive with the scratchpad it wants (user scratchpad mode, so the
 * buffer comes from each execute and executes can run concurrently). */
typedef struct step {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t scratch_md;
} step_t;

/* User strided tensor <-> dense f32 staging copy, axes ordered outermost
 * first (largest user stride first) so the inner loop is the tightest. */
typedef struct convert {
    int ndims;
    int64_t dims[MAX_NDIMS];
    int64_t user_strides[MAX_NDIMS];
    int64_t stage_strides[MAX_NDIMS];
} convert_t;

/* How one tensor gets between the user's buffer and the primitive. */
typedef struct tensor_path {
    dnnl_memory_desc_t io_md;   /* user memory, or the f32 staging copy */
    dnnl_memory_desc_t conv_md; /* the primitive's layout and type */
    step_t reorder;             /* io <-> conv; prim NULL when equal */
    convert_t cv;               /* user <-> staging, when plan->staged */
} tensor_path_t;

struct dgrad_plan {
    atomic_long refs;
    dgrad_problem_t p;
    size_t elsize;                 /* bytes per user element */
    int empty;                     /* no primitive: output is all bias/zero */
    int staged;                    /* compute type differs from the user's */
    int64_t lo[DGRAD_MAX_SPATIAL]; /* sub-box of the output the primitive */
    int64_t hi[DGRAD_MAX_SPATIAL]; /* computes: [lo, hi) per axis */
    int64_t out_offset;            /* elements from out to the sub-box */
    char impl[128];
    tensor_path_t in, wei, out;    /* out covers the sub-box only */
    dnnl_memory_desc_t bias_md;    /* f32 [1, Cout, 1...] dense */
    step_t conv, bias_add;
    size_t scratch_size;           /* largest scratchpad of all steps */
};

/* ---------------------------------------------------------------------
 * Engine and messages
 * ------------------------------------------------------------------- */

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_runtime_error;
static atomic_long live_plans;

static void cache_clear_at_exit(void);

static void engine_init(void) {
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    /* Release cached plans (and the engine) at exit so leak checkers see
     * a clean process. */
    atexit(cache_clear_at_exit);
}

static const char *dt_name(dgrad_data_type_t dt) {
    switch (dt) {
        case dgrad_f32: return "f32";
        case dgrad_bf16: return "bf16";
        case dgrad_f16: return "f16";
        default: return "unsupported";
    }
}

static dnnl_data_type_t to_dnnl_dt(dgrad_data_type_t dt) {
    switch (dt) {
        case dgrad_f32: return dnnl_f32;
        case dgrad_bf16: return dnnl_bf16;
        case dgrad_f16: return dnnl_f16;
        default: return dnnl_data_type_undef;
    }
}

static void describe_problem(const dgrad_problem_t *p, char *buf,
        size_t size) {
    char x[64], k[64], s[64], d[64], pb[64], y[64];
    snprintf(buf, size,
            "%s N=%lld G=%lld Cin=%lld Cout=%lld X=%s K=%s S=%s D=%s "
            "PB=%s Y=%s",
            dt_name(p->dt), (long long)p->N, (long long)p->G,
            (long long)p->Cin, (long long)p->Cout,
            dgrad_format_dims(x, sizeof x, p->X, p->nsp),
            dgrad_format_dims(k, sizeof k, p->K, p->nsp),
            dgrad_format_dims(s, sizeof s, p->S, p->nsp),
            dgrad_format_dims(d, sizeof d, p->D, p->nsp),
            dgrad_format_dims(pb, sizeof pb, p->PB, p->nsp),
            dgrad_format_dims(y, sizeof y, p->Y, p->nsp));
}

/* Maps a oneDNN failure to a dgrad status with a message naming the step,
 * the problem and the oneDNN status. */
static dgrad_status_t dnnl_fail_as(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what, dgrad_status_t otherwise) {
    char desc[512];
    describe_problem(p, desc, sizeof desc);
    dgrad_status_t st = s == dnnl_out_of_memory ? dgrad_out_of_memory
            : s == dnnl_unimplemented ? dgrad_unimplemented
            : otherwise;
    return dgrad_error(st, "oneDNN %s failed (%s) for %s", what,
            dnnl_status2str(s), desc);
}

static dgrad_status_t dnnl_fail(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what) {
    return dnnl_fail_as(p, s, what, dgrad_runtime_error);
}

/* ---------------------------------------------------------------------
 * Geometry and memory descriptors
 * ------------------------------------------------------------------- */

/* Output region that can receive terms, per axis [lo, hi). Returns 0 when
 * it is empty on some axis (or there is nothing to sum over). */
static int compute_region(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int nonempty = p->Cin > 0;
    plan->out_offset = 0;
    for (int i = 0; i < p->nsp; i++) {
        int64_t f = dgrad_problem_natural_size(p, i);
        int64_t lo = p->PB[i] < 0 ? -p->PB[i] : 0;
        int64_t hi = f - p->PB[i] < p->Y[i] ? f - p->PB[i] : p->Y[i];
        if (p->X[i] <= 0 || hi <= lo) nonempty = 0;
        plan->lo[i] = lo;
        plan->hi[i] = hi;
        plan->out_offset += lo * p->out_strides[2 + i];
    }
    return nonempty;
}

static dnnl_status_t md_strided(dnnl_memory_desc_t *md, int ndims,
        const int64_t *dims, dnnl_data_type_t dt, const int64_t *strides) {
    dnnl_dims_t d = {0}, s = {0};
    for (int i = 0; i < ndims; i++) {
        d[i] = dims[i];
        s[i] = strides[i];
    }
    return dnnl_memory_desc_init_by_strides(md, ndims, d, dt, s);
}

/* Prepares the user <-> staging conversion and returns, in @p dense, f32
 * strides that keep the user's axis order (largest stride outermost,
 * canonical order on ties). */
static void init_convert(convert_t *cv, int nd, const int64_t *dims,
        const int64_t *strides, int64_t *dense) {
    int order[MAX_NDIMS];
    for (int i = 0; i < nd; i++) {
        int j = i;
        for (; j > 0 && strides[order[j - 1]] < strides[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t acc = 1;
    for (int j = nd - 1; j >= 0; j--) {
        dense[order[j]] = acc;
        acc *= dims[order[j]];
    }
    cv->ndims = nd;
    for (int j = 0; j < nd; j++) {
        cv->dims[j] = dims[order[j]];
        cv->user_strides[j] = strides[order[j]];
        cv->stage_strides[j] = dense[order[j]];
    }
}

/* The io desc of a tensor: the user's memory, or its f32 staging copy. */
static dnnl_status_t init_path(tensor_path_t *t, int nd, const int64_t *dims,
        const int64_t *strides, dnnl_data_type_t user_dt, int staged) {
    int64_t dense[MAX_NDIMS];
    if (!staged) return md_strided(&t->io_md, nd, dims, user_dt, strides);
    init_convert(&t->cv, nd, dims, strides, dense);
    return md_strided(&t->io_md, nd, dims, dnnl_f32, dense);
}

/* io descs of the three tensors in canonical dims (out = the sub-box).
 * The weights drop the G dim when G == 1 (oneDNN's plain 'oi...'). */
static dnnl_status_t init_io_mds(dgrad_plan_t *plan, int staged) {
    const dgrad_problem_t *p = &plan->p;
    int64_t in[5], wei[6], out[5];
    int g = p->G > 1, nd = 2 + p->nsp;
    dnnl_data_type_t dt = to_dnnl_dt(p->dt);
    in[0] = out[0] = p->N;
    in[1] = p->Cin;
    out[1] = p->Cout;
    if (g) wei[0] = p->G;
    wei[g] = p->Cin / p->G;
    wei[g + 1] = p->Cout / p->G;
    for (int i = 0; i < p->nsp; i++) {
        in[2 + i] = p->X[i];
        out[2 + i] = plan->hi[i] - plan->lo[i];
        wei[g + 2 + i] = p->K[i];
    }
    plan->staged = staged;
    dnnl_status_t s = init_path(&plan->in, nd, in, p->in_strides, dt,
            staged);
    if (s == dnnl_success)
        s = init_path(&plan->wei, nd + g, wei, p->wei_strides + !g, dt,
                staged);
    if (s == dnnl_success)
        s = init_path(&plan->out, nd, out, p->out_strides, dt, staged);
    return s;
}

static dnnl_status_t md_any(dnnl_memory_desc_t *md, const dnnl_memory_desc_t
        *like, dnnl_data_type_t dt) {
    return dnnl_memory_desc_init_by_tag(md, like->ndims, like->dims, dt,
            dnnl_format_tag_any);
}

/* ---------------------------------------------------------------------
 * Primitive descriptors
 * ------------------------------------------------------------------- */

static dnnl_status_t user_scratchpad_attr(dnnl_primitive_attr_t *attr) {
    dnnl_status_t s = dnnl_primitive_attr_create(attr);
    if (s != dnnl_success) return s;
    s = dnnl_primitive_attr_set_scratchpad_mode(*attr,
            dnnl_scratchpad_mode_user);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

/* Spatial parameters in oneDNN terms for the sub-box: pl = PB + lo,
 * pr = F - hi - PB (both >= 0), dilation D - 1. */
static void conv_params(const dgrad_plan_t *plan, dnnl_dims_t strides,
        dnnl_dims_t dilates, dnnl_dims_t pl, dnnl_dims_t pr) {
    const dgrad_problem_t *p = &plan->p;
    for (int i = 0; i < p->nsp; i++) {
        strides[i] = p->S[i];
        dilates[i] = p->D[i] - 1;
        pl[i] = p->PB[i] + plan->lo[i];
        pr[i] = dgrad_problem_natural_size(p, i) - plan->hi[i] - p->PB[i];
    }
}

/* Forward convolution pd used as the backward pd's hint. Best effort: a
 * NULL hint is acceptable to oneDNN's backward-data implementations. */
static dnnl_primitive_desc_t forward_hint(const dgrad_plan_t *plan,
        const dnnl_memory_desc_t *in, const dnnl_memory_desc_t *wei,
        const dnnl_memory_desc_t *out) {
    dnnl_dims_t strides, dilates, pl, pr;
    dnnl_convolution_desc_t fwd;
    dnnl_primitive_desc_t pd = NULL;
    conv_params(plan, strides, dilates, pl, pr);
    if (dnnl_dilated_convolution_forward_desc_init(&fwd,
                dnnl_forward_training, dnnl_convolution_direct, out, wei,
                NULL, in, strides, dilates, pl, pr) != dnnl_success)
        return NULL;
    if (dnnl_primitive_desc_create(&pd, &fwd, NULL, engine, NULL)
            != dnnl_success)
        return NULL;
    return pd;
}

/* Backward-data pd in compute type @p dt. The weights layout is always
 * the primitive's choice: no jit kernel takes plain weights, and weights
 * are small (and converted once when constant). The activations are on
 * their io layouts (@p any == 0; their type is dt) or chosen too. */
static dnnl_status_t create_conv_pd(const dgrad_plan_t *plan,
        dnnl_data_type_t dt, int any, dnnl_primitive_desc_t *pd) {
    dnnl_memory_desc_t in = plan->in.io_md, wei, out = plan->out.io_md;
    dnnl_dims_t strides, dilates, pl, pr;
    dnnl_convolution_desc_t bwd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL;
    dnnl_status_t s = md_any(&wei, &plan->wei.io_md, dt);
    *pd = NULL;
    if (any && s == dnnl_success) s = md_any(&in, &plan->in.io_md, dt);
    if (any && s == dnnl_success) s = md_any(&out, &plan->out.io_md, dt);
    conv_params(plan, strides, dilates, pl, pr);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_backward_data_desc_init(&bwd,
                dnnl_convolution_direct, &out, &wei, &in, strides, dilates,
                pl, pr);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) {
        hint = forward_hint(plan, &in, &wei, &out);
        s = dnnl_primitive_desc_create(pd, &bwd, attr, engine, hint);
    }
    dnnl_primitive_desc_destroy(hint);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

static const char *pd_impl_name(const_dnnl_primitive_desc_t pd) {
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name)
            != dnnl_success || !name)
        return "unknown";
    return name;
}

/* How fast an implementation is likely to be: 0 reference, 1 gemm,
 * 2 anything else (jit, brgemm ...). */
static int impl_rank(const_dnnl_primitive_desc_t pd) {
    const char *name = pd_impl_name(pd);
    return strstr(name, "ref") ? 0 : strstr(name, "gemm") ? 1 : 2;
}

/* Layout policy (to be tuned by benchmark). The primitive on the io
 * layouts of the activations needs no activation reorders, so take it
 * unless oneDNN offers only its gemm/ref paths there; then let the
 * primitive choose the activation layouts too (format_tag_any) and pay
 * for reorders, if that gets a faster kind of implementation. */
static dnnl_status_t choose_conv_pd(const dgrad_plan_t *plan,
        dnnl_data_type_t dt, dnnl_primitive_desc_t *pd) {
    dnnl_primitive_desc_t direct = NULL, chosen = NULL;
    dnnl_status_t s_direct = create_conv_pd(plan, dt, 0, &direct);
    if (s_direct == dnnl_success && impl_rank(direct) == 2) {
        *pd = direct;
        return dnnl_success;
    }
    dnnl_status_t s = create_conv_pd(plan, dt, 1, &chosen);
    if (s == dnnl_success
            && (!direct || impl_rank(chosen) > impl_rank(direct))) {
        dnnl_primitive_desc_destroy(direct);
        *pd = chosen;
        return dnnl_success;
    }
    dnnl_primitive_desc_destroy(chosen);
    *pd = direct;
    return s_direct == dnnl_success ? dnnl_success : s;
}

/* ---------------------------------------------------------------------
 * Plan construction
 * ------------------------------------------------------------------- */

/* Turns @p pd into a step (the primitive keeps its own copy of the pd). */
static dnnl_status_t make_step(step_t *step, dnnl_primitive_desc_t pd,
        size_t *scratch_size) {
    const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!md) return dnnl_runtime_error;
    step->scratch_md = *md;
    size_t size = dnnl_memory_desc_get_size(md);
    if (size > *scratch_size) *scratch_size = size;
    return dnnl_primitive_create(&step->prim, pd);
}

/* The reorder of a path (io -> conv, or conv -> io for the output), or
 * nothing when the layouts are equal. */
static dnnl_status_t make_reorder(dgrad_plan_t *plan, tensor_path_t *t,
        int to_io) {
    const dnnl_memory_desc_t *from = to_io ? &t->conv_md : &t->io_md;
    const dnnl_memory_desc_t *to = to_io ? &t->io_md : &t->conv_md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_memory_desc_equal(from, to)) return dnnl_success;
    dnnl_status_t s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine,
                attr);
    if (s == dnnl_success) s = make_step(&t->reorder, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* Candidate layouts of the [1, Cout, 1...] bias for the binary add, by
 * spatial rank. oneDNN's jit binary wants src1 in the same blocked format
 * as src0 (a plain src1 against an nChw16c src0 falls back to ref:any,
 * measured 500x slower). With all other dims 1, every one of these puts
 * channel c at offset c, so the bias buffer is filled the same way. */
static const dnnl_format_tag_t bias_tags[3][4] = {
        {dnnl_abc, dnnl_aBc16b, dnnl_aBc8b, dnnl_aBc4b},
        {dnnl_abcd, dnnl_aBcd16b, dnnl_aBcd8b, dnnl_aBcd4b},
        {dnnl_abcde, dnnl_aBcde16b, dnnl_aBcde8b, dnnl_aBcde4b}};

/* Binary add pd for the result layout with the bias in layout @p tag. */
static dnnl_status_t create_bias_pd(const dgrad_plan_t *plan,
        dnnl_format_tag_t tag, dnnl_memory_desc_t *bias_md,
        dnnl_primitive_desc_t *pd) {
    const dnnl_memory_desc_t *dst = &plan->out.conv_md;
    dnnl_dims_t dims = {1, plan->p.Cout, 1, 1, 1};
    dnnl_binary_desc_t bd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(bias_md, dst->ndims,
            dims, dnnl_f32, tag);
    *pd = NULL;
    if (s == dnnl_success)
        s = dnnl_binary_desc_init(&bd, dnnl_binary_add, dst, bias_md, dst);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, &bd, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* In-place binary add of the per-channel bias (f32, broadcast over N and
 * space) to the convolution result, in the compute type and layout: the
 * first bias layout that gets a non-reference implementation, else the
 * first that works at all. */
static dnnl_status_t make_bias_add(dgrad_plan_t *plan) {
    const dnnl_format_tag_t *tags = bias_tags[plan->p.nsp - 1];
    dnnl_primitive_desc_t pd = NULL;
    /* One channel: only the plain bias. oneDNN 2.6's in-place jit add of
     * an aBcd16b [1,1,1,1] bias to an aBcd16b result leaves the result
     * unchanged (measured; 8b, 4b and every other channel count are
     * right), and with one channel every layout is the same scalar. */
    int n_tags = plan->p.Cout == 1 ? 1 : 4;
    for (int i = 0; i < n_tags; i++) {
        dnnl_memory_desc_t md;
        dnnl_primitive_desc_t cand = NULL;
        if (create_bias_pd(plan, tags[i], &md, &cand) != dnnl_success)
            continue;
        int fast = impl_rank(cand) > 0;
        if (pd && !fast) {
            dnnl_primitive_desc_destroy(cand);
            continue;
        }
        dnnl_primitive_desc_destroy(pd);
        pd = cand;
        plan->bias_md = md;
        if (fast) break;
    }
    if (!pd) return dnnl_unimplemented;
    dnnl_status_t s = make_step(&plan->bias_add, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

/* A bias is added after the convolution, so in a 16-bit type the result
 * would be rounded twice (convolution, then the add): with a bias the
 * convolution runs in f32 through the staging copies and is rounded once,
 * as the reference is. */
static int bias_needs_f32(const dgrad_problem_t *p) {
    return p->has_bias && p->dt != dgrad_f32;
}

/* The convolution in the problem's type, or in f32 through staging copies
 * when oneDNN has none for that type (f16 on CPU in oneDNN 2.6) or a bias
 * needs it (bias_needs_f32). */
static dnnl_status_t make_conv(dgrad_plan_t *plan) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_unimplemented;
    if (!bias_needs_f32(&plan->p)) {
        s = init_io_mds(plan, 0);
        if (s == dnnl_success)
            s = choose_conv_pd(plan, to_dnnl_dt(plan->p.dt), &pd);
    }
    if (s == dnnl_unimplemented && plan->p.dt != dgrad_f32) {
        s = init_io_mds(plan, 1);
        if (s == dnnl_success) s = choose_conv_pd(plan, dnnl_f32, &pd);
    }
    if (s != dnnl_success) return s;
    plan->in.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_diff_dst_md, 0);
    plan->wei.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_weights_md, 0);
    plan->out.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_diff_src_md, 0);
    snprintf(plan->impl, sizeof plan->impl, "%s", pd_impl_name(pd));
    s = make_step(&plan->conv, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

/* Builds every primitive of a non-empty plan; names the failing step
 * through @p what. */
static dnnl_status_t build_primitives(dgrad_plan_t *plan, const char **what) {
    *what = "convolution backward data creation";
    dnnl_status_t s = make_conv(plan);
    if (s != dnnl_success) return s;
    *what = "reorder creation";
    s = make_reorder(plan, &plan->in, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->wei, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->out, 1);
    if (s != dnnl_success || !plan->p.has_bias) return s;
    *what = "bias binary add creation";
    return make_bias_add(plan);
}

static void plan_destroy(dgrad_plan_t *plan) {
    step_t *steps[] = {&plan->conv, &plan->bias_add, &plan->in.reorder,
            &plan->wei.reorder, &plan->out.reorder};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        dnnl_primitive_destroy(steps[i]->prim);
    free(plan);
    atomic_fetch_sub(&live_plans, 1);
}

static dgrad_status_t check_problem(const dgrad_problem_t *p) {
    int ok = p->nsp >= 1 && p->nsp <= DGRAD_MAX_SPATIAL && p->G >= 1
            && p->N >= 0 && p->Cin >= 0 && p->Cout >= 0
            && p->Cin % p->G == 0 && p->Cout % p->G == 0
            && to_dnnl_dt(p->dt) != dnnl_data_type_undef;
    for (int i = 0; ok && i < p->nsp; i++)
        ok = p->S[i] >= 1 && p->D[i] >= 1 && p->K[i] >= 1 && p->Y[i] >= 0;
    for (int i = 0; ok && i < 2 + p->nsp; i++)
        ok = p->in_strides[i] >= 0 && p->out_strides[i] >= 0
                && p->wei_strides[i] >= 0 && p->wei_strides[i + 1] >= 0;
    ok = ok && p->bias_stride >= 0;
    char desc[512];
    if (!ok) {
        describe_problem(p, desc, sizeof desc);
        return dgrad_error(dgrad_invalid_arguments,
                "oneDNN lowering: malformed canonical problem (%s)", desc);
    }
    /* oneDNN 2.6 computes some blockings in 32-bit ints: a channel count of
     * 2^32 crashes primitive creation (SIGFPE), so larger dims are refused
     * before oneDNN sees them. */
    int64_t largest = p->N > p->Cin ? p->N : p->Cin;
    if (p->Cout > largest) largest = p->Cout;
    for (int i = 0; i < p->nsp; i++) {
        int64_t sp[] = {p->X[i], p->K[i], p->Y[i], p->S[i], p->D[i],
                p->PB[i] < 0 ? -p->PB[i] : p->PB[i]};
        for (size_t j = 0; j < sizeof sp / sizeof sp[0]; j++)
            if (sp[j] > largest) largest = sp[j];
    }
    if (largest <= INT32_MAX) return dgrad_success;
    describe_problem(p, desc, sizeof desc);
    return dgrad_error(dgrad_unimplemented,
            "oneDNN lowering: a size (%lld) exceeds 2^31-1, the largest "
            "oneDNN 2.6 handles safely (%s)", (long long)largest, desc);
}

static dgrad_status_t plan_create(const dgrad_problem_t *problem,
        dgrad_plan_t **out) {
    dgrad_plan_t *plan = calloc(1, sizeof *plan);
    if (!plan)
        return dgrad_error(dgrad_out_of_memory,
                "oneDNN lowering: cannot allocate a plan");
    atomic_fetch_add(&live_plans, 1);
    atomic_init(&plan->refs, 1);
    plan->p = *problem;
    plan->elsize = problem->dt == dgrad_f32 ? 4 : 2;
    int any_output = problem->N > 0 && problem->Cout > 0;
    plan->empty = !compute_region(plan) || !any_output;
    if (plan->empty) {
        snprintf(plan->impl, sizeof plan->impl, "none");
        *out = plan;
        return dgrad_success;
    }
    const char *what = "";
    dnnl_status_t s = build_primitives(plan, &what);
    if (s != dnnl_success) {
        /* The canonical problem is valid, so oneDNN refusing to build it
         * means "not supported here": a compiler may fall back. */
        dgrad_status_t st = dnnl_fail_as(problem, s, what, dgrad_unimplemented);
        plan_destroy(plan);
        return st;
    }
    *out = plan;
    return dgrad_success;
}

/* ---------------------------------------------------------------------
 * Plan cache
 * ------------------------------------------------------------------- */

typedef struct cache_entry {
    dgrad_plan_t *plan; /* the cache's reference; key = plan->p */
    uint64_t last_use;
} cache_entry_t;

static struct {
    pthread_mutex_t lock;
    cache_entry_t entries[CACHE_CAPACITY];
    size_t count;
    uint64_t clock;
    size_t hits;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Index of the entry for @p p, or -1. Caller holds the lock. */
static int cache_find(const dgrad_problem_t *p) {
    for (size_t i = 0; i < cache.count; i++)
        if (!memcmp(&cache.entries[i].plan->p, p, sizeof *p)) return (int)i;
    return -1;
}

/* Counts a hit and takes a new reference to entry @p i. Caller holds the
 * lock. */
static dgrad_plan_t *cache_use(int i) {
    cache.entries[i].last_use = ++cache.clock;
    cache.hits++;
    atomic_fetch_add(&cache.entries[i].plan->refs, 1);
    return cache.entries[i].plan;
}

/* Inserts @p plan (taking a reference for the cache) and returns the plan
 * it evicted, if any, for release outside the lock. Caller holds the lock.
 * Evicting only drops the cache's reference: holders keep their plans. */
static dgrad_plan_t *cache_insert(dgrad_plan_t *plan) {
    size_t slot = cache.count;
    dgrad_plan_t *victim = NULL;
    if (cache.count == CACHE_CAPACITY) {
        slot = 0;
        for (size_t i = 1; i < cache.count; i++)
            if (cache.entries[i].last_use < cache.entries[slot].last_use)
                slot = i;
        victim = cache.entries[slot].plan;
    } else {
        cache.count++;
    }
    atomic_fetch_add(&plan->refs, 1);
    cache.entries[slot].plan = plan;
    cache.entries[slot].last_use = ++cache.clock;
    return victim;
}

static void cache_clear_at_exit(void) {
    cache_entry_t entries[CACHE_CAPACITY];
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.count;
    memcpy(entries, cache.entries, n * sizeof entries[0]);
    cache.count = 0;
    pthread_mutex_unlock(&cache.lock);
    for (size_t i = 0; i < n; i++) dgrad_plan_release(entries[i].plan);
    /* Plans a caller still holds keep using the engine. */
    if (atomic_load(&live_plans) == 0 && engine) {
        dnnl_engine_destroy(engine);
        engine = NULL;
    }
}

dgrad_status_t dgrad_plan_get(const dgrad_problem_t *problem,
        dgrad_plan_t **plan) {
    if (!problem || !plan)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_get: problem and plan must not be NULL");
    dgrad_status_t st = check_problem(problem);
    if (st != dgrad_success) return st;
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success)
        return dnnl_fail(problem, engine_status, "CPU engine creation");

    pthread_mutex_lock(&cache.lock);
    int i = cache_find(problem);
    dgrad_plan_t *found = i >= 0 ? cache_use(i) : NULL;
    pthread_mutex_unlock(&cache.lock);
    if (found) {
        *plan = found;
        return dgrad_success;
    }
    /* Create outside the lock (it can take milliseconds); another thread
     * may have inserted the same problem meanwhile: then keep theirs. */
    dgrad_plan_t *fresh = NULL, *victim = NULL;
    if ((st = plan_create(problem, &fresh)) != dgrad_success) return st;
    pthread_mutex_lock(&cache.lock);
    i = cache_find(problem);
    if (i >= 0) {
        found = cache_use(i);
    } else {
        victim = cache_insert(fresh);
        found = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&cache.lock);
    dgrad_plan_release(fresh);
    dgrad_plan_release(victim);
    *plan = found;
    return dgrad_success;
}

void dgrad_plan_release(dgrad_plan_t *plan) {
    if (plan && atomic_fetch_sub(&plan->refs, 1) == 1) plan_destroy(plan);
}

size_t dgrad_plan_cache_size(void) {
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.count;
    pthread_mutex_unlock(&cache.lock);
    return n;
}

size_t dgrad_plan_cache_hits(void) {
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.hits;
    pthread_mutex_unlock(&cache.lock);
    return n;
}

const char *dgrad_plan_impl_name(const dgrad_plan_t *plan) {
    return plan ? plan->impl : "none";
}

/* ---------------------------------------------------------------------
 * Type conversion and border fill (plain loops)
 * ------------------------------------------------------------------- */

/* Contiguous f16 runs use the F16C instructions when the CPU has them
 * (checked at run time); they return how many elements they converted and
 * the scalar loops do the rest. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx,f16c"))) static int64_t f16c_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j,
                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + j))));
    return j;
}

__attribute__((target("avx,f16c"))) static int64_t f16c_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j),
                _mm256_cvtps_ph(_mm256_loadu_ps(src + j),
                        _MM_FROUND_TO_NEAREST_INT));
    return j;
}

/* Every AVX2 CPU has F16C, and "avx2" is a feature name every GCC and
 * Clang accept here (Clang 14 does not know "f16c"); the check includes
 * the OS's AVX state support. */
static int have_f16c(void) { return __builtin_cpu_supports("avx2"); }
#else
static int64_t f16c_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t f16c_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int have_f16c(void) { return 0; }
#endif

static void run_to_f32(dgrad_data_type_t dt, const uint16_t *src,
        int64_t ss, float *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (dt == dgrad_f16 && ss == 1 && ds == 1 && have_f16c())
        j = f16c_to_f32(src, dst, n);
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f16_to_f32(src[j * ss])
                                      : dgrad_bf16_to_f32(src[j * ss]);
}

static void run_from_f32(dgrad_data_type_t dt, const float *src, int64_t ss,
        uint16_t *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (dt == dgrad_f16 && ss == 1 && ds == 1 && have_f16c())
        j = f16c_from_f32(src, dst, n);
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f32_to_f16(src[j * ss])
                                      : dgrad_f32_to_bf16(src[j * ss]);
}

/* Converts between the user's 16-bit tensor and its f32 staging copy. */
static void convert(const convert_t *cv, dgrad_data_type_t dt, int to_f32,
        const void *src, void *dst) {
    int64_t idx[MAX_NDIMS] = {0};
    int inner = cv->ndims - 1;
    for (;;) {
        int64_t uo = 0, so = 0;
        for (int j = 0; j < inner; j++) {
            uo += idx[j] * cv->user_strides[j];
            so += idx[j] * cv->stage_strides[j];
        }
        if (to_f32)
            run_to_f32(dt, (const uint16_t *)src + uo,
                    cv->user_strides[inner], (float *)dst + so,
                    cv->stage_strides[inner], cv->dims[inner]);
        else
            run_from_f32(dt, (const float *)src + so,
                    cv->stage_strides[inner], (uint16_t *)dst + uo,
                    cv->user_strides[inner], cv->dims[inner]);
        int j = inner - 1;
        while (j >= 0 && ++idx[j] == cv->dims[j]) idx[j--] = 0;
        if (j < 0) break;
    }
}

/* Writes @p count elements of @p elsize bytes (pattern @p pat) at element
 * offset @p off with element stride @p stride. */
static void fill_run(char *base, size_t elsize, int64_t off, int64_t count,
        int64_t stride, const void *pat) {
    if (elsize == 4) {
        uint32_t v;
        memcpy(&v, pat, 4);
        for (int64_t j = 0; j < count; j++)
            ((uint32_t *)base)[off + j * stride] = v;
    } else {
        uint16_t v;
        memcpy(&v, pat, 2);
        for (int64_t j = 0; j < count; j++)
            ((uint16_t *)base)[off + j * stride] = v;
    }
}

/* Fills the part of one (n, c) spatial block outside the computed box
 * (everything when @p inside is 0) with @p pat, axis by axis. */
static void fill_outside(const dgrad_plan_t *plan, char *out, int64_t off,
        int axis, int inside, const void *pat) {
    const dgrad_problem_t *p = &plan->p;
    int64_t stride = p->out_strides[2 + axis];
    int64_t lo = inside ? plan->lo[axis] : p->Y[axis];
    int64_t hi = inside ? plan->hi[axis] : p->Y[axis];
    if (axis == p->nsp - 1) {
        fill_run(out, plan->elsize, off, lo, stride, pat);
        fill_run(out, plan->elsize, off + hi * stride, p->Y[axis] - hi,
                stride, pat);
        return;
    }
    for (int64_t y = 0; y < p->Y[axis]; y++)
        fill_outside(plan, out, off + y * stride, axis + 1,
                y >= lo && y < hi, pat);
}

/* Output elements that receive no term get the bias (or zero), in the
 * output's type and strides. */
static void fill_border(const dgrad_plan_t *plan, const void *bias,
        void *out) {
    const dgrad_problem_t *p = &plan->p;
    for (int64_t c = 0; c < p->Cout; c++) {
        double v = bias ? dgrad_load(bias, p->dt, c * p->bias_stride) : 0.0;
        unsigned char pat[4];
        dgrad_store(pat, p->dt, 0, v);
        for (int64_t n = 0; n < p->N; n++)
            fill_outside(plan, out, n * p->out_strides[0]
                    + c * p->out_strides[1], 0, !plan->empty, pat);
    }
}

/* ---------------------------------------------------------------------
 * Execution
 * ------------------------------------------------------------------- */

/* Per-execute state: a stream and one workspace holding the scratchpad
 * and the intermediate buffers. Nothing is shared between executes, so
 * they may run concurrently on one plan. */
typedef struct exec_ctx {
    const dgrad_plan_t *plan;
    dnnl_stream_t stream;
    char *ws;
    char *scratch;
    char *stage[3], *conv[3]; /* per tensor: in, wei, out */
    float *bias_f32;
} exec_ctx_t;

enum { T_IN = 0, T_WEI = 1, T_OUT = 2 };

static const tensor_path_t *path_of(const dgrad_plan_t *plan, int t) {
    return t == T_IN ? &plan->in : t == T_WEI ? &plan->wei : &plan->out;
}

/* The primitive needs a buffer of its own for a tensor when a reorder or
 * a type conversion stands between it and the user. */
static int needs_conv_buf(const dgrad_plan_t *plan, int t) {
    return path_of(plan, t)->reorder.prim || plan->staged;
}

/* A staging buffer is needed when both stand there. */
static int needs_stage_buf(const dgrad_plan_t *plan, int t) {
    return path_of(plan, t)->reorder.prim && plan->staged;
}

static size_t align_up(size_t n) {
    return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

/* Creates the stream and carves the workspace: scratchpad, then staging
 * and primitive buffers of the tensors in @p tensors (a bit mask), then
 * the f32 bias. */
static dnnl_status_t ctx_init(exec_ctx_t *c, unsigned tensors, int bias) {
    const dgrad_plan_t *plan = c->plan;
    size_t sizes[8], total = 0;
    char **slots[8] = {&c->scratch, &c->stage[0], &c->conv[0], &c->stage[1],
            &c->conv[1], &c->stage[2], &c->conv[2], (char **)&c->bias_f32};
    sizes[0] = plan->scratch_size;
    for (int t = 0; t < 3; t++) {
        const tensor_path_t *tp = path_of(plan, t);
        int used = (tensors >> t) & 1;
        sizes[1 + 2 * t] = used && needs_stage_buf(plan, t)
                ? dnnl_memory_desc_get_size(&tp->io_md) : 0;
        sizes[2 + 2 * t] = used && needs_conv_buf(plan, t)
                ? dnnl_memory_desc_get_size(&tp->conv_md) : 0;
    }
    sizes[7] = bias ? dnnl_memory_desc_get_size(&plan->bias_md) : 0;
    for (int i = 0; i < 8; i++) total += align_up(sizes[i]);
    dnnl_status_t s = dnnl_stream_create(&c->stream, engine,
            dnnl_stream_default_flags);
    if (s != dnnl_success || total == 0) return s;
    c->ws = aligned_alloc(ALIGNMENT, total);
    if (!c->ws) return dnnl_out_of_memory;
    for (size_t i = 0, off = 0; i < 8; off += align_up(sizes[i]), i++)
        *slots[i] = c->ws + off;
    return dnnl_success;
}

static void ctx_free(exec_ctx_t *c) {
    dnnl_stream_destroy(c->stream);
    free(c->ws);
}

static dnnl_status_t mem(dnnl_memory_t *m, const dnnl_memory_desc_t *md,
        const void *ptr) {
    /* oneDNN takes non-const handles; inputs are only read. */
    return dnnl_memory_create(m, md, engine, (void *)(uintptr_t)ptr);
}

/* Executes @p step on up to three (arg, md, pointer) operands plus its
 * scratchpad, then waits: the next step may reuse the scratchpad. */
static dnnl_status_t run_step(exec_ctx_t *c, const step_t *step, int nargs,
        const int *arg, const dnnl_memory_desc_t *const *md,
        const void *const *ptr) {
    dnnl_exec_arg_t args[4] = {{0, NULL}};
    dnnl_status_t s = dnnl_success;
    int n = 0;
    for (; n < nargs && s == dnnl_success; n++) {
        args[n].arg = arg[n];
        s = mem(&args[n].memory, md[n], ptr[n]);
    }
    if (s == dnnl_success && dnnl_memory_desc_get_size(&step->scratch_md)) {
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        s = mem(&args[n++].memory, &step->scratch_md, c->scratch);
    }
    if (s == dnnl_success)
        s = dnnl_primitive_execute(step->prim, c->stream, n, args);
    if (s == dnnl_success) s = dnnl_stream_wait(c->stream);
    for (int i = 0; i < n; i++) dnnl_memory_destroy(args[i].memory);
    return s;
}

static dnnl_status_t run_reorder(exec_ctx_t *c, const step_t *step,
        const dnnl_memory_desc_t *from_md, const void *from,
        const dnnl_memory_desc_t *to_md, void *to) {
    const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    const dnnl_memory_desc_t *md[2] = {from_md, to_md};
    const void *ptr[2] = {from, to};
    return run_step(c, step, 2, arg, md, ptr);
}

/* Brings input tensor @p t from the user's buffer into the primitive's
 * layout: user -(convert)-> io -(reorder)-> conv. Sets @p conv_ptr to what
 * the primitive reads; @p conv_buf (NULL: the context's) receives it. */
static dnnl_status_t bring_in(exec_ctx_t *c, int t, const void *user,
        void *conv_buf, const void **conv_ptr) {
    const dgrad_plan_t *plan = c->plan;
    const tensor_path_t *tp = path_of(plan, t);
    char *conv = conv_buf ? conv_buf : c->conv[t];
    const void *io = user;
    if (plan->staged) {
        void *stage = tp->reorder.prim ? c->stage[t] : conv;
        convert(&tp->cv, plan->p.dt, 1, user, stage);
        io = stage;
    }
    *conv_ptr = io;
    if (!tp->reorder.prim) return dnnl_success;
    *conv_ptr = conv;
    return run_reorder(c, &tp->reorder, &tp->io_md, io, &tp->conv_md, conv);
}

/* Takes the result from the primitive's layout to the user's sub-box:
 * conv -(reorder)-> io -(convert)-> user. */
static dnnl_status_t bring_out(exec_ctx_t *c, const void *conv,
        void *user_box) {
    const dgrad_plan_t *plan = c->plan;
    const tensor_path_t *tp = &plan->out;
    void *io = !plan->staged ? user_box
            : tp->reorder.prim ? (void *)c->stage[T_OUT]
                               : (void *)c->conv[T_OUT];
    dnnl_status_t s = dnnl_success;
    if (tp->reorder.prim)
        s = run_reorder(c, &tp->reorder, &tp->conv_md, conv, &tp->io_md, io);
    if (s == dnnl_success && plan->staged)
        convert(&tp->cv, plan->p.dt, 0, io, user_box);
    return s;
}

static dnnl_status_t run_conv(exec_ctx_t *c, const void *in,
        const void *wei, void *out) {
    const dgrad_plan_t *plan = c->plan;
    const int arg[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS,
            DNNL_ARG_DIFF_SRC};
    const dnnl_memory_desc_t *md[3] = {&plan->in.conv_md,
            &plan->wei.conv_md, &plan->out.conv_md};
    const void *ptr[3] = {in, wei, out};
    return run_step(c, &plan->conv, 3, arg, md, ptr);
}

/* result += bias[c], in place in the primitive's output. */
static dnnl_status_t run_bias(exec_ctx_t *c, const void *bias,
        void *result) {
    const dgrad_plan_t *plan = c->plan;
    const int arg[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    const dnnl_memory_desc_t *md[3] = {&plan->out.conv_md, &plan->bias_md,
            &plan->out.conv_md};
    const void *ptr[3] = {result, c->bias_f32, result};
    /* Channel c sits at offset c in every bias layout; zero the padding
     * of blocked ones. */
    size_t n = dnnl_memory_desc_get_size(&plan->bias_md) / sizeof(float);
    memset(c->bias_f32, 0, n * sizeof(float));
    for (int64_t ch = 0; ch < plan->p.Cout; ch++)
        c->bias_f32[ch] = (float)dgrad_load(bias, plan->p.dt,
                ch * plan->p.bias_stride);
    return run_step(c, &plan->bias_add, 3, arg, md, ptr);
}

static dnnl_status_t run_all(exec_ctx_t *c, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out) {
    const dgrad_plan_t *plan = c->plan;
    char *out_box = (char *)out + plan->out_offset * (int64_t)plan->elsize;
    void *conv_out = needs_conv_buf(plan, T_OUT) ? c->conv[T_OUT] : out_box;
    const void *conv_in = NULL, *conv_wei = weights;
    dnnl_status_t s = bring_in(c, T_IN, in, NULL, &conv_in);
    if (s == dnnl_success && !weights_prepared)
        s = bring_in(c, T_WEI, weights, NULL, &conv_wei);
    if (s == dnnl_success) s = run_conv(c, conv_in, conv_wei, conv_out);
    if (s == dnnl_success && bias) s = run_bias(c, bias, conv_out);
    if (s == dnnl_success) s = bring_out(c, conv_out, out_box);
    return s;
}

size_t dgrad_plan_prepared_weights_size(const dgrad_plan_t *plan) {
    if (!plan || plan->empty || !needs_conv_buf(plan, T_WEI)) return 0;
    return dnnl_memory_desc_get_size(&plan->wei.conv_md);
}

dgrad_status_t dgrad_plan_prepare_weights(const dgrad_plan_t *plan,
        const void *user_weights, void *prepared) {
    if (!plan || !user_weights || !prepared)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_prepare_weights: NULL argument");
    if (dgrad_plan_prepared_weights_size(plan) == 0) return dgrad_success;
    exec_ctx_t c = {.plan = plan};
    const void *conv_wei = NULL;
    /* The result goes straight to @p prepared, not to the context's
     * primitive buffer (weights are small: no need to spare it). */
    dnnl_status_t s = ctx_init(&c, 1u << T_WEI, 0);
    if (s == dnnl_success)
        s = bring_in(&c, T_WEI, user_weights, prepared, &conv_wei);
    ctx_free(&c);
    return s == dnnl_success ? dgrad_success
            : dnnl_fail(&plan->p, s, "weights preparation");
}

dgrad_status_t dgrad_plan_execute(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out) {
    if (!plan || !in || !weights || !out || (plan->p.has_bias && !bias))
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_execute: NULL buffer");
    if (!plan->p.has_bias) bias = NULL;
    if (dgrad_plan_prepared_weights_size(plan) == 0) weights_prepared = 0;
    if (!plan->empty) {
        exec_ctx_t c = {.plan = plan};
        unsigned tensors = weights_prepared
                ? (1u << T_IN) | (1u << T_OUT) : 7u;
        dnnl_status_t s = ctx_init(&c, tensors, bias != NULL);
        if (s == dnnl_success)
            s = run_all(&c, in, weights, weights_prepared, bias, out);
        ctx_free(&c);
        if (s != dnnl_success) return dnnl_fail(&plan->p, s, "execution");
    }
    fill_border(plan, bias, out);
    return dgrad_success;
}
