/*
 * What the AVX-512 kernels along output rows share (direct_avx512.c's
 * rows loop kernels, direct_phase_pair.c): 16 input values loaded as
 * f32 from each type, the chain's epilogue in registers, and a step of
 * 32 interleaved output positions stored into a row of each type.
 * Include only where x86-64 with GCC or Clang.
 */
#ifndef DGRAD_PLAN_ROWS_AVX512_H
#define DGRAD_PLAN_ROWS_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "plan_impl.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,prfchw")))

/* Lanes of the 16 positions from @p m0 that lie in [lo, hi). */
AVX512 static inline __mmask16 lanes(int64_t m0, int64_t lo, int64_t hi) {
    int64_t a = lo > m0 ? lo - m0 : 0, b = hi < m0 + 16 ? hi - m0 : 16;
    if (b <= a) return 0;
    return (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1));
}

/* 16 input values as f32, all or the lanes of @p k (others 0). */
AVX512 static inline __m512 load_f32(const void *p) {
    return _mm512_loadu_ps(p);
}
AVX512 static inline __m512 mload_f32(__mmask16 k, const void *p) {
    return _mm512_maskz_loadu_ps(k, p);
}
AVX512 static inline __m512 load_bf16(const void *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
            _mm256_loadu_si256((const __m256i *)p)), 16));
}
AVX512 static inline __m512 mload_bf16(__mmask16 k, const void *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
            _mm256_maskz_loadu_epi16(k, p)), 16));
}
AVX512 static inline __m512 load_f16(const void *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
AVX512 static inline __m512 mload_f16(__mmask16 k, const void *p) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p));
}

/* The chain's first op applied in registers before the store, where it
 * is ReLU (any alpha) or Clamp: the rest of the chain runs on the stored
 * row (chain_rows). ReLU then costs 1.04-1.09x the bare loop on the
 * grouped 2D and 3D (56^3) specification examples, against 1.14-1.24x
 * as a pass over each stored row (`/bare` of the command below). */
AVX512 static inline __m512 epilogue(const epilogue_t *ep, __m512 v) {
    const __m512 a = _mm512_set1_ps(ep->a);
    if (ep->clip) {
        const __m512 b = _mm512_set1_ps(ep->b);
        /* x < min ? min : x > max ? max : x (NaN stays) */
        __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, b, _CMP_GT_OQ),
                v, b);
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a, _CMP_LT_OQ), r,
                a);
    }
    /* x > 0 ? x : alpha x */
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(),
                                        _CMP_GT_OQ),
            _mm512_mul_ps(a, v), v);
}

/* Both phases' values at 16 positions (@p even, @p odd) as the 32
 * output positions of a step (@p a the first 16, @p b the next), the
 * chain's epilogue applied where @p ep has one: the phase pair loops'
 * stores (direct_phase_pair.c, direct_phase_pair_amx.c). */
AVX512 static inline void interleave_phases(const epilogue_t *ep,
        __m512 even, __m512 odd, __m512 *a, __m512 *b) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18,
            2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27,
            11, 26, 10, 25, 9, 24, 8);
    *a = _mm512_permutex2var_ps(even, lo, odd);
    *b = _mm512_permutex2var_ps(even, hi, odd);
    if (ep->on) {
        *a = epilogue(ep, *a);
        *b = epilogue(ep, *b);
    }
}

/* The two lines 2 KiB past @p p requested for writing, as the AVX2
 * kernels do (direct_avx2.c, OUT_PREFETCH_FLOATS: an output beyond the
 * last-level cache). One thread on AVX-512 kernels, alternating
 * (`OMP_NUM_THREADS=1 DGRAD_OWN_KERNELS=widest DGRAD_OWN_LOOP=only dgrad
 * bench --no-raw --data-format NCX`, AMD EPYC Zen 4): the 3D example at
 * 56^3 10.3-11.1 -> 9.4-10.3 ms, the full 3D example's rows 40.7-42.2 ->
 * 38.0-40.9 ms; the dense 2D example unchanged. */
AVX512 static inline void prefetch_ahead(const float *p) {
    uintptr_t a = (uintptr_t)p + 512 * sizeof(float);
    __builtin_prefetch((const void *)a, 1, 3);
    __builtin_prefetch((const void *)(a + 64), 1, 3);
}
/* The lanes of a step's two stores (32 positions from x) that lie in
 * the row, @p left of them from x on. */
static inline void step_masks(int64_t left, __mmask16 *k0, __mmask16 *k1) {
    *k0 = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    *k1 = left >= 32 ? (__mmask16)0xffff
            : left > 16 ? (__mmask16)((1u << (left - 16)) - 1)
                        : (__mmask16)0;
}

/* A step's 32 output positions from @p x on (even ones interleaved
 * with odd ones: @p a the first 16, @p b the next), @p left of them
 * still in the row, into a row of each output type (##OT of the sharing
 * kernels; the pair kernels store f32): f32, and 16-bit types
 * rounded once, as dgrad_f32_to_bf16 and dgrad_f32_to_f16 do (dtype.h).
 * Whole steps take plain stores (direct_avx512.c's pair kernels have the
 * measurement), the row's last one masked. */
AVX512 static inline void store32_f32(void *row, int64_t x, __m512 a,
        __m512 b, int64_t left) {
    float *p = (float *)row + x;
    if (left >= 32) {
        prefetch_ahead(p);
        _mm512_storeu_ps(p, a);
        _mm512_storeu_ps(p + 16, b);
        return;
    }
    __mmask16 k0, k1;
    step_masks(left, &k0, &k1);
    _mm512_mask_storeu_ps(p, k0, a);
    _mm512_mask_storeu_ps(p + 16, k1, b);
}
AVX512 static inline void store32_u16(void *row, int64_t x, __m256i a,
        __m256i b, int64_t left) {
    uint16_t *p = (uint16_t *)row + x;
    if (left >= 32) {
        prefetch_ahead((const float *)(const void *)p);
        _mm256_storeu_si256((__m256i *)(void *)p, a);
        _mm256_storeu_si256((__m256i *)(void *)(p + 16), b);
        return;
    }
    __mmask16 k0, k1;
    step_masks(left, &k0, &k1);
    _mm256_mask_storeu_epi16(p, k0, a);
    _mm256_mask_storeu_epi16(p + 16, k1, b);
}

/* bf16 by integers: to nearest even (adding 0x7fff and the bit that
 * stays last), a NaN (the sums' come out quiet, or a bias's) quieted
 * instead of rounded. */
AVX512 static inline __m256i bf16_round16(__m512 v) {
    __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
            _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
            _mm512_srli_epi32(r, 16),
            _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}
AVX512 static inline void store32_bf16(void *row, int64_t x, __m512 a,
        __m512 b, int64_t left) {
    store32_u16(row, x, bf16_round16(a), bf16_round16(b), left);
}
AVX512 static inline void store32_f16(void *row, int64_t x, __m512 a,
        __m512 b, int64_t left) {
    store32_u16(row, x,
            _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
            _mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
            left);
}

#endif
