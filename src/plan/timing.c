/*
 * Timing candidates on scratch buffers: the probe buffers, one candidate's
 * time, alternating runs for close calls, the search over all candidates,
 * the reduced copy of a problem too large to time as it is, the check that
 * a plan computing the output tail writes zeros there, and the choice
 * between all threads and one. What the search's winner then meets
 * (dgrad's own loops, the projection) is challenge.c's; the probe's
 * pieces both use are declared in probe.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"
#include "probe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "dtype.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void probe_free(probe_bufs_t *b) {
    free(b->in);
    free(b->wei);
    free(b->bias);
    free(b->out);
    for (int i = 0; i < DGRAD_MAX_POST_OPS; i++) free(b->operands[i]);
}

static void *probe_alloc(int64_t n, size_t elsize) {
    size_t bytes = (size_t)(n > 0 ? n : 1) * elsize;
    bytes = (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    void *p = allocated(dgrad_aligned_alloc(ALIGNMENT, bytes));
    if (p) memset(p, 0, bytes);
    return p;
}

/* Multiply-adds of the whole kernel window over the input (an upper
 * bound of the terms) and bytes of the three tensors. */
double problem_macs(const dgrad_problem_t *p) {
    double m = (double)p->N * (double)p->Cin * (double)(p->Cout / p->G);
    for (int i = 0; i < p->nsp; i++) m *= (double)p->X[i] * (double)p->K[i];
    return m;
}

double problem_bytes(const dgrad_problem_t *p) {
    double in = (double)p->N * (double)p->Cin, out = (double)p->N * (double)p->Cout,
           wei = (double)p->Cin * (double)(p->Cout / p->G);
    for (int i = 0; i < p->nsp; i++) {
        in *= (double)p->X[i];
        out *= (double)p->Y[i];
        wei *= (double)p->K[i];
    }
    return (in + out + wei) * (double)dgrad_data_type_size(p->dt);
}

int probe_init(probe_bufs_t *b, const dgrad_problem_t *p,
        const dgrad_plan_policy_t *policy) {
    int64_t in[5], out[5], wei[6];
    canonical_dims(p, in, wei, out);
    size_t es = dgrad_data_type_size(p->dt);
    memset(b, 0, sizeof *b);
    int64_t n_in = span_of(2 + p->nsp, in, p->in_strides),
            n_wei = span_of(3 + p->nsp, wei, p->wei_strides),
            n_out = span_of(2 + p->nsp, out, p->out_strides);
    if ((double)(n_in + n_wei + n_out) * (double)es > 2 * policy->max_bytes)
        return -1; /* strides with large gaps */
    b->in = probe_alloc(n_in, es);
    b->wei = probe_alloc(n_wei, es);
    b->out = probe_alloc(n_out, es);
    b->out_bytes = (size_t)(n_out > 0 ? n_out : 1) * es;
    if (p->has_bias) b->bias = probe_alloc(p->Cout * p->bias_stride + 1, es);
    int ok = 1;
    for (int i = 0, k = 0; i < p->n_post_ops; i++) {
        const dgrad_post_op_t *po = &p->post_ops[i];
        if (!dgrad_post_alg_is_binary(po->alg)) continue;
        b->operands[k] = probe_alloc(span_of(2 + p->nsp, po->dims,
                po->strides), dgrad_data_type_size(po->dt));
        ok &= b->operands[k++] != NULL;
    }
    if (ok && b->in && b->wei && b->out && (b->bias || !p->has_bias))
        return 0;
    probe_free(b);
    return -1;
}

/* A smaller problem with the same channels, kernel, strides, dilations,
 * pads (begin and end, so output padding stays) and axis orders: batch 1,
 * the largest spatial size halved (but the last where @p keep_rows: the
 * same rows) until it is within @p bytes and @p macs. Returns -1 when it
 * cannot get there (huge channel counts). */
int reduce_within(const dgrad_problem_t *p, double bytes,
        double macs, int keep_rows, dgrad_problem_t *r) {
    int64_t pe[DGRAD_MAX_SPATIAL], in_old[5], wei_old[6], out_old[5];
    int frozen[DGRAD_MAX_SPATIAL] = {0};
    canonical_dims(p, in_old, wei_old, out_old);
    *r = *p;
    r->N = 1;
    for (int i = 0; i < p->nsp; i++)
        pe[i] = dgrad_problem_natural_size(p, i) - p->PB[i] - p->Y[i];
    if (keep_rows) frozen[p->nsp - 1] = 1;
    while (problem_bytes(r) > bytes || problem_macs(r) > macs) {
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
    int64_t in[5], wei[6], out[5];
    canonical_dims(r, in, wei, out);
    /* The chain's operands have the problem's dims: the copy goes
     * without (the chain is timed on the problem only when it is timed
     * itself). */
    r->n_post_ops = 0;
    memset(r->post_ops, 0, sizeof r->post_ops);
    dense_like(2 + r->nsp, in_old, p->in_strides, in, r->in_strides);
    dense_like(2 + r->nsp, out_old, p->out_strides, out, r->out_strides);
    return 0;
}

/* Within the policy's reduced_* sizes, a 16-bit copy's tensors counted
 * as f32: its staged candidates hold f32 copies of them, and timing two
 * of those in a runoff, with oneDNN's scratchpads, is what makes the
 * planning's peak memory. Counted at their own width, the f16 3D
 * specification example's copy was 56^3 and its planning peaked at 309
 * MB over the caller's tensors (16% of their 1.9 GB); at f32's width it
 * is f32's copy (28 x 56^2; `mem MB` of `dgrad bench --dt f16
 * --data-format NCX --weights-format OIX --no-raw
 * g4mb1ic20id224oc8od447kd3sd2pd1`, AMD EPYC Zen 5). */
int reduce_problem(const dgrad_problem_t *p,
        const dgrad_plan_policy_t *policy, dgrad_problem_t *r) {
    double width = (double)dgrad_data_type_size(p->dt) / 4.0;
    return reduce_within(p, policy->reduced_bytes * width,
            policy->reduced_macs, 0, r);
}

int probe_wei_init(probe_wei_t *w, const dgrad_plan_t *plan,
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

/* A candidate's post-ops made before it is timed, so that where the chain
 * rides on a step (the bias add, a folded convolution) and where it takes
 * a pass of its own is part of its time. After any tail check (which
 * runs without the chain). Returns -1 when the pass cannot be made. */
int chain_ready(dgrad_plan_t *plan) {
    return plan->p.n_post_ops && post_pass_init(plan) != dnnl_success ? -1
                                                                      : 0;
}

/* One timed execution: with a chain, the whole output (border and
 * post-ops), as dgrad_plan_execute_fused runs it. */
static dnnl_status_t probe_run(const dgrad_plan_t *plan,
        const probe_bufs_t *b, const void *wei, int prepared) {
    if (plan->p.n_post_ops)
        return plan_run_whole(plan, b->in, wei, prepared, b->bias,
                (const void *const *)b->operands, b->out);
    return plan_run(plan, b->in, wei, prepared, b->bias, b->out);
}

/* Runs of one plan timed in a row (time_plan), and of each of two plans in
 * a runoff (rounds x runs, at most RUNOFF_ROUNDS_MAX x runoff_runs). */
#define TIMED_RUNS_MAX 10
#define RUNOFF_ROUNDS_MAX 5

/* The time a plan typically takes over @p n runs (sorted in place): their
 * lower median. Not the fastest run: some oneDNN kernels finish a run
 * now and then in far less than their usual time, and a minimum picks
 * them for it (`espnet:up_l3` in NXC, jit:avx512_core: fastest of 400
 * executes 0.052 ms, median 0.086, against the folded plan's 0.050 and
 * 0.051; in full-suite runs it was then picked and took 1.6-2.3x raw's
 * time: bench/README.md, "Timing on typical runs"). A burst of outside
 * work over fewer than half the runs moves it no more than a minimum.
 * With two runs it is the faster. */
static double typical_run(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n > 0 ? v[(n - 1) / 2] : INFINITY;
}

/* Time of one execution of @p plan: the typical one of a few runs after
 * a warm-up (which also fills the plan's first execution context). Small
 * problems get more runs (3 to TIMED_RUNS_MAX, within about 0.5 ms),
 * large ones one or two. A candidate far slower than @p best is not timed
 * further, after a second run in case the first paid a one-time cost
 * (oneDNN's gemm generates its kernels at its first call in the
 * process). */
double time_plan(const dgrad_plan_t *plan, const probe_bufs_t *b,
        const probe_wei_t *w, double best) {
    double t0 = now_ms();
    if (probe_run(plan, b, w->ptr, w->prepared) != dnnl_success)
        return INFINITY;
    double t = now_ms() - t0;
    if (t > 3 * best) {
        t0 = now_ms();
        if (probe_run(plan, b, w->ptr, w->prepared) != dnnl_success)
            return INFINITY;
        t = now_ms() - t0;
        if (t > 3 * best) return t;
    }
    int reps = t >= 50 ? 1 : t >= 5 ? 2 : (int)ceil(0.5 / (t > 0.01 ? t : 0.01));
    if (reps > TIMED_RUNS_MAX) reps = TIMED_RUNS_MAX;
    if (reps < 3 && t < 5) reps = 3;
    double runs[TIMED_RUNS_MAX];
    for (int r = 0; r < reps; r++) {
        t0 = now_ms();
        if (probe_run(plan, b, w->ptr, w->prepared) != dnnl_success)
            return INFINITY;
        runs[r] = now_ms() - t0;
    }
    return typical_run(runs, reps);
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

/* Two runs of a plan that computes the output tail on scratch buffers
 * whose output was first filled with two different non-zero patterns:
 * whether both ran, left zeros in the tail and wrote every element (the
 * two outputs are the same). oneDNN 3.7's gemm backward data with a
 * negative right padding leaves elements of the second image unwritten
 * (edge_cases.json#onednn_nxc_xio_groups_output_tail). */
static int tail_checked(const dgrad_plan_t *plan, const probe_bufs_t *b,
        const void *wei, int wei_prepared) {
    /* The check runs the bare op. A plan whose chain is made was checked
     * before it was (search, then chain_ready), and may carry the chain
     * in a step, which cannot run without the chain's operands
     * (keep_faster_threading gets the search's winner). */
    if (plan->post.active) return 1;
    /* Out of memory fails the planning (allocated), not the candidate. */
    char *first = allocated(dgrad_malloc(b->out_bytes ? b->out_bytes : 1));
    if (!first) return 0;
    memset(b->out, 0x5a, b->out_bytes);
    int ok = plan_run(plan, b->in, wei, wei_prepared, b->bias, b->out)
                    == dnnl_success
            && tail_is_zero(plan, b->out);
    if (ok) {
        memcpy(first, b->out, b->out_bytes);
        memset(b->out, 0x33, b->out_bytes);
        ok = plan_run(plan, b->in, wei, wei_prepared, b->bias, b->out)
                        == dnnl_success
                && !memcmp(first, b->out, b->out_bytes);
    }
    free(first);
    return ok;
}

/* Builds a candidate that computes the output tail and keeps it only if
 * one run on scratch buffers leaves zeros there; NULL otherwise. */
dgrad_plan_t *checked_tail_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c,
        dnnl_status_t *err, const char **what) {
    probe_bufs_t bufs;
    if (probe_init(&bufs, problem, policy) != 0) return NULL;
    dgrad_plan_t *plan = build_candidate(problem, policy, staged, c, err,
            what);
    if (plan && !tail_checked(plan, &bufs, bufs.wei, 0)) {
        plan_destroy(plan);
        plan = NULL;
    }
    probe_free(&bufs);
    return plan;
}

static void verbose_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_t *cand, int extend_tail) {
    char desc[512], md[3][64];
    describe_problem(problem, desc, sizeof desc);
    const tensor_path_t *tp[3] = {&cand->in, &cand->wei, &cand->out};
    for (int t = 0; t < 3; t++) md_format(md[t], sizeof md[t], md_ref(&tp[t]->conv_md));
    fprintf(stderr, "dgrad layout search: %s: %s in %s wei %s out %s%s%s",
            desc, cand->impl, md[0], md[1], md[2],
            cand->staged ? " (f32 staged)" : "",
            extend_tail ? " (tail computed)" : "");
    if (cand->fold.n_copies)
        fprintf(stderr, " phase reorders %d %s", cand->fold.n_copies,
                cand->fold.copies[0].step.impl);
    fprintf(stderr, " ...");
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

/* Untimed alternating runs before a runoff's timed ones: up to
 * RUNOFF_WARM_MS of each plan's work, at least one run (the user's-layouts
 * candidate is built anew for its runoff, and its first run fills its
 * execution context), at most RUNOFF_WARM_RUNS. Plans under RUNOFF_LEAD_MS
 * also run once untimed before their timed runs in each round, so that
 * each is timed after a run of its own, as time_plan and `dgrad bench`
 * time it, not on what the other plan left in the caches. Both for
 * `googlenet_v1:conv1/7x7_s2` NCX, gemm on the user's layouts against the
 * fold: after one warm run, alternating, gemm took 3.25, 3.17, 3.03, 2.97,
 * 2.86 ms in turn (the fold 2.81-2.96), 3.03 against 2.68 in `dgrad
 * bench`, so the fold won and took 1.08x raw's time there; with both,
 * gemm 2.73-2.85 against the fold's 2.84-2.98, and gemm was kept in 10
 * of 11 compiles of a batch of the suite's first twelve problems, where
 * without them the fold won 1 in 5 (Sapphire Rapids;
 * not glibc returning memory: the same with MALLOC_TRIM_THRESHOLD_ and
 * MALLOC_MMAP_THRESHOLD_ at 4 GB). */
#define RUNOFF_WARM_MS 10.0
#define RUNOFF_WARM_RUNS 4
#define RUNOFF_LEAD_MS 5.0

/* Alternating runs of two plans on scratch buffers, @p rounds times
 * @p runs each, so that a burst of noise does not decide; the typical
 * time of each (typical_run) goes to @p t. Returns 0 if a run failed.
 * Warm and lead runs as above. */
int runoff(const dgrad_plan_t *const pl[2], const probe_wei_t w[2],
        const probe_bufs_t *b, int rounds, int runs, double t[2]) {
    double v[2][RUNOFF_ROUNDS_MAX * TIMED_RUNS_MAX];
    if (rounds > RUNOFF_ROUNDS_MAX) rounds = RUNOFF_ROUNDS_MAX;
    if (runs > TIMED_RUNS_MAX) runs = TIMED_RUNS_MAX;
    double warm_ms = 0;
    for (int j = 0; j < 2; j++) {
        double t0 = now_ms();
        if (probe_run(pl[j], b, w[j].ptr, w[j].prepared) != dnnl_success)
            return 0;
        warm_ms = fmax(warm_ms, now_ms() - t0);
    }
    for (int k = 1; k < RUNOFF_WARM_RUNS && k * warm_ms < RUNOFF_WARM_MS; k++)
        for (int j = 0; j < 2; j++)
            if (probe_run(pl[j], b, w[j].ptr, w[j].prepared) != dnnl_success)
                return 0;
    int lead = warm_ms < RUNOFF_LEAD_MS;
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < 2; j++) {
            if (lead && probe_run(pl[j], b, w[j].ptr, w[j].prepared)
                    != dnnl_success)
                return 0;
            for (int k = 0; k < runs; k++) {
                double t0 = now_ms();
                if (probe_run(pl[j], b, w[j].ptr, w[j].prepared)
                        != dnnl_success)
                    return 0;
                v[j][r * runs + k] = now_ms() - t0;
            }
        }
    for (int j = 0; j < 2; j++) t[j] = typical_run(v[j], rounds * runs);
    return 1;
}

/* Runs per round of a runoff between plans of about @p ms each: some
 * 0.25 ms of work per round, 1 to 10 runs. */
int runoff_runs(double ms) {
    int runs = ms >= 50 ? 1 : ms >= 5 ? 2
            : (int)ceil(0.25 / (ms > 0.01 ? ms : 0.01));
    return runs > TIMED_RUNS_MAX ? TIMED_RUNS_MAX : runs;
}

/* The plain primitive on the user's own memory is kept unless a plan on
 * other layouts beats it by more than this in a runoff: the other plan's
 * reorders and folds make more passes over memory, which the probe
 * buffers, shared by both and warm in cache between runs, hide.
 * `googlenet_v1:conv1/7x7_s2` (NCX): the fold won its runoffs against
 * gemm on the user's layouts by 1-2.5% and took 1.08-1.13x raw's gemm
 * in `dgrad bench`, where raw's runs in between evict its tensors
 * (Sapphire Rapids, bench/README.md fourteenth look). */
#define USER_LAYOUTS_MARGIN 1.05

/* How far apart the first timings of the two fastest candidates may be
 * for a runoff to decide between them. A candidate's first timed runs,
 * right after it is built, can take several times its usual time on this
 * 2-CPU VM (`deconv_ci_2d:gemm` bf16, gemm on two threads: 13-40 us there
 * against 4.9 in `dgrad bench`). With 15%, `hifigan_v1:ups1_k16s8` in bf16 NXC (gemm timed at
 * 0.81-0.93 ms and the AMX jit at 1.25-1.52 in runs of it alone) went to
 * the AMX jit in one full-suite run and took 1.79x raw's gemm there; at
 * 1.5x apart they meet in a runoff. */
#define RUNOFF_WITHIN 1.5

/* Decides between two timed plans by alternating runs: afterwards @p a
 * holds the faster (with its runoff time), @p b the other; @p b counts
 * as faster while its time is under @p b_margin times @p a's. @p why names
 * the runoff for DGRAD_LAYOUT_SEARCH=verbose. Plans under 5 ms get five
 * rounds: with three, a plan of 0.5 ms had three runs each, and
 * `dcgan:g1_100to512_k4s1` (NCX; gemm on the user's layouts 0.52 ms
 * against jit on blocked ones 0.55-0.57 in alternating runs) went to jit
 * in one full-suite run of five and took 1.09x raw's time. Longer plans
 * keep three: five for all made the suite's first compiles 25% longer. */
static void runoff_keep_faster(timed_t *a, timed_t *b, const probe_bufs_t *bufs,
        const char *why, double b_margin) {
    double t[2] = {INFINITY, INFINITY};
    const dgrad_plan_t *pl[2] = {a->plan, b->plan};
    const probe_wei_t w[2] = {a->wei, b->wei};
    int ok = runoff(pl, w, bufs, a->ms < 5 ? RUNOFF_ROUNDS_MAX : 3,
            runoff_runs(a->ms), t);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: %s: %s %.4f ms vs %s %.4f ms\n",
                why, a->plan->impl, t[0], b->plan->impl, t[1]);
    if (ok && t[1] < t[0] * b_margin) {
        timed_t swap = *a;
        *a = *b;
        *b = swap;
        a->ms = t[1];
    }
}

/* A candidate of microseconds (@p cur, timed) against the same on one
 * OpenMP thread, which skips the fork and join of every step: @p cur
 * becomes the faster. Every candidate gets this, not only the winner: a
 * plan of several steps (a chain's pass, reorders) pays the fork and join
 * once a step, so on all threads it may lose to a plan it beats on one
 * (a depthwise 2x16x5x5 with bias and ReLU: 11 us on two threads, 1.3 us
 * on one, and a folded plan ahead of it on two). */
static void try_one_thread(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        const cand_pd_t *c, const probe_bufs_t *bufs, timed_t *cur) {
    timed_t one = {NULL, {NULL, 0, NULL}, INFINITY, cur->index};
    one.plan = build_single_thread(problem, policy, staged, c);
    int ok = one.plan && probe_wei_init(&one.wei, one.plan, bufs,
                                 weights_constant) == 0;
    if (ok && c->extend_tail)
        ok = tail_checked(one.plan, bufs, one.wei.ptr, one.wei.prepared);
    if (ok) ok = chain_ready(one.plan) == 0;
    if (ok) one.ms = time_plan(one.plan, bufs, &one.wei, cur->ms);
    if (layout_search_verbose() && ok)
        fprintf(stderr, "dgrad layout search: on one thread %.4f ms\n",
                one.ms);
    if (ok && one.ms < cur->ms) {
        timed_t swap = *cur;
        *cur = one;
        one = swap;
    }
    timed_drop(&one);
}

/* A candidate (@p cur, timed) whose chain rides on the step writing the
 * output (a folded forward convolution, the bias add) against the same
 * with the chain as a pass of its own: a kernel with post-ops can be
 * slower than the kernel alone and one more pass over the output
 * (`unet3d:upconv3_128` with bias + ReLU, folded: 10.6 ms carried against
 * 9.0 ms unfused, bench/README.md). @p cur becomes the pass where that
 * runs under PASS_MARGIN times the carried time; then @p c is marked so
 * that rebuilding it (threads, runoffs) builds the same. */
static void try_chain_passed(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        cand_pd_t *c, const probe_bufs_t *bufs, timed_t *cur) {
    const post_pass_t *pp = &cur->plan->post;
    if (!pp->fused || !pp->fused_into || policy->chain_pass) return;
    timed_t passed = {NULL, {NULL, 0, NULL}, INFINITY, cur->index};
    dnnl_status_t err = dnnl_success;
    const char *what = "";
    c->chain_passed = 1;
    passed.plan = build_candidate(problem, policy, staged, c, &err, &what);
    c->chain_passed = 0;
    int ok = passed.plan && probe_wei_init(&passed.wei, passed.plan, bufs,
                                    weights_constant) == 0;
    if (ok && c->extend_tail)
        ok = tail_checked(passed.plan, bufs, passed.wei.ptr,
                passed.wei.prepared);
    if (ok) ok = chain_ready(passed.plan) == 0;
    if (ok) {
        const dgrad_plan_t *pl[2] = {cur->plan, passed.plan};
        const probe_wei_t w[2] = {cur->wei, passed.wei};
        double t[2] = {INFINITY, INFINITY};
        ok = runoff(pl, w, bufs, 3, runoff_runs(cur->ms), t);
        if (layout_search_verbose())
            fprintf(stderr, "dgrad layout search: chain carried %.4f ms, "
                    "as a pass %.4f ms\n", t[0], t[1]);
        if (ok && t[1] < PASS_MARGIN * t[0]) {
            passed.ms = t[1];
            timed_t swap = *cur;
            *cur = passed;
            passed = swap;
            c->chain_passed = 1;
        } else if (ok) {
            cur->ms = t[0];
        }
    }
    timed_drop(&passed);
}

/* Times the candidates of @p problem on scratch buffers and returns the
 * fastest as a built plan, with its candidate in @p winner; NULL when no
 * candidate could be timed. With @p weights_constant the weights are
 * prepared before timing, as an execute with constant weights sees them.
 * A candidate of @p pds whose chain is faster as a pass is marked so
 * (chain_passed). */
dgrad_plan_t *search(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        cand_pd_t *pds, int n, int *winner, double *winner_ms,
        dnnl_status_t *err, const char **what) {
    probe_bufs_t bufs;
    if (probe_init(&bufs, problem, policy) != 0) return NULL;
    timed_t best = {NULL, {NULL, 0, NULL}, INFINITY, -1};
    timed_t second = best, cur = best;
    int user = -1; /* the fastest candidate on the user's layouts */
    double user_ms = INFINITY;
    for (int k = 0; k < n; k++) {
        cur.plan = build_candidate(problem, policy, staged, &pds[k], err,
                what);
        if (!cur.plan) continue;
        cur.index = k;
        if (layout_search_verbose())
            verbose_candidate(problem, cur.plan, pds[k].extend_tail);
        int checked = probe_wei_init(&cur.wei, cur.plan, &bufs,
                              weights_constant) == 0;
        if (checked && pds[k].extend_tail)
            checked = tail_checked(cur.plan, &bufs, cur.wei.ptr,
                    cur.wei.prepared);
        if (checked) checked = chain_ready(cur.plan) == 0;
        cur.ms = checked ? time_plan(cur.plan, &bufs, &cur.wei, best.ms)
                         : INFINITY;
        if (layout_search_verbose())
            fprintf(stderr, " %.4f ms%s\n", cur.ms,
                    checked ? "" : " (not runnable or tail not zeroed: rejected)");
        if (checked && isfinite(cur.ms) && cur.ms < 1.5 * best.ms)
            try_chain_passed(problem, policy, staged, weights_constant,
                    &pds[k], &bufs, &cur);
        if (checked && cur.ms < SINGLE_THREAD_MAX_MS && policy->threading == 0)
            try_one_thread(problem, policy, staged, weights_constant,
                    &pds[k], &bufs, &cur);
        if (checked && cand_on_user_layouts(&pds[k]) && cur.ms < user_ms) {
            user = k;
            user_ms = cur.ms;
        }
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
        /* The two kept wait without their workspaces (remade by a
         * runoff's first run): three staged candidates' of 55 MB each
         * held at once were the f16 3D specification example's planning
         * peak on its reduced copy, 180 MB over the caller's tensors
         * (tests/test_planning_memory.c, oneDNN 3.7). */
        if (best.plan) plan_drop_contexts(best.plan);
        if (second.plan) plan_drop_contexts(second.plan);
    }
    /* A call within RUNOFF_WITHIN is decided again by alternating runs of
     * the two, so that a burst of noise during one candidate's turn does
     * not decide. */
    if (second.plan && second.ms < RUNOFF_WITHIN * best.ms)
        runoff_keep_faster(&best, &second, &bufs, "runoff", 1.0);
    timed_drop(&second);
    /* A winner on other layouts meets the candidate on the user's own
     * again in alternating runs when the first timings put them within
     * 2x: a burst of noise during that candidate's turn must not leave a
     * plan slower than the plain primitive on the user's memory
     * (`alexnet:deconv2_1d` NCX in bench/results once took 1.46x raw's
     * time that way). */
    if (best.plan && user >= 0 && user != best.index
            && user_ms < 2 * best.ms) {
        timed_t u = {NULL, {NULL, 0, NULL}, INFINITY, user};
        u.plan = build_candidate(problem, policy, staged, &pds[user], err,
                what);
        if (u.plan && probe_wei_init(&u.wei, u.plan, &bufs,
                              weights_constant) == 0
                && chain_ready(u.plan) == 0)
            runoff_keep_faster(&best, &u, &bufs, "against the user's layouts",
                    USER_LAYOUTS_MARGIN);
        timed_drop(&u);
    }
    probe_free(&bufs);
    free(best.wei.own);
    *winner = best.index;
    *winner_ms = best.ms;
    return best.plan;
}

/* @p plan (candidate @p c, on all threads or, where the search found one
 * thread faster, on one) against the same candidate on the other: the
 * faster in alternating runs on scratch buffers (the typical run of each),
 * or the one-thread plan where the policy says so; frees the other. The
 * search times each candidate alone, right after building it, where runs
 * on two threads can take several times their usual time:
 * `deconv_ci_2d:gemm` in bf16 (NXC), gemm on two threads, timed at
 * 13-40 us there, 4.7-5.2 in this runoff and 4.9 in `dgrad bench` (one
 * thread: 7.1-7.6), and the search had kept one thread. */
dgrad_plan_t *keep_faster_threading(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int weights_constant,
        const cand_pd_t *c, dgrad_plan_t *plan, double *ms) {
    int mode = policy->threading;
    if (mode == 2) return plan;
    dgrad_plan_t *all = plan, *one = plan;
    if (plan->single_thread) {
        dnnl_status_t err = dnnl_success;
        const char *what = "";
        all = rebuild_candidate(problem, policy, staged, c, &err, &what);
    } else {
        one = build_single_thread(problem, policy, staged, c);
    }
    if (!all || !one) return plan;
    probe_bufs_t bufs;
    probe_wei_t w[2] = {{NULL, 0, NULL}, {NULL, 0, NULL}};
    const dgrad_plan_t *pl[2] = {all, one};
    double t[2] = {INFINITY, INFINITY};
    int have_bufs = probe_init(&bufs, problem, policy) == 0, ok = have_bufs;
    for (int j = 0; ok && j < 2; j++)
        ok = probe_wei_init(&w[j], pl[j], &bufs, weights_constant) == 0;
    if (ok && c->extend_tail)
        ok = tail_checked(one, &bufs, w[1].ptr, w[1].prepared)
                && tail_checked(all, &bufs, w[0].ptr, w[0].prepared);
    if (ok) ok = chain_ready(all) == 0 && chain_ready(one) == 0;
    if (ok) ok = runoff(pl, w, &bufs, 5, 4, t);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: %s on all threads %.4f ms, on "
                "one %.4f ms\n", plan->impl, t[0], t[1]);
    free(w[0].own);
    free(w[1].own);
    if (have_bufs) probe_free(&bufs);
    /* Where a plan failed to run, the one the search timed is kept. */
    int keep_one = ok ? t[1] < t[0] || mode == 1 : plan == one;
    if (ms && ok) *ms = t[keep_one];
    plan_destroy(keep_one ? all : one);
    return keep_one ? one : all;
}

/* Gives the heap's free memory back to the system, between the timings
 * of a problem too large to time as it is and after them. The reduced
 * copy's candidates free buffers of a few MB, which glibc keeps in its
 * heap once its mmap threshold has grown past them: the rows copy's
 * buffers (up to max_bytes) then came on top, and the bf16 3D
 * specification example's planning peaked at 189 MB over the caller's
 * tensors where its largest phase took 120 (`mem MB`, `dgrad bench --dt
 * bf16 --data-format NCX --weights-format OIX --no-raw
 * g4mb1ic20id224oc8od447kd3sd2pd1`, with and without
 * `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576`, AMD EPYC Zen 5);
 * and after planning the f32 one the heap kept 28.5 MB
 * (tests/test_planning_memory.c). */
void return_freed_memory(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
