/*
 * exp, tanh, the logistic function, expm1, log, log(1 + e^x), Mish's
 * tanh(log(1 + e^x)) and 1 + erf(x) on 16 floats at once, for the post-op chains dgrad
 * applies itself, in its own loops and its own pass (post_pass.c).
 * libm's scalar forms cost tens of cycles a value: Tanh after masknet's
 * 3.2 million output values took its gemm rows loop from 31 to 58 ms,
 * where a oneDNN eltwise pass over the output takes 1.3 ms (`dgrad bench
 * --data-format NCX --post-ops tanh mb1ic64ih512oc3oh1030kh7sh2`, the
 * bare and fused columns, AMD EPYC Zen 5 VM; bench/README.md,
 * thirty-second look).
 *
 * Accuracy against libm's double forms rounded once, over every 97th
 * f32 of either sign, in units in the last place at most: exp 0.91, the
 * logistic 2.26, tanh 1.53, expm1 1.53, log 1.89, log(1 + e^x) 3.69 and
 * Mish (x times mish_ratio_avx512) 3.82, the last two below 0, where
 * e^x's own error carries over; 1 + erf(z) 1.76 from z = 0 on, 6.32
 * from -1 on, 8.26 from -2 on, then growing as erfc(|z|)'s exponent
 * -z^2 rounds (33 at -5, where the value is 1.5e-12; libm's erff leaves
 * 1 + erf(z) at 0 below -3.9 in f32). NaN in and out, infinities and
 * signed zeros as libm has them. The test post_ops_reference/
 * vector_functions_against_libm holds every unary post-op within 4 on
 * every 9,973rd, the GELUs within 1e-6 of 1 + |x|.
 *
 * exp: e^x = 2^n e^r with n the integer nearest x / ln 2 and r = x - n
 * ln 2 (ln 2 in two parts, so r is exact) in [-0.347, 0.347], e^r its
 * Taylor polynomial of degree 7 (remainder under 6e-9), 2^n applied by
 * scalef (overflow to infinity and underflow through the subnormals
 * without an intermediate of its own).
 *
 * tanh: odd in x; for |x| < 0.55 its Taylor series to x^17 (the next
 * term under 6e-9 of the value), else 1 - 2 / (e^(2|x|) + 1), where
 * the quotient's rounding is small beside the result (at least 0.5).
 */
#ifndef DGRAD_MATH_AVX512_H
#define DGRAD_MATH_AVX512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MATH_AVX512 __attribute__((target("avx512f"))) static inline

/* ln 2 in two parts: the first has the low bits of its mantissa zero,
 * so n times it is exact for the exponents f32 has. */
#define LN2_HI 0.693145751953125f
#define LN2_LO 1.42860677e-6f

/* c[0] + c[1] x + ... + c[n - 1] x^(n - 1) by Horner's rule. */
MATH_AVX512 __m512 poly_avx512(__m512 x, const float *c, int n) {
    __m512 p = _mm512_set1_ps(c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(c[i]));
    return p;
}

MATH_AVX512 __m512 exp_avx512(__m512 x) {
    /* beyond: infinity and zero; min and max keep a NaN (their second
     * operand is returned where either is one) */
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    __m512 n = _mm512_roundscale_ps(
            _mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    static const float c[] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24,
            1.0f / 120, 1.0f / 720, 1.0f / 5040};
    return _mm512_scalef_ps(poly_avx512(r, c, 8), n);
}

MATH_AVX512 __m512 tanh_avx512(__m512 x) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __m512 ax = _mm512_abs_ps(x);
    const __m512 one = _mm512_set1_ps(1.0f);
    /* e^(2|x|) overflows to infinity beyond 44, and the quotient is 0 */
    __m512 e = exp_avx512(_mm512_add_ps(ax, ax));
    __m512 far = _mm512_sub_ps(one,
            _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    /* the series' coefficients from x^3 to x^17 */
    static const float c[] = {-0.333333333f, 0.133333333f, -0.0539682540f,
            0.0218694885f, -0.00886323553f, 0.00359212804f,
            -0.00145583439f, 0.000590027441f};
    __m512 x2 = _mm512_mul_ps(ax, ax), p = poly_avx512(x2, c, 8);
    __m512 near = _mm512_fmadd_ps(_mm512_mul_ps(ax, x2), p, ax);
    __mmask16 is_near = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.55f),
            _CMP_LT_OQ);
    __m512 t = _mm512_mask_blend_ps(is_near, far, near);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
            _mm512_and_si512(sign, _mm512_castps_si512(x))));
}

/* 1 / (1 + e^-x), as e^x / (1 + e^x) below 0: e^-|x| never overflows,
 * and far below 0 the result is subnormal, not 0. */
MATH_AVX512 __m512 logistic_avx512(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 ax = _mm512_abs_ps(x);
    __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), ax));
    __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_div_ps(_mm512_mask_blend_ps(below, one, e),
            _mm512_add_ps(one, e));
}

/* e^x - 1: below 0.5 in magnitude its Taylor polynomial to x^10 (no
 * cancellation near 0), else e^x - 1, where the result is at least 0.39
 * in magnitude and the subtraction loses under 2 units in the last
 * place. */
MATH_AVX512 __m512 expm1_avx512(__m512 x) {
    static const float c[] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120,
            1.0f / 720, 1.0f / 5040, 1.0f / 40320, 1.0f / 362880,
            1.0f / 3628800};
    __m512 near = _mm512_fmadd_ps(_mm512_mul_ps(x, x), poly_avx512(x, c, 9),
            x);
    __m512 far = _mm512_sub_ps(exp_avx512(x), _mm512_set1_ps(1.0f));
    __mmask16 is_near = _mm512_cmp_ps_mask(_mm512_abs_ps(x),
            _mm512_set1_ps(0.5f), _CMP_LT_OQ);
    /* -0 stays -0 (x^2 p + x is +0 there) */
    __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
    return _mm512_mask_blend_ps(zero,
            _mm512_mask_blend_ps(is_near, far, near), x);
}

/* The natural logarithm: x = m 2^e with m in [0.707, 1.414] (getmant
 * and getexp, subnormals included), log m = 2 atanh(s) with s = (m - 1) /
 * (m + 1) in [-0.172, 0.172], its series to s^9 (the next term under
 * 1e-9), then e ln 2 added in two parts. Below 0 NaN, at 0 -infinity. */
MATH_AVX512 __m512 log_avx512(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    __m512 e = _mm512_getexp_ps(x);
    __mmask16 high = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f),
            _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, high, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_ps(e, high, e, one);
    __m512 s = _mm512_div_ps(_mm512_sub_ps(m, one), _mm512_add_ps(m, one));
    static const float c[] = {1.0f / 3, 1.0f / 5, 1.0f / 7, 1.0f / 9};
    __m512 s2 = _mm512_mul_ps(s, s), p = poly_avx512(s2, c, 4);
    __m512 two_s = _mm512_add_ps(s, s);
    __m512 log_m = _mm512_fmadd_ps(_mm512_mul_ps(two_s, s2), p, two_s);
    __m512 r = _mm512_fmadd_ps(e, _mm512_set1_ps(LN2_LO), log_m);
    r = _mm512_fmadd_ps(e, _mm512_set1_ps(LN2_HI), r);
    /* getexp gives -infinity at 0 and infinity at infinity; the sign */
    __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(),
            _CMP_LT_OQ);
    return _mm512_mask_blend_ps(negative, r, _mm512_set1_ps(__builtin_nanf("")));
}

/* log(1 + y) for y in [0, 1]: log u times y / (u - 1), u = 1 + y
 * rounded (u - 1 is exact there, and the quotient puts back what the
 * rounding of u lost), y itself where u is 1. */
MATH_AVX512 __m512 log1p_unit_avx512(__m512 y) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 u = _mm512_add_ps(one, y), d = _mm512_sub_ps(u, one);
    __mmask16 exact = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ);
    __m512 r = _mm512_mul_ps(log_avx512(u), _mm512_div_ps(y, d));
    return _mm512_mask_blend_ps(exact, r, y);
}

/* log(1 + e^(a x)) / a as (a x > 0 ? x : 0) + log(1 + e^-|a x|) / a:
 * e^-|a x| is in (0, 1], so nothing overflows, not even a x (x itself
 * is the first term). A NaN passes through the second. */
MATH_AVX512 __m512 softplus_avx512(__m512 x, __m512 a) {
    __m512 t = _mm512_mul_ps(a, x);
    __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(),
            _mm512_abs_ps(t)));
    __mmask16 positive = _mm512_cmp_ps_mask(t, _mm512_setzero_ps(),
            _CMP_GT_OQ);
    return _mm512_add_ps(_mm512_maskz_mov_ps(positive, x),
            _mm512_div_ps(log1p_unit_avx512(e), a));
}

/* tanh(log(1 + e^x)) as n / (n + 2), n = u (u + 2), u = e^x: one
 * exponential and one division (Mish is x times it), where tanh of the
 * softplus takes two of each and a logarithm. From x = 20 on the ratio
 * is 1 in f32 and x is held there (u^2 would overflow); far below 0 it
 * is u. */
MATH_AVX512 __m512 mish_ratio_avx512(__m512 x) {
    __m512 u = exp_avx512(_mm512_min_ps(_mm512_set1_ps(20.0f), x));
    __m512 n = _mm512_fmadd_ps(u, u, _mm512_add_ps(u, u));
    return _mm512_div_ps(n, _mm512_add_ps(n, _mm512_set1_ps(2.0f)));
}

/* 1 + erf(z), for GELU (erf) = x (1 + erf(x / sqrt 2)) / 2. erfc(|z|)
 * = t e^(-z^2 + P(t)), t = 1 / (1 + |z| / 2), P of degree 9 (Numerical
 * Recipes' erfcc: relative error under 1.2e-7 for every z >= 0); below
 * 0.5 in magnitude erf's own Taylor series to z^15 (the next term under
 * 1e-9 of the value), free of the subtraction from 1. Below 0 the result
 * is erfc(|z|) itself, so it stays relative far below 0. */
MATH_AVX512 __m512 one_plus_erf_avx512(__m512 z) {
    static const float p[] = {-1.26551223f, 1.00002368f, 0.37409196f,
            0.09678418f, -0.18628806f, 0.27886807f, -1.13520398f,
            1.48851587f, -0.82215223f, 0.17087277f};
    /* 2 / sqrt(pi) times (-1)^n / (n! (2n + 1)), n = 0 to 7 */
    static const float c[] = {1.12837917f, -0.376126389f, 0.112837917f,
            -0.0268661706f, 0.00522397762f, -0.000854832702f,
            0.000120553327f, -1.49256e-05f};
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_abs_ps(z), z2 = _mm512_mul_ps(z, z);
    __m512 t = _mm512_div_ps(one,
            _mm512_fmadd_ps(_mm512_set1_ps(0.5f), a, one));
    __m512 erfc = _mm512_mul_ps(t,
            exp_avx512(_mm512_sub_ps(poly_avx512(t, p, 10), z2)));
    __m512 erf_near = _mm512_mul_ps(z, poly_avx512(z2, c, 8)); /* signed */
    __mmask16 near = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.5f), _CMP_LT_OQ);
    __mmask16 below = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 far = _mm512_mask_blend_ps(below, _mm512_sub_ps(
            _mm512_set1_ps(2.0f), erfc), erfc);
    return _mm512_mask_blend_ps(near, far, _mm512_add_ps(one, erf_near));
}

#undef LN2_HI
#undef LN2_LO
#undef MATH_AVX512
#endif
#endif
