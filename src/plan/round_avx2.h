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
#include <stdint.h>

/* The constants of the rounding, one vector each: rounding half, the
 * bit that stays last, the quiet bit of a NaN, the upper 16 bits, all
 * but the sign, infinity's bits (the exponent's), and the word order that
 * alternates the two halves of a vector of 16 bf16 (0, 8, 1, 9, ...). */
typedef struct bf16_rounding {
    __m256i half, one, quiet, upper, magnitude, inf, alternate;
} bf16_rounding_t;
static const int32_t bf16_rounding_values[7][8] __attribute__((aligned(32)))
= {{0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff},
        {1, 1, 1, 1, 1, 1, 1, 1},
        {0x400000, 0x400000, 0x400000, 0x400000, 0x400000, 0x400000,
                0x400000, 0x400000},
        {-0x10000, -0x10000, -0x10000, -0x10000, -0x10000, -0x10000,
                -0x10000, -0x10000},
        {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                0x7fffffff, 0x7fffffff, 0x7fffffff},
        {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000,
                0x7f800000, 0x7f800000, 0x7f800000},
        {0x80000, 0x90001, 0xa0002, 0xb0003, 0xc0004, 0xd0005, 0xe0006,
                0xf0007}};

/* The constants, read through a pointer the compiler cannot follow: as
 * known values, GCC 12 built each one again from a general register at
 * every use inside the kernels' loops (mov, vmovd, vpbroadcastd: 3
 * instructions where a memory operand costs none). */
static inline const bf16_rounding_t *bf16_rounding(void) {
    const bf16_rounding_t *k = (const bf16_rounding_t *)(const void *)
            bf16_rounding_values;
    __asm__("" : "+r"(k));
    return k;
}

/* The f32 bits @p u with their upper 16 bits its bf16 value: rounded to
 * nearest even (adding 0x7fff and the bit that stays last), where
 * @p nan is set quieted instead of rounded (a carry could make it
 * infinite or flip its sign). */
__attribute__((target("avx2"))) static inline __m256i bf16_in_upper_nan(
        __m256i u, __m256i nan, const bf16_rounding_t *k) {
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), k->one);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, k->half), lsb);
    return _mm256_blendv_epi8(r, _mm256_or_si256(u, k->quiet), nan);
}

/* The same for the kernels' sums (their NaNs come out of arithmetic,
 * quiet, but for a bias no term adds to), NaN found by one unordered
 * compare: in the kernels' stores 8% faster than the integer test below
 * (one thread, bf16 grouped 2D example, 0.89-0.90 against 0.98 ms,
 * alternating). */
__attribute__((target("avx2"))) static inline __m256i bf16_in_upper(
        __m256 a, const bf16_rounding_t *k) {
    return bf16_in_upper_nan(_mm256_castps_si256(a),
            _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)), k);
}

/* 8 bf16 values of @p u's lanes, in order. */
__attribute__((target("avx2"))) static inline __m128i round8_bf16(
        __m256i u) {
    const bf16_rounding_t *k = bf16_rounding();
    /* |u| > inf as signed, both non-negative: integer instructions only,
     * so that a signaling NaN of the caller's raises no floating-point
     * flag */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, k->magnitude),
            k->inf);
    __m256i r = _mm256_srli_epi32(bf16_in_upper_nan(u, nan, k), 16);
    /* 32 -> 16 bits per 128-bit half, then the halves' low quads */
    return _mm256_castsi256_si128(
            _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* 16 bf16 values alternating from @p even's lanes and @p odd's (even[0],
 * odd[0], even[1], ...): each 32-bit lane holds one of each, so no
 * shuffle is needed. */
__attribute__((target("avx2"))) static inline __m256i round16_bf16_interleaved(
        __m256 even, __m256 odd, const bf16_rounding_t *k) {
    return _mm256_or_si256(_mm256_srli_epi32(bf16_in_upper(even, k), 16),
            _mm256_and_si256(bf16_in_upper(odd, k), k->upper));
}

/* The kernels that round with AVX512_BF16's instruction are built for
 * this set (and chosen only where the CPU has all of it: cpu.c). */
#define BF16_INSN_TARGET                                                      \
    "avx2,fma,f16c,prfchw,avx512f,avx512vl,avx512bw,avx512dq,avx512bf16"

/* The same 16 values by AVX512_BF16's conversion (one instruction for
 * both vectors, one word permute to alternate them), which rounds as the
 * integers above, NaN included, but reads a subnormal f32 as zero: a pair
 * with a subnormal lane (zero exponent, nonzero fraction) takes the
 * integer rounding instead. */
__attribute__((target(BF16_INSN_TARGET))) static inline __m256i
round16_bf16_interleaved_insn(__m256 even, __m256 odd,
        const bf16_rounding_t *k) {
    /* the subnormal class of each, tested at once: kortest, no move of
     * the masks to general registers */
    if (__builtin_expect(!_kortestz_mask8_u8(_mm256_fpclass_ps_mask(even, 0x20),
                                 _mm256_fpclass_ps_mask(odd, 0x20)),
                0))
        return round16_bf16_interleaved(even, odd, k);
    /* even's 8 in the low half, odd's in the high */
    __m256i halves = (__m256i)_mm256_cvtne2ps_pbh(odd, even);
    return _mm256_permutexvar_epi16(k->alternate, halves);
}
#endif

#endif
