/*
 * The blocks loop's packed weights (direct_blocks_impl.h): for each
 * outer phase, outer tap combination and tap of the last axis, the
 * input channels' rows of S * Cout columns, as f32, made once for
 * constant weights and on every execution otherwise.
 */
#include "direct_blocks_impl.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "dtype.h"
#include "gather_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* @p n f16 values @p step apart widened by the CPU's conversion (the
 * software one branches on the exponent). */
__attribute__((target("f16c"))) static void f16_run_f16c(
        const uint16_t *src, int64_t step, int64_t n, float *dst) {
    for (int64_t j = 0; j < n; j++) dst[j] = _cvtsh_ss(src[j * step]);
}
#endif

/* @p n weights from element @p i of @p user on, @p step apart, as f32
 * into @p dst (weights may vary on every execution: the f32 copy is a
 * plain strided one; 16-bit ones are widened by a loop per type, not
 * element by element through dgrad_load's switch and double, which took
 * deconv_ci_3d:grouped in f16 with variable weights to 1.34-1.45x its
 * f32 time; short runs are widened one by one here: the runs are a
 * group's few output channels, and convert.c's strided widening called
 * for each took that loop 0.4-0.7 us longer in f16 and bf16, A/B builds
 * of `DGRAD_OWN_LOOP=blocks dgrad bench --no-raw`). */
static void weights_run(const void *user, dgrad_data_type_t dt, int64_t i,
        int64_t step, int64_t n, float *dst) {
    if (dt == dgrad_f32) {
        const float *src = (const float *)user + i;
        for (int64_t j = 0; j < n; j++) dst[j] = src[j * step];
        return;
    }
    const uint16_t *src = (const uint16_t *)user + i;
    if (step == 1 && n >= 8) {
        convert_run_to_f32(dt, src, dst, n);
    } else if (dt == dgrad_bf16) {
        for (int64_t j = 0; j < n; j++)
            dst[j] = dgrad_bf16_to_f32(src[j * step]);
#if defined(__x86_64__) && defined(__GNUC__)
    } else if (cpu_has_avx2_fma()) { /* F16C with it, as convert.c has */
        f16_run_f16c(src, step, n, dst);
#endif
    } else {
        for (int64_t j = 0; j < n; j++)
            dst[j] = dgrad_f16_to_f32(src[j * step]);
    }
}

/* Rows (of padded_cols floats) of the packed weights. */
int64_t blocks_packed_rows(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    return outer_phases(p) * outer_taps(p) * axis_taps(p, p->nsp - 1)
            * blocks_term_rows(plan);
}

/* Where the packed rows are of at most this many columns, AVX-512
 * gathers a row at a time (column j's offset in the user's weights, past
 * the row's own, in an index vector made once per share): with variable
 * weights deconv_ci_3d:grouped (108 rows of 16 columns) took 13.1-13.4
 * us packed element by element, 12.3-12.5 gathered (NXC, three runs
 * each). 16-bit weights are gathered too (gather16): element by element
 * their packing took a fifth of that problem's bf16 time (177 samples
 * against the list kernels' 437; the f32 twin's gathers 21 against 286:
 * `perf record` of `DGRAD_OWN_LOOP=blocks dgrad bench --no-raw --dt
 * bf16`, Sapphire Rapids VM). Under
 * PACK_GATHER_MIN_ROWS rows (the ONNX examples' 1-9) the rows go element
 * by element, with no index vectors to make: the same time either way
 * there (0.31-0.34 us for onnx:convtranspose_1d). */
#define PACK_GATHER_MAX_COLS 64
#define PACK_GATHER_MIN_ROWS 16

int blocks_pack_gathers(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t span = (p->G - 1) * ws[0] + (p->Cout / p->G - 1) * ws[2]
            + (p->S[l] - 1) * ws[3 + l];
    return cpu_has_avx512f() && !plan->direct_avx2
            && padded_cols(p) <= PACK_GATHER_MAX_COLS && span >= 0
            && blocks_packed_rows(plan) >= PACK_GATHER_MIN_ROWS
            && span <= INT32_MAX;
#else
    (void)plan;
    return 0;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* A packed row's columns, 16 at a time (blocks_pack_gathers): their
 * offsets past the row's in the user's weights, their b and group, and
 * which are columns at all (the rest pad the row); and the offset of the
 * weights' last element. */
typedef struct pack_cols {
    __m512i off[PACK_GATHER_MAX_COLS / 16], b[PACK_GATHER_MAX_COLS / 16],
            g[PACK_GATHER_MAX_COLS / 16];
    __mmask16 real[PACK_GATHER_MAX_COLS / 16];
    int64_t last;
} pack_cols_t;

__attribute__((target("avx512f"))) static void pack_cols_init(
        const dgrad_problem_t *p, pack_cols_t *pc) {
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t cog = p->Cout / p->G, nc = cols(p);
    pc->last = weights_last_offset(p);
    /* column j = (b, g, o), o fastest: counted, not divided */
    int32_t bj = 0, gj = 0, oj = 0;
    for (int64_t c = 0; c < padded_cols(p) / 16; c++) {
        int32_t off[16], b[16], g[16];
        unsigned real = 0;
        for (int64_t L = 0; L < 16; L++) {
            b[L] = bj;
            g[L] = gj;
            off[L] = (int32_t)(gj * ws[0] + oj * ws[2] + bj * ws[3 + l]);
            if (c * 16 + L < nc) real |= 1u << L;
            if (++oj < cog) continue;
            oj = 0;
            if (++gj < p->G) continue;
            gj = 0;
            bj++;
        }
        pc->off[c] = _mm512_loadu_si512(off);
        pc->b[c] = _mm512_loadu_si512(b);
        pc->g[c] = _mm512_loadu_si512(g);
        pc->real[c] = (__mmask16)real;
    }
}

/* Packed row @p row of tap @p t, whose weights start at element @p at of
 * @p user (the row's own offset), its columns of group @p g0 only
 * (block-diagonal weights) or of all (@p g0 < 0), none where @p reached
 * is 0. */
__attribute__((target("avx512f"))) static void pack_row_gather(
        const dgrad_problem_t *p, const pack_cols_t *pc, const void *user,
        int64_t at, int64_t t, int64_t g0, int reached, float *row) {
    int l = p->nsp - 1;
    __m512i taps = _mm512_set1_epi32((int)(p->K[l] - p->S[l] * t)),
            group = _mm512_set1_epi32((int)g0);
    for (int64_t c = 0; c < padded_cols(p) / 16; c++) {
        __mmask16 m = reached ? pc->real[c] : 0;
        m &= _mm512_cmplt_epi32_mask(pc->b[c], taps);
        if (g0 >= 0) m &= _mm512_cmpeq_epi32_mask(pc->g[c], group);
        _mm512_storeu_ps(row + 16 * c,
                p->dt == dgrad_f32
                        ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m,
                                  pc->off[c], (const float *)user + at, 4)
                        : gather16(p->dt, pc->off[c], m,
                                  (const uint16_t *)user + at,
                                  pc->last - at));
    }
}
#endif

/* Packed row @p row of tap @p t element by element: the columns of
 * groups [@p g0, @p g1) from the user's weights at @p off (the row's
 * offset), none where @p reached is 0, zeros elsewhere. */
static void pack_row(const dgrad_problem_t *p, const void *user,
        int64_t off, int64_t t, int64_t g0, int64_t g1, int reached,
        float *row) {
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t C = p->Cout, cog = p->Cout / p->G, nc = cols(p);
    for (int64_t b = 0; b < p->S[l]; b++) {
        int64_t k = b + p->S[l] * t;
        memset(row + b * C, 0, (size_t)C * sizeof(float));
        if (!reached || k >= p->K[l]) continue;
        for (int64_t g = g0; g < g1; g++)
            weights_run(user, p->dt, off + g * ws[0] + k * ws[3 + l], ws[2],
                    cog, row + b * C + g * cog);
    }
    memset(row + nc, 0, (size_t)(padded_cols(p) - nc) * sizeof(float));
}

void blocks_pack_rows(const dgrad_plan_t *plan, const void *user,
        float *packed, int64_t r0, int64_t r1) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t np = padded_cols(p), T = axis_taps(p, l), ot = outer_taps(p),
            cig = p->Cin / p->G, R = blocks_term_rows(plan);
    int lanes = blocks_lanes_form(plan);
#if defined(__x86_64__) && defined(__GNUC__)
    int gathers = blocks_pack_gathers(plan);
    pack_cols_t pc;
    if (gathers) pack_cols_init(p, &pc);
#endif
    float *row = packed + r0 * np;
    /* row r is (ph, u, t, ci), ci fastest: counted, not divided (the
     * divisions took most of deconv_ci_3d:grouped's packing); the outer
     * kernel offset is decoded where (ph, u) changes */
    int64_t ci = r0 % R, t = r0 / R % T, u = r0 / R / T % ot,
            ph = r0 / R / T / ot, off = 0;
    int reached = 0, decoded = 0;
    for (int64_t r = r0; r < r1; r++, row += np) {
        if (!decoded) {
            int64_t rest = ph, urest = u;
            off = 0;
            reached = 1;
            for (int i = l - 1; i >= 0; i--) {
                int64_t k = rest % p->S[i]
                        + p->S[i] * (urest % axis_taps(p, i));
                rest /= p->S[i];
                urest /= axis_taps(p, i);
                reached &= k < p->K[i];
                off += k * ws[3 + i];
            }
            decoded = 1;
        }
        /* block-diagonal: input channel ci of group g reaches that
         * group's columns; lanes: row ci is channel ci of every group */
        int64_t g0 = lanes ? 0 : ci / cig, g1 = lanes ? p->G : g0 + 1,
                i = lanes ? ci : ci - g0 * cig;
#if defined(__x86_64__) && defined(__GNUC__)
        if (gathers)
            pack_row_gather(p, &pc, user,
                    off + i * ws[1] + p->S[l] * t * ws[3 + l], t,
                    lanes ? -1 : g0, reached, row);
        else
#endif
            pack_row(p, user, off + i * ws[1], t, g0, g1,
                    reached, row);
        if (++ci < R) continue;
        ci = 0;
        if (++t < T) continue;
        t = 0;
        decoded = 0;
        if (++u == ot) u = 0, ph++;
    }
    if (r1 == blocks_packed_rows(plan))
        memset(row, 0, BLOCKS_READ_SLACK * sizeof(float));
}

/* Weights as f32 [outer phase][outer taps][tap t of the last axis][Cin]
 * [columns b * Cout + co, padded], then BLOCKS_READ_SLACK zeros: column
 * b of tap t holds kernel position b + S * t of the last axis, and outer
 * tap combination u of phase a holds positions a + S * u; 0 where that
 * passes the kernel, off the group of the row's input channel, and in
 * the padding. */
void direct_blocks_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    blocks_pack_rows(plan, user, packed, 0, blocks_packed_rows(plan));
}

