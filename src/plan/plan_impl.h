/*
 * The oneDNN layer's own header: the plan and its parts, shared by the
 * files of src/plan/ (each says what it does at its top). Nothing here
 * knows a dialect: the plan sees only the canonical problem.
 */
#ifndef DGRAD_PLAN_IMPL_H
#define DGRAD_PLAN_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "onednn.h"
#include "onednn_compat.h"

/* Alignment of every buffer dgrad allocates for oneDNN. */
#define ALIGNMENT 64
/* Largest rank of a canonical tensor (grouped 3D weights). */
#define MAX_NDIMS (3 + DGRAD_MAX_SPATIAL)

/* A reorder run piece by piece (chunks.c): each chunk is a box of @p ext
 * elements per axis of both plain tensors, at offsets that step through
 * the whole tensor; one primitive serves every chunk. */
typedef struct chunking {
    int ndims;
    int64_t count[MAX_NDIMS]; /* chunks along each axis */
    dnnl_dims_t ext;          /* chunk extent along each axis */
    dnnl_dims_t from_stride;  /* element strides of the two tensors */
    dnnl_dims_t to_stride;
    size_t from_elsize, to_elsize;
    md_t from_md, to_md; /* of one chunk */
} chunking_t;

/* One primitive with the scratchpad it wants (user scratchpad mode, so the
 * buffer comes from each execute and executes can run concurrently). */
typedef struct step {
    dnnl_primitive_t prim;
    /* Run by dgrad's own copy between these layouts instead of a
     * primitive (prim NULL): OWN_COPY_PADDED where oneDNN's reorder is
     * wrong here (onednn_defects.c), OWN_COPY_SCATTER or
     * OWN_COPY_CHANNEL_BLOCKS where a small one was slower (small_copy.c,
     * channel_blocks.c); 0: a primitive. */
    int own;
    md_layout_t own_from, own_to;
    /* The scatter's (source, destination) element offsets, own_count
     * pairs in the source's order; its destination's bytes, and whether
     * that has padding to zero first. */
    int32_t *own_pairs;
    int64_t own_count;
    size_t own_to_bytes;
    int own_to_padded;
    /* Per axis, the element offset each index adds in either layout
     * (blocked addressing is a sum over axes): own_tab[a] holds
     * from-offsets then to-offsets for the dims[a] indices of axis a;
     * allocated with the step. */
    int64_t *own_tab[MAX_NDIMS];
    md_t scratch_md;
    size_t scratch_bytes; /* of scratch_md (oneDNN computes it slowly) */
    char impl[48]; /* oneDNN implementation name */
    int64_t n_chunks; /* > 1: a reorder run in chunks (see chunking_t) */
    chunking_t chunks;
    /* The same step adding onto its destination (a sum post-op), run
     * when the output accumulates in place (in_place.c); NULL if none. */
    dnnl_primitive_t sum_prim;
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
    md_t io_md;   /* user memory, or the f32 staging copy */
    md_t conv_md; /* the primitive's layout and type */
    int64_t io_strides[MAX_NDIMS]; /* io_md's, for dgrad's own loops */
    step_t reorder;             /* io <-> conv; prim NULL when equal */
    convert_t cv;               /* user <-> staging, when plan->staged */
} tensor_path_t;

/* Execution steps, in order; each has up to four operands plus its
 * scratchpad. */
enum { S_IN = 0, S_WEI = 1, S_CONV = 2, S_BIAS = 3, S_OUT = 4, N_STEPS = 5 };
#define SLOT_SCRATCH 4
#define N_SLOTS 5

/* A oneDNN memory object of an execution context and the buffer it is
 * bound to. Intermediate buffers stay bound for the context's life;
 * user buffers are re-bound only when the pointer changes (re-binding
 * makes oneDNN zero the padding of blocked layouts). */
typedef struct bound {
    dnnl_memory_t mem;
    const void *ptr;
} bound_t;

/* The post-ops' pass (post_pass.c): a oneDNN binary primitive over the
 * whole output in place, or dgrad's own loop (own). Memory-object slots of
 * its step: src0, src1, dst, scratchpad, then post-op i's operand at
 * 4 + i. */
#define POST_SLOTS (4 + DGRAD_MAX_POST_OPS)
typedef struct post_pass {
    int active;       /* the problem has post-ops */
    int own;          /* run by dgrad's loop */
    int fused;        /* carried by a step of the plan (fused_into) */
    int passed;       /* a pass though a step could carry it (timing.c) */
    const step_t *fused_into;
    int first_binary; /* post-op 0 is the primitive's operation */
    step_t step;
    md_t out_md;      /* the whole output, the user's layout and type */
    md_t src1_md;     /* post-op 0's operand, or the zero scalar */
    md_t operand_md[DGRAD_MAX_POST_OPS]; /* binary post-ops after that */
    int operand_index[DGRAD_MAX_POST_OPS]; /* their index in the attr */
    /* In-place executions add onto the output through the steps'
     * sum_prims (in_place.c): post-op in_place_at is no operand then,
     * and the pass does not run when the chain is that Add alone. */
    int accumulates;
    int in_place_at;
} post_pass_t;

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
    bound_t mem[N_STEPS][N_SLOTS];
    bound_t post_mem[POST_SLOTS];
    const void *const *operands; /* this execution's post-op operands */
    bound_t (*copy_mem)[3]; /* a folded plan's phase copies: from, to, scratch */
    /* The in-place Add's operand set aside (execute.c, in_place_run):
     * made at the context's first in-place execution, kept with it. */
    char *aside;
    size_t aside_bytes;
    int accumulating; /* this execution adds onto the output in place */
    /* A copy of the user's weights of the context's last execution with
     * variable weights (small ones only; wei_seen_bytes 0: none), whether
     * it holds them, and where they are kept prepared (NULL: not yet;
     * execute.c, weights_unchanged). */
    char *wei_seen;
    size_t wei_seen_bytes;
    int wei_seen_valid;
    const void *wei_seen_at;
    long wei_reused; /* executions that took them so */
    long wei_misses; /* executions in a row not taking them so */
} exec_ctx_t;

/* The output phases of a transposed convolution folded into the channels
 * of one forward convolution (phase_fold.c): output position
 * f = S*q + r (phase r = f mod S per axis) is channel r of the forward
 * convolution's output at q, whose kernel holds, per phase, the taps that
 * reach that phase. One strided reorder per phase then puts each phase's
 * channels into its every-S-th output positions. */
typedef enum fold_mode {
    FOLD_NONE = 0,    /* the plan runs a backward-data convolution */
    FOLD_GROUPED = 1, /* G groups of P*Cout/G forward output channels */
    FOLD_DENSE = 2,   /* one group, block-diagonal weights */
} fold_mode_t;

/* At most this many phases (the product of the strides). */
#define MAX_PHASES 64

/* One phase's reorder: a view of the forward convolution's output to a
 * view of the output (strides times S), at element offsets. */
typedef struct phase_copy {
    step_t step;
    md_t from_md, to_md;
    int64_t from_off, to_off;
} phase_copy_t;

typedef struct fold {
    fold_mode_t mode;
    int64_t P, Cf; /* phases; channels of the forward output (P * Cout) */
    /* Per axis: window W taps with dilation fd; the window's last tap is
     * tmax input positions back; q0 first forward output position, nq
     * count; pl, pr the forward convolution's pads. */
    int64_t W[DGRAD_MAX_SPATIAL], fd[DGRAD_MAX_SPATIAL];
    int64_t tmax[DGRAD_MAX_SPATIAL], q0[DGRAD_MAX_SPATIAL];
    int64_t nq[DGRAD_MAX_SPATIAL], pl[DGRAD_MAX_SPATIAL];
    int64_t pr[DGRAD_MAX_SPATIAL];
    size_t weights_bytes; /* of the folded weights (plain, wei.io_md) */
    /* The weights' step scatters the user's weights into the kernel's
     * layout itself (fuse_weights): no folded copy. */
    int weights_fused;
    /* One phase computing exactly the output (fold_writes_output): the
     * convolution writes the caller's layout itself, no copies. */
    int writes_output;
    int n_copies;
    phase_copy_t *copies; /* allocated, n_copies */
} fold_t;

/* The rows loop's input rows staged as f32 in each thread's scratch
 * (direct_stage.c): @p slots rows @p pitch floats apart, 0 where the
 * loop reads the user's rows; an input row's slot is its channel in the
 * group and its positions on the outer axes modulo @p window. */
typedef struct direct_stage {
    int64_t slots, pitch, next, channels, x;
    int64_t window[DGRAD_MAX_SPATIAL];
    int64_t xl_slots; /* slots a position of the last outer axis apart */
    int64_t tile;     /* output rows of that axis the loop takes at once */
    int64_t halo[2]; /* zeros before and after each copy, where padded */
    int padded;      /* terms may read whole steps (direct_stage_plan) */
    int64_t ahead;   /* elements to the row a run further (0: none) */
    int64_t prefetch; /* elements to the row requested after a copy */
} direct_stage_t;

struct dgrad_plan {
    atomic_long refs;
    dgrad_problem_t p;
    int weights_constant;          /* chosen for prepared weights (cache key) */
    dgrad_plan_policy_t policy;    /* the policy it was chosen by (cache key) */
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
    md_t bias_md;                  /* f32 [1, Cout, 1...]; folded: [P*Cout] */
    /* The bias add's view of the result: empty (out.conv_md itself), or
     * [rows, T*C] over a dense channels-last result, the bias repeated T
     * (bias_tile) times along the last spatial axis (make_bias_add). */
    md_t bias_view_md;
    int64_t bias_tile;
    step_t conv, bias_add;
    fold_t fold;                   /* mode FOLD_NONE: backward data */
    int direct;                    /* dgrad's own loop (DIRECT_*), 0:
                                      none */
    int64_t *direct_taps;          /* its tap tables (direct_taps_init) */
    struct blocks_lists *direct_lists; /* the blocks loop's lists, or NULL */
    /* the row vectors loop's tables, or NULL */
    struct row_vectors *direct_row_vectors;
    /* the phase pair loop's table (or its AMX form's), or NULL */
    struct phase_pair *direct_phase_pair;
    /* The convolution step is the projection's matmul (projection.c), its
     * columns in this order (PROJECTION_*); 0: not the projection. */
    int projection;
    direct_stage_t direct_stage;   /* the rows loop's staged input rows */
    int direct_threads;            /* threads its scratch has room for */
    int direct_avx2;               /* its kernels are AVX2 ones though the
                                      CPU has AVX-512 (timed faster:
                                      challenge_with_direct) */
    /* its rows round the f32 staging output into the user's output
     * (direct_rounds_output) and widen the user's input into the staged
     * one (direct_widens_input), decided once at planning */
    int direct_rounds_out, direct_widens_in;
    post_pass_t post;              /* the post-ops, after everything */
    size_t scratch_size;           /* largest scratchpad of all steps */
    _Atomic(exec_ctx_t *) spare;   /* an idle context, taken lock-free */
    pthread_mutex_t pool_lock;     /* guards pool */
    exec_ctx_t *pool;              /* more idle execution contexts */
};

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

/* A candidate convolution pd, the layout candidate (index into
 * layout_cands) and the output geometry it was made for. */
typedef struct cand_pd {
    dnnl_primitive_desc_t pd;
    int cand;
    fold_mode_t fold; /* a forward pd of phase_fold.c */
    int extend_tail;
    int reorders; /* activations whose layout differs from their io one */
    int wei_reorder; /* weights in another layout than the user's */
    /* The post-op chain as a pass of its own even where the step writing
     * the output could carry it (timed against carrying: search). */
    int chain_passed;
} cand_pd_t;

/* Column orders of the projection's product (projection.c). */
enum { PROJECTION_CHANNEL_MAJOR = 1, PROJECTION_TAP_MAJOR = 2 };

/* Layout candidates per output geometry (candidates.c), and of the
 * folded forward convolution (source on its io layout or channels-last,
 * in each fold mode). */
#define N_CANDS 5
#define N_FOLD_CANDS 4
#define MAX_CAND_PDS (2 * N_CANDS + N_FOLD_CANDS)

/* The three tensors of a plan. */
enum { T_IN = 0, T_WEI = 1, T_OUT = 2 };

/* ------------------------------------------------------------ engine.c */

/* The CPU engine, created at the first planning (engine_init). */
extern dnnl_engine_t engine;
dnnl_status_t engine_init(void);
extern atomic_long live_plans;

/* Reports an acquisition's status to the planning in progress on this
 * thread (see plan_create): out of memory fails the planning as a whole.
 * ACQUIRE wraps every oneDNN creation call of the layer. */
dnnl_status_t acquired(dnnl_status_t s);
void *allocated(void *p);
#define ACQUIRE(call) acquired(DGRAD_ACQUIRE(call))
/* The failure recorded since planning_reset() (dnnl_success if none). */
void planning_reset(void);
dnnl_status_t planning_failed(void);
void planning_fail(dnnl_status_t s);

dnnl_data_type_t to_dnnl_dt(dgrad_data_type_t dt);
void describe_problem(const dgrad_problem_t *p, char *buf, size_t size);
dgrad_status_t dnnl_fail_as(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what, dgrad_status_t otherwise);
dgrad_status_t dnnl_fail(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what);
dgrad_status_t check_problem(const dgrad_problem_t *p);

/* ------------------------------------------------------------ layout.c */

int compute_region(dgrad_plan_t *plan, int extend_tail);
dnnl_status_t init_io_mds(dgrad_plan_t *plan, int staged);
dnnl_status_t md_any(md_t *md, md_ref_t like, dnnl_data_type_t dt);
/* Dense channels-last like @p like; an activation's desc for a layout
 * candidate's mode. */
dnnl_status_t md_nxc(md_t *md, md_ref_t like, dnnl_data_type_t dt);
dnnl_status_t md_act(md_t *md, md_ref_t io, dnnl_data_type_t dt,
        act_mode_t m);
void canonical_dims(const dgrad_problem_t *p, int64_t in[5], int64_t wei[6],
        int64_t out[5]);
int64_t span_of(int nd, const int64_t *dims, const int64_t *strides);
/* Elements from the plan's input's first to its last on its io layout
 * (every stride >= 0): what own loops widen a 16-bit input as, once per
 * execution. */
int64_t input_span_of(const dgrad_plan_t *plan);
/* The offset of the problem's weights' last element (every stride >= 0):
 * what own loops that gather the weights check against (gather16). */
int64_t weights_last_offset(const dgrad_problem_t *p);
void dense_like(int nd, const int64_t *old_dims, const int64_t *old_strides,
        const int64_t *dims, int64_t *strides);
int layouts_nested(const dgrad_problem_t *p);
void md_format(char *buf, size_t size, md_ref_t md);

/* -------------------------------------------------------- primitives.c */

dnnl_status_t create_conv_pd(const dgrad_plan_t *plan, dnnl_data_type_t dt,
        const layout_cand_t *lc, dnnl_primitive_desc_t *pd);
int impl_rank(const_dnnl_primitive_desc_t pd);
int impl_is_generic(const char *impl);
dnnl_status_t take_conv_mds(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, dnnl_query_t in_q,
        dnnl_query_t out_q);
dnnl_status_t build_primitives(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, const char **what);
dnnl_status_t user_scratchpad_attr(dnnl_primitive_attr_t *attr);
dnnl_status_t make_step(step_t *step, dnnl_primitive_desc_t pd,
        size_t *scratch_size);
dnnl_status_t make_reorder(dgrad_plan_t *plan, tensor_path_t *t, int to_io);
/* A reorder step on scratch buffers of its own, outside any execution
 * context: planning runs it to check it (onednn_defects.c) or to time it
 * (small_copy.c). */
typedef struct scratch_reorder {
    char *from, *to, *scratch; /* md_size(from), md_size(to), the step's */
    dnnl_stream_t stream;
    dnnl_memory_t mem[3];
    dnnl_exec_arg_t args[3];
    int nargs;
} scratch_reorder_t;
/* Allocates @p r's buffers (contents undefined) and binds @p step's
 * operands to them; on failure @p r holds what was made, for
 * scratch_reorder_free. */
dnnl_status_t scratch_reorder_make(scratch_reorder_t *r, const step_t *step,
        md_ref_t from, md_ref_t to);
/* Runs @p step once on @p r's buffers (a fallible point of the
 * fault-injection build, reported to the planning) and waits. */
dnnl_status_t scratch_reorder_run(const scratch_reorder_t *r,
        const step_t *step);
void scratch_reorder_free(scratch_reorder_t *r);
/* Makes @p pd (owned, destroyed here) into the plan's @p step in place
 * of the one it had, when @p s (the pd's creation) succeeded; the old
 * step stays on any failure, which is returned. */
dnnl_status_t step_replace(dgrad_plan_t *plan, step_t *step,
        dnnl_primitive_desc_t pd, dnnl_status_t s);
/* The plan's bias add again, carrying @p attr (its post-ops), on the
 * layouts chosen before: replaces the step when oneDNN builds it with a
 * non-reference implementation, else dnnl_unimplemented (step unchanged). */
dnnl_status_t bias_add_with_attr(dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr);
/* The bias add's pd on its chosen layouts, with @p attr; a reference
 * implementation is dnnl_unimplemented. */
dnnl_status_t bias_add_pd(const dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd);
dnnl_status_t reorder_pd(dnnl_primitive_desc_t *pd, md_ref_t from,
        md_ref_t to);
dnnl_status_t reorder_pd_with_attr(dnnl_primitive_desc_t *pd,
        md_ref_t from, md_ref_t to, const_dnnl_primitive_attr_t attr);
dgrad_plan_t *plan_alloc(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int extend_tail);
void plan_destroy(dgrad_plan_t *plan);

/* -------------------------------------------------------- phase_fold.c */

int fold_applicable(const dgrad_problem_t *p);
int fold_init(dgrad_plan_t *plan, fold_mode_t mode);
int fold_writes_output(const dgrad_plan_t *plan);
dnnl_status_t create_fold_pd(const dgrad_plan_t *plan, dnnl_data_type_t dt,
        act_mode_t act, dnnl_primitive_desc_t *pd);
dnnl_status_t build_fold_primitives(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, const char **what);
void fold_weights(const dgrad_plan_t *plan, const void *user, void *folded);
/* The folded convolution again on its chosen layouts, carrying @p attr
 * (post-ops): replaces the step when oneDNN builds the same kernel, else
 * dnnl_unimplemented (step unchanged). */
dnnl_status_t fold_conv_with_attr(dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr);
/* Its pd only (dnnl_unimplemented for another kernel). */
dnnl_status_t fold_conv_pd(const dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd);
void fold_bias(const dgrad_plan_t *plan, const void *bias, float *folded);
/* The projection's plan (projection.c): one matmul on 2-D views of the
 * user's tensors (@p staged: of f32 copies), the weights read where they
 * are or (@p packed) reordered into the matmul's layout; NULL where it
 * does not apply or oneDNN offers no optimized matmul. */
dgrad_plan_t *build_projection(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int packed);
/* The bias of each column of the projection's product: its channel's. */
void projection_bias(const dgrad_plan_t *plan, const void *bias,
        float *cols);
/* A plan whose output box is the whole output (candidates.c). */
dgrad_plan_t *plan_alloc_whole_box(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy);

/* --------------------------------------------------------- post_pass.c */

/* Builds the plan's post pass (nothing without post-ops; dgrad's loop
 * where oneDNN cannot build the primitive): out of memory is the only
 * failure. */
dnnl_status_t post_pass_init(dgrad_plan_t *plan);
/* Whether dgrad's own loop of @p plan can apply the chain to each row it
 * writes (unless the plan's post.passed asks for a pass). */
int direct_can_carry(const dgrad_plan_t *plan);
void post_pass_free(post_pass_t *pp);
/* The memory objects of the pass's primitive in a new context. */
dnnl_status_t post_pass_memories(exec_ctx_t *c);
/* Runs the chain over the whole output @p out in place. */
dnnl_status_t post_pass_run(exec_ctx_t *c, const void *const *operands,
        void *out);
void post_pass_own_run(const dgrad_plan_t *plan, const void *const *operands,
        void *out);
/* The chain from post-op @p from on @p len f32 values @p row along the
 * last spatial axis, from canonical output index @p idx (n, c, spatial),
 * in place; @p tmp holds @p len floats (a 16-bit operand's values). The
 * one definition of how a chain applies where dgrad computes it (its own
 * loop, its own pass). */
void post_chain_row(const dgrad_problem_t *p, const void *const *operands,
        int from, const int64_t *idx, int64_t len, float *row, float *tmp);
/* The chain's first op where it is ReLU (any alpha) or Clamp, which
 * dgrad's own loops apply in registers before a store. */
typedef struct epilogue {
    int on, clip;
    float a, b; /* ReLU: alpha; Clamp: min, max */
} epilogue_t;
/* 1 with @p ep set (on) when the chain's first op is such an epilogue
 * (then post-op 1 on is what remains), else 0. */
int post_chain_epilogue(const dgrad_problem_t *p, epilogue_t *ep);
/* The same along axis @p axis of the canonical output (1: the channels
 * of one position, dgrad's channels-last depthwise loop). */
void post_chain_run(const dgrad_problem_t *p, const void *const *operands,
        int from, const int64_t *idx, int axis, int64_t len, float *row,
        float *tmp);
/* The chain over an output no term reaches, each element starting from
 * the bias (or zero): the whole result of an empty plan, each element
 * written once after its operands are read (so the in-place Add's operand
 * may be @p out itself). */
void post_pass_own_run_on_border(const dgrad_plan_t *plan,
        const void *const *operands, const void *bias, void *out);
/* The chain's post-ops before post-op @p end in @p attr as the step
 * carrying it takes them, post-op @p sum_at (-1: none) as an
 * accumulation onto the destination (oneDNN's sum) instead of a binary
 * add. */
dnnl_status_t post_chain_attr(dgrad_plan_t *plan,
        dnnl_primitive_attr_t attr, int sum_at, int end);
void step_free(step_t *step);

/* ---------------------------------------------------------- in_place.c */

/* Where the plan's output accumulates onto the in-place Add's operand in
 * its own buffer (dgrad_problem_in_place_post_op): the step writing the
 * output gets a summing twin (step_t.sum_prim) where oneDNN builds one
 * (plan->post.accumulates); elsewhere executions set the operand aside.
 * Out of memory is the only failure. */
dnnl_status_t in_place_init(dgrad_plan_t *plan);

/* --------------------------------------------------------------- cpu.c */
/* The CPU's vector instruction sets for dgrad's own kernels, capped by
 * DGRAD_MAX_CPU_ISA: AVX-512F; AVX-512 BW and VL too; AVX-512VL (the AVX2
 * kernels' 32-register forms); AVX2 with FMA (and so F16C). */
int cpu_has_avx512f(void);
int cpu_has_avx512bw(void);
int cpu_has_avx512vl(void);
int cpu_has_avx2_fma(void);
/* AVX-512DQ (with AVX-512F): the class test of vfpclassps. */
int cpu_has_avx512dq(void);
/* AVX512_BF16's conversions and dot products (with AVX-512F). */
int cpu_has_avx512_bf16(void);
/* AMX tiles with bf16 products, usable by this process (with AVX-512BW;
 * uncapped only). */
int cpu_has_amx_bf16(void);
int cpu_l1d_ways(void);
int64_t cpu_l1d_set_period(void);
/* The last-level cache's bytes as the C library reads them (32 MiB where
 * it cannot). */
int64_t cpu_llc_bytes(void);
/* One core's L2 bytes as the C library reads them (512 KiB where it
 * cannot). */
int64_t cpu_l2_bytes(void);

/* ----------------------------------------------------- onednn_defects.c */

/* Whether reorders are checked before use (oneDNN 3.7.0-3.8.0, or
 * DGRAD_CHECK_REORDERS=1; =0 never). */
int reorder_check_wanted(void);
/* Whether @p pd's results cannot be trusted on this oneDNN (its
 * implementation, or the layouts it was given). */
int pd_untrusted(const_dnnl_primitive_desc_t pd);
/* After a pd creation that returned @p s: an untrusted implementation
 * gives way to the next one oneDNN offers (while a hint pd passed to the
 * creation is still alive: oneDNN's iterator keeps a pointer to it);
 * dnnl_unimplemented (and *@p pd NULL) when none is left. */
dnnl_status_t pd_trusted_or_next(dnnl_primitive_desc_t *pd, dnnl_status_t s);
/* Whether creating a 1x1 forward convolution can crash this oneDNN. */
int onednn_1x1_forward_crashes(void);
/* On the oneDNN versions whose brgemm forward convolution mishandles
 * padding (onednn_defects.c): a brgemm pd for a convolution with pads
 * @p pl, @p pr and window extents @p extent (input positions, per
 * spatial axis) gives way to the next implementation; NULL and
 * dnnl_unimplemented when none is left. */
dnnl_status_t pd_safe_for_padding(dnnl_primitive_desc_t *pd, int nsp,
        const int64_t *pl, const int64_t *pr, const int64_t *extent);
/* The same for a backward-data pd of @p strides, @p dilates (oneDNN's,
 * 0 for none) and front pads @p pl: a brgemm one where a result position
 * has no tap in the input gives way to the next implementation. */
dnnl_status_t pd_bwd_safe_for_padding(dnnl_primitive_desc_t *pd, int nsp,
        const int64_t *strides, const int64_t *dilates, const int64_t *pl);
/* Whether some position of backward-data pd @p pd's result (diff_src)
 * has no tap in its input (diff_dst), as pd_bwd_safe_for_padding reads
 * it. */
int pd_positions_without_taps(const_dnnl_primitive_desc_t pd, int nsp,
        const int64_t *strides, const int64_t *dilates, const int64_t *pl);
/* Whether this oneDNN's binary primitive mixes up the parameters of
 * eltwise post-ops of one algorithm (measured once per process). */
int eltwise_params_shared(void);
/* Runs @p step's reorder from @p from to @p to once on scratch buffers and
 * checks the result: dnnl_unimplemented when it is wrong. */
dnnl_status_t reorder_check(const step_t *step, md_ref_t from, md_ref_t to);
/* Checks @p step's reorder where wanted and, when oneDNN's is wrong,
 * turns the step into dgrad's own copy (no primitive, no scratchpad). */
dnnl_status_t reorder_make_safe(step_t *step, md_ref_t from, md_ref_t to);
/* Turns @p step into dgrad's own copy from @p from to @p to (its
 * primitive destroyed, its offset tables made). */
dnnl_status_t own_copy_make(step_t *step, md_ref_t from, md_ref_t to);
/* dgrad's own copy of one tensor between the step's layouts. */
void own_reorder_run(const step_t *step, const void *from, void *to);
/* Floor division (positions before an axis's first are negative where
 * the padding is): the own loops' and the fold's tap arithmetic. */
static inline int64_t div_floor(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Whether a step runs (a primitive, or dgrad's own copy). */
static inline int step_exists(const step_t *s) {
    return s->prim != NULL || s->own;
}

/* ------------------------------------------------------- small_copy.c */

enum {
    OWN_COPY_PADDED = 1,
    OWN_COPY_SCATTER = 2,
    OWN_COPY_CHANNEL_BLOCKS = 3
};
/* After @p step's reorder from @p from to @p to was made (and made safe):
 * turns it into dgrad's scatter or channel blocks copy where the policy
 * and the timing say so (small_copy.c). The scatter only where the
 * destination is a whole buffer of the plan's (its padding is zeroed,
 * the rest written), not the user's output (@p into_user). */
dnnl_status_t small_copy_offer(const dgrad_plan_t *plan, step_t *step,
        md_ref_t from, md_ref_t to, int into_user);
/* The scatter of @p step (own OWN_COPY_SCATTER), on the calling thread. */
void small_copy_run(const step_t *step, const void *from, void *to);
/* Sorts @p step's pairs by source offset (after they were changed). */
void small_copy_sort(step_t *step);

/* ---------------------------------------------------- channel_blocks.c */

/* Whether a plain tensor (N, C, then spatial axes in one run) goes into
 * 16-channel blocks with dense pixels, or back, from layout @p f to
 * layout @p t by dgrad's own copy, on this CPU (AVX-512; BW for 2-byte
 * types). */
int channel_blocks_fits(const md_layout_t *f, const md_layout_t *t);
/* That copy of @p step (own OWN_COPY_CHANNEL_BLOCKS), on the calling
 * thread: into blocks every element written, the channels past C zero;
 * into the plain tensor only its elements. */
void channel_blocks_run(const step_t *step, const void *from, void *to);

/* ------------------------------------------------------------ chunks.c */

/* Reorders of tensors this large or larger run in chunks by default
 * (oneDNN 2.6's jit reorders stop at 2^31 bytes); a policy with a lower
 * chunk_bytes chunks jit reorders too (tests). */
#define DGRAD_PLAN_CHUNK_BYTES ((int64_t)1 << 30)
int plan_chunks(md_ref_t from, md_ref_t to, int64_t max_bytes,
        chunking_t *ch);
void chunking_free(chunking_t *ch);

/* -------------------------------------------------------- candidates.c */

int bias_needs_f32(const dgrad_problem_t *p);
int cand_on_user_layouts(const cand_pd_t *c);
int all_candidates(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, cand_pd_t *pds,
        dnnl_status_t *first_error);
void destroy_pds(cand_pd_t *pds, int n);
dgrad_plan_t *build_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c,
        dnnl_status_t *err, const char **what);
dgrad_plan_t *rebuild_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *like,
        dnnl_status_t *err, const char **what);
int layout_search_verbose(void);
dgrad_plan_t *build_single_thread(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c);
#define DIRECT_EITHER (-1)
dgrad_plan_t *build_direct(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int avx2);

/* ------------------------------------------------------------ timing.c */

/* The monotonic clock every timing of the layer reads, in ms. */
double now_ms(void);

/* Plans timed faster than this are also tried on one thread. */
#define SINGLE_THREAD_MAX_MS 0.1
double problem_macs(const dgrad_problem_t *p);
double problem_bytes(const dgrad_problem_t *p);
/* malloc_trim where the C library has it (timing.c). */
void return_freed_memory(void);
int reduce_problem(const dgrad_problem_t *p,
        const dgrad_plan_policy_t *policy, dgrad_problem_t *r);
dgrad_plan_t *checked_tail_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c,
        dnnl_status_t *err, const char **what);
dgrad_plan_t *search(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        cand_pd_t *pds, int n, int *winner, double *winner_ms,
        dnnl_status_t *err, const char **what);
dgrad_plan_t *keep_faster_threading(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        const cand_pd_t *c, dgrad_plan_t *plan, double *ms);

/* --------------------------------------------------------- challenge.c */

int own_kernels_on_rows_copy(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        int staged, int chosen);
/* dgrad's own loop built for @p copy, a reduced copy of @p problem (or
 * NULL), copying its input rows exactly where the loop of @p problem
 * does (the rule's choice on @p copy otherwise), for timing; NULL where
 * that loop does not apply to @p problem. */
dgrad_plan_t *build_direct_as_problem(const dgrad_problem_t *copy,
        const dgrad_problem_t *problem, const dgrad_plan_policy_t *policy,
        int staged, int avx2);
dgrad_plan_t *challenge_with(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t *best, dgrad_plan_t *own, double *best_ms);
dgrad_plan_t *challenge_with_direct(const dgrad_problem_t *problem,
        const dgrad_problem_t *full, const dgrad_plan_policy_t *policy,
        int weights_constant, dgrad_plan_t *best, double *best_ms);

/* ------------------------------------------------------------ choice.c */

dgrad_status_t plan_create(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t **out);

/* ------------------------------------------------------------- cache.c */

void cache_clear_at_exit(void);

/* ----------------------------------------------------------- convert.c */

void convert(const convert_t *cv, dgrad_data_type_t dt, int to_f32,
        const void *src, void *dst);
/* @p n contiguous f32 values into type @p dt, rounded as dtype.h does. */
void convert_run_from_f32(dgrad_data_type_t dt, const float *src,
        void *dst, int64_t n);
/* @p n contiguous values of type @p dt into f32 (exact). */
void convert_run_to_f32(dgrad_data_type_t dt, const void *src, float *dst,
        int64_t n);

/* ----------------------------------------------------------- execute.c */

int threads_enter(int single);
void threads_leave(int old);
/* dgrad's own passes over a tensor (conversions, the own post pass) use
 * the OpenMP threads from this many elements on; under it they run on
 * the calling thread outside any region (a one-thread region still costs
 * libgomp a team allocation and a wake-up: direct_share.c). */
#define PLAN_PARALLEL_MIN_ELEMS ((int64_t)1 << 15)
void ctx_destroy(exec_ctx_t *c);
/* Destroys the plan's idle execution contexts (its next execution makes
 * one): for a plan nobody else holds yet, whose contexts lack what was
 * added since (post_pass.c), or that waits while others are timed
 * (timing.c). */
void plan_drop_contexts(dgrad_plan_t *plan);
/* The most execution contexts that existed at once (in all plans) since
 * the last call with @p reset; planning's memory rests on its timing
 * holding at most two (tests/test_planning_memory.c). */
long exec_contexts_peak(int reset);
/* A context's memory object re-bound to @p ptr when the pointer changed
 * (@p mem receives it). */
dnnl_status_t bind(bound_t *b, const void *ptr, dnnl_memory_t *mem);
dnnl_status_t plan_run(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out);
/* plan_run, then the border and the post-ops: the whole output. */
dnnl_status_t plan_run_whole(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        const void *const *operands, void *out);

/* dgrad's own loops, which take the plan above */
#include "own_loops.h"

#endif
