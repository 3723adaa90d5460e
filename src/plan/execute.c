/*
 * Execution. It allocates nothing in the steady state: each plan keeps a
 * pool of execution contexts (stream, workspace with scratchpad and
 * intermediate buffers, every oneDNN memory object its steps use, all made
 * with the context); an execute takes one from the pool (lock-free for the
 * common single-threaded case), or creates one when every context is in
 * use by another thread, and gives it back. Nothing that can fail for lack
 * of resources happens after the first write to the caller's output, and
 * only the last step writes it (see writes_user_output). Output elements
 * outside the primitive's sub-box get the bias or zero (fill_border).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dtype.h"
#include "error.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* oneDNN sizes its parallel work by the OpenMP runtime's thread count at
 * primitive creation and runs it at execution. For problems of a few
 * microseconds, forking and joining threads costs more than the work:
 * such plans are created and run with the calling thread's count set to
 * 1 (its own setting, restored afterwards; other threads are unaffected).
 * Returns the count to restore, 0 when nothing was changed. */
int threads_enter(int single) {
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

void threads_leave(int old) {
#ifdef _OPENMP
    if (old > 0) omp_set_num_threads(old);
#endif
    (void)old;
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

/* The convolution step is a forward primitive that adds the bias itself
 * (SRC, WEIGHTS, DST, BIAS): the folded convolution or the projection's
 * matmul; else a backward-data convolution, the bias added after it. */
static int step_adds_bias(const dgrad_plan_t *plan) {
    return plan->fold.mode || plan->projection;
}

static const tensor_path_t *path_of(const dgrad_plan_t *plan, int t) {
    return t == T_IN ? &plan->in : t == T_WEI ? &plan->wei : &plan->out;
}

/* Whether the primitive writes the user's output itself: no reorder or
 * type conversion after it, and no bias add (which then writes the
 * output, from the primitive's result: the caller's buffer is written by
 * one step only, the last, so a failure before it leaves it untouched). */
static int writes_user_output(const dgrad_plan_t *plan) {
    if (plan->direct || plan->projection) return !plan->staged;
    if (plan->fold.mode) return plan->fold.writes_output;
    return !step_exists(&plan->out.reorder) && !plan->staged
            && !plan->p.has_bias;
}

/* The primitive needs a buffer of its own for a tensor when a reorder, a
 * type conversion, (output) the bias add or the phase reorders, or
 * (folded weights) the folding stands between it and the user. */
static int needs_conv_buf(const dgrad_plan_t *plan, int t) {
    if (t == T_OUT) return !writes_user_output(plan);
    if (t == T_WEI && (plan->fold.mode || plan->direct)) return 1;
    return step_exists(&path_of(plan, t)->reorder) || plan->staged;
}

/* A staging buffer is needed when two stand there: a conversion (or the
 * folding) and a reorder; for a folded output, the phase reorders and a
 * conversion. */
static int needs_stage_buf(const dgrad_plan_t *plan, int t) {
    if (plan->fold.mode && t == T_OUT) return plan->staged;
    if (plan->fold.mode && t == T_WEI) return step_exists(&plan->wei.reorder);
    return step_exists(&path_of(plan, t)->reorder) && plan->staged;
}

static size_t align_up(size_t n) {
    return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

/* Execution contexts in existence, and the most there were at once
 * since the last exec_contexts_peak(1). */
static atomic_long contexts_live, contexts_peak;

long exec_contexts_peak(int reset) {
    long peak = atomic_load(&contexts_peak);
    if (reset) atomic_store(&contexts_peak, atomic_load(&contexts_live));
    return peak;
}

static void contexts_count(long delta) {
    long n = atomic_fetch_add(&contexts_live, delta) + delta;
    long peak = atomic_load(&contexts_peak);
    while (n > peak && !atomic_compare_exchange_weak(&contexts_peak, &peak, n))
        ;
}

void ctx_destroy(exec_ctx_t *c) {
    if (!c) return;
    contexts_count(-1);
    for (int i = 0; i < N_STEPS; i++)
        for (int j = 0; j < N_SLOTS; j++) dnnl_memory_destroy(c->mem[i][j].mem);
    for (int k = 0; k < POST_SLOTS; k++) dnnl_memory_destroy(c->post_mem[k].mem);
    for (int i = 0; c->copy_mem && i < c->plan->fold.n_copies; i++)
        for (int j = 0; j < 3; j++) dnnl_memory_destroy(c->copy_mem[i][j].mem);
    free(c->copy_mem);
    free(c->aside);
    dnnl_stream_destroy(c->stream);
    free(c->ws);
    free(c);
}

void plan_drop_contexts(dgrad_plan_t *plan) {
    ctx_destroy(atomic_exchange(&plan->spare, NULL));
    while (plan->pool) {
        exec_ctx_t *next = plan->pool->next;
        ctx_destroy(plan->pool);
        plan->pool = next;
    }
}

/* Variable weights are prepared (reordered, converted, folded or packed)
 * at every execution; where they are the same bytes as at the context's
 * last execution, the prepared copy it kept is used instead, as constant
 * weights are: a graph compiler that does not mark weights constant
 * passes the same ones on every call. The check is a memcmp of the
 * user's bytes against a copy kept with the context. Weights up to 256
 * KiB are kept: `dilated:4d/5x5` (64 -> 32 channels, 5x5: 102 KB in
 * bf16, 205 KB in f32) took 24-32 us in bf16 NCX, 16-25 in bf16 NXC and
 * 27-29 in f32 NXC with them kept, 37-43, 33-35 and 48-51 reordering
 * them at each execution (three alternating rounds, `dgrad bench
 * --raw-layout preferred --reps 31`, AMD EPYC Zen 5; bench/README.md,
 * thirty-sixth look). A copy costs a memcpy, so after a run of
 * executions whose weights changed only those whose count in the run is
 * a power of two copy theirs (weights_worth_keeping): weights that
 * change at every execution are copied a logarithmic number of times,
 * and weights that settle are taken prepared after at most as many
 * executions again as changed before them. */
#define WEIGHTS_SEEN_MAX_BYTES ((size_t)256 << 10)

/* Whether an execution whose weights differed from the copy (the
 * context's @p misses -th in a row) keeps a copy of its own. */
static int weights_worth_keeping(long misses) {
    return misses > 0 && (misses & (misses - 1)) == 0;
}

/* Bytes of the user's weights, first to last element, where a context
 * keeps a copy of them; 0 where it keeps none. */
static size_t weights_seen_bytes(const dgrad_plan_t *plan) {
    if (!plan->prepared_weights_bytes) return 0; /* used as they are */
    size_t bytes = (size_t)(weights_last_offset(&plan->p) + 1) * plan->elsize;
    return bytes <= WEIGHTS_SEEN_MAX_BYTES ? bytes : 0;
}

/* Sizes of the parts of an execution context's workspace (scratchpad,
 * then staging and primitive buffers of in, wei, out, then the f32 bias,
 * then the copy of the weights last seen); returns their aligned total. */
static size_t workspace_parts(const dgrad_plan_t *plan, size_t sizes[9]) {
    size_t total = 0;
    sizes[0] = plan->scratch_size;
    for (int t = 0; t < 3; t++) {
        const tensor_path_t *tp = path_of(plan, t);
        sizes[1 + 2 * t] = needs_stage_buf(plan, t)
                ? md_size(md_ref(&tp->io_md)) : 0;
        sizes[2 + 2 * t] = needs_conv_buf(plan, t)
                ? md_size(md_ref(&tp->conv_md)) : 0;
    }
    sizes[7] = plan->p.has_bias ? md_size(md_ref(&plan->bias_md)) : 0;
    sizes[8] = weights_seen_bytes(plan);
    for (int i = 0; i < 9; i++) total += align_up(sizes[i]);
    return total;
}

size_t dgrad_plan_workspace_size(const dgrad_plan_t *plan) {
    size_t sizes[9];
    return plan && !plan->empty ? workspace_parts(plan, sizes) : 0;
}

/* The memory descriptors of the operands of step @p id (up to four,
 * then the scratchpad; NULL where there is none, all NULL for a step the
 * plan does not have): each gets its memory object when the context is
 * made. */
static void step_mds(const dgrad_plan_t *plan, int id, md_ref_t md[N_SLOTS]) {
    const step_t *step = NULL;
    if (id == S_IN || id == S_WEI || id == S_OUT) {
        const tensor_path_t *tp = id == S_IN ? &plan->in
                : id == S_WEI ? &plan->wei : &plan->out;
        step = &tp->reorder;
        if (!step->prim) return;
        int back = id == S_OUT;
        md[0] = md_ref(step->n_chunks > 1 ? &step->chunks.from_md
                : back ? &tp->conv_md : &tp->io_md);
        md[1] = md_ref(step->n_chunks > 1 ? &step->chunks.to_md
                : back ? &tp->io_md : &tp->conv_md);
    } else if (id == S_CONV) {
        step = &plan->conv;
        if (!step->prim) return; /* dgrad's own loop */
        md[0] = md_ref(&plan->in.conv_md);
        md[1] = md_ref(&plan->wei.conv_md);
        md[2] = md_ref(&plan->out.conv_md);
        if (step_adds_bias(plan) && plan->p.has_bias)
            md[3] = md_ref(&plan->bias_md);
    } else {
        step = &plan->bias_add;
        if (!step->prim) return;
        md[0] = md[2] = md_ref(plan->bias_tile ? &plan->bias_view_md
                                               : &plan->out.conv_md);
        md[1] = md_ref(&plan->bias_md);
    }
    md[SLOT_SCRATCH] = step->scratch_bytes ? md_ref(&step->scratch_md) : NULL;
}

/* Every memory object the context's steps use, made now (bound to no
 * buffer), so that an execution acquires nothing once it has a context. */
static dnnl_status_t memory_make(bound_t *b, md_ref_t md) {
    b->ptr = NULL;
    return ACQUIRE(dnnl_memory_create(&b->mem, md, engine, DNNL_MEMORY_NONE));
}

static dnnl_status_t ctx_create_memories(exec_ctx_t *c) {
    const fold_t *f = &c->plan->fold;
    dnnl_status_t s = dnnl_success;
    for (int id = 0; id < N_STEPS && s == dnnl_success; id++) {
        md_ref_t md[N_SLOTS] = {NULL};
        step_mds(c->plan, id, md);
        for (int slot = 0; slot < N_SLOTS && s == dnnl_success; slot++)
            if (md[slot]) s = memory_make(&c->mem[id][slot], md[slot]);
    }
    if (s == dnnl_success) s = post_pass_memories(c);
    if (s != dnnl_success || f->n_copies == 0) return s;
    c->copy_mem = allocated(dgrad_calloc((size_t)f->n_copies,
            sizeof *c->copy_mem));
    if (!c->copy_mem) return dnnl_out_of_memory;
    for (int i = 0; i < f->n_copies && s == dnnl_success; i++) {
        const phase_copy_t *pc = &f->copies[i];
        s = memory_make(&c->copy_mem[i][0], md_ref(&pc->from_md));
        if (s == dnnl_success)
            s = memory_make(&c->copy_mem[i][1], md_ref(&pc->to_md));
        if (s == dnnl_success && pc->step.scratch_bytes)
            s = memory_make(&c->copy_mem[i][2], md_ref(&pc->step.scratch_md));
    }
    return s;
}

/* A new context: the stream, the memory objects, and one workspace carved
 * into the scratchpad, the staging and primitive buffers of the three
 * tensors and the f32 bias. */
static dnnl_status_t ctx_create(const dgrad_plan_t *plan, exec_ctx_t **out) {
    exec_ctx_t *c = allocated(dgrad_calloc(1, sizeof *c));
    if (!c) return dnnl_out_of_memory;
    contexts_count(1);
    c->plan = plan;
    size_t sizes[9];
    char **slots[9] = {&c->scratch, &c->stage[0], &c->conv[0], &c->stage[1],
            &c->conv[1], &c->stage[2], &c->conv[2], (char **)&c->bias_f32,
            &c->wei_seen};
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
    for (size_t i = 0, off = 0; i < 9; off += align_up(sizes[i]), i++)
        *slots[i] = sizes[i] ? c->ws + off : NULL;
    c->wei_seen_bytes = sizes[8];
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

/* A memory object of the context (made with it), re-bound to @p ptr
 * when the pointer changed. */
dnnl_status_t bind(bound_t *b, const void *ptr, dnnl_memory_t *mem) {
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

/* Executes @p step on up to four (arg, pointer) operands plus its
 * scratchpad, with the memory objects @p mem (operands in order, the
 * scratchpad's at @p scratch_slot), then waits: the next step may reuse
 * the scratchpad. */
static dnnl_status_t run_on(exec_ctx_t *c, bound_t *mem, int scratch_slot,
        const step_t *step, int nargs, const int *arg,
        const void *const *ptr, int fallible) {
    dnnl_exec_arg_t args[N_SLOTS + DGRAD_MAX_POST_OPS];
    dnnl_status_t s = dnnl_success;
    int n = 0;
    if (step->own) {
        s = fallible ? DGRAD_FALLIBLE(dnnl_success) : dnnl_success;
        if (s == dnnl_success) own_reorder_run(step, ptr[0], (void *)ptr[1]);
        else planning_fail(s);
        return s;
    }
    for (; n < nargs && s == dnnl_success; n++) {
        args[n].arg = arg[n];
        s = bind(&mem[n], ptr[n], &args[n].memory);
    }
    if (s == dnnl_success && step->scratch_bytes) {
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        s = bind(&mem[scratch_slot], c->scratch, &args[n].memory);
        n++;
    }
    /* A step carrying the post-op chain (post_pass.c) reads the binary
     * post-ops' operands too. */
    const post_pass_t *pp = &c->plan->post;
    if (pp->fused && step == pp->fused_into)
        for (int i = 0, k = 0; s == dnnl_success && i < c->plan->p.n_post_ops;
                i++) {
            if (!dgrad_post_alg_is_binary(c->plan->p.post_ops[i].alg)) continue;
            if (c->accumulating && i == pp->in_place_at) {
                k++; /* the twin's sum reads the output itself */
                continue;
            }
            args[n].arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(pp->operand_index[i])
                    | DNNL_ARG_SRC_1;
            s = bind(&c->post_mem[4 + i], c->operands[k++], &args[n].memory);
            n++;
        }
    dnnl_primitive_t prim = c->accumulating && step->sum_prim ? step->sum_prim
                                                              : step->prim;
    if (s == dnnl_success)
        s = fallible ? DGRAD_FALLIBLE(dnnl_primitive_execute(prim, c->stream,
                               n, args))
                     : dnnl_primitive_execute(prim, c->stream, n, args);
    if (s == dnnl_success) s = dnnl_stream_wait(c->stream);
    if (s != dnnl_success) planning_fail(s);
    return s;
}

/* Executes step @p id of the plan's fixed steps. */
static dnnl_status_t run_step(exec_ctx_t *c, int id, const step_t *step,
        int nargs, const int *arg, const void *const *ptr) {
    return run_on(c, c->mem[id], SLOT_SCRATCH, step, nargs, arg, ptr, 1);
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
    if (plan->direct && t == T_WEI) {
        direct_pack_weights(plan, user, (float *)conv);
        *conv_ptr = conv;
        return dnnl_success;
    }
    if (plan->fold.weights_fused && t == T_WEI) {
        small_copy_run(&tp->reorder, user, conv);
        *conv_ptr = conv;
        return dnnl_success;
    }
    if (plan->fold.mode && t == T_WEI) {
        void *folded = step_exists(&tp->reorder) ? c->stage[t] : conv;
        fold_weights(plan, user, folded);
        io = folded;
    } else if (plan->staged) {
        void *stage = step_exists(&tp->reorder) ? c->stage[t] : conv;
        /* dgrad's loop may widen the input in its own region */
        if (!(t == T_IN && plan->direct_widens_in))
            convert(&tp->cv, plan->p.dt, 1, user, stage);
        io = stage;
    }
    *conv_ptr = io;
    if (!step_exists(&tp->reorder)) return dnnl_success;
    *conv_ptr = conv;
    return run_reorder(c, t == T_IN ? S_IN : S_WEI, &tp->reorder, io, conv);
}

/* The phase reorders of a folded plan, from the forward output @p conv
 * into @p io (the output, or its staging copy). They are the plan's final
 * step, taken as one: the fault-injection build fails it before the first
 * reorder; oneDNN failing inside them leaves the output partly written,
 * as it may inside any final step (dgrad.h). */
static dnnl_status_t run_phase_copies(exec_ctx_t *c, const void *conv,
        void *io) {
    const dgrad_plan_t *plan = c->plan;
    const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    /* Both sides are in the compute type: f32 when staged, else the
     * user's. */
    size_t from_es = plan->staged ? sizeof(float) : plan->elsize,
           to_es = from_es;
    dnnl_status_t s = DGRAD_FALLIBLE(dnnl_success);
    if (s != dnnl_success) planning_fail(s);
    for (int i = 0; i < plan->fold.n_copies && s == dnnl_success; i++) {
        const phase_copy_t *pc = &plan->fold.copies[i];
        const void *ptr[2] = {(const char *)conv + pc->from_off * (int64_t)from_es,
                (char *)io + pc->to_off * (int64_t)to_es};
        s = run_on(c, c->copy_mem[i], 2, &pc->step, 2, arg, ptr, 0);
    }
    return s;
}

/* Takes the result from the primitive's layout to the user's sub-box:
 * conv -(reorder, or the phase reorders)-> io -(convert)-> user. */
static dnnl_status_t bring_out(exec_ctx_t *c, const void *conv,
        void *user_box) {
    const dgrad_plan_t *plan = c->plan;
    const tensor_path_t *tp = &plan->out;
    void *io = !plan->staged ? user_box
            : step_exists(&tp->reorder) || plan->fold.mode ? (void *)c->stage[T_OUT]
                                                  : (void *)c->conv[T_OUT];
    dnnl_status_t s = dnnl_success;
    if (plan->fold.mode && !plan->fold.writes_output)
        s = run_phase_copies(c, conv, io);
    else if (step_exists(&tp->reorder))
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

/* The folded forward convolution, its bias (if any) the output channel's
 * for each phase; or the projection's matmul, its bias the output
 * channel's for each column. */
static dnnl_status_t run_fold_conv(exec_ctx_t *c, const void *in,
        const void *wei, const void *bias, void *out) {
    const int arg[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
            DNNL_ARG_BIAS};
    const void *ptr[4] = {in, wei, out, c->bias_f32};
    if (bias && c->plan->projection)
        projection_bias(c->plan, bias, c->bias_f32);
    else if (bias)
        fold_bias(c->plan, bias, c->bias_f32);
    return run_step(c, S_CONV, &c->plan->conv, bias ? 4 : 3, arg, ptr);
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
    /* The row-tiled add (make_tiled_bias_add): the bias once per
     * position of the last spatial axis. */
    for (int64_t t = 1; t < plan->bias_tile; t++)
        memcpy(c->bias_f32 + t * plan->p.Cout, c->bias_f32,
                (size_t)plan->p.Cout * sizeof(float));
    return run_step(c, S_BIAS, &plan->bias_add, 3, arg, ptr);
}

/* dgrad's own loop on the (staged) input, the weights (packed, or the
 * user's where @p prepared is 0: the loop packs them) and f32 bias, into
 * the output or its staging copy (which the loop rounds into @p user_out
 * where direct_rounds_output, as it widens @p user_in into the staged
 * input @p in where direct_widens_input). */
static void run_direct(exec_ctx_t *c, const void *user_in, const void *in,
        const void *wei, int prepared, const void *bias, void *out,
        void *user_out) {
    const dgrad_plan_t *plan = c->plan;
    if (bias)
        for (int64_t ch = 0; ch < plan->p.Cout; ch++)
            c->bias_f32[ch] = (float)dgrad_load(bias, plan->p.dt,
                    ch * plan->p.bias_stride);
    direct_run(plan, in, wei, prepared ? NULL : (float *)c->conv[T_WEI],
            bias ? c->bias_f32 : NULL, plan->post.fused ? c->operands : NULL,
            out, plan->direct_rounds_out ? user_out : NULL,
            plan->direct_widens_in ? user_in : NULL, c->scratch);
}

/* Where @p weights are the bytes the context last prepared, those
 * prepared weights (dgrad's blocks loop packs small weights into each
 * thread's own scratch: the first repeat packs them into conv[T_WEI]
 * once); else NULL, and the copy is forgotten until weights_seen. */
static const void *weights_unchanged(exec_ctx_t *c, const void *weights) {
    if (!c->wei_seen_valid) return NULL;
    if (memcmp(c->wei_seen, weights, c->wei_seen_bytes)) {
        c->wei_seen_valid = 0;
        return NULL;
    }
    if (!c->wei_seen_at) {
        direct_pack_weights(c->plan, weights, (float *)c->conv[T_WEI]);
        c->wei_seen_at = c->conv[T_WEI];
    }
    c->wei_reused++;
    return c->wei_seen_at;
}

/* Keeps a copy of the weights an execution has just prepared into
 * @p prepared (NULL: not kept anywhere, dgrad's loop packed them into
 * its threads' scratch). */
static void weights_seen(exec_ctx_t *c, const void *weights,
        const void *prepared) {
    memcpy(c->wei_seen, weights, c->wei_seen_bytes);
    c->wei_seen_at = prepared;
    c->wei_seen_valid = 1;
}

/* One execution; @p reuse_weights: variable weights the same as the
 * last execution's may be taken prepared (not while planning times the
 * candidates: a plan is chosen for weights that vary). */
static dnnl_status_t run_all(exec_ctx_t *c, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        const void *const *operands, void *out, int reuse_weights) {
    c->operands = operands;
    const dgrad_plan_t *plan = c->plan;
    int remember = 0;
    if (!weights_prepared && !reuse_weights)
        c->wei_seen_valid = 0; /* conv[T_WEI] gets others */
    if (!weights_prepared && reuse_weights && c->wei_seen) {
        const void *prepared = weights_unchanged(c, weights);
        if (prepared) {
            weights = prepared;
            weights_prepared = 1;
            c->wei_misses = 0;
        } else {
            remember = weights_worth_keeping(++c->wei_misses);
        }
    }
    char *out_box = (char *)out + plan->out_offset * (int64_t)plan->elsize;
    void *conv_out = needs_conv_buf(plan, T_OUT) ? c->conv[T_OUT] : out_box;
    const void *conv_in = NULL, *conv_wei = weights;
    dnnl_status_t s = bring_in(c, T_IN, in, NULL, &conv_in);
    if (s == dnnl_success && plan->direct) {
        run_direct(c, in, conv_in, weights, weights_prepared, bias,
                conv_out, out_box);
        if (remember)
            weights_seen(c, weights,
                    direct_packs_into(plan) ? c->conv[T_WEI] : NULL);
        return plan->direct_rounds_out ? dnnl_success
                                          : bring_out(c, conv_out, out_box);
    }
    if (s == dnnl_success && !weights_prepared)
        s = bring_in(c, T_WEI, weights, NULL, &conv_wei);
    if (s == dnnl_success && remember && conv_wei != weights)
        weights_seen(c, weights, conv_wei);
    if (s == dnnl_success && step_adds_bias(plan))
        s = run_fold_conv(c, conv_in, conv_wei, bias, conv_out);
    else if (s == dnnl_success)
        s = run_conv(c, conv_in, conv_wei, conv_out);
    if (s == dnnl_success && bias && !step_adds_bias(plan)) {
        /* Into the user's box when no reorder or conversion follows. */
        void *biased = step_exists(&plan->out.reorder) || plan->staged ? conv_out
                                                              : out_box;
        s = run_bias(c, bias, conv_out, biased);
        conv_out = biased;
    }
    if (s == dnnl_success) s = bring_out(c, conv_out, out_box);
    return s;
}

/* ------------------------------------------------------------ in place */

/* Index among the operands of the in-place Add's (canonical.h,
 * dgrad_problem_in_place_post_op) when this execution passes the output
 * buffer as that operand, else -1. The API layer has refused every other
 * overlap of an input with the output. */
static int in_place_operand(const dgrad_plan_t *plan,
        const void *const *operands, const void *out) {
    int i = dgrad_problem_in_place_post_op(&plan->p);
    if (i < 0 || !operands) return -1;
    int k = dgrad_problem_operands_before(&plan->p, i);
    return operands[k] == out ? k : -1;
}

/* Bytes from the output's first element to past its last. */
static size_t output_span_bytes(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int64_t last = 0;
    for (int d = 0; d < 2 + p->nsp; d++) {
        int64_t dim = d == 0 ? p->N : d == 1 ? p->Cout : p->Y[d - 2];
        if (dim == 0) return 0;
        last += (dim - 1) * p->out_strides[d];
    }
    return (size_t)(last + 1) * plan->elsize;
}

/* memcpy in pieces over the threads (one thread reaches about a fifth of
 * the machine's bandwidth). */
static void copy_in_pieces(char *to, const char *from, size_t bytes) {
    const size_t piece = (size_t)1 << 20;
    int64_t n = (int64_t)((bytes + piece - 1) / piece);
    if (n <= 1) {
        memcpy(to, from, bytes);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        size_t off = (size_t)i * piece;
        memcpy(to + off, from + off, bytes - off < piece ? bytes - off : piece);
    }
}

/* The context's buffer for the in-place operand, made at its first
 * in-place execution (so a failure comes before any write). */
static dnnl_status_t aside_buffer(exec_ctx_t *c, size_t bytes) {
    if (c->aside_bytes >= bytes) return dnnl_success;
    char *buf = dgrad_aligned_alloc(ALIGNMENT, bytes);
    if (!buf) return dnnl_out_of_memory;
    free(c->aside);
    c->aside = buf;
    c->aside_bytes = bytes;
    return dnnl_success;
}

/* Readies an execution whose output may be the in-place Add's operand:
 * the steps' summing twins add onto it (c->accumulating), or the operand
 * is copied into the context's buffer and *@p operands becomes @p moved,
 * which reads it there. Fails (out of memory) before any write. */
static dnnl_status_t in_place_begin(exec_ctx_t *c, const void *out,
        const void *const **operands, const void **moved) {
    const dgrad_plan_t *plan = c->plan;
    int k = in_place_operand(plan, *operands, out);
    c->accumulating = k >= 0 && plan->post.accumulates;
    if (k < 0 || c->accumulating) return dnnl_success;
    size_t bytes = output_span_bytes(plan);
    dnnl_status_t s = aside_buffer(c, bytes);
    if (s != dnnl_success) return s;
    copy_in_pieces(c->aside, out, bytes);
    int n = dgrad_problem_operands_before(&plan->p, plan->p.n_post_ops);
    for (int j = 0; j < n; j++) moved[j] = (*operands)[j];
    moved[k] = c->aside;
    *operands = moved;
    return dnnl_success;
}

/* One execution of a non-empty plan on a pooled context; @p whole: the
 * border and the post-ops too (timing leaves them out: they cost every
 * candidate the same). An output that is also the in-place Add's operand
 * is added onto by the summing twins of the steps that write it
 * (in_place.c), or, in plans whose steps write the output before the
 * chain reads the operand, has that operand set aside first. */
static dnnl_status_t run_pooled(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        const void *const *operands, void *out, int whole) {
    exec_ctx_t *c = NULL;
    dnnl_status_t s = ctx_acquire(plan, &c);
    if (s != dnnl_success) return s;
    int threads = threads_enter(plan->single_thread);
    const void *moved[DGRAD_MAX_POST_OPS];
    if (whole) s = in_place_begin(c, out, &operands, moved);
    if (s == dnnl_success)
        s = run_all(c, in, weights, weights_prepared, bias, operands, out,
                whole);
    if (s == dnnl_success && whole && !plan->full_box)
        fill_border(plan, bias, out);
    if (s == dnnl_success && whole) s = post_pass_run(c, operands, out);
    c->accumulating = 0;
    threads_leave(threads);
    ctx_release(c);
    return s;
}

dnnl_status_t plan_run(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out) {
    return run_pooled(plan, in, weights, weights_prepared, bias, NULL, out,
            0);
}

dnnl_status_t plan_run_whole(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        const void *const *operands, void *out) {
    return run_pooled(plan, in, weights, weights_prepared, bias, operands,
            out, 1);
}

const char *dgrad_plan_choice(const dgrad_plan_t *plan) {
    return plan && plan->choice ? plan->choice : "none";
}

const char *dgrad_plan_weights_step(const dgrad_plan_t *plan) {
    return plan && step_exists(&plan->wei.reorder) ? plan->wei.reorder.impl
                                                   : "none";
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

dgrad_status_t dgrad_plan_execute_fused(const dgrad_plan_t *plan,
        const void *in, const void *weights, int weights_prepared,
        const void *bias, const void *const *operands, void *out) {
    int binary = plan ? dgrad_problem_operands_before(&plan->p,
                                plan->p.n_post_ops)
                      : 0;
    for (int k = 0; k < binary; k++)
        if (!operands || !operands[k]) binary = -1;
    if (!plan || !in || !weights || !out || (plan->p.has_bias && !bias)
            || binary < 0)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_execute: NULL buffer");
    if (!plan->p.has_bias) bias = NULL;
    if (dgrad_plan_prepared_weights_size(plan) == 0) weights_prepared = 0;
    if (!plan->empty) {
        dnnl_status_t s = plan_run_whole(plan, in, weights, weights_prepared,
                bias, operands, out);
        return s == dnnl_success ? dgrad_success
                                 : dnnl_fail(&plan->p, s, "execution");
    }
    /* Nothing but the border: with a chain, one loop from the bias writes
     * each element once (an in-place operand is read before). */
    if (plan->post.active) post_pass_own_run_on_border(plan, operands, bias, out);
    else fill_border(plan, bias, out);
    return dgrad_success;
}

dgrad_status_t dgrad_plan_execute(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out) {
    return dgrad_plan_execute_fused(plan, in, weights, weights_prepared,
            bias, NULL, out);
}
