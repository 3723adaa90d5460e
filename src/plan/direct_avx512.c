/*
 * The rows loop's kernels for AVX-512 (direct.c chooses them by the
 * CPU's flags, cpu.c): phase values of a block of up to 4 output
 * channels, both phases of stride 2 at once (up to 12 channels on f32
 * rows), both phases sharing each input run's loads where the window is
 * 3 (up to 12 channels, on padded f32 copies, storing f32 or rounding
 * into bf16 or f16), and the interleaving of two phase rows; for f32,
 * bf16 and f16 inputs (16-bit ones widened in registers: AVX-512BW).
 */
#include "direct_rows.h"

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include "rows_avx512.h"

/* The same with AVX-512, for a block of CB channels and input type T:
 * VEC_BLOCK vectors of 16 positions per visit of the term list, each term
 * one load (masked at its ends) and CB FMAs per vector. */
#define DEFINE_PHASE_VALUES(T, ES, CB)                                        \
    AVX512 static void phase_values_##T##_##CB(const void *in,               \
            const term_t *t, int n, const float *bias, int64_t count,         \
            float *const *v) {                                                \
        for (int64_t m0 = 0; m0 < count; m0 += 16 * VEC_BLOCK) {              \
            __m512 acc[CB][VEC_BLOCK];                                        \
            _Pragma("GCC unroll 4") for (int j = 0; j < CB; j++)              \
                _Pragma("GCC unroll 4") for (int u = 0; u < VEC_BLOCK; u++)   \
                    acc[j][u] = _mm512_set1_ps(bias[j]);                      \
            for (int k = 0; k < n; k++) {                                     \
                const char *src = (const char *)((uintptr_t)in                \
                        + (uintptr_t)((t[k].off + m0) * (int64_t)(ES)));      \
                __m512 w[CB];                                                 \
                _Pragma("GCC unroll 4") for (int j = 0; j < CB; j++)          \
                    w[j] = _mm512_set1_ps(t[k].w[j]);                         \
                if (t[k].lo <= m0 && m0 + 16 * VEC_BLOCK <= t[k].hi) {        \
                    _Pragma("GCC unroll 4") for (int u = 0; u < VEC_BLOCK;    \
                            u++) {                                            \
                        __m512 x = load_##T(src + 16 * (ES) * u);             \
                        _Pragma("GCC unroll 4") for (int j = 0; j < CB; j++)  \
                            acc[j][u] = _mm512_fmadd_ps(w[j], x, acc[j][u]);  \
                    }                                                         \
                } else if (t[k].lo < m0 + 16 * VEC_BLOCK && t[k].hi > m0) {   \
                    _Pragma("GCC unroll 4") for (int u = 0; u < VEC_BLOCK;    \
                            u++) {                                            \
                        __mmask16 mk = lanes(m0 + 16 * u, t[k].lo, t[k].hi);  \
                        __m512 x = mload_##T(mk, src + 16 * (ES) * u);        \
                        _Pragma("GCC unroll 4") for (int j = 0; j < CB; j++)  \
                            acc[j][u] = _mm512_fmadd_ps(w[j], x, acc[j][u]);  \
                    }                                                         \
                }                                                             \
            }                                                                 \
            _Pragma("GCC unroll 4") for (int u = 0; u < VEC_BLOCK; u++) {     \
                int64_t left = count - m0 - 16 * u;                           \
                if (left <= 0) break;                                         \
                __mmask16 mk = left >= 16 ? (__mmask16)0xffff                 \
                                          : (__mmask16)((1u << left) - 1);    \
                _Pragma("GCC unroll 4") for (int j = 0; j < CB; j++)          \
                    _mm512_mask_storeu_ps(v[j] + m0 + 16 * u, mk, acc[j][u]); \
            }                                                                 \
        }                                                                     \
    }
#define DEFINE_PHASE_VALUES_ALL(T, ES)                                        \
    DEFINE_PHASE_VALUES(T, ES, 1)                                             \
    DEFINE_PHASE_VALUES(T, ES, 2)                                             \
    DEFINE_PHASE_VALUES(T, ES, 3)                                             \
    DEFINE_PHASE_VALUES(T, ES, 4)
DEFINE_PHASE_VALUES_ALL(f32, 4)
DEFINE_PHASE_VALUES_ALL(bf16, 2)
DEFINE_PHASE_VALUES_ALL(f16, 2)

static const phase_values_fn phase_values_avx512[3][CO_BLOCK] = {
        {phase_values_f32_1, phase_values_f32_2, phase_values_f32_3,
                phase_values_f32_4},
        {phase_values_bf16_1, phase_values_bf16_2, phase_values_bf16_3,
                phase_values_bf16_4},
        {phase_values_f16_1, phase_values_f16_2, phase_values_f16_3,
                phase_values_f16_4}};

/* Output row from its two phases (S = 2): even positions from @p e,
 * odd from @p o. Plain stores: streaming ones measured 1.4x slower on the
 * grouped 2D example (its 6.4 MB output stays in the L3 cache between
 * executions; `dgrad bench`, AMD EPYC Zen 5). */
AVX512 void direct_avx512_interleave2(const float *e, const float *o,
        int64_t len, float *out) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3,
            18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27,
            11, 26, 10, 25, 9, 24, 8);
    int64_t x = 0;
    for (; x + 32 <= len; x += 32) {
        __m512 a = _mm512_loadu_ps(e + x / 2), b = _mm512_loadu_ps(o + x / 2);
        _mm512_storeu_ps(out + x, _mm512_permutex2var_ps(a, lo, b));
        _mm512_storeu_ps(out + x + 16, _mm512_permutex2var_ps(a, hi, b));
    }
    for (; x < len; x++) out[x] = (x & 1) ? o[x / 2] : e[x / 2];
}

/* Both phases of stride 2 at once (even positions from terms @p te, odd
 * from @p to), for a block of CB channels: per 32 output positions the
 * two 16-lane accumulators are interleaved by permutes and stored straight
 * into the f32 rows @p dst (length @p len): no values buffer, no second
 * pass. Whole vectors are stored unmasked, only the row's last one
 * masked: with every store masked the bare loop took 1.2-1.3x the time
 * on the grouped 2D and 3D (56^3) specification examples (`bare ms` of
 * `DGRAD_OWN_LOOP=only dgrad bench --no-raw --post-ops relu --data-format
 * NCX g4mb1ic20ih224oc8oh447kh3sh2ph1 g4mb1ic20id56oc8od111kd3sd2pd1`,
 * two runs of each build, AMD EPYC Zen 5). */
#define PAIR_VEC 2
#define DEFINE_PHASE_PAIR(T, ES, CB, PV)                                      \
    AVX512 static void phase_pair_##T##_##CB(const void *in,                 \
            const term_t *te, int ne, terms_span_t es, const term_t *to,      \
            int no, terms_span_t os, const float *bias, const epilogue_t *ep, \
            int64_t len, void *const *dst) {                                  \
        (void)es; /* its own range tests, per term and step */                \
        (void)os;                                                             \
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19,   \
                3, 18, 2, 17, 1, 16, 0);                                      \
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12,   \
                27, 11, 26, 10, 25, 9, 24, 8);                                \
        int64_t count = (len + 1) / 2;                                        \
        for (int64_t m0 = 0; m0 < count; m0 += 16 * (PV)) {               \
            __m512 acc[2][CB][(PV)];                                      \
            _Pragma("GCC unroll 2") for (int ph = 0; ph < 2; ph++) {          \
                const term_t *t = ph ? to : te;                               \
                int n = ph ? no : ne;                                         \
                _Pragma("GCC unroll 12") for (int j = 0; j < CB; j++)          \
                    _Pragma("GCC unroll 4") for (int u = 0; u < (PV); u++) \
                        acc[ph][j][u] = _mm512_set1_ps(bias[j]);              \
                for (int k = 0; k < n; k++) {                                 \
                    const char *src = (const char *)((uintptr_t)in            \
                            + (uintptr_t)((t[k].off + m0) * (int64_t)(ES)));  \
                    __m512 w[CB];                                             \
                    _Pragma("GCC unroll 12") for (int j = 0; j < CB; j++)      \
                        w[j] = _mm512_set1_ps(t[k].w[j]);                     \
                    if (t[k].lo <= m0 && m0 + 16 * (PV) <= t[k].hi) {     \
                        _Pragma("GCC unroll 4") for (int u = 0; u < (PV); \
                                u++) {                                        \
                            __m512 x = load_##T(src + 16 * (ES) * u);         \
                            _Pragma("GCC unroll 12") for (int j = 0; j < CB;   \
                                    j++)                                      \
                                acc[ph][j][u] = _mm512_fmadd_ps(w[j], x,      \
                                        acc[ph][j][u]);                       \
                        }                                                     \
                    } else if (t[k].lo < m0 + 16 * (PV)                   \
                            && t[k].hi > m0) {                                \
                        _Pragma("GCC unroll 4") for (int u = 0; u < (PV); \
                                u++) {                                        \
                            __mmask16 mk = lanes(m0 + 16 * u, t[k].lo,        \
                                    t[k].hi);                                 \
                            __m512 x = mload_##T(mk, src + 16 * (ES) * u);    \
                            _Pragma("GCC unroll 12") for (int j = 0; j < CB;   \
                                    j++)                                      \
                                acc[ph][j][u] = _mm512_fmadd_ps(w[j], x,      \
                                        acc[ph][j][u]);                       \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
            _Pragma("GCC unroll 4") for (int u = 0; u < (PV); u++) {      \
                int64_t x = 2 * (m0 + 16 * u), left = len - x;                \
                if (left <= 0) break;                                         \
                _Pragma("GCC unroll 12") for (int j = 0; j < CB; j++) {       \
                    __m512 a = _mm512_permutex2var_ps(acc[0][j][u], lo,       \
                            acc[1][j][u]);                                    \
                    __m512 b = _mm512_permutex2var_ps(acc[0][j][u], hi,       \
                            acc[1][j][u]);                                    \
                    if (ep) {                                                 \
                        a = epilogue(ep, a);                                  \
                        b = epilogue(ep, b);                                  \
                    }                                                         \
                    store32_f32(dst[j], x, a, b, left);                       \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

#define DEFINE_PHASE_PAIR_ALL(T, ES)                                          \
    DEFINE_PHASE_PAIR(T, ES, 1, PAIR_VEC)                                     \
    DEFINE_PHASE_PAIR(T, ES, 2, PAIR_VEC)                                     \
    DEFINE_PHASE_PAIR(T, ES, 3, PAIR_VEC)                                     \
    DEFINE_PHASE_PAIR(T, ES, 4, PAIR_VEC)
DEFINE_PHASE_PAIR_ALL(f32, 4)
DEFINE_PHASE_PAIR_ALL(bf16, 2)
DEFINE_PHASE_PAIR_ALL(f16, 2)
/* Blocks of 5 to CO_BLOCK_WIDE channels, on the f32 copies where the
 * sharing kernels below take such blocks (direct.c's block_width): for
 * the rows whose taps they do not take (inputs shorter than the window). */
DEFINE_PHASE_PAIR(f32, 4, 5, 1)
DEFINE_PHASE_PAIR(f32, 4, 6, 1)
DEFINE_PHASE_PAIR(f32, 4, 7, 1)
DEFINE_PHASE_PAIR(f32, 4, 8, 1)
DEFINE_PHASE_PAIR(f32, 4, 9, 1)
DEFINE_PHASE_PAIR(f32, 4, 10, 1)
DEFINE_PHASE_PAIR(f32, 4, 11, 1)
DEFINE_PHASE_PAIR(f32, 4, 12, 1)
static const phase_pair_fn phase_pair_avx512_wide[CO_BLOCK_WIDE - CO_BLOCK] = {
        phase_pair_f32_5, phase_pair_f32_6, phase_pair_f32_7,
        phase_pair_f32_8, phase_pair_f32_9, phase_pair_f32_10,
        phase_pair_f32_11, phase_pair_f32_12};

static const phase_pair_fn phase_pair_avx512[3][CO_BLOCK] = {
        {phase_pair_f32_1, phase_pair_f32_2, phase_pair_f32_3,
                phase_pair_f32_4},
        {phase_pair_bf16_1, phase_pair_bf16_2, phase_pair_bf16_3,
                phase_pair_bf16_4},
        {phase_pair_f16_1, phase_pair_f16_2, phase_pair_f16_3,
                phase_pair_f16_4}};

/* bf16 by AVX512_BF16's conversion, which rounds as the integers do but
 * reads a subnormal f32 as zero: a step with one takes the integers. */
#define AVX512_BF16                                                           \
    __attribute__((target(                                                    \
            "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,prfchw")))
AVX512_BF16 static inline void store32_bf16_insn(void *row, int64_t x,
        __m512 a, __m512 b, int64_t left) {
    if (__builtin_expect(!_kortestz_mask16_u8(_mm512_fpclass_ps_mask(a, 0x20),
                                 _mm512_fpclass_ps_mask(b, 0x20)),
                0)) {
        store32_bf16(row, x, a, b, left);
        return;
    }
    __m512i v = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* a's 16, then b's */
    store32_u16(row, x, _mm512_castsi512_si256(v),
            _mm512_extracti64x4_epi64(v, 1), left);
}
/* The target each kernel below is built for, by the type it stores. */
#define AVX512_TARGET_f32 AVX512
#define AVX512_TARGET_bf16 AVX512
#define AVX512_TARGET_f16 AVX512
#define AVX512_TARGET_bf16_insn AVX512_BF16

/* Both phases sharing the loads of each input run (phase_shared_fn; the
 * same terms and order as direct_avx2.c's kernels of that name, with 16
 * lanes): one input row's two runs loaded once a step feed the one-tap
 * phase's term and both of the other phase's, 3 x CB FMAs a load pair.
 * The pair kernels above take 2 loads, CB broadcasts and range tests
 * per 2 x CB FMAs, and on a core with two 512-bit FMA units that
 * bookkeeping, not the FMAs, bounds them: one thread, 4 channels, 20
 * input rows, rows of 447, 92 -> 137-150 GFLOP/s; 10 channels as one
 * block 144 (`dgrad_rows_kernel 4 447 20 20 400 padded - pair512|
 * shared512`, Sapphire Rapids). Reads f32 rows (the padded copies);
 * stores rows of type OT. SW as there: 0, the one-tap phase is the even
 * one and reads the other phase's second tap's run; 1, the odd one,
 * reading the first tap's. U vectors a step, at most 4 (64 positions:
 * whole steps stay within the padded copies, direct_padded_end). */
/* One step of U vectors from phase position @p m0 (within the kernel
 * below, whose locals it reads). */
#define SHARED_STEP(CB, U, SW, OT, m0)                                        \
    do {                                                                      \
        __m512 s[CB][U], d[CB][U];                                            \
        _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)               \
            _Pragma("GCC unroll 4") for (int u = 0; u < (U); u++)             \
                s[j][u] = d[j][u] = _mm512_set1_ps(bias[j]);                  \
        const term_t *ta = td;                                                \
        for (int k = 0, ci = 0; k < ns; k++, ta++, ci++) {                    \
            if (ci == icg) { /* the next block of rows */                     \
                ci = 0;                                                       \
                ta += icg;                                                    \
            }                                                                 \
            const term_t *tb = ta + icg;                                      \
            const float *xs = in + ts[k].off + (m0), *ys = xs + apart;        \
            _mm_prefetch((const char *)(xs + 128), _MM_HINT_T0);              \
            __m512 ws[CB], wa[CB], wb[CB];                                    \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++) {         \
                ws[j] = _mm512_set1_ps(ts[k].w[j]);                           \
                wa[j] = _mm512_set1_ps(ta->w[j]);                             \
                wb[j] = _mm512_set1_ps(tb->w[j]);                             \
            }                                                                 \
            _Pragma("GCC unroll 4") for (int u = 0; u < (U); u++) {           \
                __m512 x = _mm512_loadu_ps(xs + 16 * u),                      \
                       y = _mm512_loadu_ps(ys + 16 * u);                      \
                _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++) {     \
                    s[j][u] = _mm512_fmadd_ps(ws[j], x, s[j][u]);             \
                    d[j][u] = _mm512_fmadd_ps(wa[j], (SW) ? x : y, d[j][u]);  \
                    d[j][u] = _mm512_fmadd_ps(wb[j], (SW) ? y : x, d[j][u]);  \
                }                                                             \
            }                                                                 \
        }                                                                     \
        _Pragma("GCC unroll 4") for (int u = 0; u < (U); u++) {               \
            int64_t x = 2 * ((m0) + 16 * u), left = len - x;                  \
            if (left <= 0) break;                                             \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++) {         \
                __m512 e = (SW) ? d[j][u] : s[j][u],                          \
                       o = (SW) ? s[j][u] : d[j][u];                          \
                __m512 a = _mm512_permutex2var_ps(e, lo, o),                  \
                       b = _mm512_permutex2var_ps(e, hi, o);                  \
                if (ep) {                                                     \
                    a = epilogue(ep, a);                                      \
                    b = epilogue(ep, b);                                      \
                }                                                             \
                store32_##OT(dst[j], x, a, b, left);                          \
            }                                                                 \
        }                                                                     \
    } while (0)
/* The kernel: whole steps of U vectors, then one of the vectors left
 * (fewer than U), so that no step computes whole vectors past the
 * phase's end: a row of 223 (phases of 112, 7 vectors) takes 4 + 3, not
 * 4 + 4, one of 447 4 + 4 + 4 + 2. One thread, best of four alternating
 * rounds, 2 channels, 11 + 22 terms: rows of 223 89 -> 101 GFLOP/s, of
 * 447 86 -> 93 (`dgrad_rows_kernel 2 223|447 11 11 1000 padded -
 * shared512`, AMD EPYC Zen 5; bench/README.md, thirty-first look). */
#define DEFINE_PHASE_SHARED(CB, U, SW, OT)                                    \
    AVX512_TARGET_##OT static void phase_shared_##CB##_##SW##_##OT(           \
            const void *in_, const term_t *ts, int ns, const term_t *td,      \
            int icg, const float *bias, const epilogue_t *ep, int64_t len,    \
            void *const *dst) {                                               \
        const float *in = in_;                                                \
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19,   \
                3, 18, 2, 17, 1, 16, 0);                                      \
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12,   \
                27, 11, 26, 10, 25, 9, 24, 8);                                \
        int64_t count = (len + 1) / 2, m0 = 0;                                \
        /* the other tap's run: the same distance from every row's */     \
        int64_t apart = ns ? td[(SW) ? icg : 0].off - ts[0].off : 0;          \
        /* the phase in vectors (its last one partly past the end) */      \
        int64_t rest = (count + 15) / 16;                                     \
        for (; rest >= (U); rest -= (U), m0 += 16 * (U))                      \
            SHARED_STEP(CB, U, SW, OT, m0);                                   \
        if ((U) > 3 && rest == 3)                                             \
            SHARED_STEP(CB, 3, SW, OT, m0);                                   \
        else if ((U) > 2 && rest == 2)                                        \
            SHARED_STEP(CB, 2, SW, OT, m0);                                   \
        else if ((U) > 1 && rest == 1)                                        \
            SHARED_STEP(CB, 1, SW, OT, m0);                                   \
    }
/* Per block width the vectors a step: 2 x CB x U accumulators and 3 x CB
 * weights within 32 registers up to 4 channels; from 5 the weights are
 * broadcast from memory by each FMA (5 and 6 channels at U = 2 spilled:
 * 119 and 90 GFLOP/s against 130 and 134 at U = 1, the command above). */
#define SHARED_KERNELS(SW, OT)                                                \
    DEFINE_PHASE_SHARED(1, 4, SW, OT)                                         \
    DEFINE_PHASE_SHARED(2, 4, SW, OT)                                         \
    DEFINE_PHASE_SHARED(3, 2, SW, OT)                                         \
    DEFINE_PHASE_SHARED(4, 2, SW, OT)                                         \
    DEFINE_PHASE_SHARED(5, 1, SW, OT)                                         \
    DEFINE_PHASE_SHARED(6, 1, SW, OT)                                         \
    DEFINE_PHASE_SHARED(7, 1, SW, OT)                                         \
    DEFINE_PHASE_SHARED(8, 1, SW, OT)                                         \
    DEFINE_PHASE_SHARED(9, 1, SW, OT)                                         \
    DEFINE_PHASE_SHARED(10, 1, SW, OT)                                        \
    DEFINE_PHASE_SHARED(11, 1, SW, OT)                                        \
    DEFINE_PHASE_SHARED(12, 1, SW, OT)
#define SHARED_TABLE(SW, OT)                                                  \
    {phase_shared_1_##SW##_##OT, phase_shared_2_##SW##_##OT,                  \
            phase_shared_3_##SW##_##OT, phase_shared_4_##SW##_##OT,           \
            phase_shared_5_##SW##_##OT, phase_shared_6_##SW##_##OT,           \
            phase_shared_7_##SW##_##OT, phase_shared_8_##SW##_##OT,           \
            phase_shared_9_##SW##_##OT, phase_shared_10_##SW##_##OT,          \
            phase_shared_11_##SW##_##OT, phase_shared_12_##SW##_##OT}
#define SHARED_TYPE(OT) SHARED_KERNELS(0, OT) SHARED_KERNELS(1, OT)
SHARED_TYPE(f32)
SHARED_TYPE(bf16)
SHARED_TYPE(f16)
SHARED_TYPE(bf16_insn)
/* By output type index, and 3 for bf16 rounded by AVX512_BF16. */
static const phase_shared_fn phase_shared_avx512[4][2][CO_BLOCK_WIDE] = {
        {SHARED_TABLE(0, f32), SHARED_TABLE(1, f32)},
        {SHARED_TABLE(0, bf16), SHARED_TABLE(1, bf16)},
        {SHARED_TABLE(0, f16), SHARED_TABLE(1, f16)},
        {SHARED_TABLE(0, bf16_insn), SHARED_TABLE(1, bf16_insn)}};

phase_shared_fn direct_avx512_pair_shared(int out_type, int cb, int one_tap) {
    if (out_type < 0 || out_type > 2 || cb < 1 || cb > CO_BLOCK_WIDE
            || (one_tap != 0 && one_tap != 1)
            || (out_type && !(cpu_has_avx512bw() && cpu_has_avx512vl())))
        return NULL;
    if (out_type == 1 && cpu_has_avx512_bf16() && cpu_has_avx512dq())
        out_type = 3;
    return phase_shared_avx512[out_type][one_tap][cb - 1];
}

phase_values_fn direct_avx512_values(int type, int cb) {
    return phase_values_avx512[type][cb - 1];
}

phase_pair_fn direct_avx512_pair(int type, int cb) {
    if (cb > CO_BLOCK)
        return type == 0 && cb <= CO_BLOCK_WIDE
                ? phase_pair_avx512_wide[cb - CO_BLOCK - 1]
                : NULL;
    return phase_pair_avx512[type][cb - 1];
}
#endif
