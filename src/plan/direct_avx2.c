/*
 * The rows loop's kernels for AVX2 (direct.c chooses them by the CPU's
 * flags, cpu.c): phase values of a block of output channels, and both
 * phases of stride 2 at once, for f32, bf16 and f16 inputs.
 */
#include "direct_rows.h"
#include "round_avx2.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* AVX2 with FMA (and F16C, which every AVX2 CPU has: cpu.c), for every
 * type: 16-bit inputs are widened to f32 in registers (or once, into the
 * staged copies), 16-bit output rounded once: as the kernels for both
 * phases store it, or from f32 rows after a post-op chain (direct_rows),
 * so no copy of either tensor is made. 16 vector registers: a visit of the term list
 * keeps CB x U accumulators of 8 positions and either the CB weights or
 * the U input vectors; the two phases of stride 2 are visited one after
 * the other, the even one's sums parked in L1 until the odd one's are
 * interleaved with them. Against the portable loop on the same CPU:
 * 0.39-0.45x raw oneDNN's time on the dense 2D specification example
 * instead of 2.31-2.61x, grouped 2D 0.26-0.28x instead of 1.03x
 * (`DGRAD_MAX_CPU_ISA=baseline|avx2 DGRAD_OWN_LOOP=only dgrad bench
 * --batch bench/suites/spec_examples.txt --data-format NCX`, AMD EPYC
 * Zen 3; bench/README.md "The rows loop on AVX2"). */
#define AVX2 __attribute__((target("avx2,fma,f16c,prfchw")))

/* Lanes of the 8 positions from @p m0 that lie in [lo, hi), as a mask
 * for maskload/maskstore. */
AVX2 static inline __m256i lanes8(int64_t m0, int64_t lo, int64_t hi) {
    int64_t a = lo > m0 ? lo - m0 : 0, b = hi < m0 + 8 ? hi - m0 : 8;
    if (b < a) b = a;
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(
            _mm256_cmpgt_epi32(iota, _mm256_set1_epi32((int)a - 1)),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), iota));
}

/* 8 input values as f32: all (load8_*), or those of positions [lo, hi)
 * for the 8 from @p m0, others 0 (mload8_*; 16-bit ones, where some lanes
 * are out of range, through a zeroed copy of the lanes in range: AVX2 has
 * no 16-bit masked load). */
AVX2 static inline __m256 load8_f32(const char *p) {
    return _mm256_loadu_ps((const float *)(const void *)p);
}
AVX2 static inline __m256 load8_bf16(const char *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
AVX2 static inline __m256 load8_f16(const char *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
AVX2 static inline __m256 mload8_f32(const char *p, int64_t m0, int64_t lo,
        int64_t hi) {
    return _mm256_maskload_ps((const float *)(const void *)p,
            lanes8(m0, lo, hi));
}
static inline void lanes16_copy(const char *p, int64_t m0, int64_t lo,
        int64_t hi, uint16_t *lanes) {
    int64_t a = lo > m0 ? lo - m0 : 0, b = hi < m0 + 8 ? hi - m0 : 8;
    memset(lanes, 0, 8 * sizeof *lanes);
    if (b > a) memcpy(lanes + a, p + 2 * a, (size_t)(b - a) * 2);
}
AVX2 static inline __m256 mload8_bf16(const char *p, int64_t m0, int64_t lo,
        int64_t hi) {
    if (lo <= m0 && m0 + 8 <= hi) return load8_bf16(p);
    uint16_t lanes[8];
    lanes16_copy(p, m0, lo, hi, lanes);
    return load8_bf16((const char *)lanes);
}
AVX2 static inline __m256 mload8_f16(const char *p, int64_t m0, int64_t lo,
        int64_t hi) {
    if (lo <= m0 && m0 + 8 <= hi) return load8_f16(p);
    uint16_t lanes[8];
    lanes16_copy(p, m0, lo, hi, lanes);
    return load8_f16((const char *)lanes);
}

/* The FMAs of term k for the U vectors LOAD(u): weights first where there
 * are fewer of them than vectors, else the vectors first, so that either
 * set takes few registers beside the CB x U accumulators. Each vector is
 * held in a register (the empty asm): left free, GCC folded the load
 * into every channel's FMA, CB loads of it where one does, and loads are
 * what limit these kernels (2 channels, one thread: 45 -> 53 and 56 -> 70
 * GFLOP/s; `dgrad_rows_kernel 2 447 5 5` and `... 2 447 20 20`, AMD EPYC
 * Zen 3, bench/README.md "What limits the rows loop on AVX2"). */
#define AVX2_TERM_FMAS(CB, U, acc, t, k, LOAD)                                \
    if ((CB) <= (U)) {                                                        \
        __m256 w[CB];                                                         \
        _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)               \
            w[j] = _mm256_set1_ps((t)[k].w[j]);                               \
        _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {               \
            __m256 x = LOAD(u);                                               \
            __asm__("" : "+x"(x));                                            \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)           \
                acc[j][u] = _mm256_fmadd_ps(w[j], x, acc[j][u]);              \
        }                                                                     \
    } else {                                                                  \
        __m256 x[U];                                                          \
        _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) x[u] = LOAD(u); \
        _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++) {             \
            __m256 w = _mm256_set1_ps((t)[k].w[j]);                           \
            _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++)             \
                acc[j][u] = _mm256_fmadd_ps(w, x[u], acc[j][u]);              \
        }                                                                     \
    }

/* acc[j][u] += w[j] * in over the terms, for the U vectors of 8 positions
 * from @p m0, input type T of ES bytes: AVX2_TERMS_FULL where every term
 * covers them all (no test, no mask: with the edge test in the same loop
 * the compiler kept the accumulators on the stack), AVX2_TERMS_EDGE
 * elsewhere (loads masked only for the terms that end inside the step,
 * the others loaded whole). Each term prefetches its run
 * 4 steps ahead: a row reads some 60 input runs at once (dense 2D
 * specification example), more streams than the hardware prefetchers
 * follow; one thread there took 8.2 ms without, 6.0 ms with
 * (`OMP_NUM_THREADS=1 DGRAD_OWN_LOOP=only dgrad bench --no-raw
 * --data-format NCX mb1ic20ih224oc10oh447kh3sh2ph1`, AMD EPYC Zen 3; the
 * 16-row copy ...ih16... 0.49 -> 0.29 ms). */
#define AVX2_TERMS_FULL(T, ES, CB, U, acc, t, n, in, m0)                      \
    for (int k = 0; k < (n); k++) {                                           \
        const char *src = (in) + ((t)[k].off + (m0)) * (int64_t)(ES);         \
        _mm_prefetch(src + 64 * (ES), _MM_HINT_T0);                           \
        AVX2_TERM_FMAS(CB, U, acc, t, k, AVX2_LOAD_FULL_##T)                  \
    }
#define AVX2_TERMS_EDGE(T, ES, CB, U, acc, t, n, in, m0)                      \
    for (int k = 0; k < (n); k++) {                                           \
        const int64_t m0_ = (m0), lo_ = (t)[k].lo, hi_ = (t)[k].hi;           \
        if (lo_ >= m0_ + 8 * (U) || hi_ <= m0_) continue;                     \
        const char *src = (in) + ((t)[k].off + m0_) * (int64_t)(ES);          \
        if (lo_ <= m0_ && m0_ + 8 * (U) <= hi_) {                             \
            AVX2_TERM_FMAS(CB, U, acc, t, k, AVX2_LOAD_FULL_##T)              \
        } else {                                                              \
            AVX2_TERM_FMAS(CB, U, acc, t, k, AVX2_LOAD_EDGE_##T)              \
        }                                                                     \
    }
#define AVX2_LOAD_FULL_f32(u) load8_f32(src + 32 * (u))
#define AVX2_LOAD_FULL_bf16(u) load8_bf16(src + 16 * (u))
#define AVX2_LOAD_FULL_f16(u) load8_f16(src + 16 * (u))
#define AVX2_LOAD_EDGE_f32(u)                                                 \
    mload8_f32(src + 32 * (u), m0_ + 8 * (u), lo_, hi_)
#define AVX2_LOAD_EDGE_bf16(u)                                                \
    mload8_bf16(src + 16 * (u), m0_ + 8 * (u), lo_, hi_)
#define AVX2_LOAD_EDGE_f16(u)                                                 \
    mload8_f16(src + 16 * (u), m0_ + 8 * (u), lo_, hi_)
#define AVX2_TERMS(T, ES, CB, U, acc, t, n, in, m0, full)                     \
    if (full) {                                                               \
        AVX2_TERMS_FULL(T, ES, CB, U, acc, t, n, in, m0)                      \
    } else {                                                                  \
        AVX2_TERMS_EDGE(T, ES, CB, U, acc, t, n, in, m0)                      \
    }

/* The end of the steps of U vectors covering @p count positions. */
#define STEPS_END(count, U) (((count) + 8 * (U) - 1) / (8 * (U)) * (8 * (U)))

#define DEFINE_PHASE_VALUES_AVX2(T, ES, CB, U)                                \
    AVX2 static void phase_values_avx2_##T##_##CB##_##U(const void *in_,     \
            const term_t *t, int n, const float *bias, int64_t count,         \
            float *const *v) {                                                \
        const char *in = in_;                                                 \
        terms_span_t c = direct_terms_common(t, n);                           \
        int64_t lo = c.lo, hi = c.hi < STEPS_END(count, U)                    \
                ? c.hi : STEPS_END(count, U);                                 \
        for (int64_t m0 = 0; m0 < count; m0 += 8 * (U)) {                     \
            __m256 acc[CB][U];                                                \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)           \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++)         \
                    acc[j][u] = _mm256_set1_ps(bias[j]);                      \
            AVX2_TERMS(T, ES, CB, U, acc, t, n, in, m0,                       \
                    lo <= m0 && m0 + 8 * (U) <= hi)                           \
            _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {           \
                if (count - m0 - 8 * u <= 0) break;                           \
                __m256i mk = lanes8(m0 + 8 * u, 0, count);                    \
                _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)       \
                    _mm256_maskstore_ps(v[j] + m0 + 8 * u, mk, acc[j][u]);    \
            }                                                                 \
        }                                                                     \
    }

AVX2 static inline __m256 epilogue_avx2(const epilogue_t *ep, __m256 v) {
    const __m256 a = _mm256_set1_ps(ep->a);
    if (ep->clip) { /* x < min ? min : x > max ? max : x (NaN stays) */
        const __m256 b = _mm256_set1_ps(ep->b);
        __m256 r = _mm256_blendv_ps(v, b, _mm256_cmp_ps(v, b, _CMP_GT_OQ));
        return _mm256_blendv_ps(r, a, _mm256_cmp_ps(v, a, _CMP_LT_OQ));
    }
    /* x > 0 ? x : alpha x */
    return _mm256_blendv_ps(_mm256_mul_ps(a, v), v,
            _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
}

/* 16 values of an output row from position @p x, alternating from
 * @p e's lanes (the even phase) and @p o's (the odd), @p left of them
 * inside the row: f32 rows (AVX2_STORE: unpack, then 128-bit halves
 * swapped), or rounded into bf16 or f16 rows as convert.c rounds
 * (AVX2_STORE_to_*: rounded first, then interleaved as 16-bit values:
 * bf16 even and odd values share each 32-bit lane, no shuffle at all).
 * One thread, bf16 grouped 2D example: 1.24 ms rounding the interleaved
 * f32 vectors, 1.13 rounding first, 0.89-0.92 with the rounding's
 * constants read from memory (round_avx2.h); f16 0.96 -> 0.93 ms
 * (`OMP_NUM_THREADS=1 DGRAD_OWN_LOOP=only dgrad bench --no-raw
 * --data-format NCX --dt bf16 g4mb1ic20ih224oc8oh447kh3sh2ph1`, AMD EPYC
 * Zen 3).
 *
 * f32 rows are written with the line 2 KiB ahead requested for writing
 * (prefetchw: every CPU with AVX2 has it; on a row's last stores that
 * line is the next row's, the output plane's rows lying end to end): an
 * output larger than the last-level cache otherwise stalls the stores
 * on each line's read for ownership. One thread, three alternating
 * rounds (`OMP_NUM_THREADS=1 DGRAD_OWN_KERNELS=avx2 DGRAD_OWN_LOOP=only
 * dgrad bench --no-raw --data-format NCX`, AMD EPYC Zen 4): the 3D
 * example at 56^3 10.0-11.1 -> 8.3-8.8 ms, the full 3D example's rows
 * (`g4mb1ic20id16ih224iw224oc8od31oh447ow447kd3kh3kw3sd2sh2sw2pd1ph1pw1`)
 * 33.5-34.5 -> 30.3-32.6 ms; the 2D examples, whose outputs fit the L3
 * cache, unchanged (dense 2.25-2.57 against 2.45-2.50 ms). 1 KiB or 4 KiB
 * ahead gained less; `dgrad_rows_kernel 2 447 11 11 1000 padded cold`
 * 63-66 -> 69-73 GFLOP/s. */
#define OUT_PREFETCH_FLOATS 512
/* @p e's and @p o's lanes alternating: the first 8 in @p a, the next in
 * @p b (unpack, then 128-bit halves swapped). */
AVX2 static inline void interleave16_f32(__m256 e, __m256 o, __m256 *a,
        __m256 *b) {
    __m256 l = _mm256_unpacklo_ps(e, o), h = _mm256_unpackhi_ps(e, o);
    *a = _mm256_permute2f128_ps(l, h, 0x20);
    *b = _mm256_permute2f128_ps(l, h, 0x31);
}
AVX2 static inline void store16_f32(float *p, __m256 e, __m256 o,
        int64_t left) {
    __m256 a, b;
    interleave16_f32(e, o, &a, &b);
    if (left >= 16) {
        /* an address only: past the output's end a prefetch is a hint */
        __builtin_prefetch((const void *)((uintptr_t)p
                                   + OUT_PREFETCH_FLOATS * sizeof(float)),
                1, 3);
        _mm256_storeu_ps(p, a);
        _mm256_storeu_ps(p + 8, b);
    } else {
        _mm256_maskstore_ps(p, lanes8(0, 0, left), a);
        _mm256_maskstore_ps(p + 8, lanes8(8, 0, left), b);
    }
}
AVX2 static inline void store16_u16(uint16_t *p, __m256i v, int64_t left) {
    if (left >= 16) {
        _mm256_storeu_si256((__m256i *)(void *)p, v);
    } else { /* no 16-bit masked store: the row's last few */
        uint16_t lanes[16];
        _mm256_storeu_si256((__m256i *)(void *)lanes, v);
        memcpy(p, lanes, (size_t)left * sizeof *p);
    }
}
AVX2 static inline __m256i f16_interleaved(__m256 e, __m256 o) {
    __m128i he = _mm256_cvtps_ph(e, _MM_FROUND_TO_NEAREST_INT),
            ho = _mm256_cvtps_ph(o, _MM_FROUND_TO_NEAREST_INT);
    return _mm256_set_m128i(
            _mm_unpackhi_epi16(he, ho), _mm_unpacklo_epi16(he, ho));
}
#define AVX2_STORE(row, x, e, o, left)                                        \
    store16_f32((float *)(row) + (x), e, o, left)
/* (the kernel's `rounding`: its bf16_rounding()) */
#define AVX2_STORE_to_bf16(row, x, e, o, left)                                \
    store16_u16((uint16_t *)(void *)(row) + (x),                              \
            round16_bf16_interleaved(e, o, rounding), left)
#define AVX2_STORE_to_f16(row, x, e, o, left)                                 \
    store16_u16((uint16_t *)(void *)(row) + (x), f16_interleaved(e, o), left)
/* bf16 rounded by AVX512_BF16's instruction, in kernels built for
 * BF16_INSN_TARGET (round_avx2.h): the integer rounding took 5-10% of the
 * bf16 grouped 2D and 3D (56^3) examples' time (the same build with f16's
 * rounding in its place, alternating, AMD EPYC Zen 4). */
#define AVX2_STORE_to_bf16_insn(row, x, e, o, left)                           \
    store16_u16((uint16_t *)(void *)(row) + (x),                              \
            round16_bf16_interleaved_insn(e, o, rounding), left)

/* The target each kernel is built for, by the type it stores (##OT). */
#define AVX2_TARGET AVX2
#define AVX2_TARGET_to_bf16 AVX2
#define AVX2_TARGET_to_f16 AVX2
#define AVX2_TARGET_to_bf16_insn __attribute__((target(BF16_INSN_TARGET)))

/* The chain's register epilogue (@p ep, if any) on an even and an odd
 * vector, then both stored as AVX2_STORE##OT stores them. */
#define AVX2_EPILOGUE_STORE(OT, row, x, e, o, left, ep)                       \
    do {                                                                      \
        __m256 e_ = (e), o_ = (o);                                            \
        if (ep) {                                                             \
            e_ = epilogue_avx2(ep, e_);                                       \
            o_ = epilogue_avx2(ep, o_);                                       \
        }                                                                     \
        AVX2_STORE##OT(row, x, e_, o_, left);                                 \
    } while (0)

/* Both phases of stride 2 (as phase_pair_*, AVX-512): per 16 U output
 * positions, the even phase's sums parked, then the odd phase's, the
 * chain's register epilogue applied to both, interleaved with them as
 * they are stored; only the row's last vectors masked. OT: empty for f32
 * rows, _to_bf16 or _to_f16 for rows of that type (then @p dst points at
 * them, not at floats), _to_bf16_insn for bf16 rows rounded by
 * AVX512_BF16. */
#define DEFINE_PHASE_PAIR_AVX2(T, ES, CB, U, OT)                              \
    AVX2_TARGET##OT static void phase_pair_avx2_##T##_##CB##_##U##OT(        \
            const void *in_,                                                  \
            const term_t *te, int ne, terms_span_t es, const term_t *to,      \
            int no, terms_span_t os, const float *bias, const epilogue_t *ep, \
            int64_t len, void *const *dst) {                                  \
        const char *in = in_;                                                 \
        const bf16_rounding_t *rounding = bf16_rounding();                    \
        (void)rounding;                                                       \
        int64_t count = (len + 1) / 2, end = STEPS_END(count, U);             \
        int64_t elo = es.lo, ehi = es.hi < end ? es.hi : end, olo = os.lo,    \
                ohi = os.hi < end ? os.hi : end;                              \
        for (int64_t m0 = 0; m0 < count; m0 += 8 * (U)) {                     \
            __m256 acc[CB][U];                                                \
            float even[CB][U][8] __attribute__((aligned(32)));                \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)           \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++)         \
                    acc[j][u] = _mm256_set1_ps(bias[j]);                      \
            AVX2_TERMS(T, ES, CB, U, acc, te, ne, in, m0,                     \
                    elo <= m0 && m0 + 8 * (U) <= ehi)                         \
            _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)           \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {       \
                    _mm256_store_ps(even[j][u], acc[j][u]);                   \
                    acc[j][u] = _mm256_set1_ps(bias[j]);                      \
                }                                                             \
            /* parked in memory: kept in registers, they pushed the odd   \
             * phase's accumulators onto the stack (2x slower) */          \
            __asm__ volatile("" ::: "memory");                                \
            AVX2_TERMS(T, ES, CB, U, acc, to, no, in, m0,                     \
                    olo <= m0 && m0 + 8 * (U) <= ohi)                         \
            _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {           \
                int64_t x = 2 * (m0 + 8 * u), left = len - x;                 \
                if (left <= 0) break;                                         \
                _Pragma("GCC unroll 12") for (int j = 0; j < (CB); j++)       \
                    AVX2_EPILOGUE_STORE(OT, dst[j], x,                        \
                            _mm256_load_ps(even[j][u]), acc[j][u], left, ep); \
            }                                                                 \
        }                                                                     \
    }

/* Per block width: 8-9 accumulator chains (what keeps both FMA units
 * busy at a latency of 4) for phases of at least AVX2_LONG_STEPS such
 * steps (the long kernels), 2 vectors per channel for shorter ones, where
 * the steps would be mostly edges (3D example at 56^3: rows of 56 per
 * phase), but on padded copies, which have no edges, from one such step
 * on; blocks wider than CO_BLOCK take 1-2 vectors whatever the row. */
#define AVX2_LONG_STEPS 4
static const int avx2_long_vectors[CO_BLOCK_WIDE] = {8, 4, 3, 2, 2, 2, 1,
        1, 1, 1, 1, 1};
static int avx2_long(int cb, int64_t count, int padded) {
    return cb > CO_BLOCK
            || count >= (padded ? 1 : AVX2_LONG_STEPS) * 8
                            * avx2_long_vectors[cb - 1];
}

/* Both phases' kernels of input T for every block width, writing f32
 * rows (OT empty) or rounding into 16-bit rows (OT _to_bf16, _to_f16). */
#define AVX2_PAIRS(T, ES, OT)                                                 \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 1, 8, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 2, 4, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 3, 3, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 4, 2, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 5, 2, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 6, 2, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 7, 1, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 8, 1, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 9, 1, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 10, 1, OT)                                  \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 11, 1, OT)                                  \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 12, 1, OT)                                  \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 1, 2, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 2, 2, OT)                                   \
    DEFINE_PHASE_PAIR_AVX2(T, ES, 3, 2, OT)

#define AVX2_KERNELS(T, ES)                                                   \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 1, 8)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 2, 4)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 3, 3)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 4, 2)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 1, 2)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 2, 2)                                     \
    DEFINE_PHASE_VALUES_AVX2(T, ES, 3, 2)                                     \
    AVX2_PAIRS(T, ES, )
AVX2_KERNELS(f32, 4)
AVX2_KERNELS(bf16, 2)
AVX2_KERNELS(f16, 2)

/* Both phases on f32 rows (the staged copies) rounded into 16-bit output
 * as they are stored: no f32 row in between, no pass to round it
 * (direct.c, where no post-op runs after the kernel). */
AVX2_PAIRS(f32, 4, _to_bf16)
AVX2_PAIRS(f32, 4, _to_f16)
AVX2_PAIRS(f32, 4, _to_bf16_insn)

#define AVX2_VALUES_LONG(T)                                                   \
    {phase_values_avx2_##T##_1_8, phase_values_avx2_##T##_2_4,                \
            phase_values_avx2_##T##_3_3, phase_values_avx2_##T##_4_2}
#define AVX2_VALUES_SHORT(T)                                                  \
    {phase_values_avx2_##T##_1_2, phase_values_avx2_##T##_2_2,                \
            phase_values_avx2_##T##_3_2, phase_values_avx2_##T##_4_2}
static const phase_values_fn phase_values_avx2_long[3][CO_BLOCK] = {
        AVX2_VALUES_LONG(f32), AVX2_VALUES_LONG(bf16), AVX2_VALUES_LONG(f16)};
static const phase_values_fn phase_values_avx2_short[3][CO_BLOCK] = {
        AVX2_VALUES_SHORT(f32), AVX2_VALUES_SHORT(bf16),
        AVX2_VALUES_SHORT(f16)};
#define AVX2_PAIR_LONG(T, OT)                                                 \
    {phase_pair_avx2_##T##_1_8##OT, phase_pair_avx2_##T##_2_4##OT,            \
            phase_pair_avx2_##T##_3_3##OT, phase_pair_avx2_##T##_4_2##OT,     \
            phase_pair_avx2_##T##_5_2##OT, phase_pair_avx2_##T##_6_2##OT,     \
            phase_pair_avx2_##T##_7_1##OT, phase_pair_avx2_##T##_8_1##OT,     \
            phase_pair_avx2_##T##_9_1##OT, phase_pair_avx2_##T##_10_1##OT,    \
            phase_pair_avx2_##T##_11_1##OT, phase_pair_avx2_##T##_12_1##OT}
#define AVX2_PAIR_SHORT(T, OT)                                                \
    {phase_pair_avx2_##T##_1_2##OT, phase_pair_avx2_##T##_2_2##OT,            \
            phase_pair_avx2_##T##_3_2##OT, phase_pair_avx2_##T##_4_2##OT}
static const phase_pair_fn phase_pair_avx2_long[3][CO_BLOCK_WIDE] = {
        AVX2_PAIR_LONG(f32, ), AVX2_PAIR_LONG(bf16, ), AVX2_PAIR_LONG(f16, )};
static const phase_pair_fn phase_pair_avx2_short[3][CO_BLOCK] = {
        AVX2_PAIR_SHORT(f32, ), AVX2_PAIR_SHORT(bf16, ),
        AVX2_PAIR_SHORT(f16, )};
/* Rounding into bf16 (integers, or AVX512_BF16's instruction) and f16. */
static const phase_pair_fn phase_pair_rounding_long[3][CO_BLOCK_WIDE] = {
        AVX2_PAIR_LONG(f32, _to_bf16), AVX2_PAIR_LONG(f32, _to_f16),
        AVX2_PAIR_LONG(f32, _to_bf16_insn)};
static const phase_pair_fn phase_pair_rounding_short[3][CO_BLOCK] = {
        AVX2_PAIR_SHORT(f32, _to_bf16), AVX2_PAIR_SHORT(f32, _to_f16),
        AVX2_PAIR_SHORT(f32, _to_bf16_insn)};

/* The row's last few f32 of a step under AVX-512VL's lane masks, where
 * the shared-loads kernels run: vmaskmovps stores are slow on AMD, and a
 * row of 111 ends in a partial step every other step. One thread,
 * alternating builds, AMD EPYC Zen 4: `dgrad_rows_kernel 2 111 11 11 156
 * padded - shared` 73.6-73.9 -> 83.5-84.8 GFLOP/s (rows of 447: 87.0-94.5
 * -> 93.1-97.3); the 3D example at 56^3 8.40-8.58 -> 7.67-7.93 ms, both
 * threads 4.54-4.96 -> 3.97-4.24 ms (`DGRAD_OWN_KERNELS=avx2
 * DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX
 * g4mb1ic20id56oc8od111kd3sd2pd1`). */
__attribute__((target("avx2,fma,f16c,prfchw,avx512f,avx512vl"))) static inline
void store16_f32_vl(float *p, __m256 e, __m256 o, int64_t left) {
    if (left >= 16) {
        store16_f32(p, e, o, left);
        return;
    }
    __m256 a, b;
    interleave16_f32(e, o, &a, &b);
    __mmask8 ma = (__mmask8)(left >= 8 ? 0xff : (1u << left) - 1),
             mb = (__mmask8)(left > 8 ? (1u << (left - 8)) - 1 : 0);
    _mm256_mask_storeu_ps(p, ma, a);
    _mm256_mask_storeu_ps(p + 8, mb, b);
}
#define AVX2_STORE_vl(row, x, e, o, left)                                     \
    store16_f32_vl((float *)(row) + (x), e, o, left)
#define AVX2_STORE_vl_to_bf16 AVX2_STORE_to_bf16
#define AVX2_STORE_vl_to_f16 AVX2_STORE_to_f16
#define AVX2_STORE_vl_to_bf16_insn AVX2_STORE_to_bf16_insn

/* The target of the kernels below, by the type they store (##OT). */
#define AVX2_VL_TARGET                                                        \
    __attribute__((target("avx2,fma,f16c,prfchw,avx512f,avx512vl")))
#define AVX2_VL_TARGET_to_bf16 AVX2_VL_TARGET
#define AVX2_VL_TARGET_to_f16 AVX2_VL_TARGET
#define AVX2_VL_TARGET_to_bf16_insn AVX2_TARGET_to_bf16_insn

/* A step of the kernels below that the epilogue applies to or the row
 * ends in: its even and odd sums ([cb][us][8] each) stored from @p x0
 * on. Kept out of the kernels, whose whole steps store directly: inlined,
 * with the epilogue, the kernels ran 89-92 GFLOP/s instead of 93-95 on
 * rows of 447 (`dgrad_rows_kernel 2 447 11 11 1000 padded - shared`). */
#define DEFINE_SHARED_STORE(OT)                                               \
    AVX2_VL_TARGET##OT __attribute__((noinline)) static void                 \
    shared_store##OT(const float *ev, const float *ov, int cb, int us,        \
            int64_t x0, int64_t len, const epilogue_t *ep,                    \
            void *const *dst) {                                               \
        const bf16_rounding_t *rounding = bf16_rounding();                    \
        (void)rounding;                                                       \
        for (int u = 0; u < us; u++) {                                        \
            int64_t x = x0 + 16 * u, left = len - x;                          \
            if (left <= 0) break;                                             \
            for (int j = 0; j < cb; j++)                                      \
                AVX2_EPILOGUE_STORE(_vl##OT, dst[j], x,                       \
                        _mm256_load_ps(ev + (j * us + u) * 8),                \
                        _mm256_load_ps(ov + (j * us + u) * 8), left, ep);     \
        }                                                                     \
    }
DEFINE_SHARED_STORE()
DEFINE_SHARED_STORE(_to_bf16)
DEFINE_SHARED_STORE(_to_f16)
DEFINE_SHARED_STORE(_to_bf16_insn)

/* Both phases sharing the loads of each input run (phase_shared_fn),
 * for CPUs with AVX-512VL: the same 256-bit instructions, but with 32
 * registers a step keeps both phases' CB x U accumulators (16 for 2
 * channels) and one input row's 3 x CB weights in registers, so the
 * one-tap phase's term and the two-tap phase's term reading the same run
 * take one load of each vector, and nothing is parked. With 16
 * registers (AVX2 alone) the same kernel spilled and gained nothing. One
 * thread, 2 channels, 11 input rows, three rounds (`dgrad_rows_kernel 2
 * 447 11 11 1000 padded -|cold [shared]`, `... 2 111 11 11 156 padded -
 * [shared]`, AMD EPYC Zen 4): rows of 447 (the full 3D example's) 86.5-87.4
 * -> 92.6-95.0 GFLOP/s with the output row cached, 65.6-72.1 -> 73.7-79.5
 * written into 64 MiB planes; rows of 111 (the example at 56^3) 68.6-68.9
 * -> 73.0-74.4. A two-tap sum takes its terms row by row (the pair
 * kernels take one tap's rows, then the other's): the same terms,
 * rounded in another order. SW 0: the one-tap phase is the even one and
 * the other phase's second tap reads its run (windows of 3 at stride 2
 * with an odd padding); SW 1: the one-tap phase is the odd one, sharing
 * the other's first tap (even padding). Every row's other tap reads the
 * same distance from the shared run (apart). */
#define DEFINE_PHASE_SHARED(CB, U, SW, OT)                                    \
    AVX2_VL_TARGET##OT static void phase_shared_##CB##_##SW##OT(const void *in_,        \
            const term_t *ts, int ns, const term_t *td, int icg,              \
            const float *bias, const epilogue_t *ep, int64_t len,             \
            void *const *dst) {                                               \
        const float *in = in_;                                                \
        const bf16_rounding_t *rounding = bf16_rounding();                    \
        (void)rounding;                                                       \
        int64_t count = (len + 1) / 2;                                        \
        /* the other tap's run: the same distance from every row's */     \
        int64_t apart = ns ? td[(SW) ? icg : 0].off - ts[0].off : 0;          \
        for (int64_t m0 = 0; m0 < count; m0 += 8 * (U)) {                     \
            __m256 s[CB][U], d[CB][U];                                        \
            _Pragma("GCC unroll 4") for (int j = 0; j < (CB); j++)            \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++)         \
                    s[j][u] = d[j][u] = _mm256_set1_ps(bias[j]);              \
            const term_t *ta = td;                                            \
            for (int k = 0, ci = 0; k < ns; k++, ta++, ci++) {                \
                    if (ci == icg) { /* the next block of rows */             \
                        ci = 0;                                               \
                        ta += icg;                                            \
                    }                                                         \
                    const term_t *tb = ta + icg;                              \
                    const float *xs = in + ts[k].off + m0, *ys = xs + apart;  \
                    _mm_prefetch((const char *)(xs + 64), _MM_HINT_T0);       \
                    __m256 ws[CB], wa[CB], wb[CB];                            \
                    _Pragma("GCC unroll 4") for (int j = 0; j < (CB); j++) {  \
                        ws[j] = _mm256_set1_ps(ts[k].w[j]);                   \
                        wa[j] = _mm256_set1_ps(ta->w[j]);                     \
                        wb[j] = _mm256_set1_ps(tb->w[j]);                     \
                    }                                                         \
                    _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {   \
                        __m256 x = _mm256_loadu_ps(xs + 8 * u),               \
                               y = _mm256_loadu_ps(ys + 8 * u);               \
                        __asm__("" : "+v"(x));                                \
                        __asm__("" : "+v"(y));                                \
                        _Pragma("GCC unroll 4") for (int j = 0; j < (CB);     \
                                j++)                                          \
                            s[j][u] = _mm256_fmadd_ps(ws[j], x, s[j][u]);     \
                        _Pragma("GCC unroll 4") for (int j = 0; j < (CB);     \
                                j++)                                          \
                            d[j][u] = _mm256_fmadd_ps(wa[j], (SW) ? x : y,    \
                                    d[j][u]);                                 \
                        _Pragma("GCC unroll 4") for (int j = 0; j < (CB);     \
                                j++)                                          \
                            d[j][u] = _mm256_fmadd_ps(wb[j], (SW) ? y : x,    \
                                    d[j][u]);                                 \
                    }                                                         \
                }                                                             \
            if (!ep && len - 2 * m0 >= 16 * (U)) { /* a whole step */         \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++)         \
                    _Pragma("GCC unroll 4") for (int j = 0; j < (CB); j++)    \
                        AVX2_STORE##OT(dst[j], 2 * (m0 + 8 * u),              \
                                (SW) ? d[j][u] : s[j][u],                     \
                                (SW) ? s[j][u] : d[j][u], 16);                \
                continue;                                                     \
            }                                                                 \
            float ev[CB][U][8] __attribute__((aligned(32))),                  \
                    ov[CB][U][8] __attribute__((aligned(32)));                \
            _Pragma("GCC unroll 4") for (int j = 0; j < (CB); j++)            \
                _Pragma("GCC unroll 8") for (int u = 0; u < (U); u++) {       \
                    _mm256_store_ps(ev[j][u], (SW) ? d[j][u] : s[j][u]);      \
                    _mm256_store_ps(ov[j][u], (SW) ? s[j][u] : d[j][u]);      \
                }                                                             \
            shared_store##OT(ev[0][0], ov[0][0], CB, U, 2 * m0, len, ep,      \
                    dst);                                                     \
        }                                                                     \
    }
/* Per block width the vectors a step: 2 x CB x U accumulators and 3 x CB
 * weights within 32 registers, as many chains as the long pair kernels. */
#define SHARED_KERNELS(SW, OT)                                                \
    DEFINE_PHASE_SHARED(1, 8, SW, OT)                                         \
    DEFINE_PHASE_SHARED(2, 4, SW, OT)                                         \
    DEFINE_PHASE_SHARED(3, 3, SW, OT)                                         \
    DEFINE_PHASE_SHARED(4, 2, SW, OT)
#define SHARED_TABLE(SW, OT)                                                  \
    {phase_shared_1_##SW##OT, phase_shared_2_##SW##OT,                        \
            phase_shared_3_##SW##OT, phase_shared_4_##SW##OT}
SHARED_KERNELS(0, )
SHARED_KERNELS(1, )
SHARED_KERNELS(0, _to_bf16)
SHARED_KERNELS(1, _to_bf16)
SHARED_KERNELS(0, _to_f16)
SHARED_KERNELS(1, _to_f16)
SHARED_KERNELS(0, _to_bf16_insn)
SHARED_KERNELS(1, _to_bf16_insn)
/* By output type index, and 3 for bf16 rounded by AVX512_BF16. */
static const phase_shared_fn phase_shared[4][2][SHARED_CO_BLOCK] = {
        {SHARED_TABLE(0, ), SHARED_TABLE(1, )},
        {SHARED_TABLE(0, _to_bf16), SHARED_TABLE(1, _to_bf16)},
        {SHARED_TABLE(0, _to_f16), SHARED_TABLE(1, _to_f16)},
        {SHARED_TABLE(0, _to_bf16_insn), SHARED_TABLE(1, _to_bf16_insn)}};

/* Whether bf16 output is rounded by AVX512_BF16's instruction: where the
 * CPU has BF16_INSN_TARGET (round_avx2.h). */
static int bf16_insn(void) {
    return cpu_has_avx512_bf16() && cpu_has_avx512vl() && cpu_has_avx512bw()
            && cpu_has_avx512dq();
}

phase_shared_fn direct_avx2_pair_shared(int out_type, int cb, int one_tap) {
    if (out_type == 1 && bf16_insn()) out_type = 3;
    return cb >= 1 && cb <= SHARED_CO_BLOCK && (one_tap == 0 || one_tap == 1)
            ? phase_shared[out_type][one_tap][cb - 1]
            : NULL;
}

int direct_avx2_padding_pays(int cb, int64_t count) {
    return cb <= 3 && avx2_long(cb, count, 1) && !avx2_long(cb, count, 0);
}

phase_values_fn direct_avx2_values(int type, int cb, int64_t count,
        int padded) {
    return avx2_long(cb, count, padded) ? phase_values_avx2_long[type][cb - 1]
                                : phase_values_avx2_short[type][cb - 1];
}

phase_pair_fn direct_avx2_pair(int type, int cb, int64_t count,
        int padded) {
    return avx2_long(cb, count, padded) ? phase_pair_avx2_long[type][cb - 1]
                                : phase_pair_avx2_short[type][cb - 1];
}
phase_pair_fn direct_avx2_pair_rounding(int out_type, int cb, int64_t count,
        int padded) {
    int set = out_type == 1 && bf16_insn() ? 2 : out_type - 1;
    return avx2_long(cb, count, padded)
            ? phase_pair_rounding_long[set][cb - 1]
            : phase_pair_rounding_short[set][cb - 1];
}
#endif
