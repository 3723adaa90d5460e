/*
 * dgrad's own loop for the phase pair loop's bf16 problems on AMX tiles
 * (1D, stride 2, few output channels a group: masknet's 64 -> 3
 * channels, k7 s2), NCX rows in and out. The phase pair loop
 * (direct_phase_pair.c) runs them at the f32 FMA rate; oneDNN's AMX
 * kernels want channels-last tensors and their own weights' layout.
 *
 * As a product of tiles: per input shift s (phase_pair_shifts), the
 * output rows of both phases at 16 positions m (C: 2 x cog rows, phase
 * r's channel co in row r cog + co) gain A x B, where A holds the
 * weights of the tap at s of each row's phase (0 where the phase has
 * none) over 32 input channels, and B the input at positions m + s of
 * those channels, as the bf16 product wants it: each row of B a pair of
 * channels, each 32-bit lane of it one position of both. So the input is
 * brought in once an execution as rows of channel pairs interleaved
 * (NCX: a pair of rows zero-extended into one of 32-bit lanes), padded
 * with zeros past its ends and to whole pairs and 32 channels; a shift
 * is then only where B's 16 rows start, and each tile of C takes one
 * product per shift and 32 input channels. A step keeps four such
 * tiles (64 positions a phase); the products sum in f32, the bias is
 * added, the two phases' rows are interleaved into the output rows and
 * rounded once, as the phase pair loop stores them.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"
#include "direct_phase_pair.h"

#include <stdint.h>
#include <string.h>


#if defined(__x86_64__) && defined(__GNUC__)
#include "gather_avx512.h"
#include "rows_avx512.h"

#define AMX                                                                   \
    __attribute__((target(                                                    \
            "avx512f,avx512bw,avx512vl,prfchw,amx-tile,amx-bf16")))
#endif

/* Rows of a C tile at most: 2 phases x the output channels of a group. */
#define PPA_MAX_CHANNELS 8
/* Tiles of C a step: 16 positions a phase each (the other tiles: one of
 * weights, three of input). */
#define PPA_BLOCKS 4
#define PPA_CHUNK (16 * PPA_BLOCKS)
/* Chunks a step at most (one tile configuration each step). */
#define PPA_STEP_CHUNKS 4
/* 32-bit lanes of the interleaved input in scratch at most. */
#define PPA_MAX_COPY ((int64_t)1 << 24)
/* Multiply-adds from which the steps are shared over threads. Two
 * threads gained little on this VM: masknet's channels on 8192
 * positions (1.1e7 multiply-adds) took 143-149 us on two, 130-131 at
 * best (medians 235-357) on one; on 16384 (2.2e7) 325-340 against
 * 429-558 (`OMP_NUM_THREADS=1|2 DGRAD_OWN_LOOP=phase_pair_amx dgrad
 * bench --dt bf16 --data-format NCX --no-raw --reps 60`, twice each,
 * Sapphire Rapids VM). */
#define PPA_FORK_MACS 1.6e7

static int64_t cig_of(const dgrad_problem_t *p) {
    return p->Cin / p->G;
}

static int64_t cog_of(const dgrad_problem_t *p) {
    return p->Cout / p->G;
}

/* Blocks of 32 input channels of a group (16 pairs: B's rows). */
static int64_t kblocks_of(const dgrad_problem_t *p) {
    return (cig_of(p) + 31) / 32;
}

/* Chunks of a row: of the even phase's positions (the odd one has as
 * many or one fewer). */
static int64_t chunks_of(const dgrad_problem_t *p) {
    return ((p->Y[0] + 1) / 2 + PPA_CHUNK - 1) / PPA_CHUNK;
}

static int64_t steps_of(const dgrad_problem_t *p) {
    return (chunks_of(p) + PPA_STEP_CHUNKS - 1) / PPA_STEP_CHUNKS;
}

/* 32-bit lanes of an interleaved row: every position a chunk reads,
 * from the least shift's on, in whole vectors of 32. */
static int64_t lanes_of(const dgrad_problem_t *p, const pp_shifts_t *sh) {
    return (chunks_of(p) * PPA_CHUNK + sh->smax - sh->smin + 31) / 32 * 32;
}

/* Lanes from one interleaved row to the next: an odd number of 64-byte
 * lines, so that a tile's 16 rows fall in 16 sets of the L1 cache
 * rather than in one where the rows are whole pages. Masknet's
 * channels on 8192 positions (rows of 32 KiB): 126-128 us at best
 * against 131-132 (medians 143-149 against 147-149; `OMP_NUM_THREADS=1
 * DGRAD_OWN_LOOP=phase_pair_amx dgrad bench --dt bf16 --data-format NCX
 * --no-raw --reps 200`, twice each, Sapphire Rapids VM). */
static int64_t pitch_of(const dgrad_problem_t *p, const pp_shifts_t *sh) {
    return lanes_of(p, sh) + 16;
}

/* Interleaved rows: per image and group, 16 per block of 32 channels. */
static int64_t copy_lanes(const dgrad_problem_t *p, const pp_shifts_t *sh) {
    return p->N * p->G * kblocks_of(p) * 16 * pitch_of(p, sh);
}

int direct_phase_pair_amx_applicable(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    pp_shifts_t sh;
    /* bf16 read and written by the loop, NCX rows in and out */
    return cpu_has_amx_bf16() && !plan->staged && p->dt == dgrad_bf16
            && phase_pair_fits(plan, PPA_MAX_CHANNELS) && is[2] == 1
            && os[2] == 1 && phase_pair_shifts(p, &sh)
            && copy_lanes(p, &sh) <= PPA_MAX_COPY;
#else
    (void)plan;
    return 0;
#endif
}

size_t direct_phase_pair_amx_scratch(const dgrad_plan_t *plan) {
    pp_shifts_t sh;
    if (!phase_pair_shifts(&plan->p, &sh)) return 0;
    return (size_t)copy_lanes(&plan->p, &sh) * sizeof(uint32_t);
}

/* Packed weights: per group, shift and block of 32 input channels, a
 * tile of A (2 cog rows of 32 bf16), in the front half of as many f32 as
 * elements (the own loops' packed weights are f32 buffers). */
static int64_t weights_elements(const dgrad_problem_t *p,
        const pp_shifts_t *sh) {
    return p->G * sh->n * kblocks_of(p) * 2 * cog_of(p) * 32;
}

size_t direct_phase_pair_amx_weights_size(const dgrad_plan_t *plan) {
    pp_shifts_t sh;
    if (!phase_pair_shifts(&plan->p, &sh)) return 0;
    return (size_t)weights_elements(&plan->p, &sh) * sizeof(float);
}

int direct_phase_pair_amx_prepare(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int64_t cig = cig_of(p), cog = cog_of(p), kb = kblocks_of(p);
    pp_shifts_t sh;
    phase_pair_shifts(p, &sh);
    phase_pair_t *pa = phase_pair_table(p, weights_elements(p, &sh));
    if (!pa) return 0;
    int32_t *idx = pa->w_idx;
    for (int64_t g = 0; g < p->G; g++)
        for (int u = 0; u < sh.n; u++)
            for (int64_t b = 0; b < kb; b++)
                for (int r = 0; r < 2; r++)
                    for (int64_t co = 0; co < cog; co++)
                        for (int64_t k = 0; k < 32; k++) {
                            int64_t kw = sh.tap[u][r], ci = 32 * b + k;
                            *idx++ = kw < 0 || ci >= cig ? -1
                                    : (int32_t)(g * ws[0] + ci * ws[1]
                                              + co * ws[2] + kw * ws[3]);
                        }
    plan->direct_phase_pair = pa;
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The weights at the table's offsets (-1: 0), 16 at a time, as bf16.
 * Not gathered as f32 and then narrowed in place: GCC 12.2 at -O2
 * dropped the call of a function narrowing its argument's own floats
 * into its front half (vector stores through a pointer cast from the
 * argument; its objdump showed no call). */
AVX512 static void gather_bf16(const phase_pair_t *pa, const void *user,
        uint16_t *to) {
    for (int64_t v = 0; v < pa->wn / 16; v++) {
        __m512i i = _mm512_loadu_si512(pa->w_idx + 16 * v);
        __mmask16 k = _mm512_cmpge_epi32_mask(i, _mm512_setzero_si512());
        __m512 w = gather16(dgrad_bf16, i, k, user, pa->w_last);
        _mm256_storeu_si256((__m256i *)(void *)(to + 16 * v),
                _mm512_cvtepi32_epi16(
                        _mm512_srli_epi32(_mm512_castps_si512(w), 16)));
    }
}
#endif

void direct_phase_pair_amx_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed) {
#if defined(__x86_64__) && defined(__GNUC__)
    gather_bf16(plan->direct_phase_pair, user,
            (uint16_t *)(void *)packed);
#else
    (void)plan, (void)user, (void)packed;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* What every step of an execution shares. */
typedef struct ppa_run {
    const dgrad_plan_t *plan;
    const uint16_t *in;    /* the user's input */
    uint32_t *pairs;       /* its interleaved rows (scratch) */
    char *out;
    const uint16_t *w;     /* packed tiles of A */
    const float *bias;
    epilogue_t ep;
    const pp_shifts_t *sh;
    int64_t steps, lanes, pitch, kb;
} ppa_run_t;

/* The lanes of the 32 positions from @p m0 that lie in [0, X). */
AVX512 static inline __mmask32 lanes32(int64_t m0, int64_t X) {
    int64_t a = m0 < 0 ? -m0 : 0, b = X - m0 < 32 ? X - m0 : 32;
    if (b <= a) return 0;
    uint64_t bits = ((uint64_t)1 << b) - ((uint64_t)1 << a);
    return (__mmask32)bits;
}

/* Thread @p th of @p nth interleaves its share of the input's pairs of
 * channel rows: lane j of a pair's row holds position j + smin of both
 * channels (the first in its low half), 0 outside the row and for a
 * channel past the group's. */
AVX512 static void ppa_interleave(void *arg, int th, int nth) {
    const ppa_run_t *r = arg;
    const dgrad_problem_t *p = &r->plan->p;
    const int64_t *is = r->plan->in.io_strides;
    int64_t cig = cig_of(p), X = p->X[0], rows = r->kb * 16, begin, end;
    const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0),
                  second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    direct_share_of(p->N * p->G * rows, th, nth, &begin, &end);
    for (int64_t row = begin; row < end; row++) {
        int64_t cp = row % rows, g = row / rows % p->G,
                n = row / rows / p->G;
        const uint16_t *src[2];
        for (int h = 0; h < 2; h++) {
            int64_t c = 2 * cp + h;
            src[h] = c < cig ? r->in + n * is[0] + (g * cig + c) * is[1]
                             : NULL;
        }
        uint32_t *to = r->pairs + row * r->pitch;
        for (int64_t j = 0; j < r->lanes; j += 32) {
            int64_t m = j + r->sh->smin;
            __mmask32 k = lanes32(m, X);
            __m512i v[2];
            for (int h = 0; h < 2; h++)
                v[h] = src[h] && k ? _mm512_maskz_loadu_epi16(k, src[h] + m)
                                   : _mm512_setzero_si512();
            /* per 128-bit lane: positions 0-3 of each quarter (lo),
             * 4-7 (hi); then the quarters put back in order */
            __m512i lo = _mm512_unpacklo_epi16(v[0], v[1]),
                    hi = _mm512_unpackhi_epi16(v[0], v[1]);
            _mm512_storeu_si512(to + j,
                    _mm512_permutex2var_epi64(lo, first, hi));
            _mm512_storeu_si512(to + j + 16,
                    _mm512_permutex2var_epi64(lo, second, hi));
        }
    }
}

/* The tile configuration: palette 1; C tiles 0-3 and A (4) of @p rows
 * rows, B (5-7) of 16 (channel pairs); 64 bytes a row each. */
typedef struct ppa_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} ppa_config_t;

static void ppa_configure(ppa_config_t *c, int rows) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 8; t++) {
        c->colsb[t] = 64;
        c->rows[t] = (uint8_t)(t < 5 ? rows : 16);
    }
}

/* GCC's tile intrinsics are asm statements that name no memory they
 * read or write (beyond ldtilecfg's first 8 bytes): a compiler barrier
 * keeps the configuration's and the input's stores before them and the
 * stored tiles' loads after. */
#define PPA_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

/* Tile @p c of C gains A (4) times B (@p bt) loaded from @p at. */
#define PPA_PRODUCT(c, bt, at, stride)                                        \
    do {                                                                      \
        _tile_loadd(bt, at, stride);                                          \
        _tile_dpbf16ps(c, 4, bt);                                             \
    } while (0)

/* Chunk @p m0 (64 positions a phase from m0 on) of image @p n and group
 * @p g into tiles 0-3, then the output rows, under the step's tile
 * configuration. */
AMX static void ppa_chunk(const ppa_run_t *r, int64_t n, int64_t g,
        int64_t m0) {
    static const float zeros[PPA_MAX_CHANNELS];
    const dgrad_problem_t *p = &r->plan->p;
    const int64_t *os = r->plan->out.io_strides;
    const pp_shifts_t *sh = r->sh;
    int64_t cog = cog_of(p), rows = 2 * cog;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint32_t *pairs = r->pairs + (n * p->G + g) * r->kb * 16 * r->pitch;
    const uint16_t *a = r->w + g * sh->n * r->kb * rows * 32;
    long stride = (long)(r->pitch * (int64_t)sizeof(uint32_t));
    for (int u = 0; u < sh->n; u++)
        for (int64_t b = 0; b < r->kb; b++, a += rows * 32) {
            const uint32_t *at = pairs + b * 16 * r->pitch + m0 + sh->s[u]
                    - sh->smin;
            _tile_loadd(4, a, 64);
            PPA_PRODUCT(0, 5, at, stride);
            PPA_PRODUCT(1, 6, at + 16, stride);
            PPA_PRODUCT(2, 7, at + 32, stride);
            PPA_PRODUCT(3, 5, at + 48, stride);
        }
    _Alignas(64) float c[PPA_BLOCKS][16][16];
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    _tile_stored(2, c[2], 64);
    _tile_stored(3, c[3], 64);
    PPA_MEMORY_BARRIER();
    const float *bias = r->bias ? r->bias + g * cog : zeros;
    for (int64_t co = 0; co < cog; co++) {
        char *row = r->out + (n * os[0] + (g * cog + co) * os[1])
                * (int64_t)sizeof(uint16_t);
        __m512 bv = _mm512_set1_ps(bias[co]);
        for (int bl = 0; bl < PPA_BLOCKS; bl++) {
            int64_t x = 2 * (m0 + 16 * bl), left = p->Y[0] - x;
            if (left <= 0) break;
            __m512 e, o;
            interleave_phases(&r->ep,
                    _mm512_add_ps(_mm512_load_ps(c[bl][co]), bv),
                    _mm512_add_ps(_mm512_load_ps(c[bl][cog + co]), bv), &e,
                    &o);
            store32_bf16(row, x, e, o, left);
        }
    }
}

/* Step @p rest % steps of (image, group) rest / steps: up to
 * PPA_STEP_CHUNKS chunks under one tile configuration (ldtilecfg, then
 * the first tilezero, took a tenth of the samples of steps of one chunk
 * in `perf record` of masknet). */
AMX static void ppa_row_step(void *arg, int64_t rest, const int64_t *y,
        int64_t run, char *scratch) {
    const ppa_run_t *r = arg;
    const dgrad_problem_t *p = &r->plan->p;
    int64_t step = rest % r->steps, ng = rest / r->steps;
    int64_t k0 = step * PPA_STEP_CHUNKS, k1 = k0 + PPA_STEP_CHUNKS,
            chunks = chunks_of(p);
    (void)y, (void)run, (void)scratch;
    _Alignas(64) ppa_config_t cfg;
    ppa_configure(&cfg, (int)(2 * cog_of(p)));
    PPA_MEMORY_BARRIER();
    _tile_loadconfig(&cfg);
    for (int64_t k = k0; k < (k1 < chunks ? k1 : chunks); k++)
        ppa_chunk(r, ng / p->G, ng % p->G, k * PPA_CHUNK);
    _tile_release();
}
#endif

void direct_phase_pair_amx_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch) {
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &plan->p;
    const phase_pair_t *pa = plan->direct_phase_pair;
    ppa_run_t r = {.plan = plan,
            .in = in,
            .pairs = (uint32_t *)(void *)scratch,
            .out = out,
            .w = (const uint16_t *)(const void *)w,
            .bias = bias,
            .sh = &pa->sh,
            .steps = steps_of(p),
            .lanes = lanes_of(p, &pa->sh),
            .pitch = pitch_of(p, &pa->sh),
            .kb = kblocks_of(p)};
    /* the whole chain is the epilogue (direct_phase_pair_amx_applicable) */
    if (plan->post.fused) post_chain_epilogue(p, &r.ep);
    double macs = (double)p->N * (double)p->X[0] * (double)p->Cout
            * (double)cig_of(p) * (double)p->K[0];
    direct_for_rows_after(plan, p->N * p->G * r.steps, 0,
            macs >= PPA_FORK_MACS ? macs : 0, 0, scratch, ppa_interleave, 1,
            ppa_row_step, &r);
#else
    (void)plan, (void)in, (void)w, (void)bias, (void)out, (void)scratch;
#endif
}
