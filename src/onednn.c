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
 *
 * Layout choice (DESIGN.md section 3): plan creation asks oneDNN for the
 * primitive on the user's layouts, on the layouts it prefers
 * (format_tag_any) and on dense channels-last, each with the weights in
 * the primitive's preferred layout or the user's; when the output has a
 * tail past the natural size (output padding), also for the geometry that
 * computes the tail (negative right padding) instead of filling it. It
 * keeps the distinct candidates (reference implementations only when
 * nothing else exists) and, when more than one remains, times each on
 * scratch buffers, reorders and conversions included (the best of a few
 * runs after a warm-up; weights prepared first when the caller declares
 * them constant, which is part of the cache key), and keeps the fastest.
 * The plan cache makes this a one-time cost per problem. Problems beyond
 * SEARCH_MAX_BYTES or SEARCH_MAX_MACS are timed on a reduced copy whose
 * winner is built only if its implementations hold at full size; problems
 * under SEARCH_MIN_MACS are not timed (fewest reorders per execute, or the
 * ranking with groups). DGRAD_LAYOUT_SEARCH=0 in the environment replaces
 * every timing by a ranking of the implementation names
 * (DGRAD_LAYOUT_SEARCH=verbose prints the candidates and their times).
 * Plans of a few microseconds are also tried on one OpenMP thread (see
 * threads_enter), and reorders beyond oneDNN's 2^31-byte jit limit run in
 * chunks (see chunking_t).
 *
 * Execution allocates nothing in the steady state: each plan keeps a pool
 * of execution contexts (stream, workspace with scratchpad and
 * intermediate buffers, every oneDNN memory object its steps use, all
 * made with the context); an execute takes one from the pool (lock-free
 * for the common single-threaded case), or creates one when every context
 * is in use by another thread, and gives it back. Nothing that can fail
 * for lack of resources happens after the first write to the caller's
 * output, and only the last step writes it (see writes_user_output). Type conversions of large tensors run on every
 * thread of the OpenMP runtime when dgrad is built with OpenMP (the
 * runtime oneDNN itself runs on).
 */
#define _POSIX_C_SOURCE 200809L

#include "onednn.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "aliasing.h"
#include "alloc.h"
#include "dtype.h"
#include "error.h"

#define ALIGNMENT 64
#define CACHE_CAPACITY 256
#define MAX_NDIMS (3 + DGRAD_MAX_SPATIAL)

/* A reorder run piece by piece: oneDNN 2.6 has jit reorders only for
 * tensors under 2^31 bytes and falls back to its generic one (some 30x
 * slower) beyond. Each chunk is a box of @p ext elements per axis of both
 * plain tensors, at offsets that step through the whole tensor; one
 * primitive serves every chunk. */
typedef struct chunking {
    int ndims;
    int64_t count[MAX_NDIMS]; /* chunks along each axis */
    dnnl_dims_t ext;          /* chunk extent along each axis */
    dnnl_dims_t from_stride;  /* element strides of the two tensors */
    dnnl_dims_t to_stride;
    size_t from_elsize, to_elsize;
    dnnl_memory_desc_t from_md, to_md; /* of one chunk */
} chunking_t;

/* One primitive with the scratchpad it wants (user scratchpad mode, so the
 * buffer comes from each execute and executes can run concurrently). */
typedef struct step {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t scratch_md;
    size_t scratch_bytes; /* of scratch_md (oneDNN computes it slowly) */
    char impl[48]; /* oneDNN implementation name */
    int64_t n_chunks; /* > 1: a reorder run in chunks (see chunking_t) */
    chunking_t chunks;
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

/* Execution steps, in order; each has up to three operands plus its
 * scratchpad. */
enum { S_IN = 0, S_WEI = 1, S_CONV = 2, S_BIAS = 3, S_OUT = 4, N_STEPS = 5 };
#define SLOT_SCRATCH 3

/* A oneDNN memory object of an execution context and the buffer it is
 * bound to. Intermediate buffers stay bound for the context's life;
 * user buffers are re-bound only when the pointer changes (re-binding
 * makes oneDNN zero the padding of blocked layouts). */
typedef struct bound {
    dnnl_memory_t mem;
    const void *ptr;
} bound_t;

/* Everything one execution needs besides the plan: a stream and one
 * workspace holding the scratchpad and the intermediate buffers. Pooled
 * per plan; one execution uses a context at a time. */
typedef struct exec_ctx {
    struct exec_ctx *next; /* pool link */
    const struct dgrad_plan *plan;
    dnnl_stream_t stream;
    char *ws;
    char *scratch;
    char *stage[3], *conv[3]; /* per tensor: in, wei, out */
    float *bias_f32;
    bound_t mem[N_STEPS][4];
} exec_ctx_t;

struct dgrad_plan {
    atomic_long refs;
    dgrad_problem_t p;
    int weights_constant;          /* chosen for prepared weights (cache key) */
    int single_thread;             /* created and run on one OpenMP thread */
    const char *choice;            /* how the layout was chosen (tests) */
    size_t prepared_weights_bytes; /* 0: the primitive reads user weights */
    size_t bias_bytes;             /* of bias_md */
    size_t elsize;                 /* bytes per user element */
    int empty;                     /* no primitive: output is all bias/zero */
    int staged;                    /* compute type differs from the user's */
    int full_box;                  /* the primitive covers the whole output */
    int64_t lo[DGRAD_MAX_SPATIAL]; /* sub-box of the output the primitive */
    int64_t hi[DGRAD_MAX_SPATIAL]; /* computes: [lo, hi) per axis */
    int64_t out_offset;            /* elements from out to the sub-box */
    char impl[128];
    tensor_path_t in, wei, out;    /* out covers the sub-box only */
    dnnl_memory_desc_t bias_md;    /* f32 [1, Cout, 1...] dense */
    step_t conv, bias_add;
    size_t scratch_size;           /* largest scratchpad of all steps */
    _Atomic(exec_ctx_t *) spare;   /* an idle context, taken lock-free */
    pthread_mutex_t pool_lock;     /* guards pool */
    exec_ctx_t *pool;              /* more idle execution contexts */
};

/* ---------------------------------------------------------------------
 * Engine and messages
 * ------------------------------------------------------------------- */

static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static atomic_long live_plans;

static void cache_clear_at_exit(void);

/* Creates the CPU engine at the first planning; a failed creation is
 * tried again at the next one. */
static dnnl_status_t engine_init(void) {
    static int exit_handler;
    dnnl_status_t s = dnnl_success;
    pthread_mutex_lock(&engine_lock);
    if (!engine) {
        s = DGRAD_ACQUIRE(dnnl_engine_create(&engine, dnnl_cpu, 0));
        if (s != dnnl_success) engine = NULL;
    }
    /* Release cached plans (and the engine) at exit so leak checkers see
     * a clean process. */
    if (engine && !exit_handler) exit_handler = atexit(cache_clear_at_exit) == 0;
    pthread_mutex_unlock(&engine_lock);
    return s;
}

/* A failure during planning that is not about the candidate (out of
 * memory, or a primitive that fails to run on the scratch buffers) does
 * not make the search skip to another candidate: the caller would get a
 * plan that depends on memory pressure, and fault-injection tests could
 * not see the failure. The planning fails as a whole. Each acquisition
 * and execution in the oneDNN layer reports through these. */
static _Thread_local dnnl_status_t planning_failure;

static dnnl_status_t acquired(dnnl_status_t s) {
    if (s == dnnl_out_of_memory) planning_failure = s;
    return s;
}

static void *allocated(void *p) {
    if (!p) planning_failure = dnnl_out_of_memory;
    return p;
}

#define ACQUIRE(call) acquired(DGRAD_ACQUIRE(call))

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
 * it is empty on some axis (or there is nothing to sum over). With
 * @p extend_tail, hi is the output size. */
static int compute_region(dgrad_plan_t *plan, int extend_tail) {
    const dgrad_problem_t *p = &plan->p;
    int nonempty = p->Cin > 0;
    plan->out_offset = 0;
    plan->full_box = 1;
    for (int i = 0; i < p->nsp; i++) {
        int64_t f = dgrad_problem_natural_size(p, i);
        int64_t lo = p->PB[i] < 0 ? -p->PB[i] : 0;
        int64_t hi = f - p->PB[i] < p->Y[i] ? f - p->PB[i] : p->Y[i];
        if (p->X[i] <= 0 || hi <= lo) nonempty = 0;
        /* The tail past the natural size receives no term: the primitive
         * can compute it too (negative right padding, zeros) instead of
         * the border fill. */
        if (extend_tail && hi > lo) hi = p->Y[i];
        plan->lo[i] = lo;
        plan->hi[i] = hi;
        plan->out_offset += lo * p->out_strides[2 + i];
        if (lo != 0 || hi != p->Y[i]) plan->full_box = 0;
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
 * strides that keep the user's axis order. */
static void init_convert(convert_t *cv, int nd, const int64_t *dims,
        const int64_t *strides, int64_t *dense) {
    /* Outermost first: larger strides, then (ties) larger dims, so that a
     * size-1 axis sits inside the axis it ties with (a one-channel NXC
     * tensor stays channels-last for oneDNN's layout matching), then
     * canonical order. */
    int order[MAX_NDIMS];
    for (int i = 0; i < nd; i++) {
        int j = i;
        for (; j > 0 && (strides[order[j - 1]] < strides[i]
                        || (strides[order[j - 1]] == strides[i]
                                && dims[order[j - 1]] < dims[i]));
                j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t acc = 1;
    for (int j = nd - 1; j >= 0; j--) {
        dense[order[j]] = acc;
        acc *= dims[order[j]];
    }
    /* Axes outermost first; size-1 axes dropped; an axis merged into the
     * next inner one when both sides are contiguous across them (longer
     * runs for the vector loops). */
    int n = 0;
    for (int j = 0; j < nd; j++) {
        int64_t d = dims[order[j]], us = strides[order[j]],
                ss = dense[order[j]];
        if (d == 1 && nd > 1) continue;
        cv->dims[n] = d;
        cv->user_strides[n] = us;
        cv->stage_strides[n] = ss;
        n++;
    }
    if (n == 0) {
        cv->dims[0] = 1;
        cv->user_strides[0] = cv->stage_strides[0] = 1;
        n = 1;
    }
    int m = 0;
    for (int j = 1; j < n; j++) {
        if (cv->user_strides[m] == cv->dims[j] * cv->user_strides[j]
                && cv->stage_strides[m] == cv->dims[j] * cv->stage_strides[j]) {
            cv->dims[j] *= cv->dims[m];
        } else {
            m++;
        }
        cv->dims[m] = cv->dims[j];
        cv->user_strides[m] = cv->user_strides[j];
        cv->stage_strides[m] = cv->stage_strides[j];
    }
    cv->ndims = m + 1;
}

/* The strides of size-1 axes do not address anything; oneDNN's layout
 * matching compares them all the same. Gives each the value it has in the
 * dense layout of the axis order init_convert uses (a one-channel NXC
 * tensor then matches nwc/nhwc/ndhwc, a one-channel NCX one ncw/...). */
static void canon_size1_strides(int nd, const int64_t *dims,
        const int64_t *strides, int64_t *out) {
    int order[MAX_NDIMS];
    for (int i = 0; i < nd; i++) {
        int j = i;
        for (; j > 0 && (strides[order[j - 1]] < strides[i]
                        || (strides[order[j - 1]] == strides[i]
                                && dims[order[j - 1]] < dims[i]));
                j--)
            order[j] = order[j - 1];
        order[j] = i;
        out[i] = strides[i];
    }
    int64_t inner = 1; /* stride the next axis outwards would have */
    for (int j = nd - 1; j >= 0; j--) {
        int a = order[j];
        if (dims[a] == 1) out[a] = inner;
        else inner = out[a] * dims[a];
    }
}

/* The io desc of a tensor: the user's memory, or its f32 staging copy. */
static dnnl_status_t init_path(tensor_path_t *t, int nd, const int64_t *dims,
        const int64_t *strides, dnnl_data_type_t user_dt, int staged) {
    int64_t dense[MAX_NDIMS];
    if (!staged) {
        canon_size1_strides(nd, dims, strides, dense);
        return md_strided(&t->io_md, nd, dims, user_dt, dense);
    }
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
    dnnl_status_t s = ACQUIRE(dnnl_primitive_attr_create(attr));
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
    if (ACQUIRE(dnnl_primitive_desc_create(&pd, &fwd, NULL, engine, NULL))
            != dnnl_success)
        return NULL;
    return pd;
}

/* Where a candidate puts the activations (diff_dst and diff_src) and the
 * weights. */
typedef enum act_mode {
    ACT_IO = 0,  /* the io layouts: the user's memory (or staging copy) */
    ACT_ANY = 1, /* the primitive's choice (format_tag_any) */
    ACT_NXC = 2, /* dense channels-last */
} act_mode_t;

typedef struct layout_cand {
    act_mode_t act;
    int wei_io; /* weights on their io layout instead of the primitive's */
} layout_cand_t;

/* In order of preference when timings are not taken. */
static const layout_cand_t layout_cands[] = {
        {ACT_IO, 0}, {ACT_ANY, 0}, {ACT_IO, 1}, {ACT_NXC, 0}, {ACT_NXC, 1}};
#define N_CANDS (sizeof layout_cands / sizeof layout_cands[0])

static dnnl_status_t md_nxc(dnnl_memory_desc_t *md,
        const dnnl_memory_desc_t *like, dnnl_data_type_t dt) {
    static const dnnl_format_tag_t tags[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    int nsp = like->ndims - 2;
    if (nsp < 1 || nsp > 3) return dnnl_invalid_arguments;
    return dnnl_memory_desc_init_by_tag(md, like->ndims, like->dims, dt,
            tags[nsp - 1]);
}

static dnnl_status_t md_act(dnnl_memory_desc_t *md,
        const dnnl_memory_desc_t *io, dnnl_data_type_t dt, act_mode_t m) {
    if (m == ACT_IO) {
        *md = *io;
        return dnnl_success;
    }
    return m == ACT_ANY ? md_any(md, io, dt) : md_nxc(md, io, dt);
}

/* Backward-data pd in compute type @p dt for candidate @p lc. */
static dnnl_status_t create_conv_pd(const dgrad_plan_t *plan,
        dnnl_data_type_t dt, const layout_cand_t *lc,
        dnnl_primitive_desc_t *pd) {
    dnnl_memory_desc_t in, wei = plan->wei.io_md, out;
    dnnl_dims_t strides, dilates, pl, pr;
    dnnl_convolution_desc_t bwd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL;
    dnnl_status_t s = md_act(&in, &plan->in.io_md, dt, lc->act);
    *pd = NULL;
    if (s == dnnl_success) s = md_act(&out, &plan->out.io_md, dt, lc->act);
    if (s == dnnl_success && !lc->wei_io) s = md_any(&wei, &plan->wei.io_md, dt);
    conv_params(plan, strides, dilates, pl, pr);
    if (s == dnnl_success)
        s = dnnl_dilated_convolution_backward_data_desc_init(&bwd,
                dnnl_convolution_direct, &out, &wei, &in, strides, dilates,
                pl, pr);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) {
        hint = forward_hint(plan, &in, &wei, &out);
        s = ACQUIRE(dnnl_primitive_desc_create(pd, &bwd, attr, engine, hint));
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
 * 2 anything else (jit, brgemm ...). Used when timings are not taken. */
static int impl_rank(const_dnnl_primitive_desc_t pd) {
    const char *name = pd_impl_name(pd);
    return strstr(name, "ref") ? 0 : strstr(name, "gemm") ? 1 : 2;
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
    snprintf(step->impl, sizeof step->impl, "%s", pd_impl_name(pd));
    size_t size = dnnl_memory_desc_get_size(md);
    step->scratch_bytes = size;
    if (size > *scratch_size) *scratch_size = size;
    return ACQUIRE(dnnl_primitive_create(&step->prim, pd));
}

/* Whether an implementation is oneDNN's generic (slow) one. */
static int impl_is_generic(const char *impl) {
    return strstr(impl, "simple") || strstr(impl, "ref");
}

/* Chunks of a reorder stay under this many bytes in both tensors (oneDNN
 * 2.6's jit reorders stop at 2^31); tests lower it. */
static _Atomic int64_t chunk_max_bytes = (int64_t)1 << 30;

void dgrad_plan_set_chunk_limit_for_testing(int64_t bytes) {
    atomic_store(&chunk_max_bytes, bytes > 0 ? bytes : (int64_t)1 << 30);
}

/* Axis @p a of a blocked-format md can be cut into boxes: it is not in an
 * inner block and not padded. */
static int axis_splittable(const dnnl_memory_desc_t *md, int a) {
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    for (int i = 0; i < b->inner_nblks; i++)
        if (b->inner_idxs[i] == a) return 0;
    return md->padded_dims[a] == md->dims[a] && md->padded_offsets[a] == 0;
}

/* The md of a box of @p ext elements per axis of @p parent, at its origin
 * (same strides and blocks; split axes are never blocked or padded). */
static void box_md(const dnnl_memory_desc_t *parent, const dnnl_dims_t ext,
        dnnl_memory_desc_t *md) {
    *md = *parent;
    for (int i = 0; i < parent->ndims; i++)
        if (ext[i] != parent->dims[i]) md->dims[i] = md->padded_dims[i] = ext[i];
}

static int64_t smallest_factor(int64_t n) {
    for (int64_t f = 2; f * f <= n; f++)
        if (n % f == 0) return f;
    return n;
}

/* Splits a reorder into chunks of at most chunk_max_bytes in both
 * tensors: the splittable axis with the largest stride (either tensor) is
 * divided by its smallest factor until they fit, so that the chunks tile
 * the tensors exactly. Returns 0 when it cannot. */
static int plan_chunks(const dnnl_memory_desc_t *from,
        const dnnl_memory_desc_t *to, chunking_t *ch) {
    int64_t limit = atomic_load(&chunk_max_bytes);
    if (from->format_kind != dnnl_blocked || to->format_kind != dnnl_blocked
            || from->ndims != to->ndims || from->offset0 || to->offset0
            || from->extra.flags || to->extra.flags)
        return 0;
    memset(ch, 0, sizeof *ch);
    ch->ndims = from->ndims;
    ch->from_elsize = dnnl_data_type_size(from->data_type);
    ch->to_elsize = dnnl_data_type_size(to->data_type);
    for (int i = 0; i < ch->ndims; i++) {
        ch->ext[i] = from->dims[i];
        ch->from_stride[i] = from->format_desc.blocking.strides[i];
        ch->to_stride[i] = to->format_desc.blocking.strides[i];
    }
    for (;;) {
        box_md(from, ch->ext, &ch->from_md);
        box_md(to, ch->ext, &ch->to_md);
        if ((int64_t)dnnl_memory_desc_get_size(&ch->from_md) < limit
                && (int64_t)dnnl_memory_desc_get_size(&ch->to_md) < limit)
            break;
        int a = -1;
        int64_t widest = 0;
        for (int i = 0; i < ch->ndims; i++) {
            int64_t w = ch->from_stride[i] > ch->to_stride[i]
                    ? ch->from_stride[i] : ch->to_stride[i];
            if (ch->ext[i] > 1 && axis_splittable(from, i)
                    && axis_splittable(to, i) && w > widest) {
                widest = w;
                a = i;
            }
        }
        if (a < 0) return 0;
        ch->ext[a] /= smallest_factor(ch->ext[a]);
    }
    for (int i = 0; i < ch->ndims; i++)
        ch->count[i] = from->dims[i] / ch->ext[i];
    return 1;
}

static dnnl_status_t reorder_pd(dnnl_primitive_desc_t *pd,
        const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = ACQUIRE(dnnl_reorder_primitive_desc_create(pd, from, engine, to,
                engine, attr));
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* The reorder of a path (io -> conv, or conv -> io for the output), or
 * nothing when the layouts are equal. Where oneDNN offers only its
 * generic reorder for the whole tensor, one that runs in chunks with a
 * jit implementation is taken instead, if there is one. */
static dnnl_status_t make_reorder(dgrad_plan_t *plan, tensor_path_t *t,
        int to_io) {
    const dnnl_memory_desc_t *from = to_io ? &t->conv_md : &t->io_md;
    const dnnl_memory_desc_t *to = to_io ? &t->io_md : &t->conv_md;
    dnnl_primitive_desc_t pd = NULL, chunk_pd = NULL;
    if (dnnl_memory_desc_equal(from, to)) return dnnl_success;
    dnnl_status_t s = reorder_pd(&pd, from, to);
    chunking_t ch;
    int64_t limit = atomic_load(&chunk_max_bytes);
    int too_big = (int64_t)dnnl_memory_desc_get_size(from) >= limit
            || (int64_t)dnnl_memory_desc_get_size(to) >= limit;
    if (s == dnnl_success && too_big
            && (impl_is_generic(pd_impl_name(pd)) || limit < (int64_t)1 << 30)
            && plan_chunks(from, to, &ch)
            && reorder_pd(&chunk_pd, &ch.from_md, &ch.to_md) == dnnl_success
            && !impl_is_generic(pd_impl_name(chunk_pd))) {
        dnnl_primitive_desc_destroy(pd);
        pd = chunk_pd;
        chunk_pd = NULL;
        t->reorder.chunks = ch;
        t->reorder.n_chunks = 1;
        for (int i = 0; i < ch.ndims; i++) t->reorder.n_chunks *= ch.count[i];
    }
    if (s == dnnl_success) s = make_step(&t->reorder, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(chunk_pd);
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
        s = ACQUIRE(dnnl_primitive_desc_create(pd, &bd, attr, engine, NULL));
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

/* Builds the primitives of a plan around its convolution pd: the
 * convolution, the reorders its layouts need, the bias add. Names the
 * failing step through @p what. */
static dnnl_status_t build_primitives(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, const char **what) {
    *what = "convolution backward data creation";
    plan->in.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_diff_dst_md, 0);
    plan->wei.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_weights_md, 0);
    plan->out.conv_md = *dnnl_primitive_desc_query_md(pd,
            dnnl_query_diff_src_md, 0);
    snprintf(plan->impl, sizeof plan->impl, "%s", pd_impl_name(pd));
    dnnl_status_t s = make_step(&plan->conv, (dnnl_primitive_desc_t)pd,
            &plan->scratch_size);
    if (s != dnnl_success) return s;
    *what = "reorder creation";
    s = make_reorder(plan, &plan->in, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->wei, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->out, 1);
    /* Sizes the execute path needs, computed once (oneDNN's
     * dnnl_memory_desc_get_size took 16% of a microsecond execute). */
    plan->prepared_weights_bytes = plan->wei.reorder.prim || plan->staged
            ? dnnl_memory_desc_get_size(&plan->wei.conv_md) : 0;
    if (s != dnnl_success || !plan->p.has_bias) return s;
    *what = "bias binary add creation";
    s = make_bias_add(plan);
    if (s == dnnl_success)
        plan->bias_bytes = dnnl_memory_desc_get_size(&plan->bias_md);
    return s;
}

static void ctx_destroy(exec_ctx_t *c);

static void plan_destroy(dgrad_plan_t *plan) {
    step_t *steps[] = {&plan->conv, &plan->bias_add, &plan->in.reorder,
            &plan->wei.reorder, &plan->out.reorder};
    ctx_destroy(atomic_load(&plan->spare));
    while (plan->pool) {
        exec_ctx_t *next = plan->pool->next;
        ctx_destroy(plan->pool);
        plan->pool = next;
    }
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        dnnl_primitive_destroy(steps[i]->prim);
    pthread_mutex_destroy(&plan->pool_lock);
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

/* A plan with its problem and geometry, no primitives. */
static dgrad_plan_t *plan_alloc(const dgrad_problem_t *problem,
        int extend_tail) {
    dgrad_plan_t *plan = allocated(dgrad_calloc(1, sizeof *plan));
    if (!plan) return NULL;
    if (pthread_mutex_init(&plan->pool_lock, NULL) != 0) {
        free(plan);
        return NULL;
    }
    atomic_fetch_add(&live_plans, 1);
    atomic_init(&plan->refs, 1);
    atomic_init(&plan->spare, NULL);
    plan->p = *problem;
    plan->elsize = problem->dt == dgrad_f32 ? 4 : 2;
    int any_output = problem->N > 0 && problem->Cout > 0;
    plan->empty = !compute_region(plan, extend_tail) || !any_output;
    return plan;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Short text of a blocked layout, oneDNN style: dims outermost first by
 * stride, blocked dims in capitals, then the inner blocks ("aBcd16b"). */
static void md_format(char *buf, size_t size, const dnnl_memory_desc_t *md) {
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    int order[DNNL_MAX_NDIMS], n = md->ndims, blocked[DNNL_MAX_NDIMS] = {0};
    size_t k = 0;
    if (md->format_kind != dnnl_blocked || n > DNNL_MAX_NDIMS) {
        snprintf(buf, size, "?");
        return;
    }
    for (int i = 0; i < b->inner_nblks; i++) blocked[b->inner_idxs[i]] = 1;
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && b->strides[order[j - 1]] < b->strides[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int i = 0; i < n && k + 1 < size; i++)
        buf[k++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int i = 0; i < b->inner_nblks && k + 8 < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%d%c", (int)b->inner_blks[i],
                'a' + (int)b->inner_idxs[i]);
    buf[k < size ? k : size - 1] = 0;
}

/* DGRAD_LAYOUT_SEARCH=verbose prints every candidate and its time. */
static int layout_search_verbose(void) {
    const char *e = getenv("DGRAD_LAYOUT_SEARCH");
    return e && !strcmp(e, "verbose");
}

static int layout_search_enabled(void) {
    static atomic_int enabled = -1;
    int v = atomic_load(&enabled);
    if (v < 0) {
        const char *e = getenv("DGRAD_LAYOUT_SEARCH");
        v = !(e && !strcmp(e, "0"));
        atomic_store(&enabled, v);
    }
    return v;
}

/* Elements a tensor of @p dims and @p strides spans. */
static int64_t span_of(int nd, const int64_t *dims, const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] <= 0) return 0;
        last += (dims[i] - 1) * strides[i];
    }
    return last + 1;
}

/* Scratch user buffers for timing candidates (contents irrelevant:
 * zeros, touched so that every page is real). */
typedef struct probe_bufs {
    void *in, *wei, *bias, *out;
    size_t out_bytes;
} probe_bufs_t;

static void probe_free(probe_bufs_t *b) {
    free(b->in);
    free(b->wei);
    free(b->bias);
    free(b->out);
}

static void *probe_alloc(int64_t n, size_t elsize) {
    size_t bytes = (size_t)(n > 0 ? n : 1) * elsize;
    bytes = (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    void *p = allocated(dgrad_aligned_alloc(ALIGNMENT, bytes));
    if (p) memset(p, 0, bytes);
    return p;
}

/* Timing candidates costs a few executions and user-sized scratch
 * buffers. Problems up to these sizes are timed as they are; larger ones
 * on a reduced copy (batch 1, spatial sizes halved until it fits
 * SEARCH_REDUCED_*), whose winner is then built for the real problem.
 * Problems below SEARCH_MIN_MACS take microseconds whatever the layout:
 * they are not timed (plan_create chooses by reorder count and rank).
 * DGRAD_LAYOUT_SEARCH=0 replaces every timing by the ranking of
 * implementation names. */
enum { LIM_MAX_BYTES, LIM_MAX_MACS, LIM_REDUCED_BYTES, LIM_REDUCED_MACS,
    LIM_MIN_MACS, N_LIMITS };
static const double default_search_limits[N_LIMITS] = {
        (double)(128 << 20), 2e9, (double)(32 << 20), 5e8, (double)(1 << 18)};
static _Atomic double search_limits[N_LIMITS] = {
        (double)(128 << 20), 2e9, (double)(32 << 20), 5e8, (double)(1 << 18)};

void dgrad_plan_set_search_limits_for_testing(double max_bytes,
        double max_macs, double reduced_bytes, double reduced_macs,
        double min_macs) {
    const double given[N_LIMITS] = {max_bytes, max_macs, reduced_bytes,
            reduced_macs, min_macs};
    for (int i = 0; i < N_LIMITS; i++)
        atomic_store(&search_limits[i],
                max_bytes > 0 ? given[i] : default_search_limits[i]);
}

#define SEARCH_MAX_BYTES atomic_load(&search_limits[LIM_MAX_BYTES])
#define SEARCH_MAX_MACS atomic_load(&search_limits[LIM_MAX_MACS])
#define SEARCH_REDUCED_BYTES atomic_load(&search_limits[LIM_REDUCED_BYTES])
#define SEARCH_REDUCED_MACS atomic_load(&search_limits[LIM_REDUCED_MACS])
#define SEARCH_MIN_MACS atomic_load(&search_limits[LIM_MIN_MACS])
/* Plans timed faster than this are also tried on one thread. */
#define SINGLE_THREAD_MAX_MS 0.1

/* Multiply-adds of the whole kernel window over the input (an upper
 * bound of the terms) and bytes of the three tensors. */
static double problem_macs(const dgrad_problem_t *p) {
    double m = (double)p->N * (double)p->Cin * (double)(p->Cout / p->G);
    for (int i = 0; i < p->nsp; i++) m *= (double)p->X[i] * (double)p->K[i];
    return m;
}

static double problem_bytes(const dgrad_problem_t *p) {
    double in = (double)p->N * (double)p->Cin, out = (double)p->N * (double)p->Cout,
           wei = (double)p->Cin * (double)(p->Cout / p->G);
    for (int i = 0; i < p->nsp; i++) {
        in *= (double)p->X[i];
        out *= (double)p->Y[i];
        wei *= (double)p->K[i];
    }
    return (in + out + wei) * (p->dt == dgrad_f32 ? 4 : 2);
}

/* Dims of the three tensors in canonical order (weights with G first),
 * matching the problem's strides. */
static void canonical_dims(const dgrad_problem_t *p, int64_t in[5],
        int64_t wei[6], int64_t out[5]) {
    in[0] = out[0] = p->N;
    in[1] = p->Cin;
    out[1] = p->Cout;
    wei[0] = p->G;
    wei[1] = p->Cin / p->G;
    wei[2] = p->Cout / p->G;
    for (int i = 0; i < p->nsp; i++) {
        in[2 + i] = p->X[i];
        out[2 + i] = p->Y[i];
        wei[3 + i] = p->K[i];
    }
}

static int probe_init(probe_bufs_t *b, const dgrad_problem_t *p) {
    int64_t in[5], out[5], wei[6];
    canonical_dims(p, in, wei, out);
    size_t es = p->dt == dgrad_f32 ? 4 : 2;
    memset(b, 0, sizeof *b);
    int64_t n_in = span_of(2 + p->nsp, in, p->in_strides),
            n_wei = span_of(3 + p->nsp, wei, p->wei_strides),
            n_out = span_of(2 + p->nsp, out, p->out_strides);
    if ((double)(n_in + n_wei + n_out) * (double)es > 2 * SEARCH_MAX_BYTES)
        return -1; /* strides with large gaps */
    b->in = probe_alloc(n_in, es);
    b->wei = probe_alloc(n_wei, es);
    b->out = probe_alloc(n_out, es);
    b->out_bytes = (size_t)(n_out > 0 ? n_out : 1) * es;
    if (p->has_bias) b->bias = probe_alloc(p->Cout * p->bias_stride + 1, es);
    if (b->in && b->wei && b->out && (b->bias || !p->has_bias)) return 0;
    probe_free(b);
    return -1;
}

/* Dense strides for @p dims in the axis order of @p old_strides (as
 * canon_size1_strides orders them). */
static void dense_like(int nd, const int64_t *old_dims,
        const int64_t *old_strides, const int64_t *dims, int64_t *strides) {
    int order[MAX_NDIMS];
    for (int i = 0; i < nd; i++) {
        int j = i;
        for (; j > 0 && (old_strides[order[j - 1]] < old_strides[i]
                        || (old_strides[order[j - 1]] == old_strides[i]
                                && old_dims[order[j - 1]] < old_dims[i]));
                j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t acc = 1;
    for (int j = nd - 1; j >= 0; j--) {
        strides[order[j]] = acc;
        acc *= dims[order[j]];
    }
}

/* A smaller problem with the same channels, kernel, strides, dilations,
 * pads (begin and end, so output padding stays) and axis orders: batch 1,
 * the largest spatial size halved until SEARCH_REDUCED_* hold. Returns -1
 * when it cannot get there (huge channel counts). */
static int reduce_problem(const dgrad_problem_t *p, dgrad_problem_t *r) {
    int64_t pe[DGRAD_MAX_SPATIAL], in_old[5], out_old[5];
    int frozen[DGRAD_MAX_SPATIAL] = {0};
    *r = *p;
    r->N = 1;
    in_old[0] = out_old[0] = p->N;
    in_old[1] = p->Cin;
    out_old[1] = p->Cout;
    for (int i = 0; i < p->nsp; i++) {
        pe[i] = dgrad_problem_natural_size(p, i) - p->PB[i] - p->Y[i];
        in_old[2 + i] = p->X[i];
        out_old[2 + i] = p->Y[i];
    }
    while (problem_bytes(r) > SEARCH_REDUCED_BYTES
            || problem_macs(r) > SEARCH_REDUCED_MACS) {
        int a = -1;
        for (int i = 0; i < p->nsp; i++)
            if (!frozen[i] && r->X[i] > 1 && (a < 0 || r->X[i] > r->X[a]))
                a = i;
        if (a < 0) return -1;
        dgrad_problem_t t = *r;
        t.X[a] = (r->X[a] + 1) / 2;
        t.Y[a] = dgrad_problem_natural_size(&t, a) - t.PB[a] - pe[a];
        if (t.Y[a] < 1) {
            frozen[a] = 1;
            continue;
        }
        *r = t;
    }
    int64_t in[5], out[5];
    in[0] = out[0] = 1;
    in[1] = r->Cin;
    out[1] = r->Cout;
    for (int i = 0; i < r->nsp; i++) {
        in[2 + i] = r->X[i];
        out[2 + i] = r->Y[i];
    }
    dense_like(2 + r->nsp, in_old, p->in_strides, in, r->in_strides);
    dense_like(2 + r->nsp, out_old, p->out_strides, out, r->out_strides);
    return 0;
}

static dnnl_status_t plan_run(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out);

/* oneDNN sizes its parallel work by the OpenMP runtime's thread count at
 * primitive creation and runs it at execution. For problems of a few
 * microseconds, forking and joining threads costs more than the work:
 * such plans are created and run with the calling thread's count set to
 * 1 (its own setting, restored afterwards; other threads are unaffected).
 * Returns the count to restore, 0 when nothing was changed. */
static int threads_enter(int single) {
#ifdef _OPENMP
    if (single) {
        int old = omp_get_max_threads();
        omp_set_num_threads(1);
        return old;
    }
#endif
    (void)single;
    return 0;
}

static void threads_leave(int old) {
#ifdef _OPENMP
    if (old > 0) omp_set_num_threads(old);
#endif
    (void)old;
}

/* Whether all three tensors have nested layouts (see aliasing.h). One
 * that is not (an input whose elements share addresses, such as a stride
 * 0 broadcast, or interleaved strides, which oneDNN 2.6's memory
 * descriptors refuse) travels through a dense f32 staging copy made by
 * dgrad's own conversion loops, which read and write any strides. */
static int layouts_nested(const dgrad_problem_t *p) {
    int64_t in[5], out[5], wei[6];
    canonical_dims(p, in, wei, out);
    return dgrad_layout_is_nested(2 + p->nsp, in, p->in_strides)
            && dgrad_layout_is_nested(3 + p->nsp, wei, p->wei_strides)
            && dgrad_layout_is_nested(2 + p->nsp, out, p->out_strides);
}

/* The weights a timed candidate runs with: the scratch user weights, or,
 * for a plan chosen for constant weights, those weights prepared once in
 * the primitive's layout (their conversion is not part of an execute). */
typedef struct probe_wei {
    const void *ptr;
    int prepared;
    void *own;
} probe_wei_t;

static int probe_wei_init(probe_wei_t *w, const dgrad_plan_t *plan,
        const probe_bufs_t *b, int weights_constant) {
    size_t size = weights_constant ? dgrad_plan_prepared_weights_size(plan) : 0;
    w->ptr = b->wei;
    w->prepared = 0;
    w->own = NULL;
    if (size == 0) return 0;
    w->own = probe_alloc((int64_t)size, 1);
    if (!w->own || dgrad_plan_prepare_weights(plan, b->wei, w->own)
                    != dgrad_success) {
        free(w->own);
        w->own = NULL;
        return -1;
    }
    w->ptr = w->own;
    w->prepared = 1;
    return 0;
}

/* Time of one execution of @p plan: the best of a few runs after a
 * warm-up (which also fills the plan's first execution context). Small
 * problems get more runs (up to 10, about 0.5 ms), large ones one or two. A
 * candidate far slower than @p best is not timed further, after
 * a second run in case the first paid a one-time cost (oneDNN's gemm
 * generates its kernels at its first call in the process). */
static double time_plan(const dgrad_plan_t *plan, const probe_bufs_t *b,
        const probe_wei_t *w, double best) {
    double t0 = now_ms();
    if (plan_run(plan, b->in, w->ptr, w->prepared, b->bias, b->out) != dnnl_success)
        return INFINITY;
    double t = now_ms() - t0;
    if (t > 3 * best) {
        t0 = now_ms();
        if (plan_run(plan, b->in, w->ptr, w->prepared, b->bias, b->out) != dnnl_success)
            return INFINITY;
        t = now_ms() - t0;
        if (t > 3 * best) return t;
    }
    int reps = t >= 50 ? 1 : t >= 5 ? 2 : (int)ceil(0.5 / (t > 0.01 ? t : 0.01));
    if (reps > 10) reps = 10;
    if (reps < 3 && t < 5) reps = 3;
    t = INFINITY;
    for (int r = 0; r < reps; r++) {
        t0 = now_ms();
        if (plan_run(plan, b->in, w->ptr, w->prepared, b->bias, b->out) != dnnl_success)
            return INFINITY;
        double dt = now_ms() - t0;
        if (dt < t) t = dt;
    }
    return t;
}

static int same_pd(const_dnnl_primitive_desc_t a, const_dnnl_primitive_desc_t b) {
    static const dnnl_query_t q[] = {dnnl_query_diff_dst_md,
            dnnl_query_weights_md, dnnl_query_diff_src_md};
    if (strcmp(pd_impl_name(a), pd_impl_name(b))) return 0;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (!dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(a, q[i], 0),
                    dnnl_primitive_desc_query_md(b, q[i], 0)))
            return 0;
    return 1;
}

/* A bias is added after the convolution, so in a 16-bit type the result
 * would be rounded twice (convolution, then the add): with a bias the
 * convolution runs in f32 through the staging copies and is rounded once,
 * as the reference is. */
static int bias_needs_f32(const dgrad_problem_t *p) {
    return p->has_bias && p->dt != dgrad_f32;
}

/* Output past the natural size on some axis (output padding). */
static int has_tail(const dgrad_problem_t *p) {
    for (int i = 0; i < p->nsp; i++)
        if (dgrad_problem_natural_size(p, i) - p->PB[i] < p->Y[i]) return 1;
    return 0;
}

/* A candidate convolution pd, the layout candidate (index into
 * layout_cands) and the output geometry it was made for. */
typedef struct cand_pd {
    dnnl_primitive_desc_t pd;
    int cand;
    int extend_tail;
    int reorders; /* activations whose layout differs from their io one */
    int wei_reorder; /* weights in another layout than the user's */
} cand_pd_t;

#define MAX_CAND_PDS (2 * (int)N_CANDS)

/* The pd of layout candidate @p ci for @p problem, or NULL (with the
 * oneDNN status). Channels-last that is the io layout already (oneDNN
 * ignores the strides of size-1 dims) is not a candidate of its own. */
static dnnl_status_t candidate_pd(const dgrad_plan_t *tmpl, int staged,
        int ci, dnnl_primitive_desc_t *pd) {
    dnnl_data_type_t dt = staged ? dnnl_f32 : to_dnnl_dt(tmpl->p.dt);
    *pd = NULL;
    if (layout_cands[ci].act == ACT_NXC) {
        dnnl_memory_desc_t a, b;
        if (md_nxc(&a, &tmpl->in.io_md, dt) != dnnl_success
                || md_nxc(&b, &tmpl->out.io_md, dt) != dnnl_success
                || (dnnl_memory_desc_equal(&a, &tmpl->in.io_md)
                        && dnnl_memory_desc_equal(&b, &tmpl->out.io_md)))
            return dnnl_unimplemented;
    }
    dnnl_status_t s = create_conv_pd(tmpl, dt, &layout_cands[ci], pd);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: candidate %d/%d%s%s: %s\n",
                (int)layout_cands[ci].act, layout_cands[ci].wei_io,
                staged ? " staged" : "",
                tmpl->full_box && has_tail(&tmpl->p) ? " tail" : "",
                s == dnnl_success ? pd_impl_name(*pd) : dnnl_status2str(s));
    return s;
}

/* Appends to @p pds the pds of the distinct candidates for one output
 * geometry, in the compute type of the problem, or in f32 through staging
 * copies. Returns the new count. */
static int candidate_pds(const dgrad_problem_t *problem, int staged,
        int extend_tail, cand_pd_t *pds, int n, dnnl_status_t *first_error) {
    dgrad_plan_t *tmpl = plan_alloc(problem, extend_tail);
    if (!tmpl) {
        *first_error = dnnl_out_of_memory;
        return n;
    }
    dnnl_status_t s = init_io_mds(tmpl, staged);
    if (s != dnnl_success) *first_error = s;
    for (int i = 0; s == dnnl_success && i < (int)N_CANDS; i++) {
        dnnl_primitive_desc_t pd = NULL;
        dnnl_status_t cs = candidate_pd(tmpl, staged, i, &pd);
        if (cs != dnnl_success) {
            if (*first_error == dnnl_success && layout_cands[i].act != ACT_NXC)
                *first_error = cs;
            continue;
        }
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = pds[j].extend_tail == extend_tail && same_pd(pd, pds[j].pd);
        if (dup || n == MAX_CAND_PDS) {
            dnnl_primitive_desc_destroy(pd);
        } else {
            static const dnnl_query_t q[2] = {dnnl_query_diff_dst_md,
                    dnnl_query_diff_src_md};
            const dnnl_memory_desc_t *io[2] = {&tmpl->in.io_md,
                    &tmpl->out.io_md};
            pds[n].pd = pd;
            pds[n].cand = i;
            pds[n].extend_tail = extend_tail;
            pds[n].reorders = 0;
            for (int t = 0; t < 2; t++)
                pds[n].reorders += !dnnl_memory_desc_equal(io[t],
                        dnnl_primitive_desc_query_md(pd, q[t], 0));
            pds[n].wei_reorder = !dnnl_memory_desc_equal(&tmpl->wei.io_md,
                    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
            n++;
        }
    }
    plan_destroy(tmpl);
    return n;
}

/* All candidates: both output geometries when there is a tail; reference
 * implementations only when nothing else exists (they are orders of
 * magnitude slower, and timing one can take minutes). */
static int all_candidates(const dgrad_problem_t *problem, int staged,
        cand_pd_t *pds, dnnl_status_t *first_error) {
    int n = candidate_pds(problem, staged, 0, pds, 0, first_error);
    if (has_tail(problem))
        n = candidate_pds(problem, staged, 1, pds, n, first_error);
    int fast = 0;
    for (int i = 0; i < n; i++) fast += impl_rank(pds[i].pd) > 0;
    if (fast == 0 || fast == n) return n;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (impl_rank(pds[i].pd) > 0) pds[m++] = pds[i];
        else dnnl_primitive_desc_destroy(pds[i].pd);
    }
    return m;
}

static void destroy_pds(cand_pd_t *pds, int n) {
    for (int i = 0; i < n; i++) dnnl_primitive_desc_destroy(pds[i].pd);
}

/* Builds the plan of one candidate; NULL on failure (status in @p err
 * unless already set, failing step in @p what). */
static dgrad_plan_t *build_candidate(const dgrad_problem_t *problem,
        int staged, const cand_pd_t *c, dnnl_status_t *err,
        const char **what) {
    dgrad_plan_t *plan = plan_alloc(problem, c->extend_tail);
    dnnl_status_t s = plan ? init_io_mds(plan, staged) : dnnl_out_of_memory;
    if (s == dnnl_success) s = build_primitives(plan, c->pd, what);
    if (s == dnnl_success) return plan;
    if (*err == dnnl_success) *err = s;
    if (plan) plan_destroy(plan);
    return NULL;
}

/* Layout candidate @p cand (output geometry @p extend_tail) built afresh
 * for @p problem: its pd is created now, for the caller's current thread
 * count. NULL when oneDNN does not offer it. */
static dgrad_plan_t *rebuild_candidate(const dgrad_problem_t *problem,
        int staged, int cand, int extend_tail, dnnl_status_t *err,
        const char **what) {
    cand_pd_t c = {NULL, cand, extend_tail, 0, 0};
    dgrad_plan_t *tmpl = plan_alloc(problem, extend_tail), *plan = NULL;
    if (tmpl && init_io_mds(tmpl, staged) == dnnl_success
            && candidate_pd(tmpl, staged, cand, &c.pd) == dnnl_success)
        plan = build_candidate(problem, staged, &c, err, what);
    dnnl_primitive_desc_destroy(c.pd);
    if (tmpl) plan_destroy(tmpl);
    return plan;
}

/* The plan of candidate @p c again, with its pd and primitives created
 * for one thread (see threads_enter); NULL when that fails. */
static dgrad_plan_t *build_single_thread(const dgrad_problem_t *problem,
        int staged, const cand_pd_t *c) {
    int threads = threads_enter(1);
    dgrad_plan_t *plan = NULL;
    if (threads > 1) {
        dnnl_status_t err = dnnl_success;
        const char *what = "";
        plan = rebuild_candidate(problem, staged, c->cand, c->extend_tail,
                &err, &what);
        if (plan) plan->single_thread = 1;
    }
    threads_leave(threads);
    return plan;
}

/* Whether a plan that computes the output tail (negative right padding)
 * wrote zeros there: the probe output was filled with a non-zero pattern
 * before the run. Guards against an implementation that accepts negative
 * padding but leaves the tail alone. */
static int tail_is_zero(const dgrad_plan_t *plan, const void *out) {
    const dgrad_problem_t *p = &plan->p;
    int64_t nat[DGRAD_MAX_SPATIAL], idx[DGRAD_MAX_SPATIAL] = {0};
    for (int i = 0; i < p->nsp; i++) {
        nat[i] = dgrad_problem_natural_size(p, i) - p->PB[i];
        if (p->Y[i] <= 0) return 1;
    }
    for (;;) {
        int tail = 0;
        int64_t off = 0;
        for (int i = 0; i < p->nsp; i++) {
            tail |= idx[i] >= nat[i];
            off += idx[i] * p->out_strides[2 + i];
        }
        for (int64_t n = 0; tail && n < p->N; n++)
            for (int64_t c = 0; c < p->Cout; c++)
                if (dgrad_load(out, p->dt, off + n * p->out_strides[0]
                                    + c * p->out_strides[1]) != 0.0)
                    return 0;
        int i = p->nsp - 1;
        while (i >= 0 && ++idx[i] == p->Y[i]) idx[i--] = 0;
        if (i < 0) return 1;
    }
}

/* One run of a plan that computes the output tail on scratch buffers
 * whose output was first filled with a non-zero pattern: whether it ran
 * and left zeros in the tail. */
static int tail_checked(const dgrad_plan_t *plan, const probe_bufs_t *b,
        const void *wei, int wei_prepared) {
    memset(b->out, 0x5a, b->out_bytes);
    return plan_run(plan, b->in, wei, wei_prepared, b->bias, b->out)
                    == dnnl_success
            && tail_is_zero(plan, b->out);
}

/* Builds a candidate that computes the output tail and keeps it only if
 * one run on scratch buffers leaves zeros there; NULL otherwise. */
static dgrad_plan_t *checked_tail_candidate(const dgrad_problem_t *problem,
        int staged, const cand_pd_t *c, dnnl_status_t *err,
        const char **what) {
    probe_bufs_t bufs;
    if (probe_init(&bufs, problem) != 0) return NULL;
    dgrad_plan_t *plan = build_candidate(problem, staged, c, err, what);
    if (plan && !tail_checked(plan, &bufs, bufs.wei, 0)) {
        plan_destroy(plan);
        plan = NULL;
    }
    probe_free(&bufs);
    return plan;
}

/* The implementations of every step of a plan, for comparing a plan
 * built for a problem with the one timed on its reduced copy. */
static void plan_signature(const dgrad_plan_t *plan, char *buf, size_t size) {
    const step_t *steps[] = {&plan->in.reorder, &plan->wei.reorder,
            &plan->conv, &plan->bias_add, &plan->out.reorder};
    size_t n = 0;
    buf[0] = 0;
    /* Reorders by class only: a chunked jit reorder (beyond 2^31 bytes)
     * stands for the whole-tensor jit one timed on the reduced copy. */
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s|",
                !steps[i]->prim ? "-"
                        : steps[i] == &plan->conv || steps[i] == &plan->bias_add
                        ? steps[i]->impl
                        : impl_is_generic(steps[i]->impl) ? "generic" : "jit");
}

/* Whether every reorder of a plan has a jit implementation: oneDNN 2.6
 * falls back to its generic reorder (simple:any, some 50 ns per element)
 * for f16 and for tensors beyond 2^31 bytes. */
static int reorders_fast(const dgrad_plan_t *plan) {
    const step_t *steps[] = {&plan->in.reorder, &plan->wei.reorder,
            &plan->out.reorder};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i]->prim && impl_is_generic(steps[i]->impl))
            return 0;
    return 1;
}

/* Candidates in the order the ranking prefers them without timings:
 * computed tails last (they are checked only when timed), then by
 * implementation rank, then in order of preference. Returns how many. */
static int rank_order(const cand_pd_t *pds, int n, int *sorted) {
    int k = 0;
    for (int tail = 0; tail <= 1; tail++)
        for (int rank = 2; rank >= 0; rank--)
            for (int i = 0; i < n; i++)
                if (impl_rank(pds[i].pd) == rank && pds[i].extend_tail == tail)
                    sorted[k++] = i;
    return k;
}

/* A plan's own buffers (one execution context: intermediate copies of
 * the tensors, scratchpad) may take at most this much when a leaner
 * candidate exists: a quarter of physical memory. Only problems too large
 * to time as they are get near it (the 3D specification example's
 * channels-last plan takes 3.8 GB). */
static _Atomic int64_t workspace_budget_override;

void dgrad_plan_set_workspace_budget_for_testing(int64_t bytes) {
    atomic_store(&workspace_budget_override, bytes > 0 ? bytes : 0);
}

static double workspace_budget(void) {
    int64_t o = atomic_load(&workspace_budget_override);
    if (o > 0) return (double)o;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return INFINITY;
    return (double)pages * (double)size / 4;
}

static int within_budget(const dgrad_plan_t *plan) {
    return (double)dgrad_plan_workspace_size(plan) <= workspace_budget();
}

/* The plan the ranking chooses without timings: the first candidate in
 * rank order whose reorders are fast and whose buffers fit the workspace
 * budget; else the first that fits; else the leanest. Its index goes to
 * @p chosen. */
static dgrad_plan_t *rank_build(const dgrad_problem_t *problem, int staged,
        const cand_pd_t *pds, int n, int *chosen, dnnl_status_t *err,
        const char **what) {
    int sorted[MAX_CAND_PDS];
    int k = rank_order(pds, n, sorted);
    dgrad_plan_t *fallback = NULL;
    int fallback_fits = 0;
    *chosen = -1;
    for (int i = 0; i < k; i++) {
        dgrad_plan_t *plan = build_candidate(problem, staged, &pds[sorted[i]],
                err, what);
        if (!plan) continue;
        int fits = within_budget(plan);
        if (fits && reorders_fast(plan)) {
            if (fallback) plan_destroy(fallback);
            *chosen = sorted[i];
            return plan;
        }
        if (!fallback || (fits && !fallback_fits)
                || (!fits && !fallback_fits
                        && dgrad_plan_workspace_size(plan)
                                < dgrad_plan_workspace_size(fallback))) {
            if (fallback) plan_destroy(fallback);
            fallback = plan;
            fallback_fits = fits;
            *chosen = sorted[i];
        } else {
            plan_destroy(plan);
        }
    }
    return fallback;
}

static void verbose_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_t *cand, int extend_tail) {
    char desc[512], md[3][64];
    describe_problem(problem, desc, sizeof desc);
    const tensor_path_t *tp[3] = {&cand->in, &cand->wei, &cand->out};
    for (int t = 0; t < 3; t++) md_format(md[t], sizeof md[t], &tp[t]->conv_md);
    fprintf(stderr, "dgrad layout search: %s: %s in %s wei %s out %s%s%s ...",
            desc, cand->impl, md[0], md[1], md[2],
            cand->staged ? " (f32 staged)" : "",
            extend_tail ? " (tail computed)" : "");
    fflush(stderr);
}

/* A timed candidate kept by search(): its plan, weights and time. */
typedef struct timed {
    dgrad_plan_t *plan;
    probe_wei_t wei;
    double ms;
    int index;
} timed_t;

static void timed_drop(timed_t *t) {
    if (t->plan) plan_destroy(t->plan);
    free(t->wei.own);
    memset(t, 0, sizeof *t);
    t->ms = INFINITY;
    t->index = -1;
}

/* Alternating runs of two plans on scratch buffers, @p rounds times
 * @p runs each, so that a burst of noise does not decide; the best time
 * of each goes to @p t. Returns 0 if a run failed. */
static int runoff(const dgrad_plan_t *const pl[2], const probe_wei_t w[2],
        const probe_bufs_t *b, int rounds, int runs, double t[2]) {
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < runs; k++) {
                double t0 = now_ms();
                if (plan_run(pl[j], b->in, w[j].ptr, w[j].prepared, b->bias,
                            b->out) != dnnl_success)
                    return 0;
                double dt = now_ms() - t0;
                if (dt < t[j]) t[j] = dt;
            }
    return 1;
}

/* Times the candidates of @p problem on scratch buffers and returns the
 * fastest as a built plan, with its candidate in @p winner; NULL when no
 * candidate could be timed. With @p weights_constant the weights are
 * prepared before timing, as an execute with constant weights sees them. */
static dgrad_plan_t *search(const dgrad_problem_t *problem, int staged,
        int weights_constant, const cand_pd_t *pds, int n, int *winner,
        double *winner_ms, dnnl_status_t *err, const char **what) {
    probe_bufs_t bufs;
    if (probe_init(&bufs, problem) != 0) return NULL;
    timed_t best = {NULL, {NULL, 0, NULL}, INFINITY, -1};
    timed_t second = best, cur = best;
    for (int k = 0; k < n; k++) {
        cur.plan = build_candidate(problem, staged, &pds[k], err, what);
        if (!cur.plan) continue;
        cur.index = k;
        if (layout_search_verbose())
            verbose_candidate(problem, cur.plan, pds[k].extend_tail);
        int checked = probe_wei_init(&cur.wei, cur.plan, &bufs,
                              weights_constant) == 0;
        if (checked && pds[k].extend_tail)
            checked = tail_checked(cur.plan, &bufs, cur.wei.ptr,
                    cur.wei.prepared);
        cur.ms = checked ? time_plan(cur.plan, &bufs, &cur.wei, best.ms)
                         : INFINITY;
        if (layout_search_verbose())
            fprintf(stderr, " %.4f ms%s\n", cur.ms,
                    checked ? "" : " (not runnable or tail not zeroed: rejected)");
        if (!checked || !isfinite(cur.ms)) {
            timed_drop(&cur);
        } else if (!best.plan || cur.ms < best.ms) {
            timed_drop(&second);
            second = best;
            best = cur;
            cur.plan = NULL;
            cur.wei.own = NULL;
            timed_drop(&cur);
        } else if (!second.plan || cur.ms < second.ms) {
            timed_drop(&second);
            second = cur;
            cur.plan = NULL;
            cur.wei.own = NULL;
            timed_drop(&cur);
        } else {
            timed_drop(&cur);
        }
    }
    /* A close call (within 15%) is decided again by alternating runs of
     * the two, so that a burst of noise during one candidate's turn does
     * not decide. */
    if (second.plan && second.ms < 1.15 * best.ms) {
        int runs = best.ms >= 50 ? 1 : best.ms >= 5 ? 2
                : (int)ceil(0.25 / (best.ms > 0.01 ? best.ms : 0.01));
        if (runs > 10) runs = 10;
        double t[2] = {INFINITY, INFINITY};
        const dgrad_plan_t *pl[2] = {best.plan, second.plan};
        const probe_wei_t w[2] = {best.wei, second.wei};
        runoff(pl, w, &bufs, 3, runs, t);
        if (layout_search_verbose())
            fprintf(stderr, "dgrad layout search: runoff %s %.4f ms vs %s "
                    "%.4f ms\n", best.plan->impl, t[0], second.plan->impl, t[1]);
        if (t[1] < t[0]) {
            timed_t swap = best;
            best = second;
            second = swap;
        }
    }
    timed_drop(&second);
    probe_free(&bufs);
    free(best.wei.own);
    *winner = best.index;
    *winner_ms = best.ms;
    return best.plan;
}

/* @p plan, or the same candidate on one thread when that runs faster
 * (alternating runs on scratch buffers, best of each); frees the other. */
static _Atomic int threading_for_testing; /* 0 measured, 1 one, 2 all */

void dgrad_plan_set_threading_for_testing(int mode) {
    atomic_store(&threading_for_testing, mode);
}

static dgrad_plan_t *keep_faster_threading(const dgrad_problem_t *problem,
        int staged, int weights_constant, const cand_pd_t *c,
        dgrad_plan_t *plan) {
    int mode = atomic_load(&threading_for_testing);
    if (mode == 2) return plan;
    dgrad_plan_t *one = build_single_thread(problem, staged, c);
    if (!one) return plan;
    probe_bufs_t bufs;
    probe_wei_t w[2] = {{NULL, 0, NULL}, {NULL, 0, NULL}};
    const dgrad_plan_t *pl[2] = {plan, one};
    double t[2] = {INFINITY, INFINITY};
    int have_bufs = probe_init(&bufs, problem) == 0, ok = have_bufs;
    for (int j = 0; ok && j < 2; j++)
        ok = probe_wei_init(&w[j], pl[j], &bufs, weights_constant) == 0;
    if (ok && c->extend_tail)
        ok = tail_checked(one, &bufs, w[1].ptr, w[1].prepared);
    if (ok) ok = runoff(pl, w, &bufs, 5, 4, t);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: %s on all threads %.4f ms, on "
                "one %.4f ms\n", plan->impl, t[0], t[1]);
    free(w[0].own);
    free(w[1].own);
    if (have_bufs) probe_free(&bufs);
    int keep_one = ok && (t[1] < t[0] || mode == 1);
    plan_destroy(keep_one ? plan : one);
    return keep_one ? one : plan;
}

static dgrad_status_t plan_choose(const dgrad_problem_t *problem,
        int weights_constant, dgrad_plan_t **out) {
    dgrad_plan_t *plan = plan_alloc(problem, 0);
    if (!plan)
        return dgrad_error(dgrad_out_of_memory,
                "oneDNN lowering: cannot allocate a plan");
    if (plan->empty) {
        snprintf(plan->impl, sizeof plan->impl, "none");
        plan->weights_constant = weights_constant;
        plan->choice = "none";
        *out = plan;
        return dgrad_success;
    }
    plan_destroy(plan);

    cand_pd_t pds[MAX_CAND_PDS];
    dnnl_status_t first_error = dnnl_success, err = dnnl_success;
    const char *what = "convolution backward data creation";
    int staged = bias_needs_f32(problem) || !layouts_nested(problem);
    int n = all_candidates(problem, staged, pds, &first_error);
    if (n == 0 && !staged && first_error == dnnl_unimplemented
            && problem->dt != dgrad_f32) {
        staged = 1;
        first_error = dnnl_success;
        n = all_candidates(problem, 1, pds, &first_error);
    }
    if (n == 0) {
        /* The canonical problem is valid, so oneDNN refusing to build it
         * means "not supported here": a compiler may fall back. */
        return dnnl_fail_as(problem, first_error == dnnl_success
                        ? dnnl_unimplemented : first_error,
                what, dgrad_unimplemented);
    }

    dgrad_plan_t *best = NULL;
    const char *choice = "ranking";
    int timed = n > 1 && layout_search_enabled();
    if (timed && problem_macs(problem) < SEARCH_MIN_MACS) {
        /* A few microseconds whatever the layout, so no timing: without
         * groups each extra primitive (an activation reorder) costs about
         * as much as the convolution, so the candidate with the fewest
         * reorders per execute (best rank among equals) wins, as measured
         * on the suites (a weights reorder counts unless the weights are
         * constant, converted once); with groups, oneDNN's gemm path runs
         * one small product per group and the ranking's choice wins. */
        int sorted[MAX_CAND_PDS], k = rank_order(pds, n, sorted), few = -1;
        int cost[MAX_CAND_PDS];
        for (int i = 0; i < n; i++)
            cost[i] = pds[i].reorders + (weights_constant ? 0 : pds[i].wei_reorder);
        for (int i = 0; i < k && problem->G == 1; i++)
            if (!pds[sorted[i]].extend_tail
                    && (few < 0 || cost[sorted[i]] < cost[few]))
                few = sorted[i];
        /* With output padding, the primitive computing the tail saves the
         * border fill (one pass, the ONNX examples' largest cost): taken
         * at no more reorders, once a run has shown that it writes zeros
         * there (microseconds at this size). */
        int tail = -1;
        for (int i = 0; few >= 0 && i < k; i++)
            if (pds[sorted[i]].extend_tail && cost[sorted[i]] <= cost[few]
                    && impl_rank(pds[sorted[i]].pd) >= impl_rank(pds[few].pd)
                    && (tail < 0 || cost[sorted[i]] < cost[tail]))
                tail = sorted[i];
        int chosen = -1;
        if (tail >= 0 && (best = checked_tail_candidate(problem, staged,
                                  &pds[tail], &err, &what)))
            chosen = tail;
        if (!best && few >= 0
                && (best = build_candidate(problem, staged, &pds[few], &err,
                            &what)))
            chosen = few;
        if (!best) best = rank_build(problem, staged, pds, n, &chosen, &err,
                &what);
        choice = "untimed";
        if (best && chosen >= 0)
            best = keep_faster_threading(problem, staged, weights_constant,
                    &pds[chosen], best);
    } else if (timed && problem_bytes(problem) <= SEARCH_MAX_BYTES
            && problem_macs(problem) <= SEARCH_MAX_MACS) {
        int w = -1;
        double ms = INFINITY;
        best = search(problem, staged, weights_constant, pds, n, &w, &ms,
                &err, &what);
        choice = "timed";
        /* Up to some 100 µs, one thread may beat the fork and join. */
        if (best && w >= 0 && ms < SINGLE_THREAD_MAX_MS)
            best = keep_faster_threading(problem, staged, weights_constant,
                    &pds[w], best);
    } else if (timed) {
        /* Time a reduced copy, then build its winner for the problem. */
        dgrad_problem_t r;
        cand_pd_t rpds[MAX_CAND_PDS];
        dnnl_status_t rerr = dnnl_success;
        const char *rwhat = "";
        int rn = reduce_problem(problem, &r) == 0
                ? all_candidates(&r, staged, rpds, &rerr) : 0;
        int w = -1;
        double rms = INFINITY;
        dgrad_plan_t *rbest = rn > 1
                ? search(&r, staged, weights_constant, rpds, rn, &w, &rms,
                          &rerr, &rwhat)
                : NULL;
        if (rbest) {
            /* The same implementations as the ones timed (and, for a
             * computed tail, checked), else the ranking. */
            best = rebuild_candidate(problem, staged, rpds[w].cand,
                    rpds[w].extend_tail, &err, &what);
            char sig_r[256], sig[256] = "";
            plan_signature(rbest, sig_r, sizeof sig_r);
            if (best) plan_signature(best, sig, sizeof sig);
            const char *why = best ? "built for the problem"
                                   : "not available: ranking";
            if (best && strcmp(sig, sig_r)) {
                /* Another implementation somewhere: what was timed does
                 * not hold. */
                why = "differs for the problem, ranking";
            } else if (best && !within_budget(best)) {
                why = "over the workspace budget, ranking";
            }
            if (best && strcmp(why, "built for the problem")) {
                plan_destroy(best);
                best = NULL;
            }
            if (layout_search_verbose())
                fprintf(stderr, "dgrad layout search: reduced problem's "
                        "choice %s: %s\n", sig_r, why);
            choice = "reduced copy";
            plan_destroy(rbest);
        }
        destroy_pds(rpds, rn);
    }
    int unused;
    if (!best) {
        best = rank_build(problem, staged, pds, n, &unused, &err, &what);
        choice = "ranking";
    }
    destroy_pds(pds, n);
    if (!best)
        return dnnl_fail_as(problem, err == dnnl_success ? dnnl_runtime_error
                        : err, what, dgrad_unimplemented);
    best->weights_constant = weights_constant;
    best->choice = choice;
    *out = best;
    return dgrad_success;
}

/* plan_choose, failing as a whole when an acquisition or execution on the
 * way failed (see planning_failure). */
static dgrad_status_t plan_create(const dgrad_problem_t *problem,
        int weights_constant, dgrad_plan_t **out) {
    dgrad_plan_t *plan = NULL;
    planning_failure = dnnl_success;
    dgrad_status_t st = plan_choose(problem, weights_constant, &plan);
    if (planning_failure == dnnl_success) {
        if (st == dgrad_success) *out = plan;
        return st;
    }
    if (plan) plan_destroy(plan);
    return dnnl_fail(problem, planning_failure, "planning");
}

/* ---------------------------------------------------------------------
 * Plan cache
 * ------------------------------------------------------------------- */

typedef struct cache_entry {
    dgrad_plan_t *plan; /* the cache's reference; key = plan->p and
                         * plan->weights_constant */
    uint64_t hash;      /* of the key */
    uint64_t last_use;
} cache_entry_t;

static struct {
    pthread_mutex_t lock;
    cache_entry_t entries[CACHE_CAPACITY];
    size_t count;
    uint64_t clock;
    size_t hits;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Hash of the problem's bytes (the struct is zero-initialised before it
 * is filled, so equal problems have equal bytes), eight at a time with a
 * multiply-xorshift mix: a few tens of nanoseconds. */
static uint64_t problem_hash(const dgrad_problem_t *p, int weights_constant) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = (0x9e3779b97f4a7c15ull ^ sizeof *p) + (uint64_t)weights_constant;
    size_t i = 0;
    for (; i + 8 <= sizeof *p; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < sizeof *p; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    return h * 0xc4ceb9fe1a85ec53ull;
}

/* Index of the entry for @p p, or -1: hashes first, bytes to confirm.
 * Caller holds the lock. */
static int cache_find(const dgrad_problem_t *p, int weights_constant,
        uint64_t hash) {
    for (size_t i = 0; i < cache.count; i++)
        if (cache.entries[i].hash == hash
                && cache.entries[i].plan->weights_constant == weights_constant
                && !memcmp(&cache.entries[i].plan->p, p, sizeof *p))
            return (int)i;
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
static dgrad_plan_t *cache_insert(dgrad_plan_t *plan, uint64_t hash) {
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
    cache.entries[slot].hash = hash;
    cache.entries[slot].last_use = ++cache.clock;
    return victim;
}

void dgrad_plan_cache_clear(void) {
    cache_entry_t entries[CACHE_CAPACITY];
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.count;
    memcpy(entries, cache.entries, n * sizeof entries[0]);
    cache.count = 0;
    pthread_mutex_unlock(&cache.lock);
    for (size_t i = 0; i < n; i++) dgrad_plan_release(entries[i].plan);
}

static void cache_clear_at_exit(void) {
    dgrad_plan_cache_clear();
    /* Plans a caller still holds keep using the engine. */
    if (atomic_load(&live_plans) == 0 && engine) {
        dnnl_engine_destroy(engine);
        engine = NULL;
    }
}

dgrad_status_t dgrad_plan_get(const dgrad_problem_t *problem,
        dgrad_weights_use_t weights, dgrad_plan_t **plan) {
    if (!problem || !plan)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_get: problem and plan must not be NULL");
    dgrad_status_t st = check_problem(problem);
    if (st != dgrad_success) return st;
    dnnl_status_t es = engine_init();
    if (es != dnnl_success)
        return dnnl_fail(problem, es, "CPU engine creation");

    int weights_constant = weights == dgrad_weights_constant;
    uint64_t hash = problem_hash(problem, weights_constant);
    pthread_mutex_lock(&cache.lock);
    int i = cache_find(problem, weights_constant, hash);
    dgrad_plan_t *found = i >= 0 ? cache_use(i) : NULL;
    pthread_mutex_unlock(&cache.lock);
    if (found) {
        *plan = found;
        return dgrad_success;
    }
    /* Create outside the lock (it can take milliseconds); another thread
     * may have inserted the same problem meanwhile: then keep theirs. */
    dgrad_plan_t *fresh = NULL, *victim = NULL;
    if ((st = plan_create(problem, weights_constant, &fresh)) != dgrad_success) return st;
    pthread_mutex_lock(&cache.lock);
    i = cache_find(problem, weights_constant, hash);
    if (i >= 0) {
        found = cache_use(i);
    } else {
        victim = cache_insert(fresh, hash);
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

/* Contiguous runs use vector instructions when the CPU has them (checked
 * at run time): AVX-512 for f16 and bf16, else F16C for f16. They return
 * how many elements they converted and the scalar loops do the rest; every
 * path rounds to nearest even exactly as the scalar code does. */
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

__attribute__((target("avx512f"))) static int64_t avx512_f16_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(dst + j, _mm512_cvtph_ps(_mm256_loadu_si256(
                                          (const __m256i *)(src + j))));
    return j;
}

__attribute__((target("avx512f"))) static int64_t avx512_f16_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm256_storeu_si256((__m256i *)(dst + j),
                _mm512_cvtps_ph(_mm512_loadu_ps(src + j),
                        _MM_FROUND_TO_NEAREST_INT));
    return j;
}

__attribute__((target("avx512f"))) static int64_t avx512_bf16_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i w = _mm512_cvtepu16_epi32(
                _mm256_loadu_si256((const __m256i *)(src + j)));
        _mm512_storeu_si512(dst + j, _mm512_slli_epi32(w, 16));
    }
    return j;
}

/* dgrad_f32_to_bf16 on 16 lanes: round to nearest even, NaN kept quiet. */
__attribute__((target("avx512f"))) static int64_t avx512_bf16_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000),
                  half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                  quiet = _mm512_set1_epi32(0x40);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i u = _mm512_loadu_si512(src + j);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(
                _mm512_and_si512(u, abs_mask), inf);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
        __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(u, _mm512_add_epi32(half, lsb)), 16);
        __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
        r = _mm512_mask_blend_epi32(nan, r, q);
        _mm256_storeu_si256((__m256i *)(dst + j), _mm512_cvtepi32_epi16(r));
    }
    return j;
}

/* Every AVX2 CPU has F16C, and "avx2" is a feature name every GCC and
 * Clang accept here (Clang 14 does not know "f16c"); the check includes
 * the OS's AVX state support. */
static int have_f16c(void) { return __builtin_cpu_supports("avx2"); }
static int have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
#else
static int64_t f16c_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t f16c_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t avx512_f16_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t avx512_f16_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t avx512_bf16_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t avx512_bf16_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int have_f16c(void) { return 0; }
static int have_avx512(void) { return 0; }
#endif

static void run_to_f32(dgrad_data_type_t dt, const uint16_t *src,
        int64_t ss, float *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (ss == 1 && ds == 1 && n >= 8) {
        if (have_avx512())
            j = dt == dgrad_f16 ? avx512_f16_to_f32(src, dst, n)
                                : avx512_bf16_to_f32(src, dst, n);
        if (dt == dgrad_f16 && have_f16c())
            j += f16c_to_f32(src + j, dst + j, n - j);
    }
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f16_to_f32(src[j * ss])
                                      : dgrad_bf16_to_f32(src[j * ss]);
}

static void run_from_f32(dgrad_data_type_t dt, const float *src, int64_t ss,
        uint16_t *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (ss == 1 && ds == 1 && n >= 8) {
        if (have_avx512())
            j = dt == dgrad_f16 ? avx512_f16_from_f32(src, dst, n)
                                : avx512_bf16_from_f32(src, dst, n);
        if (dt == dgrad_f16 && have_f16c())
            j += f16c_from_f32(src + j, dst + j, n - j);
    }
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f32_to_f16(src[j * ss])
                                      : dgrad_f32_to_bf16(src[j * ss]);
}

/* An f32 user tensor is staged as it is (layouts oneDNN cannot
 * describe, see layouts_nested). */
static void copy_run_f32(const float *src, int64_t ss, float *dst,
        int64_t ds, int64_t n) {
    if (ss == 1 && ds == 1) {
        memcpy(dst, src, (size_t)n * sizeof *src);
        return;
    }
    for (int64_t j = 0; j < n; j++) dst[j * ds] = src[j * ss];
}

/* Rows [r0, r1) of a conversion (a row is a run along the innermost
 * axis). */
static void convert_rows(const convert_t *cv, dgrad_data_type_t dt,
        int to_f32, const void *src, void *dst, int64_t r0, int64_t r1) {
    int64_t idx[MAX_NDIMS] = {0}, r = r0;
    int inner = cv->ndims - 1;
    for (int j = inner - 1; j >= 0; j--) {
        idx[j] = r % cv->dims[j];
        r /= cv->dims[j];
    }
    for (int64_t row = r0; row < r1; row++) {
        int64_t uo = 0, so = 0;
        for (int j = 0; j < inner; j++) {
            uo += idx[j] * cv->user_strides[j];
            so += idx[j] * cv->stage_strides[j];
        }
        if (dt == dgrad_f32)
            copy_run_f32((const float *)src + (to_f32 ? uo : so),
                    to_f32 ? cv->user_strides[inner] : cv->stage_strides[inner],
                    (float *)dst + (to_f32 ? so : uo),
                    to_f32 ? cv->stage_strides[inner] : cv->user_strides[inner],
                    cv->dims[inner]);
        else if (to_f32)
            run_to_f32(dt, (const uint16_t *)src + uo,
                    cv->user_strides[inner], (float *)dst + so,
                    cv->stage_strides[inner], cv->dims[inner]);
        else
            run_from_f32(dt, (const float *)src + so,
                    cv->stage_strides[inner], (uint16_t *)dst + uo,
                    cv->user_strides[inner], cv->dims[inner]);
        int j = inner - 1;
        while (j >= 0 && ++idx[j] == cv->dims[j]) idx[j--] = 0;
    }
}

/* Conversions of at least this many elements use every thread of the
 * OpenMP runtime oneDNN runs on (when dgrad is built with OpenMP). */
#define PARALLEL_MIN_ELEMS ((int64_t)1 << 15)

/* Converts between the user's tensor and its f32 staging copy. */
static void convert(const convert_t *cv, dgrad_data_type_t dt, int to_f32,
        const void *src, void *dst) {
    int inner = cv->ndims - 1;
    int64_t rows = 1;
    for (int j = 0; j < inner; j++) rows *= cv->dims[j];
    if (rows <= 0 || cv->dims[inner] <= 0) return;
#ifdef _OPENMP
    if (rows * cv->dims[inner] >= PARALLEL_MIN_ELEMS) {
        if (rows == 1) {
            /* One run: split it. */
            convert_t part = *cv;
            int64_t n = cv->dims[inner];
#pragma omp parallel firstprivate(part)
            {
                int nt = omp_get_num_threads(), t = omp_get_thread_num();
                int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
                const char *s8 = src;
                char *d8 = dst;
                /* bytes per user, staged element */
                size_t us = dt == dgrad_f32 ? 4 : 2, ss = 4;
                part.dims[inner] = hi - lo;
                if (to_f32)
                    convert_rows(&part, dt, 1,
                            s8 + lo * part.user_strides[inner] * us,
                            d8 + lo * part.stage_strides[inner] * ss, 0, 1);
                else
                    convert_rows(&part, dt, 0,
                            s8 + lo * part.stage_strides[inner] * ss,
                            d8 + lo * part.user_strides[inner] * us, 0, 1);
            }
            return;
        }
#pragma omp parallel
        {
            int nt = omp_get_num_threads(), t = omp_get_thread_num();
            convert_rows(cv, dt, to_f32, src, dst, rows * t / nt,
                    rows * (t + 1) / nt);
        }
        return;
    }
#endif
    convert_rows(cv, dt, to_f32, src, dst, 0, rows);
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
 * (everything when @p any_inside is 0) with @p pat: row by row along the
 * innermost axis, rows inside the box on the outer axes only at their
 * two ends. */
static void fill_outside(const dgrad_plan_t *plan, char *out, int64_t off,
        int any_inside, const void *pat) {
    const dgrad_problem_t *p = &plan->p;
    int last = p->nsp - 1;
    int64_t idx[DGRAD_MAX_SPATIAL] = {0};
    int64_t stride = p->out_strides[2 + last], n = p->Y[last];
    for (int i = 0; i <= last; i++)
        if (p->Y[i] <= 0) return;
    for (;;) {
        int64_t row = off;
        int inside = any_inside;
        for (int i = 0; i < last; i++) {
            row += idx[i] * p->out_strides[2 + i];
            inside = inside && idx[i] >= plan->lo[i] && idx[i] < plan->hi[i];
        }
        if (inside) {
            fill_run(out, plan->elsize, row, plan->lo[last], stride, pat);
            fill_run(out, plan->elsize, row + plan->hi[last] * stride,
                    n - plan->hi[last], stride, pat);
        } else {
            fill_run(out, plan->elsize, row, n, stride, pat);
        }
        int i = last - 1;
        while (i >= 0 && ++idx[i] == p->Y[i]) idx[i--] = 0;
        if (i < 0) break;
    }
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
                    + c * p->out_strides[1], !plan->empty, pat);
    }
}

/* ---------------------------------------------------------------------
 * Execution
 * ------------------------------------------------------------------- */

enum { T_IN = 0, T_WEI = 1, T_OUT = 2 };

static const tensor_path_t *path_of(const dgrad_plan_t *plan, int t) {
    return t == T_IN ? &plan->in : t == T_WEI ? &plan->wei : &plan->out;
}

/* Whether the primitive writes the user's output itself: no reorder or
 * type conversion after it, and no bias add (which then writes the
 * output, from the primitive's result: the caller's buffer is written by
 * one step only, the last, so a failure before it leaves it untouched). */
static int writes_user_output(const dgrad_plan_t *plan) {
    return !plan->out.reorder.prim && !plan->staged && !plan->p.has_bias;
}

/* The primitive needs a buffer of its own for a tensor when a reorder, a
 * type conversion or (output) the bias add stands between it and the
 * user. */
static int needs_conv_buf(const dgrad_plan_t *plan, int t) {
    if (t == T_OUT) return !writes_user_output(plan);
    return path_of(plan, t)->reorder.prim || plan->staged;
}

/* A staging buffer is needed when both stand there. */
static int needs_stage_buf(const dgrad_plan_t *plan, int t) {
    return path_of(plan, t)->reorder.prim && plan->staged;
}

static size_t align_up(size_t n) {
    return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

static void ctx_destroy(exec_ctx_t *c) {
    if (!c) return;
    for (int i = 0; i < N_STEPS; i++)
        for (int j = 0; j < 4; j++) dnnl_memory_destroy(c->mem[i][j].mem);
    dnnl_stream_destroy(c->stream);
    free(c->ws);
    free(c);
}

/* Sizes of the parts of an execution context's workspace (scratchpad,
 * then staging and primitive buffers of in, wei, out, then the f32 bias);
 * returns their aligned total. */
static size_t workspace_parts(const dgrad_plan_t *plan, size_t sizes[8]) {
    size_t total = 0;
    sizes[0] = plan->scratch_size;
    for (int t = 0; t < 3; t++) {
        const tensor_path_t *tp = path_of(plan, t);
        sizes[1 + 2 * t] = needs_stage_buf(plan, t)
                ? dnnl_memory_desc_get_size(&tp->io_md) : 0;
        sizes[2 + 2 * t] = needs_conv_buf(plan, t)
                ? dnnl_memory_desc_get_size(&tp->conv_md) : 0;
    }
    sizes[7] = plan->p.has_bias ? dnnl_memory_desc_get_size(&plan->bias_md)
                                : 0;
    for (int i = 0; i < 8; i++) total += align_up(sizes[i]);
    return total;
}

size_t dgrad_plan_workspace_size(const dgrad_plan_t *plan) {
    size_t sizes[8];
    return plan && !plan->empty ? workspace_parts(plan, sizes) : 0;
}

/* The memory descriptors of the operands of step @p id (up to three,
 * then the scratchpad): each gets its memory object when the context is
 * made. Returns the operand count, 0 for a step the plan does not have. */
static int step_mds(const dgrad_plan_t *plan, int id,
        const dnnl_memory_desc_t *md[4]) {
    const step_t *step = NULL;
    int n = 0;
    if (id == S_IN || id == S_WEI || id == S_OUT) {
        const tensor_path_t *tp = id == S_IN ? &plan->in
                : id == S_WEI ? &plan->wei : &plan->out;
        step = &tp->reorder;
        if (!step->prim) return 0;
        int back = id == S_OUT;
        md[0] = step->n_chunks > 1 ? &step->chunks.from_md
                : back ? &tp->conv_md : &tp->io_md;
        md[1] = step->n_chunks > 1 ? &step->chunks.to_md
                : back ? &tp->io_md : &tp->conv_md;
        n = 2;
    } else if (id == S_CONV) {
        step = &plan->conv;
        md[0] = &plan->in.conv_md;
        md[1] = &plan->wei.conv_md;
        md[2] = &plan->out.conv_md;
        n = 3;
    } else {
        step = &plan->bias_add;
        if (!step->prim) return 0;
        md[0] = &plan->out.conv_md;
        md[1] = &plan->bias_md;
        md[2] = &plan->out.conv_md;
        n = 3;
    }
    md[SLOT_SCRATCH] = step->scratch_bytes ? &step->scratch_md : NULL;
    return n;
}

/* Every memory object the context's steps use, made now (bound to no
 * buffer), so that an execution acquires nothing once it has a context. */
static dnnl_status_t ctx_create_memories(exec_ctx_t *c) {
    for (int id = 0; id < N_STEPS; id++) {
        const dnnl_memory_desc_t *md[4] = {NULL, NULL, NULL, NULL};
        int n = step_mds(c->plan, id, md);
        for (int slot = 0; slot < 4; slot++) {
            if (!md[slot] || (slot != SLOT_SCRATCH && slot >= n)) continue;
            bound_t *b = &c->mem[id][slot];
            dnnl_status_t s = ACQUIRE(dnnl_memory_create(&b->mem, md[slot],
                    engine, DNNL_MEMORY_NONE));
            if (s != dnnl_success) return s;
            b->ptr = NULL;
        }
    }
    return dnnl_success;
}

/* A new context: the stream, the memory objects, and one workspace carved
 * into the scratchpad, the staging and primitive buffers of the three
 * tensors and the f32 bias. */
static dnnl_status_t ctx_create(const dgrad_plan_t *plan, exec_ctx_t **out) {
    exec_ctx_t *c = allocated(dgrad_calloc(1, sizeof *c));
    if (!c) return dnnl_out_of_memory;
    c->plan = plan;
    size_t sizes[8];
    char **slots[8] = {&c->scratch, &c->stage[0], &c->conv[0], &c->stage[1],
            &c->conv[1], &c->stage[2], &c->conv[2], (char **)&c->bias_f32};
    size_t total = workspace_parts(plan, sizes);
    dnnl_status_t s = ACQUIRE(dnnl_stream_create(&c->stream, engine,
            dnnl_stream_default_flags));
    if (s == dnnl_success && total) {
        c->ws = allocated(dgrad_aligned_alloc(ALIGNMENT, total));
        if (!c->ws) s = dnnl_out_of_memory;
    }
    if (s == dnnl_success) s = ctx_create_memories(c);
    if (s != dnnl_success) {
        ctx_destroy(c);
        return s;
    }
    for (size_t i = 0, off = 0; i < 8; off += align_up(sizes[i]), i++)
        *slots[i] = sizes[i] ? c->ws + off : NULL;
    *out = c;
    return dnnl_success;
}

/* Takes an idle context of the plan (the spare one without a lock, the
 * common case of one thread at a time), or makes one. */
static dnnl_status_t ctx_acquire(const dgrad_plan_t *cplan, exec_ctx_t **c) {
    dgrad_plan_t *plan = (dgrad_plan_t *)cplan; /* the pool is mutable */
    *c = atomic_exchange(&plan->spare, NULL);
    if (*c) return dnnl_success;
    pthread_mutex_lock(&plan->pool_lock);
    *c = plan->pool;
    if (*c) plan->pool = (*c)->next;
    pthread_mutex_unlock(&plan->pool_lock);
    return *c ? dnnl_success : ctx_create(cplan, c);
}

static void ctx_release(exec_ctx_t *c) {
    dgrad_plan_t *plan = (dgrad_plan_t *)c->plan;
    exec_ctx_t *none = NULL;
    if (atomic_compare_exchange_strong(&plan->spare, &none, c)) return;
    pthread_mutex_lock(&plan->pool_lock);
    c->next = plan->pool;
    plan->pool = c;
    pthread_mutex_unlock(&plan->pool_lock);
}

/* The context's memory object for operand @p slot of step @p step (made
 * with the context), re-bound to @p ptr when the pointer changed. */
static dnnl_status_t bind(exec_ctx_t *c, int step, int slot,
        const void *ptr, dnnl_memory_t *mem) {
    bound_t *b = &c->mem[step][slot];
    /* oneDNN takes non-const handles; inputs are only read. */
    void *handle = (void *)(uintptr_t)ptr;
    dnnl_status_t s = b->mem ? dnnl_success : dnnl_runtime_error;
    if (s == dnnl_success && b->ptr != ptr)
        s = dnnl_memory_set_data_handle(b->mem, handle);
    if (s != dnnl_success) {
        /* Unknown binding: re-bind next time. */
        if (b->mem) b->ptr = (const void *)&b->ptr;
        return s;
    }
    b->ptr = ptr;
    *mem = b->mem;
    return dnnl_success;
}

/* Executes step @p id on up to three (arg, pointer) operands plus its
 * scratchpad, then waits: the next step may reuse the scratchpad. */
static dnnl_status_t run_step(exec_ctx_t *c, int id, const step_t *step,
        int nargs, const int *arg, const void *const *ptr) {
    dnnl_exec_arg_t args[4];
    dnnl_status_t s = dnnl_success;
    int n = 0;
    for (; n < nargs && s == dnnl_success; n++) {
        args[n].arg = arg[n];
        s = bind(c, id, n, ptr[n], &args[n].memory);
    }
    if (s == dnnl_success && step->scratch_bytes) {
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        s = bind(c, id, SLOT_SCRATCH, c->scratch, &args[n].memory);
        n++;
    }
    if (s == dnnl_success)
        s = DGRAD_FALLIBLE(dnnl_primitive_execute(step->prim, c->stream, n,
                args));
    if (s == dnnl_success) s = dnnl_stream_wait(c->stream);
    if (s != dnnl_success) planning_failure = s;
    return s;
}

static dnnl_status_t run_reorder(exec_ctx_t *c, int id, const step_t *step,
        const void *from, void *to) {
    const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    const void *ptr[2] = {from, to};
    if (step->n_chunks <= 1) return run_step(c, id, step, 2, arg, ptr);
    const chunking_t *ch = &step->chunks;
    int64_t idx[MAX_NDIMS] = {0};
    for (int64_t k = 0; k < step->n_chunks; k++) {
        int64_t f = 0, t = 0;
        for (int i = 0; i < ch->ndims; i++) {
            f += idx[i] * ch->ext[i] * ch->from_stride[i];
            t += idx[i] * ch->ext[i] * ch->to_stride[i];
        }
        ptr[0] = (const char *)from + f * (int64_t)ch->from_elsize;
        ptr[1] = (char *)to + t * (int64_t)ch->to_elsize;
        dnnl_status_t s = run_step(c, id, step, 2, arg, ptr);
        if (s != dnnl_success) return s;
        for (int i = ch->ndims - 1; i >= 0 && ++idx[i] == ch->count[i]; i--)
            idx[i] = 0;
    }
    return dnnl_success;
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
    return run_reorder(c, t == T_IN ? S_IN : S_WEI, &tp->reorder, io, conv);
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
        s = run_reorder(c, S_OUT, &tp->reorder, conv, io);
    if (s == dnnl_success && plan->staged)
        convert(&tp->cv, plan->p.dt, 0, io, user_box);
    return s;
}

static dnnl_status_t run_conv(exec_ctx_t *c, const void *in,
        const void *wei, void *out) {
    const int arg[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS,
            DNNL_ARG_DIFF_SRC};
    const void *ptr[3] = {in, wei, out};
    return run_step(c, S_CONV, &c->plan->conv, 3, arg, ptr);
}

/* dst = result + bias[c], in the primitive's layout (@p dst is @p result
 * or, when nothing follows, the user's output). */
static dnnl_status_t run_bias(exec_ctx_t *c, const void *bias,
        const void *result, void *dst) {
    const dgrad_plan_t *plan = c->plan;
    const int arg[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    const void *ptr[3] = {result, c->bias_f32, dst};
    /* Channel c sits at offset c in every bias layout; zero the padding
     * of blocked ones. */
    size_t n = plan->bias_bytes / sizeof(float);
    memset(c->bias_f32, 0, n * sizeof(float));
    for (int64_t ch = 0; ch < plan->p.Cout; ch++)
        c->bias_f32[ch] = (float)dgrad_load(bias, plan->p.dt,
                ch * plan->p.bias_stride);
    return run_step(c, S_BIAS, &plan->bias_add, 3, arg, ptr);
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
    if (s == dnnl_success && bias) {
        /* Into the user's box when no reorder or conversion follows. */
        void *biased = plan->out.reorder.prim || plan->staged ? conv_out
                                                              : out_box;
        s = run_bias(c, bias, conv_out, biased);
        conv_out = biased;
    }
    if (s == dnnl_success) s = bring_out(c, conv_out, out_box);
    return s;
}

/* One execution of a non-empty plan on a pooled context (no border). */
static dnnl_status_t plan_run(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out) {
    exec_ctx_t *c = NULL;
    dnnl_status_t s = ctx_acquire(plan, &c);
    if (s != dnnl_success) return s;
    int threads = threads_enter(plan->single_thread);
    s = run_all(c, in, weights, weights_prepared, bias, out);
    threads_leave(threads);
    ctx_release(c);
    return s;
}

const char *dgrad_plan_choice(const dgrad_plan_t *plan) {
    return plan && plan->choice ? plan->choice : "none";
}

int dgrad_plan_single_thread(const dgrad_plan_t *plan) {
    return plan ? plan->single_thread : 0;
}

int64_t dgrad_plan_reorder_chunks(const dgrad_plan_t *plan) {
    if (!plan) return 0;
    const step_t *steps[] = {&plan->in.reorder, &plan->wei.reorder,
            &plan->out.reorder};
    int64_t n = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i]->prim) n += steps[i]->n_chunks > 1 ? steps[i]->n_chunks : 1;
    return n;
}

size_t dgrad_plan_prepared_weights_size(const dgrad_plan_t *plan) {
    return plan && !plan->empty ? plan->prepared_weights_bytes : 0;
}

dgrad_status_t dgrad_plan_prepare_weights(const dgrad_plan_t *plan,
        const void *user_weights, void *prepared) {
    if (!plan || !user_weights || !prepared)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_prepare_weights: NULL argument");
    if (dgrad_plan_prepared_weights_size(plan) == 0) return dgrad_success;
    exec_ctx_t *c = NULL;
    const void *conv_wei = NULL;
    /* The result goes straight to @p prepared, not to the context's
     * primitive buffer. */
    dnnl_status_t s = ctx_acquire(plan, &c);
    if (s == dnnl_success) {
        int threads = threads_enter(plan->single_thread);
        s = bring_in(c, T_WEI, user_weights, prepared, &conv_wei);
        threads_leave(threads);
        ctx_release(c);
    }
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
        dnnl_status_t s = plan_run(plan, in, weights, weights_prepared, bias,
                out);
        if (s != dnnl_success) return dnnl_fail(&plan->p, s, "execution");
        if (plan->full_box) return dgrad_success;
    }
    fill_border(plan, bias, out);
    return dgrad_success;
}
