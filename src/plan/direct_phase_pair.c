/*
 * dgrad's own loop for 1D problems of stride 2 with few output channels
 * per group on rows of unit stride (NCX): masknet's 64 -> 3 channels,
 * k7 s2, one image of 512 positions. Output x = 2m + r (phase r); tap kw
 * reaches phase r = (D kw - PB) mod 2 from input position m + s, its
 * shift s = (r + PB - D kw) / 2. Taps of both phases share shifts (k7:
 * shifts 0, -1, -2, -3, each read by an even tap and, but for -3, an
 * odd one), so a step of up to 64 positions of both phases loads each
 * input row's run at each shift once, and every load feeds the FMAs of
 * both phases and every output channel of the group: 16 loads and 21
 * weights for 84 FMAs an input channel at k7 and 3 channels. The two
 * phases' accumulators are interleaved by permutes into the output row,
 * rounded as stored for 16-bit types, the chain's epilogue applied.
 *
 * The steps read channel rows of f32: the user's f32 rows in place, a
 * 16-bit input widened into scratch with its own strides, or a
 * channels-last (NXC) input transposed into dense channel rows in
 * scratch, 16 positions x 16 channels at a time in registers (a 16-bit
 * one widened on the way). A channels-last output gets each channel's
 * 32 positions of a store rounded into a buffer as a row's are, then
 * put a channel stride apart. masknet in NXC took 19-32 us in f16
 * and 19-30 in f32, against 35-55 and 30-53 for oneDNN's f32 kernels
 * (on f32 copies in f16: oneDNN 2.6 has none for f16) and raw's 31-45;
 * the same loop on NCX took 15-18 us in f16 (`dgrad bench --raw-layout
 * preferred --data-format NXC|NCX --dt f16|f32`, bench/README.md,
 * twenty-seventh look).
 *
 * Why a loop of its own: the rows loop (direct.c) keeps a term per
 * (tap, input channel) and loads each run once per term (448 terms a
 * step for masknet's 3 channels, 5 loads a 6 FMAs, plus each term's
 * bookkeeping), and shares rows over threads, of which masknet has one
 * (the 3 channels are one block). Here the steps are what the threads
 * share, so a single row runs on both cores.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"
#include "direct_phase_pair.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "gather_avx512.h"
#include "rows_avx512.h"
#include "transpose_avx512.h"
#endif

/* Output channels of a group at most (accumulators: 2 phases x 3 x 4
 * vectors at 3 channels). */
#define PP_MAX_CHANNELS 4
/* Elements of an input copied into scratch at most (a 16-bit one
 * widened, a channels-last one transposed, once per execution). */
#define PP_MAX_WIDENED ((int64_t)1 << 24)

/* Multiply-adds from which the steps are shared over threads (below,
 * the calling thread runs them all): masknet's 6.9e5 took 15 us on one
 * thread and 17-19 on two, twice its length 40-42 against 29-37, eight
 * times 158-170 against 68-97 (`OMP_NUM_THREADS=1|2
 * DGRAD_OWN_LOOP=phase_pair dgrad bench --no-raw --data-format NCX
 * mb1_g1oc3ic64_ow1030iw512kw7sw2dw0pw0`, iw 1024, 4096, alternating,
 * Sapphire Rapids VM). */
#define PP_FORK_MACS 1e6

int phase_pair_shifts(const dgrad_problem_t *p, pp_shifts_t *sh) {
    sh->n = 0;
    for (int64_t kw = 0; kw < p->K[0]; kw++) {
        int64_t v = p->D[0] * kw - p->PB[0], r = ((v % 2) + 2) % 2,
                s = (r - v) / 2;
        int u = 0;
        while (u < sh->n && sh->s[u] != s) u++;
        if (u == sh->n) {
            if (sh->n == PP_MAX_SHIFTS) return 0;
            sh->s[u] = s;
            sh->tap[u][0] = sh->tap[u][1] = -1;
            sh->smin = sh->n && sh->smin < s ? sh->smin : s;
            sh->smax = sh->n && sh->smax > s ? sh->smax : s;
            sh->n++;
        }
        sh->tap[u][r] = kw;
    }
    return 1;
}

static int64_t cig_of(const dgrad_problem_t *p) {
    return p->Cin / p->G;
}

static int64_t cog_of(const dgrad_problem_t *p) {
    return p->Cout / p->G;
}

/* Vectors of 16 positions a phase per step for a group of @p cb output
 * channels: 2 x cb x that many accumulators. */
static int64_t step_vectors(int64_t cb) {
    return cb <= 3 ? 4 : 3;
}

/* Steps of a row: of the even phase's positions (the odd one has as
 * many or one fewer). */
static int64_t steps_of(const dgrad_problem_t *p) {
    int64_t per = 16 * step_vectors(cog_of(p));
    return ((p->Y[0] + 1) / 2 + per - 1) / per;
}

/* How the steps read the input: its f32 rows in place (the user's, or
 * the plan's f32 copy where it stages), a 16-bit input's rows widened
 * into scratch with the same strides, or a channels-last input (rows not
 * of unit stride) transposed into dense f32 channel rows in scratch. */
typedef enum { PP_IN_PLACE, PP_IN_WIDENED, PP_IN_TRANSPOSED } pp_input_t;

static pp_input_t input_mode(const dgrad_plan_t *plan) {
    if (plan->in.io_strides[2] != 1) return PP_IN_TRANSPOSED;
    return plan->p.dt != dgrad_f32 && !plan->staged ? PP_IN_WIDENED
                                                     : PP_IN_PLACE;
}

/* Floats of the input's copy in scratch (0: read in place). */
static int64_t input_copy_floats(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    switch (input_mode(plan)) {
    case PP_IN_WIDENED: return input_span_of(plan);
    case PP_IN_TRANSPOSED: return p->N * p->Cin * p->X[0];
    default: return 0;
    }
}

/* The strides (image, channel, position) of the f32 rows the steps read:
 * the input's own, or its transposed copy's (dense channel rows). */
static void read_strides(const dgrad_plan_t *plan, int64_t is[3]) {
    const dgrad_problem_t *p = &plan->p;
    if (input_mode(plan) == PP_IN_TRANSPOSED) {
        is[0] = p->Cin * p->X[0];
        is[1] = p->X[0];
        is[2] = 1;
    } else {
        memcpy(is, plan->in.io_strides, 3 * sizeof is[0]);
    }
}

size_t direct_phase_pair_scratch(const dgrad_plan_t *plan) {
    return (size_t)input_copy_floats(plan) * sizeof(float);
}

/* The type the loop reads and writes (the plan's f32 copies where it
 * stages the user's tensors). */
static dgrad_data_type_t io_type(const dgrad_plan_t *plan) {
    return plan->staged ? dgrad_f32 : plan->p.dt;
}

int phase_pair_fits(const dgrad_plan_t *plan, int64_t max_cog) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    pp_shifts_t sh;
    epilogue_t ep;
    if (plan->direct_avx2 || p->nsp != 1 || p->S[0] != 2
            || cog_of(p) > max_cog || p->K[0] > 2 * PP_MAX_SHIFTS
            || !phase_pair_shifts(p, &sh)
            || (p->n_post_ops
                    && post_chain_epilogue(p, &ep) < p->n_post_ops))
        return 0;
    /* each stride bounded first: no product of the offsets overflows */
    for (int i = 0; i < 3; i++)
        if (is[i] < 0 || os[i] < 0) return 0;
    for (int i = 0; i < 4; i++)
        if (p->wei_strides[i] < 0 || p->wei_strides[i] > INT32_MAX) return 0;
    return weights_last_offset(p) <= INT32_MAX;
}

int direct_phase_pair_applicable(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    /* output positions apart; a channels-last input's channels of unit
     * stride (its copy loads them as vectors) */
    return cpu_has_avx512f() && cpu_has_avx512bw() && cpu_has_avx512vl()
            && phase_pair_fits(plan, PP_MAX_CHANNELS) && os[2] >= 1
            && (is[2] == 1 || is[1] == 1)
            && input_copy_floats(plan) <= PP_MAX_WIDENED;
#else
    (void)plan;
    return 0;
#endif
}

/* Packed weights: per group and input channel, per shift, the even
 * phase's weight of each output channel, then the odd one's (0 where
 * the phase has no tap at that shift); whole vectors of 16. */
static int64_t weights_floats(const dgrad_problem_t *p,
        const pp_shifts_t *sh) {
    return (p->G * cig_of(p) * sh->n * 2 * cog_of(p) + 15) / 16 * 16;
}

phase_pair_t *phase_pair_table(const dgrad_problem_t *p, int64_t wn) {
    phase_pair_t *pp = allocated(
            dgrad_malloc(sizeof *pp + (size_t)wn * sizeof(int32_t)));
    if (!pp) return NULL;
    phase_pair_shifts(p, &pp->sh);
    pp->w_last = weights_last_offset(p);
    pp->wn = wn;
    return pp;
}

size_t direct_phase_pair_weights_size(const dgrad_plan_t *plan) {
    pp_shifts_t sh;
    if (!phase_pair_shifts(&plan->p, &sh)) return 0;
    return (size_t)weights_floats(&plan->p, &sh) * sizeof(float);
}

int direct_phase_pair_prepare(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int64_t cig = cig_of(p), cog = cog_of(p);
    pp_shifts_t sh;
    phase_pair_shifts(p, &sh);
    int64_t wn = weights_floats(p, &sh);
    phase_pair_t *pp = phase_pair_table(p, wn);
    if (!pp) return 0;
    int32_t *idx = pp->w_idx;
    for (int64_t g = 0; g < p->G; g++)
        for (int64_t ci = 0; ci < cig; ci++)
            for (int u = 0; u < sh.n; u++)
                for (int r = 0; r < 2; r++)
                    for (int64_t co = 0; co < cog; co++) {
                        int64_t kw = sh.tap[u][r];
                        *idx++ = kw < 0 ? -1
                                        : (int32_t)(g * ws[0] + ci * ws[1]
                                                  + co * ws[2] + kw * ws[3]);
                    }
    while (idx < pp->w_idx + wn) *idx++ = -1;
    plan->direct_phase_pair = pp;
    return 1;
}

void direct_phase_pair_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed) {
    const phase_pair_t *pp = plan->direct_phase_pair;
#if defined(__x86_64__) && defined(__GNUC__)
    gather_vectors(pp->w_idx, pp->wn / 16, plan->p.dt, user, pp->w_last,
            packed);
#else
    (void)pp, (void)user, (void)packed;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* What a step reads besides its position. */
typedef struct pp_step {
    const float *at;     /* the first input row's element at the step */
    int64_t pitch;       /* floats from one input row to the next */
    int masked;          /* a run of the step passes a row's ends (those
                            lanes masked: zeros) */
    int64_t cig, X, len; /* input channels, input row, output row */
    int64_t ostride;     /* elements between an output row's positions */
    const float *w;      /* the group's packed weights */
    const float *bias;   /* the group's first channel's */
    const epilogue_t *ep;
    const pp_shifts_t *sh;
    void *dst[PP_MAX_CHANNELS]; /* the group's output rows */
} pp_step_t;

/* One input channel's runs into the accumulators: LOAD(u, v) loads
 * vector v of shift u's run. */
#define PP_CHANNEL(CB, PV, LOAD)                                              \
    for (int u = 0; u < sh->n; u++, wc += 2 * (CB)) {                         \
        __m512 x[PV];                                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < (PV); v++) x[v] =         \
                LOAD(u, v);                                                   \
        _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++) {                 \
            if (sh->tap[u][r] < 0) continue;                                  \
            _Pragma("GCC unroll 4") for (int c = 0; c < (CB); c++) {          \
                __m512 wv = _mm512_set1_ps(wc[r * (CB) + c]);                 \
                _Pragma("GCC unroll 4") for (int v = 0; v < (PV); v++)        \
                    acc[r][c][v] = _mm512_fmadd_ps(wv, x[v], acc[r][c][v]);   \
            }                                                                 \
        }                                                                     \
    }
#define PP_LOAD(u, v) _mm512_loadu_ps(row + sh->s[u] + 16 * (v))
#define PP_MLOAD(u, v)                                                        \
    _mm512_maskz_loadu_ps(mk[u][v], row + sh->s[u] + 16 * (v))

/* store32_##OT's 32 positions into a row whose positions lie @p stride
 * elements apart (a channels-last output): rounded into a buffer as a
 * row's are, then put in place one by one. */
#define DEFINE_PP_STORE_STRIDED(OT, ET)                                       \
    AVX512 static void store32_strided_##OT(void *row, int64_t stride,       \
            int64_t x, __m512 a, __m512 b, int64_t left) {                   \
        ET buf[32];                                                           \
        store32_##OT(buf, 0, a, b, left);                                     \
        ET *to = (ET *)row + x * stride;                                      \
        for (int64_t i = 0; i < (left < 32 ? left : 32); i++)                 \
            to[i * stride] = buf[i];                                          \
    }
DEFINE_PP_STORE_STRIDED(f32, float)
DEFINE_PP_STORE_STRIDED(bf16, uint16_t)
DEFINE_PP_STORE_STRIDED(f16, uint16_t)

/* The step of 16 PV positions a phase from @p m0 on, for a group of CB
 * output channels, from the step's f32 rows, stored into rows of type OT:
 * per input channel and shift, PV loads feed the FMAs of each phase
 * with a tap there and of every channel. */
#define DEFINE_PP_STEP(OT, CB, PV)                                            \
    AVX512 static void pp_step_##OT##_##CB(const pp_step_t *a, int64_t m0) { \
        const pp_shifts_t *sh = a->sh;                                        \
        __m512 acc[2][CB][PV];                                                \
        _Pragma("GCC unroll 4") for (int c = 0; c < (CB); c++)                \
            _Pragma("GCC unroll 4") for (int v = 0; v < (PV); v++)            \
                acc[0][c][v] = acc[1][c][v] = _mm512_set1_ps(a->bias[c]);     \
        const float *wc = a->w, *row = a->at;                                 \
        if (a->masked) {                                                      \
            __mmask16 mk[PP_MAX_SHIFTS][PV];                                  \
            for (int u = 0; u < sh->n; u++)                                   \
                for (int v = 0; v < (PV); v++)                                \
                    mk[u][v] = lanes(m0 + 16 * v + sh->s[u], 0, a->X);        \
            for (int64_t ci = 0; ci < a->cig; ci++, row += a->pitch) {        \
                PP_CHANNEL(CB, PV, PP_MLOAD)                                  \
            }                                                                 \
        } else                                                                \
            for (int64_t ci = 0; ci < a->cig; ci++, row += a->pitch) {        \
                PP_CHANNEL(CB, PV, PP_LOAD)                                   \
            }                                                                 \
        _Pragma("GCC unroll 4") for (int v = 0; v < (PV); v++) {              \
            int64_t x = 2 * (m0 + 16 * v), left = a->len - x;                 \
            if (left <= 0) break;                                             \
            _Pragma("GCC unroll 4") for (int c = 0; c < (CB); c++) {          \
                __m512 e, o;                                                  \
                interleave_phases(a->ep, acc[0][c][v], acc[1][c][v], &e, &o); \
                if (a->ostride == 1)                                          \
                    store32_##OT(a->dst[c], x, e, o, left);                   \
                else                                                          \
                    store32_strided_##OT(a->dst[c], a->ostride, x, e, o,      \
                            left);                                            \
            }                                                                 \
        }                                                                     \
    }
#define DEFINE_PP_TYPE(OT)                                                    \
    DEFINE_PP_STEP(OT, 1, 4)                                                  \
    DEFINE_PP_STEP(OT, 2, 4)                                                  \
    DEFINE_PP_STEP(OT, 3, 4)                                                  \
    DEFINE_PP_STEP(OT, 4, 3)
DEFINE_PP_TYPE(f32)
DEFINE_PP_TYPE(bf16)
DEFINE_PP_TYPE(f16)
typedef void (*pp_step_fn)(const pp_step_t *, int64_t);

/* By type index (0 f32, 1 bf16, 2 f16) and channels of a group. */
static const pp_step_fn pp_steps[3][PP_MAX_CHANNELS] = {
        {pp_step_f32_1, pp_step_f32_2, pp_step_f32_3, pp_step_f32_4},
        {pp_step_bf16_1, pp_step_bf16_2, pp_step_bf16_3, pp_step_bf16_4},
        {pp_step_f16_1, pp_step_f16_2, pp_step_f16_3, pp_step_f16_4}};

/* What every step of an execution shares. */
typedef struct pp_run {
    const dgrad_plan_t *plan;
    const char *in;
    char *out;
    const float *w, *bias;
    epilogue_t ep;
    const pp_shifts_t *sh;
    pp_step_fn step;
    int64_t steps;
    int64_t is[3]; /* the strides of the rows the steps read (in) */
    /* an input copied into scratch (input_mode): the one it came from */
    pp_input_t mode;
    const void *user_in;
} pp_run_t;

/* Thread @p th of @p nth widens its share of a 16-bit input's span. */
static void pp_widen(const pp_run_t *r, int th, int nth) {
    int64_t begin, end;
    direct_share_of(input_span_of(r->plan), th, nth, &begin, &end);
    size_t es = dgrad_data_type_size(r->plan->p.dt);
    convert_run_to_f32(r->plan->p.dt,
            (const char *)r->user_in + (size_t)begin * es,
            (float *)(void *)r->in + begin, end - begin);
}

/* Thread @p th of @p nth transposes its share of a channels-last input's
 * blocks of 16 positions x 16 channels (a 16-bit one widened) into the
 * dense channel rows of r->in. */
AVX512 static void pp_transpose(const pp_run_t *r, int th, int nth) {
    const dgrad_plan_t *plan = r->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    dgrad_data_type_t dt = io_type(plan);
    size_t es = dgrad_data_type_size(dt);
    int64_t X = p->X[0], C = p->Cin, xb = (X + 15) / 16, cb = (C + 15) / 16;
    int64_t begin, end;
    direct_share_of(p->N * xb * cb, th, nth, &begin, &end);
    for (int64_t b = begin; b < end; b++) {
        int64_t c0 = b % cb * 16, x0 = b / cb % xb * 16, n = b / cb / xb;
        int64_t nc = C - c0 < 16 ? C - c0 : 16, nx = X - x0 < 16 ? X - x0 : 16;
        __mmask16 kc = (__mmask16)((1u << nc) - 1),
                  kx = (__mmask16)((1u << nx) - 1);
        const char *from = (const char *)r->user_in
                + (size_t)(n * is[0] + x0 * is[2] + c0) * es;
        __m512 v[16];
        for (int64_t j = 0; j < 16; j++) {
            const void *at = from + (size_t)(j * is[2]) * es;
            v[j] = j >= nx              ? _mm512_setzero_ps()
                    : dt == dgrad_f32  ? mload_f32(kc, at)
                    : dt == dgrad_bf16 ? mload_bf16(kc, at)
                                       : mload_f16(kc, at);
        }
        transpose16(v);
        float *row = (float *)(void *)r->in + (n * C + c0) * X + x0;
        for (int64_t c = 0; c < nc; c++)
            _mm512_mask_storeu_ps(row + c * X, kx, v[c]);
    }
}

/* Thread @p th of @p nth's share of the input's copy, before any step. */
static void pp_bring_in(void *arg, int th, int nth) {
    const pp_run_t *r = arg;
    if (r->mode == PP_IN_WIDENED) pp_widen(r, th, nth);
    if (r->mode == PP_IN_TRANSPOSED) pp_transpose(r, th, nth);
}

/* Step @p rest % steps of (image, group) rest / steps. */
static void pp_row_step(void *arg, int64_t rest, const int64_t *y,
        int64_t run, char *scratch) {
    static const float zeros[PP_MAX_CHANNELS];
    const pp_run_t *r = arg;
    const dgrad_plan_t *plan = r->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = r->is, *os = plan->out.io_strides;
    int64_t es = (int64_t)dgrad_data_type_size(io_type(plan));
    int64_t cig = cig_of(p), cog = cog_of(p);
    int64_t step = rest % r->steps, g = rest / r->steps % p->G,
            n = rest / r->steps / p->G;
    (void)y, (void)run, (void)scratch;
    /* the input as f32: in place, or its copy (r->is) */
    const float *in = (const float *)(const void *)r->in
            + n * is[0] + g * cig * is[1];
    int64_t m0 = step * 16 * step_vectors(cog);
    pp_step_t a = {.at = in + m0,
            .pitch = is[1],
            .masked = m0 + r->sh->smin < 0
                    || m0 + 16 * step_vectors(cog) + r->sh->smax > p->X[0],
            .cig = cig,
            .X = p->X[0],
            .len = p->Y[0],
            .ostride = os[2],
            .w = r->w + g * cig * r->sh->n * 2 * cog,
            .bias = r->bias ? r->bias + g * cog : zeros,
            .ep = &r->ep,
            .sh = r->sh};
    for (int64_t c = 0; c < cog; c++)
        a.dst[c] = r->out + (n * os[0] + (g * cog + c) * os[1]) * es;
    r->step(&a, m0);
}
#endif

void direct_phase_pair_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch) {
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &plan->p;
    dgrad_data_type_t dt = io_type(plan);
    int type = dt == dgrad_f32 ? 0 : dt == dgrad_bf16 ? 1 : 2;
    pp_run_t r = {.plan = plan,
            .in = in,
            .out = out,
            .w = w,
            .bias = bias,
            .step = pp_steps[type][cog_of(p) - 1],
            .sh = &plan->direct_phase_pair->sh,
            .steps = steps_of(p),
            .mode = input_mode(plan)};
    read_strides(plan, r.is);
    /* the whole chain is the epilogue (direct_phase_pair_applicable) */
    if (plan->post.fused) post_chain_epilogue(p, &r.ep);
    double macs = (double)p->N * (double)p->X[0] * (double)p->Cout
            * (double)cig_of(p) * (double)p->K[0];
    if (r.mode != PP_IN_PLACE) {
        r.user_in = in;
        r.in = scratch;
    }
    direct_for_rows_after(plan, p->N * p->G * r.steps, 0,
            macs >= PP_FORK_MACS ? macs : 0, 0, scratch, pp_bring_in, 1,
            pp_row_step, &r);
#else
    (void)plan, (void)in, (void)w, (void)bias, (void)out, (void)scratch;
#endif
}
