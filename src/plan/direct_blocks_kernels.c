/*
 * The blocks loop's kernels (direct_blocks_kernels.h): one source for
 * every CPU, GCC's vector extension compiled for AVX-512, AVX2 and the
 * baseline, and the lanes form's AVX-512 permutations.
 */
#include "direct_blocks_kernels.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "direct_vec.h"

/* The kernels' accumulators @p acc (MB pixels by NV vectors of W
 * columns) set to the bias row from @p brow on. */
#define BLOCK_ACC_BIAS(VF, W, MB, NV, acc, brow)                              \
    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                    \
        VF b_;                                                                \
        V_LOAD(b_, (brow) + v * W);                                           \
        _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)                 \
            acc[m][v] = b_;                                                   \
    }

/* The first @p mb pixels of the accumulators @p acc (columns @p j0 on of
 * ncols), the epilogue *ep applied, to pixels x, x + 1, ... of out
 * (pitch apart): whole vectors stored as they are, a last partial one
 * by STORE_PART. */
#define BLOCK_STORE(VF, VI, W, MB, NV, STORE_PART, acc, mb, j0)               \
    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++) {                   \
        float *pix_ = out + (x + m) * pitch;                                  \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                \
            int64_t j_ = (j0) + v * W;                                        \
            if (m >= (mb) || j_ >= ncols) continue;                           \
            VF r_ = acc[m][v];                                                \
            if (ep->on) V_EPILOGUE(VF, VI, ep, r_);                           \
            if (j_ + W <= ncols)                                              \
                V_STORE(pix_ + j_, r_);                                       \
            else                                                              \
                STORE_PART(pix_ + j_, r_, ncols - j_);                        \
        }                                                                     \
    }

/* Blocks @p count input pixels apart (pixel m's columns at m * @p pitch
 * of @p out): the sum over the @p nterms terms of term t's input pixels
 * (from @p src[t], @p in_step elements apart, channels @p c_step) times
 * columns [@p col, @p col + @p ncols) of its packed weights @p w[t]
 * (rows @p np apart, @p cin of them), onto the bias row @p brow, the
 * epilogue applied, stored to @p out (column @p col's place): blocks of
 * MB pixels, the last block's missing pixels reading the last one's
 * input and storing nothing; columns NV vectors of W at a time, the
 * lanes of a last partial vector stored by STORE_PART. */
#define DEFINE_BLOCK_KERNEL(NAME, TARGET, VF, VI, W, MB, NV, STORE_PART)      \
    TARGET static void NAME(const float *const *src, int64_t nterms,         \
            int64_t in_step, int64_t c_step, int64_t cin,                     \
            const float *const *w, int64_t np,                                \
            int64_t col, const float *brow, int64_t ncols,                    \
            const epilogue_t *epp, float *out, int64_t pitch,                 \
            int64_t count) {                                                  \
        const epilogue_t e_ = *epp, *ep = &e_; /* not reloaded past stores */ \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            for (int64_t j0 = 0; j0 < ncols; j0 += NV * W) {                  \
                VF acc[MB][NV];                                               \
                BLOCK_ACC_BIAS(VF, W, MB, NV, acc, brow + col + j0);          \
                for (int64_t t = 0; t < nterms; t++) {                        \
                    const float *s[MB];                                       \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)     \
                        s[m] = src[t] + (x + (m < mb ? m : mb - 1)) * in_step; \
                    const float *wr = w[t] + col + j0;                        \
                    for (int64_t c = 0; c < cin; c++, wr += np) {             \
                        int64_t ce = c * c_step;                              \
                        VF wv[NV];                                            \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
                            V_LOAD(wv[v], wr + v * W);                        \
                        _Pragma("GCC unroll 16") for (int m = 0; m < MB;      \
                                                      m++) {                  \
                            /* x - 0 is x exactly (x + 0 is not, for -0):     \
                             * GCC broadcasts straight from memory */         \
                            VF xv = s[m][ce] - (VF){0};                       \
                            _Pragma("GCC unroll 4") for (int v = 0; v < NV;   \
                                                         v++)                 \
                                acc[m][v] += xv * wv[v];                      \
                        }                                                     \
                    }                                                         \
                }                                                             \
                BLOCK_STORE(VF, VI, W, MB, NV, STORE_PART, acc, mb, j0);      \
            }                                                                 \
        }                                                                     \
    }

/* The first @p n (< W) lanes of @p v to @p d: lane by lane at constant
 * lane numbers, or in one masked store with AVX-512. (Through a stack
 * copy of the vector instead, GCC 12 keeps every accumulator of an AVX2
 * kernel on the stack: half its registers unused, 2.3x slower.) */
#define STORE_LANES(W, d, v, n)                                               \
    do {                                                                      \
        float *d_ = (d);                                                      \
        int64_t n_ = (n);                                                     \
        _Pragma("GCC unroll 16") for (int l_ = 0; l_ < W; l_++)               \
            if (l_ < n_) d_[l_] = (v)[l_];                                    \
    } while (0)
#define STORE_PART_V4(d, v, n) STORE_LANES(4, d, v, n)
#define STORE_PART_V8(d, v, n) STORE_LANES(8, d, v, n)
#define STORE_PART_V16(d, v, n)                                               \
    _mm512_mask_storeu_ps((d), (__mmask16)((1u << (n)) - 1u), (__m512)(v))

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))
DEFINE_BLOCK_KERNEL(block_avx512_4, AVX512, v16f, v16i, 16, 6, 4,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_3, AVX512, v16f, v16i, 16, 8, 3,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_2, AVX512, v16f, v16i, 16, 12, 2,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_1, AVX512, v16f, v16i, 16, 12, 1,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(single_avx512_4, AVX512, v16f, v16i, 16, 1, 4,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(single_avx512_3, AVX512, v16f, v16i, 16, 1, 3,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(single_avx512_2, AVX512, v16f, v16i, 16, 1, 2,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(single_avx512_1, AVX512, v16f, v16i, 16, 1, 1,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx2_2, AVX2, v8f, v8i, 8, 6, 2, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(block_avx2_1, AVX2, v8f, v8i, 8, 8, 1, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(single_avx2_2, AVX2, v8f, v8i, 8, 1, 2, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(single_avx2_1, AVX2, v8f, v8i, 8, 1, 1, STORE_PART_V8)
#endif
DEFINE_BLOCK_KERNEL(block_portable_2, , v4f, v4i, 4, 6, 2, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(block_portable_1, , v4f, v4i, 4, 8, 1, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(single_portable_2, , v4f, v4i, 4, 1, 2, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(single_portable_1, , v4f, v4i, 4, 1, 1, STORE_PART_V4)

#if defined(__x86_64__) && defined(__GNUC__)
/* The lanes kernels' parameters (lanes_fn), and the masks k0, k1 of an
 * input pixel's @p cin channels in its first and second vector. */
#define LANES_PARAMS                                                          \
    const float *const *src, int64_t nterms, int64_t in_step, int64_t cin,    \
            int64_t rows, const int32_t *pattern, const float *const *w,      \
            int64_t np, int64_t col, const float *brow, int64_t ncols,        \
            const epilogue_t *epp, float *out, int64_t pitch, int64_t count
#define LANES_MASKS(cin)                                                      \
    __mmask16 k0 = (__mmask16)((cin) >= 16 ? 0xffffu : (1u << (cin)) - 1u),   \
              k1 = (__mmask16)((cin) > 16 ? (1u << ((cin) - 16)) - 1u : 0u)

/* Blocks as DEFINE_BLOCK_KERNEL's, in the lanes form (lanes_form): the
 * input pixels' @p cin channels (contiguous, two vectors at most) are
 * loaded once per term, and packed row i of a term (channel i of every
 * group) meets them permuted by @p pattern's row i (16 lane indices into
 * the two vectors). MB x NV accumulators, MB pixels of two vectors and
 * the index, weight and permuted vectors fit AVX-512's 32 registers. */
#define DEFINE_LANES_KERNEL(NAME, MB, NV, TWO)                                \
    AVX512 static void NAME(LANES_PARAMS) {                                   \
        const epilogue_t e_ = *epp, *ep = &e_; /* not reloaded past stores */ \
        LANES_MASKS(cin);                                                     \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            for (int64_t j0 = 0; j0 < ncols; j0 += NV * 16) {                 \
                v16f acc[MB][NV];                                             \
                BLOCK_ACC_BIAS(v16f, 16, MB, NV, acc, brow + col + j0);       \
                for (int64_t t = 0; t < nterms; t++) {                        \
                    __m512 lo[MB], hi[MB];                                    \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++) {   \
                        const float *s = src[t]                               \
                                + (x + (m < mb ? m : mb - 1)) * in_step;      \
                        lo[m] = _mm512_maskz_loadu_ps(k0, s);                 \
                        if (TWO) hi[m] = _mm512_maskz_loadu_ps(k1, s + 16);   \
                    }                                                         \
                    const float *wr = w[t] + col + j0;                        \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        __m512i idx = _mm512_loadu_si512(pattern + 16 * i);   \
                        v16f wv[NV];                                          \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
                            V_LOAD(wv[v], wr + v * 16);                       \
                        _Pragma("GCC unroll 16") for (int m = 0; m < MB;      \
                                                      m++) {                  \
                            v16f xv = TWO ? (v16f)_mm512_permutex2var_ps(     \
                                                  lo[m], idx, hi[m])          \
                                          : (v16f)_mm512_permutexvar_ps(idx,  \
                                                  lo[m]);                     \
                            _Pragma("GCC unroll 4") for (int v = 0; v < NV;   \
                                                         v++)                 \
                                acc[m][v] += xv * wv[v];                      \
                        }                                                     \
                    }                                                         \
                }                                                             \
                BLOCK_STORE(v16f, v16i, 16, MB, NV, STORE_PART_V16, acc, mb,  \
                        j0);                                                  \
            }                                                                 \
        }                                                                     \
    }
/* [two vectors of input channels][NV - 1] */
#define LANES_KERNELS(PREFIX, MB1, MB2, MB3, MB4)                             \
    DEFINE_LANES_KERNEL(PREFIX##_1, MB1, 1, 0)                                \
    DEFINE_LANES_KERNEL(PREFIX##_2, MB2, 2, 0)                                \
    DEFINE_LANES_KERNEL(PREFIX##_3, MB3, 3, 0)                                \
    DEFINE_LANES_KERNEL(PREFIX##_4, MB4, 4, 0)                                \
    DEFINE_LANES_KERNEL(PREFIX##_two_1, MB1, 1, 1)                            \
    DEFINE_LANES_KERNEL(PREFIX##_two_2, MB2, 2, 1)                            \
    DEFINE_LANES_KERNEL(PREFIX##_two_3, MB3, 3, 1)                            \
    DEFINE_LANES_KERNEL(PREFIX##_two_4, MB4, 4, 1)
LANES_KERNELS(lanes_avx512, 8, 6, 4, 4)
LANES_KERNELS(lanes_short_avx512, 4, 4, 4, 4)

/* One block (an end of a row) in the lanes form: the terms go round
 * LANES_SINGLE_CHAINS partial sums, added at the end, so that the FMAs
 * of one pixel are not one chain of their latency each (a row end of
 * deconv_ci_3d:grouped: 18 terms x 4 channels). */
#define LANES_SINGLE_CHAINS 4
#define DEFINE_LANES_SINGLE(NAME, NV, TWO)                                    \
    AVX512 static void NAME(LANES_PARAMS) {                                   \
        enum { P = LANES_SINGLE_CHAINS };                                     \
        (void)in_step, (void)count; /* one pixel */                           \
        const epilogue_t e_ = *epp, *ep = &e_;                                \
        LANES_MASKS(cin);                                                     \
        for (int64_t j0 = 0; j0 < ncols; j0 += NV * 16) {                     \
            v16f acc[P][NV];                                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {            \
                V_LOAD(acc[0][v], brow + col + j0 + v * 16);                  \
                _Pragma("GCC unroll 4") for (int q = 1; q < P; q++)           \
                    acc[q][v] = (v16f){0};                                    \
            }                                                                 \
            for (int64_t t0 = 0; t0 < nterms; t0 += P) {                      \
                _Pragma("GCC unroll 4") for (int q = 0; q < P; q++) {         \
                    if (t0 + q >= nterms) break;                              \
                    const float *s = src[t0 + q];                             \
                    __m512 lo = _mm512_maskz_loadu_ps(k0, s),                 \
                           hi = TWO ? _mm512_maskz_loadu_ps(k1, s + 16) : lo; \
                    const float *wr = w[t0 + q] + col + j0;                   \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        __m512i idx = _mm512_loadu_si512(pattern + 16 * i);   \
                        v16f xv = TWO ? (v16f)_mm512_permutex2var_ps(lo, idx, \
                                                hi)                           \
                                      : (v16f)_mm512_permutexvar_ps(idx, lo); \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV;       \
                                                     v++) {                   \
                            v16f wv;                                          \
                            V_LOAD(wv, wr + v * 16);                          \
                            acc[q][v] += xv * wv;                             \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
            v16f sum[1][NV];                                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)              \
                sum[0][v] = (acc[0][v] + acc[1][v]) + (acc[2][v] + acc[3][v]); \
            int64_t x = 0;                                                    \
            BLOCK_STORE(v16f, v16i, 16, 1, NV, STORE_PART_V16, sum, 1, j0);   \
        }                                                                     \
    }
DEFINE_LANES_SINGLE(lanes_single_avx512_1, 1, 0)
DEFINE_LANES_SINGLE(lanes_single_avx512_2, 2, 0)
DEFINE_LANES_SINGLE(lanes_single_avx512_3, 3, 0)
DEFINE_LANES_SINGLE(lanes_single_avx512_4, 4, 0)
DEFINE_LANES_SINGLE(lanes_single_avx512_two_1, 1, 1)
DEFINE_LANES_SINGLE(lanes_single_avx512_two_2, 2, 1)
DEFINE_LANES_SINGLE(lanes_single_avx512_two_3, 3, 1)
DEFINE_LANES_SINGLE(lanes_single_avx512_two_4, 4, 1)
#endif

block_kernels_t direct_blocks_kernels(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512f() && !plan->direct_avx2)
        return (block_kernels_t){{block_avx512_1, block_avx512_2,
                                         block_avx512_3, block_avx512_4},
                {single_avx512_1, single_avx512_2, single_avx512_3,
                        single_avx512_4},
#define LANES_SET(PREFIX)                                                     \
    {{PREFIX##_1, PREFIX##_2, PREFIX##_3, PREFIX##_4},                        \
            {PREFIX##_two_1, PREFIX##_two_2, PREFIX##_two_3, PREFIX##_two_4}}
                LANES_SET(lanes_avx512), LANES_SET(lanes_short_avx512),
                LANES_SET(lanes_single_avx512),
                4, 16};
    if (cpu_has_avx2_fma())
        return (block_kernels_t){{block_avx2_1, block_avx2_2},
                {single_avx2_1, single_avx2_2}, {{0}}, {{0}}, {{0}}, 2, 8};
#endif
    (void)plan;
    return (block_kernels_t){{block_portable_1, block_portable_2},
            {single_portable_1, single_portable_2}, {{0}}, {{0}}, {{0}}, 2, 4};
}
