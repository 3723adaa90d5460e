/*
 * exp, tanh and the logistic function on 16 floats at once, for the
 * post-op chains dgrad's own loops apply to the rows they write
 * (post_pass.c). libm's scalar forms cost tens of cycles a value: Tanh
 * after masknet's 3.2 million output values took its gemm rows loop from
 * 31 to 58 ms, where a oneDNN eltwise pass over the output takes 1.3 ms
 * (`dgrad bench --data-format NCX --post-ops tanh
 * mb1ic64ih512oc3oh1030kh7sh2`, the bare and fused columns, AMD EPYC
 * Zen 5 VM).
 *
 * Accuracy against libm's double forms rounded once, over every 97th
 * f32 of either sign: exp 0.91 units in the last place at most,
 * logistic 2.26, tanh 1.53; NaN in and out, infinities and signed zeros
 * as libm has them. The test post_ops_reference/
 * vector_functions_against_libm holds them within 3 on every 9,973rd.
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

MATH_AVX512 __m512 exp_avx512(__m512 x) {
    /* beyond: infinity and zero; min and max keep a NaN (their second
     * operand is returned where either is one) */
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    __m512 n = _mm512_roundscale_ps(
            _mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

MATH_AVX512 __m512 tanh_avx512(__m512 x) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __m512 ax = _mm512_castsi512_ps(
            _mm512_andnot_si512(sign, _mm512_castps_si512(x)));
    const __m512 one = _mm512_set1_ps(1.0f);
    /* e^(2|x|) overflows to infinity beyond 44, and the quotient is 0 */
    __m512 e = exp_avx512(_mm512_add_ps(ax, ax));
    __m512 far = _mm512_sub_ps(one,
            _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    /* the series' coefficients from x^3 to x^17 */
    static const float c[] = {-0.333333333f, 0.133333333f, -0.0539682540f,
            0.0218694885f, -0.00886323553f, 0.00359212804f,
            -0.00145583439f, 0.000590027441f};
    __m512 x2 = _mm512_mul_ps(ax, ax), p = _mm512_set1_ps(c[7]);
    for (int i = 6; i >= 0; i--)
        p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(c[i]));
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

#undef MATH_AVX512
#endif
#endif
