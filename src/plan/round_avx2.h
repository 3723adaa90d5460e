/*
 * f32 to bf16 on 8 AVX2 lanes, rounded as dgrad_f32_to_bf16 (dtype.h):
 * to nearest even, NaN kept quiet. Shared by the conversions (convert.c)
 * and the rows loop's kernels that round their output as they store it
 * (direct_avx2.c); x86-64 with GCC or Clang, the caller checks AVX2.
 */
#ifndef DGRAD_PLAN_ROUND_AVX2_H
#define DGRAD_PLAN_ROUND_AVX2_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx2"))) static inline __m128i round8_bf16(
        __m256i u) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff),
                  inf = _mm256_set1_epi32(0x7f800000),
                  half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1),
                  quiet = _mm256_set1_epi32(0x40);
    /* |u| > inf as signed: both are non-negative */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(u, _mm256_add_epi32(half, lsb)), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    r = _mm256_blendv_epi8(r, q, nan);
    /* 32 -> 16 bits per 128-bit half, then the halves' low quads */
    return _mm256_castsi256_si128(
            _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}
#endif

#endif
