/*
 * Conversions between a user tensor (f16, bf16 or f32, any strides) and
 * its dense f32 staging copy. oneDNN 2.6 converts f16 only with its
 * generic simple:any reorder, measured at ~50 ns per element (80 ms for
 * 8x64x56x56, against 0.5 ms for an f32 jit reorder: one oneDNN 2.6.3
 * reorder nchw -> nChw16c of that tensor in each type, timed by
 * ONEDNN_VERBOSE=1 on the 2-core AVX-512 development machine), so dgrad converts
 * f16 itself, in the user's axis order, and lets oneDNN's fast f32
 * reorders and primitive take it from there. Large tensors are converted
 * on every thread of the OpenMP runtime oneDNN itself runs on.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <string.h>

#include "dtype.h"
#include "round_avx2.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* Contiguous runs use vector instructions when the CPU has them (checked
 * at run time, cpu.c): AVX-512 for f16 and bf16 (AVX512_BF16's
 * conversion for f32 -> bf16 where the CPU has it), else F16C for f16 and
 * AVX2 for bf16. They return how many elements they converted and the
 * scalar loops do the rest; every path rounds to nearest even exactly as
 * the scalar code does, NaN payloads included (test
 * conversions::vector_runs_round_as_the_scalar_code). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx,f16c"))) static int64_t f16c_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j,
                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + j))));
    return j;
}

__attribute__((target("avx,f16c"))) static int64_t f16c_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j),
                _mm256_cvtps_ph(_mm256_loadu_ps(src + j),
                        _MM_FROUND_TO_NEAREST_INT));
    return j;
}

__attribute__((target("avx2"))) static int64_t avx2_bf16_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i w = _mm256_cvtepu16_epi32(
                _mm_loadu_si128((const __m128i *)(src + j)));
        _mm256_storeu_si256((__m256i *)(dst + j), _mm256_slli_epi32(w, 16));
    }
    return j;
}

/* dgrad_f32_to_bf16 on 8 lanes (as avx512_bf16_from_f32 below). */
__attribute__((target("avx2"))) static int64_t avx2_bf16_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j),
                round8_bf16(_mm256_loadu_si256((const __m256i *)(src + j))));
    return j;
}

__attribute__((target("avx512f"))) static int64_t avx512_f16_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(dst + j, _mm512_cvtph_ps(_mm256_loadu_si256(
                                          (const __m256i *)(src + j))));
    return j;
}

__attribute__((target("avx512f"))) static int64_t avx512_f16_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm256_storeu_si256((__m256i *)(dst + j),
                _mm512_cvtps_ph(_mm512_loadu_ps(src + j),
                        _MM_FROUND_TO_NEAREST_INT));
    return j;
}

__attribute__((target("avx512f"))) static int64_t avx512_bf16_to_f32(
        const uint16_t *src, float *dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i w = _mm512_cvtepu16_epi32(
                _mm256_loadu_si256((const __m256i *)(src + j)));
        _mm512_storeu_si512(dst + j, _mm512_slli_epi32(w, 16));
    }
    return j;
}

/* dgrad_f32_to_bf16 on 16 lanes with AVX512_BF16's conversion, which
 * rounds to nearest even and keeps NaN quiet the same way but reads a
 * subnormal f32 as zero: lanes holding one are rounded again by the
 * scalar code (zero exponent, nonzero fraction; rare in practice). One
 * instruction where the integer rounding below takes ten. */
__attribute__((target("avx512f,avx512bf16"))) static int64_t
avx512_bf16_insn_from_f32(const float *src, uint16_t *dst, int64_t n) {
    const __m512i exponent = _mm512_set1_epi32(0x7f800000),
                  fraction = _mm512_set1_epi32(0x007fffff);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 v = _mm512_loadu_ps(src + j);
        __m512i u = _mm512_castps_si512(v);
        _mm256_storeu_si256((__m256i *)(dst + j),
                (__m256i)_mm512_cvtneps_pbh(v));
        __mmask16 sub = _mm512_testn_epi32_mask(u, exponent)
                & _mm512_test_epi32_mask(u, fraction);
        for (int i = 0; sub; i++, sub >>= 1)
            if (sub & 1) dst[j + i] = dgrad_f32_to_bf16(src[j + i]);
    }
    return j;
}

/* dgrad_f32_to_bf16 on 16 lanes: round to nearest even, NaN kept quiet. */
__attribute__((target("avx512f"))) static int64_t avx512_bf16_from_f32(
        const float *src, uint16_t *dst, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000),
                  half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                  quiet = _mm512_set1_epi32(0x40);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i u = _mm512_loadu_si512(src + j);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(
                _mm512_and_si512(u, abs_mask), inf);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
        __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(u, _mm512_add_epi32(half, lsb)), 16);
        __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
        r = _mm512_mask_blend_epi32(nan, r, q);
        _mm256_storeu_si256((__m256i *)(dst + j), _mm512_cvtepi32_epi16(r));
    }
    return j;
}

/* F16C comes with every AVX2 CPU (cpu.c). */
static int have_avx2(void) { return cpu_has_avx2_fma(); }
static int have_avx512(void) { return cpu_has_avx512f(); }
static int have_avx512_bf16(void) { return cpu_has_avx512_bf16(); }
#else
static int64_t avx2_bf16_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t avx2_bf16_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t f16c_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t f16c_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t avx512_f16_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t avx512_f16_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t avx512_bf16_to_f32(const uint16_t *s, float *d, int64_t n) {
    return 0;
}
static int64_t avx512_bf16_from_f32(const float *s, uint16_t *d, int64_t n) {
    return 0;
}
static int64_t avx512_bf16_insn_from_f32(const float *s, uint16_t *d,
        int64_t n) {
    return 0;
}
static int have_avx2(void) { return 0; }
static int have_avx512(void) { return 0; }
static int have_avx512_bf16(void) { return 0; }
#endif

static void run_to_f32(dgrad_data_type_t dt, const uint16_t *src,
        int64_t ss, float *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (ss == 1 && ds == 1 && n >= 8) {
        if (have_avx512())
            j = dt == dgrad_f16 ? avx512_f16_to_f32(src, dst, n)
                                : avx512_bf16_to_f32(src, dst, n);
        if (have_avx2())
            j += dt == dgrad_f16 ? f16c_to_f32(src + j, dst + j, n - j)
                                 : avx2_bf16_to_f32(src + j, dst + j, n - j);
    }
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f16_to_f32(src[j * ss])
                                      : dgrad_bf16_to_f32(src[j * ss]);
}

static void run_from_f32(dgrad_data_type_t dt, const float *src, int64_t ss,
        uint16_t *dst, int64_t ds, int64_t n) {
    int64_t j = 0;
    if (ss == 1 && ds == 1 && n >= 8) {
        if (have_avx512() && dt == dgrad_f16)
            j = avx512_f16_from_f32(src, dst, n);
        else if (have_avx512_bf16())
            j = avx512_bf16_insn_from_f32(src, dst, n);
        else if (have_avx512())
            j = avx512_bf16_from_f32(src, dst, n);
        if (have_avx2())
            j += dt == dgrad_f16 ? f16c_from_f32(src + j, dst + j, n - j)
                                 : avx2_bf16_from_f32(src + j, dst + j, n - j);
    }
    for (; j < n; j++)
        dst[j * ds] = dt == dgrad_f16 ? dgrad_f32_to_f16(src[j * ss])
                                      : dgrad_f32_to_bf16(src[j * ss]);
}

void convert_run_from_f32(dgrad_data_type_t dt, const float *src,
        void *dst, int64_t n) {
    if (dt == dgrad_f32) memcpy(dst, src, (size_t)n * sizeof *src);
    else run_from_f32(dt, src, 1, dst, 1, n);
}

void convert_run_to_f32(dgrad_data_type_t dt, const void *src, float *dst,
        int64_t n) {
    if (dt == dgrad_f32) memcpy(dst, src, (size_t)n * sizeof *dst);
    else run_to_f32(dt, src, 1, dst, 1, n);
}

/* An f32 user tensor is staged as it is (layouts oneDNN cannot
 * describe, see layouts_nested). */
static void copy_run_f32(const float *src, int64_t ss, float *dst,
        int64_t ds, int64_t n) {
    if (ss == 1 && ds == 1) {
        memcpy(dst, src, (size_t)n * sizeof *src);
        return;
    }
    for (int64_t j = 0; j < n; j++) dst[j * ds] = src[j * ss];
}

/* Rows [r0, r1) of a conversion (a row is a run along the innermost
 * axis). */
static void convert_rows(const convert_t *cv, dgrad_data_type_t dt,
        int to_f32, const void *src, void *dst, int64_t r0, int64_t r1) {
    int64_t idx[MAX_NDIMS] = {0}, r = r0;
    int inner = cv->ndims - 1;
    for (int j = inner - 1; j >= 0; j--) {
        idx[j] = r % cv->dims[j];
        r /= cv->dims[j];
    }
    for (int64_t row = r0; row < r1; row++) {
        int64_t uo = 0, so = 0;
        for (int j = 0; j < inner; j++) {
            uo += idx[j] * cv->user_strides[j];
            so += idx[j] * cv->stage_strides[j];
        }
        if (dt == dgrad_f32)
            copy_run_f32((const float *)src + (to_f32 ? uo : so),
                    to_f32 ? cv->user_strides[inner] : cv->stage_strides[inner],
                    (float *)dst + (to_f32 ? so : uo),
                    to_f32 ? cv->stage_strides[inner] : cv->user_strides[inner],
                    cv->dims[inner]);
        else if (to_f32)
            run_to_f32(dt, (const uint16_t *)src + uo,
                    cv->user_strides[inner], (float *)dst + so,
                    cv->stage_strides[inner], cv->dims[inner]);
        else
            run_from_f32(dt, (const float *)src + so,
                    cv->stage_strides[inner], (uint16_t *)dst + uo,
                    cv->user_strides[inner], cv->dims[inner]);
        int j = inner - 1;
        while (j >= 0 && ++idx[j] == cv->dims[j]) idx[j--] = 0;
    }
}

/* Converts between the user's tensor and its f32 staging copy. */
void convert(const convert_t *cv, dgrad_data_type_t dt, int to_f32,
        const void *src, void *dst) {
    int inner = cv->ndims - 1;
    int64_t rows = 1;
    for (int j = 0; j < inner; j++) rows *= cv->dims[j];
    if (rows <= 0 || cv->dims[inner] <= 0) return;
#ifdef _OPENMP
    if (rows * cv->dims[inner] >= PLAN_PARALLEL_MIN_ELEMS) {
        if (rows == 1) {
            /* One run: split it. */
            convert_t part = *cv;
            int64_t n = cv->dims[inner];
#pragma omp parallel firstprivate(part)
            {
                int nt = omp_get_num_threads(), t = omp_get_thread_num();
                int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
                const char *s8 = src;
                char *d8 = dst;
                /* bytes per user, staged element */
                size_t us = dt == dgrad_f32 ? 4 : 2, ss = 4;
                part.dims[inner] = hi - lo;
                if (to_f32)
                    convert_rows(&part, dt, 1,
                            s8 + lo * part.user_strides[inner] * us,
                            d8 + lo * part.stage_strides[inner] * ss, 0, 1);
                else
                    convert_rows(&part, dt, 0,
                            s8 + lo * part.stage_strides[inner] * ss,
                            d8 + lo * part.user_strides[inner] * us, 0, 1);
            }
            return;
        }
#pragma omp parallel
        {
            int nt = omp_get_num_threads(), t = omp_get_thread_num();
            convert_rows(cv, dt, to_f32, src, dst, rows * t / nt,
                    rows * (t + 1) / nt);
        }
        return;
    }
#endif
    convert_rows(cv, dt, to_f32, src, dst, 0, rows);
}
