/*
 * The transposed convolution as one forward convolution with its output
 * phases folded into channels, then one strided reorder per phase.
 *
 * Per axis, output position f = o + PB (o in [0, Y)) receives
 * in[x] * W[k] where f = S*x + D*k. Writing f = S*q + r (phase r), the
 * taps of phase r are the k with D*k = r (mod S), each reaching back
 * t = (D*k - r) / S input positions from q. So phase r of the output is a
 * forward (correlation) convolution over the input grid whose window
 * holds, at position j, the tap with t = tmax - fd*j, if any:
 *   S == 1: one phase, W = K taps, dilation fd = D, tmax = D*(K-1);
 *   S > 1:  W = tmax + 1 taps, dilation 1, tmax = floor(D*(K-1) / S)
 *           (with D > 1 some window positions hold no tap: zeros).
 * All P = prod(S) phases share that window, so they are the P*Cout output
 * channels of one forward convolution: with groups, G groups of P*Cout/G
 * channels (FOLD_GROUPED); or one dense convolution whose weights are
 * block-diagonal over the groups (FOLD_DENSE: more multiply-adds, but the
 * dense kernels fill their vector lanes where groups have few channels).
 *
 * oneDNN's forward kernels are better tuned than its backward-data ones on
 * few channels, and the forward output in channels-last keeps each
 * position's P*Cout values together. The forward convolution covers every
 * output position (the whole output box: positions that no term reaches
 * get zero or the bias from the convolution itself, so nothing is left to
 * fill), extending its range rather than cropping the input where the
 * pads would be negative. Chosen by timing beside the backward-data
 * candidates (choice.c); bench/README.md has the measurements.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dtype.h"

/* Phases of the problem, 0 beyond MAX_PHASES. */
static int64_t phases(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp; i++) {
        if (p->S[i] > MAX_PHASES) return 0;
        n *= p->S[i];
        if (n > MAX_PHASES) return 0;
    }
    return n;
}

/* Whether the fold applies: at most MAX_PHASES phases, and sizes oneDNN
 * takes (the forward output has P times the output's channels). */
int fold_applicable(const dgrad_problem_t *p) {
    int64_t P = phases(p);
    return P > 0 && p->Cout <= INT32_MAX / P;
}

/* The forward convolution's geometry for @p plan's problem (the plan's
 * output box must be the whole output). Returns 0 if it does not apply. */
int fold_init(dgrad_plan_t *plan, fold_mode_t mode) {
    const dgrad_problem_t *p = &plan->p;
    fold_t *f = &plan->fold;
    if (!fold_applicable(p)) return 0;
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->P = phases(p);
    f->Cf = f->P * p->Cout;
    for (int i = 0; i < p->nsp; i++) {
        int64_t S = p->S[i], K = p->K[i], D = p->D[i];
        f->fd[i] = S == 1 ? D : 1;
        f->tmax[i] = S == 1 ? D * (K - 1) : D * (K - 1) / S;
        f->W[i] = S == 1 ? K : f->tmax[i] + 1;
        f->q0[i] = div_floor(p->PB[i], S);
        int64_t q1 = div_floor(p->PB[i] + p->Y[i] - 1, S) + 1;
        /* Input position q - tmax + fd*j: pad left by tmax - q0, or
         * start computing earlier (those positions are discarded). */
        if (f->q0[i] > f->tmax[i]) f->q0[i] = f->tmax[i];
        f->nq[i] = q1 - f->q0[i];
        f->pl[i] = f->tmax[i] - f->q0[i];
        int64_t extent = (f->W[i] - 1) * f->fd[i] + 1;
        f->pr[i] = f->nq[i] - 1 + extent - p->X[i] - f->pl[i];
        if (f->pr[i] < 0) { /* compute further instead of cropping */
            f->nq[i] -= f->pr[i];
            f->pr[i] = 0;
        }
    }
    return 1;
}

/* Dims of the folded weights: [G, P*Cout/G, Cin/G, W...] grouped, or
 * [P*Cout, Cin, W...] dense; returns ndims. */
static int folded_wei_dims(const dgrad_plan_t *plan, int64_t *d) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    int g = f->mode == FOLD_GROUPED, n = 0;
    if (g) d[n++] = p->G;
    d[n++] = g ? f->Cf / p->G : f->Cf;
    d[n++] = g ? p->Cin / p->G : p->Cin;
    for (int i = 0; i < p->nsp; i++) d[n++] = f->W[i];
    return n;
}

static dnnl_status_t md_plain(md_t *md, int nd, const int64_t *dims,
        dnnl_data_type_t dt) {
    static const dnnl_format_tag_t tags[] = {dnnl_a, dnnl_ab, dnnl_abc,
            dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    return ACQUIRE(md_tagged(md, nd, dims, dt, tags[nd - 1]));
}

/* Whether the forward output is the output itself: one phase (stride 1
 * on every axis) whose positions are exactly the output's (no position
 * computed before it or past it), in the output's own type. Then the
 * convolution writes the caller's layout directly and, being the one
 * step that writes it, can carry any chain (post_pass.c). */
int fold_writes_output(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    if (f->P != 1 || plan->staged) return 0;
    for (int i = 0; i < p->nsp; i++)
        if (f->nq[i] != p->Y[i] || f->q0[i] != p->PB[i]) return 0;
    return 1;
}

/* The forward output: the output's own layout where the convolution
 * writes it (fold_writes_output), else dense channels-last
 * [N, P*Cout, nq...]. */
static dnnl_status_t folded_out_md(const dgrad_plan_t *plan,
        dnnl_data_type_t dt, md_t *md) {
    static const dnnl_format_tag_t tags[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    const dgrad_problem_t *p = &plan->p;
    if (fold_writes_output(plan))
        return ACQUIRE(md_copy(md, md_ref(&plan->out.io_md)));
    int64_t d[2 + DGRAD_MAX_SPATIAL] = {p->N, plan->fold.Cf};
    for (int i = 0; i < p->nsp; i++) d[2 + i] = plan->fold.nq[i];
    return ACQUIRE(md_tagged(md, 2 + p->nsp, d, dt, tags[p->nsp - 1]));
}

/* Forward convolution pd in compute type @p dt: the source on its io
 * layout or channels-last (@p act), weights and output as described
 * above, the bias (if any) as [P*Cout] f32. */
dnnl_status_t create_fold_pd(const dgrad_plan_t *plan, dnnl_data_type_t dt,
        act_mode_t act, dnnl_primitive_desc_t *pd) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    md_t src = MD_EMPTY, wei = MD_EMPTY, dst = MD_EMPTY, bias = MD_EMPTY;
    int64_t wd[MAX_NDIMS], strides[DGRAD_MAX_SPATIAL];
    int64_t dilates[DGRAD_MAX_SPATIAL], pl[DGRAD_MAX_SPATIAL];
    int64_t pr[DGRAD_MAX_SPATIAL], bd = f->Cf;
    dnnl_primitive_attr_t attr = NULL;
    int wn = folded_wei_dims(plan, wd);
    *pd = NULL;
    int window_1x1 = 1;
    for (int i = 0; i < p->nsp; i++) window_1x1 &= f->W[i] == 1;
    if (window_1x1 && onednn_1x1_forward_crashes()) return dnnl_unimplemented;
    for (int i = 0; i < p->nsp; i++) {
        strides[i] = 1;
        dilates[i] = f->fd[i] - 1;
        pl[i] = f->pl[i];
        pr[i] = f->pr[i];
    }
    dnnl_status_t s = md_act(&src, md_ref(&plan->in.io_md), dt, act);
    if (s == dnnl_success)
        s = ACQUIRE(md_tagged(&wei, wn, wd, dt, dnnl_format_tag_any));
    if (s == dnnl_success) s = folded_out_md(plan, dt, &dst);
    if (s == dnnl_success && p->has_bias) s = md_plain(&bias, 1, &bd, dnnl_f32);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = ACQUIRE(conv_forward_pd(pd, engine, dnnl_forward_inference,
                md_ref(&src), md_ref(&wei), md_ref(&bias), md_ref(&dst),
                strides, dilates, pl, pr, attr));
    s = pd_trusted_or_next(pd, s);
    int64_t extent[DGRAD_MAX_SPATIAL];
    for (int i = 0; i < p->nsp; i++) extent[i] = (f->W[i] - 1) * f->fd[i] + 1;
    if (s == dnnl_success) s = pd_safe_for_padding(pd, p->nsp, pl, pr, extent);
    dnnl_primitive_attr_destroy(attr);
    md_free(&src);
    md_free(&wei);
    md_free(&dst);
    md_free(&bias);
    return s;
}

dnnl_status_t fold_conv_pd(const dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *out) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    md_t bias = MD_EMPTY;
    int64_t strides[DGRAD_MAX_SPATIAL], dilates[DGRAD_MAX_SPATIAL],
            pl[DGRAD_MAX_SPATIAL], pr[DGRAD_MAX_SPATIAL], bd = f->Cf;
    for (int i = 0; i < p->nsp; i++) {
        strides[i] = 1;
        dilates[i] = f->fd[i] - 1;
        pl[i] = f->pl[i];
        pr[i] = f->pr[i];
    }
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = p->has_bias ? md_plain(&bias, 1, &bd, dnnl_f32)
                                  : dnnl_success;
    if (s == dnnl_success)
        s = ACQUIRE(conv_forward_pd(&pd, engine, dnnl_forward_inference,
                md_ref(&plan->in.conv_md), md_ref(&plan->wei.conv_md),
                md_ref(&bias), md_ref(&plan->out.conv_md), strides, dilates,
                pl, pr, attr));
    md_free(&bias);
    /* Only the same kernel: the plan was timed with it. */
    if (s == dnnl_success && (pd_untrusted(pd)
            || strcmp(pd_impl_name(pd), plan->conv.impl)))
        s = dnnl_unimplemented;
    *out = pd;
    return s;
}

dnnl_status_t fold_conv_with_attr(dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = fold_conv_pd(plan, attr, &pd);
    return step_replace(plan, &plan->conv, pd, s);
}

/* Per axis, the phase of phase index @p ph (the last axis fastest). */
static void phase_of(const dgrad_problem_t *p, int64_t ph, int64_t *r) {
    for (int i = p->nsp - 1; i >= 0; i--) {
        r[i] = ph % p->S[i];
        ph /= p->S[i];
    }
}

/* Channel of the forward output holding phase @p ph of output channel
 * (group @p g, channel @p co within it). */
static int64_t folded_channel(const dgrad_plan_t *plan, int64_t ph,
        int64_t g, int64_t co) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cg = p->Cout / p->G;
    return plan->fold.mode == FOLD_GROUPED ? (g * plan->fold.P + ph) * cg + co
                                           : ph * p->Cout + g * cg + co;
}

/* Where phase @p r of axis @p i starts in the output ((a + PB) = r mod
 * S) and how many positions it has there. */
static int64_t phase_start(const dgrad_problem_t *p, int i, int64_t r,
        int64_t *count) {
    int64_t S = p->S[i], a = ((r - p->PB[i]) % S + S) % S;
    *count = a < p->Y[i] ? (p->Y[i] - 1 - a) / S + 1 : 0;
    return a;
}

/* oneDNN takes only nested strided views (each axis's stride times its
 * size within the next larger stride), and a phase's every-S-th positions
 * of an axis can reach one stride past the axis (S*count > Y): such an
 * axis is copied in two pieces, its positions but the last, then the
 * last. Piece bit i of @p piece picks the last position of axis i.
 * Whether piece @p piece of phase @p ph exists. */
static int piece_exists(const dgrad_problem_t *p, int64_t ph, int piece) {
    int64_t r[DGRAD_MAX_SPATIAL];
    phase_of(p, ph, r);
    for (int i = 0; i < p->nsp; i++) {
        int64_t n;
        phase_start(p, i, r[i], &n);
        int split = n >= 2 && n * p->S[i] > p->Y[i];
        if (n == 0 || ((piece >> i & 1) && !split)) return 0;
    }
    return 1;
}

/* The reorder of piece @p piece of phase @p ph: from the forward
 * output's positions of the phase to the output's every-S-th positions,
 * both as [N, G, Cout/G, n...] views with offsets. Returns 0, or -1 when
 * oneDNN refuses a view. */
static int phase_views(const dgrad_plan_t *plan, int64_t ph, int piece,
        phase_copy_t *pc) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    const int64_t *os = plan->out.io_strides;
    int64_t r[DGRAD_MAX_SPATIAL], cg = p->Cout / p->G;
    int64_t d[MAX_NDIMS], fs[MAX_NDIMS], ts[MAX_NDIMS];
    int nd = 3 + p->nsp;
    /* Forward output strides, channels-last: C 1, last axis Cf, ... */
    int64_t qs[DGRAD_MAX_SPATIAL], acc = f->Cf;
    for (int i = p->nsp - 1; i >= 0; i--) {
        qs[i] = acc;
        acc *= f->nq[i];
    }
    phase_of(p, ph, r);
    d[0] = p->N;
    d[1] = p->G;
    d[2] = cg;
    fs[0] = acc;
    fs[1] = f->mode == FOLD_GROUPED ? f->P * cg : cg;
    fs[2] = 1;
    ts[0] = os[0];
    ts[1] = os[1] * cg;
    ts[2] = os[1];
    pc->from_off = folded_channel(plan, ph, 0, 0);
    pc->to_off = 0;
    for (int i = 0; i < p->nsp; i++) {
        int64_t S = p->S[i], n, a = phase_start(p, i, r[i], &n);
        int split = n >= 2 && n * S > p->Y[i], last = piece >> i & 1;
        if (last) a += (n - 1) * S;
        d[3 + i] = last ? 1 : split ? n - 1 : n;
        fs[3 + i] = qs[i];
        ts[3 + i] = last ? os[2 + i] : os[2 + i] * S;
        pc->from_off += ((a + p->PB[i] - r[i]) / S - f->q0[i]) * qs[i];
        pc->to_off += a * os[2 + i];
    }
    dnnl_data_type_t from_dt = md_data_type(md_ref(&plan->out.conv_md)),
                     to_dt = md_data_type(md_ref(&plan->out.io_md));
    dnnl_status_t s = ACQUIRE(md_strided(&pc->from_md, nd, d, from_dt, fs));
    if (s == dnnl_success)
        s = ACQUIRE(md_strided(&pc->to_md, nd, d, to_dt, ts));
    return s == dnnl_success ? 0 : -1;
}

static dnnl_status_t fuse_weights(dgrad_plan_t *plan);

/* The plan's steps around the forward pd: the input reorder (if its io
 * layout is not the pd's), the folded weights' reorder from their plain
 * layout, the convolution, one reorder per piece of each phase. */
dnnl_status_t build_fold_primitives(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, const char **what) {
    const dgrad_problem_t *p = &plan->p;
    fold_t *f = &plan->fold;
    int64_t wd[MAX_NDIMS];
    *what = "folded forward convolution creation";
    dnnl_status_t s = take_conv_mds(plan, pd, dnnl_query_src_md,
            dnnl_query_dst_md);
    if (s == dnnl_success)
        s = md_plain(&plan->wei.io_md, folded_wei_dims(plan, wd), wd,
                md_data_type(md_ref(&plan->wei.conv_md)));
    snprintf(plan->impl, sizeof plan->impl, "fold:%s", pd_impl_name(pd));
    if (s == dnnl_success)
        s = make_step(&plan->conv, (dnnl_primitive_desc_t)pd,
                &plan->scratch_size);
    if (s != dnnl_success) return s;
    *what = "reorder creation";
    s = make_reorder(plan, &plan->in, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->wei, 0);
    plan->prepared_weights_bytes = md_size(md_ref(&plan->wei.conv_md));
    /* Sizes the execute path needs, computed once (see primitives.c). */
    f->weights_bytes = md_size(md_ref(&plan->wei.io_md));
    if (s == dnnl_success) s = fuse_weights(plan);
    if (s != dnnl_success) return s;
    f->writes_output = fold_writes_output(plan);
    int pieces = f->writes_output ? 0 : 1 << p->nsp, n = 0;
    for (int64_t ph = 0; ph < f->P; ph++)
        for (int k = 0; k < pieces; k++) n += piece_exists(p, ph, k);
    if (n) {
        f->copies = allocated(dgrad_calloc((size_t)n, sizeof *f->copies));
        if (!f->copies) return dnnl_out_of_memory;
    }
    for (int64_t ph = 0; ph < f->P && s == dnnl_success; ph++)
        for (int k = 0; k < pieces && s == dnnl_success; k++) {
            phase_copy_t *pc = &f->copies[f->n_copies];
            if (!piece_exists(p, ph, k)) continue;
            /* A copy counts (and is destroyed with the plan) once whole;
             * a partial one is released here. */
            dnnl_primitive_desc_t rpd = NULL;
            s = phase_views(plan, ph, k, pc) != 0 ? dnnl_invalid_arguments
                    : reorder_pd(&rpd, md_ref(&pc->from_md),
                            md_ref(&pc->to_md));
            if (s == dnnl_success)
                s = make_step(&pc->step, rpd, &plan->scratch_size);
            if (s == dnnl_success)
                s = reorder_make_safe(&pc->step, md_ref(&pc->from_md),
                        md_ref(&pc->to_md));
            dnnl_primitive_desc_destroy(rpd);
            if (s == dnnl_success) {
                f->n_copies++;
            } else {
                dnnl_primitive_destroy(pc->step.prim);
                pc->step.prim = NULL;
                md_free(&pc->from_md);
                md_free(&pc->to_md);
                md_free(&pc->step.scratch_md);
            }
        }
    if (s == dnnl_success && p->has_bias) {
        int64_t bd = f->Cf;
        s = md_plain(&plan->bias_md, 1, &bd, dnnl_f32);
        plan->bias_bytes = (size_t)f->Cf * sizeof(float);
    }
    return s;
}

/* The tap of window position @p j of phase @p r on axis @p i, or -1. */
static int64_t tap_of(const dgrad_problem_t *p, const fold_t *f, int i,
        int64_t r, int64_t j) {
    int64_t t = f->tmax[i] - f->fd[i] * j, num = p->S[i] * t + r;
    if (num % p->D[i]) return -1;
    int64_t k = num / p->D[i];
    return k < p->K[i] ? k : -1;
}

/* Elements of the folded weights (wei.io_md, in the plan's compute type). */
static size_t folded_count(const dgrad_plan_t *plan) {
    return plan->fold.weights_bytes / dgrad_data_type_size(
            plan->staged ? dgrad_f32 : plan->p.dt);
}

/* Folds weights in the user's layout (elements of @p user_dt) into the
 * plain layout of plan->wei.io_md, in elements of @p dt: zero where a
 * window position holds no tap and, dense, off the diagonal blocks. */
static void fold_weights_as(const dgrad_plan_t *plan, const void *user,
        dgrad_data_type_t user_dt, void *folded, dgrad_data_type_t dt) {
    const dgrad_problem_t *p = &plan->p;
    const fold_t *f = &plan->fold;
    size_t es = dgrad_data_type_size(dt);
    int64_t cg = p->Cout / p->G, icg = p->Cin / p->G, win = 1;
    int64_t ic_total = f->mode == FOLD_GROUPED ? icg : p->Cin;
    for (int i = 0; i < p->nsp; i++) win *= f->W[i];
    memset(folded, 0, folded_count(plan) * es);
    const int64_t *ws = p->wei_strides; /* [G, Cin/G, Cout/G, K...] */
    for (int64_t ph = 0; ph < f->P; ph++) {
        int64_t r[DGRAD_MAX_SPATIAL];
        phase_of(p, ph, r);
        for (int64_t w = 0; w < win; w++) {
            /* Window position w (last axis fastest) -> tap offset. */
            int64_t rest = w, src_k = 0;
            int any = 1;
            for (int i = p->nsp - 1; i >= 0; i--) {
                int64_t k = tap_of(p, f, i, r[i], rest % f->W[i]);
                rest /= f->W[i];
                if (k < 0) any = 0;
                else src_k += k * ws[3 + i];
            }
            if (!any) continue;
            for (int64_t g = 0; g < p->G; g++)
                for (int64_t co = 0; co < cg; co++) {
                    /* Row of the folded weights: output channel, then
                     * input channel, then window. */
                    int64_t oc = folded_channel(plan, ph, g, co);
                    int64_t row = f->mode == FOLD_GROUPED
                            ? oc * icg : oc * ic_total + g * icg;
                    int64_t src = g * ws[0] + co * ws[2] + src_k;
                    int64_t dst = row * win + w;
                    if (dt == user_dt && es == 4) {
                        for (int64_t ci = 0; ci < icg; ci++)
                            ((float *)folded)[dst + ci * win] =
                                    ((const float *)user)[src + ci * ws[1]];
                    } else {
                        for (int64_t ci = 0; ci < icg; ci++)
                            dgrad_store(folded, dt, dst + ci * win,
                                    dgrad_load(user, user_dt, src + ci * ws[1]));
                    }
                }
        }
    }
}

void fold_weights(const dgrad_plan_t *plan, const void *user, void *folded) {
    fold_weights_as(plan, user, plan->p.dt, folded,
            plan->staged ? dgrad_f32 : plan->p.dt);
}

/* Where the folded weights' reorder is dgrad's scatter (small_copy.c),
 * one scatter from the user's weights straight into the kernel's layout
 * takes the fold and the reorder's place: the fold applied to an image
 * of the user's offsets (offset + 1, exact in f32) tells which user
 * element each folded element holds, if any. The destination is zeroed
 * first at each run: the window positions with no tap are zeros too. */
static dnnl_status_t fuse_weights(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    step_t *step = &plan->wei.reorder;
    /* A plan on f32 copies of 16-bit tensors converts: no copy. */
    if (step->own != OWN_COPY_SCATTER
            || dnnl_data_type_size(step->own_to.dt)
                    != dgrad_data_type_size(p->dt))
        return dnnl_success;
    int64_t span = weights_last_offset(p) + 1;
    if (span > ((int64_t)1 << 24)) return dnnl_success;
    size_t folded_n = folded_count(plan);
    float *image = allocated(dgrad_malloc((size_t)span * sizeof(float)));
    float *folded = allocated(dgrad_malloc(folded_n * sizeof(float)));
    if (!image || !folded) {
        free(image);
        free(folded);
        return dnnl_out_of_memory;
    }
    for (int64_t i = 0; i < span; i++) image[i] = (float)(i + 1);
    fold_weights_as(plan, image, dgrad_f32, folded, dgrad_f32);
    int32_t *pair = step->own_pairs;
    int64_t m = 0;
    for (int64_t j = 0; j < step->own_count; j++) {
        float v = folded[pair[2 * j]];
        if (v == 0) continue;
        pair[2 * m] = (int32_t)v - 1;
        pair[2 * m + 1] = pair[2 * j + 1];
        m++;
    }
    free(image);
    free(folded);
    step->own_count = m;
    step->own_to_padded = 1;
    small_copy_sort(step);
    snprintf(step->impl, sizeof step->impl, "dgrad:fold scatter");
    plan->fold.weights_fused = 1;
    return dnnl_success;
}

/* The bias of each forward output channel: its output channel's. */
void fold_bias(const dgrad_plan_t *plan, const void *bias, float *folded) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cg = p->Cout / p->G;
    for (int64_t ph = 0; ph < plan->fold.P; ph++)
        for (int64_t g = 0; g < p->G; g++)
            for (int64_t co = 0; co < cg; co++)
                folded[folded_channel(plan, ph, g, co)] = (float)dgrad_load(
                        bias, p->dt, (g * cg + co) * p->bias_stride);
}
