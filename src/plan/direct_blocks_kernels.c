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
DEFINE_BLOCK_KERNEL(short_avx512_4, AVX512, v16f, v16i, 16, 4, 4,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(short_avx512_3, AVX512, v16f, v16i, 16, 4, 3,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(short_avx512_2, AVX512, v16f, v16i, 16, 4, 2,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(short_avx512_1, AVX512, v16f, v16i, 16, 4, 1,
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
DEFINE_BLOCK_KERNEL(short_avx2_2, AVX2, v8f, v8i, 8, 4, 2, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(short_avx2_1, AVX2, v8f, v8i, 8, 4, 1, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(single_avx2_2, AVX2, v8f, v8i, 8, 1, 2, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(single_avx2_1, AVX2, v8f, v8i, 8, 1, 1, STORE_PART_V8)
#endif
DEFINE_BLOCK_KERNEL(block_portable_2, , v4f, v4i, 4, 6, 2, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(block_portable_1, , v4f, v4i, 4, 8, 1, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(short_portable_2, , v4f, v4i, 4, 4, 2, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(short_portable_1, , v4f, v4i, 4, 4, 1, STORE_PART_V4)
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

/* Input vector i of pixel @p m into @p xv, in @p FORM (the pixel's
 * channels in lo[m], hi[m]; spread, its vectors at s[m]). */
#define LANES_X(FORM, xv, m, i)                                               \
    do {                                                                      \
        if (FORM == LANES_BY_SPREAD)                                          \
            V_LOAD(xv, s[m] + 16 * (i));                                      \
        else if (FORM == LANES_BY_TWO)                                        \
            xv = (v16f)_mm512_permutex2var_ps(lo[m], idx, hi[m]);             \
        else                                                                  \
            xv = (v16f)_mm512_permutexvar_ps(idx, lo[m]);                     \
    } while (0)
/* Term @p t's input pixel @p m at s[m] and, unless spread, its channels
 * in lo[m] and hi[m]. */
#define LANES_PIXEL(FORM, m, pixel)                                           \
    do {                                                                      \
        s[m] = (pixel);                                                       \
        if (FORM == LANES_BY_SPREAD) break;                                   \
        lo[m] = _mm512_maskz_loadu_ps(k0, s[m]);                              \
        hi[m] = FORM == LANES_BY_TWO ? _mm512_maskz_loadu_ps(k1, s[m] + 16)   \
                                 : lo[m];                                     \
    } while (0)

/* Blocks as DEFINE_BLOCK_KERNEL's, in the lanes form (blocks_lanes_form):
 * packed row i of a term (channel i of every group) meets input vector i
 * of the term's pixels (LANES_X; @p pattern's row i is the 16 lane
 * indices into the pixel's channels). MB x NV accumulators, MB pixels of
 * two vectors and the index, weight and input vectors fit AVX-512's 32
 * registers. */
#define DEFINE_LANES_KERNEL(NAME, MB, NV, FORM)                               \
    AVX512 static void NAME(LANES_PARAMS) {                                   \
        const epilogue_t e_ = *epp, *ep = &e_; /* not reloaded past stores */ \
        LANES_MASKS(cin);                                                     \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            for (int64_t j0 = 0; j0 < ncols; j0 += NV * 16) {                 \
                v16f acc[MB][NV];                                             \
                BLOCK_ACC_BIAS(v16f, 16, MB, NV, acc, brow + col + j0);       \
                for (int64_t t = 0; t < nterms; t++) {                        \
                    const float *s[MB];                                       \
                    __m512 lo[MB], hi[MB];                                    \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)     \
                        LANES_PIXEL(FORM, m, src[t]                           \
                                + (x + (m < mb ? m : mb - 1)) * in_step);     \
                    const float *wr = w[t] + col + j0;                        \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        __m512i idx = FORM == LANES_BY_SPREAD                 \
                                ? _mm512_setzero_si512()                      \
                                : _mm512_loadu_si512(pattern + 16 * i);       \
                        v16f wv[NV];                                          \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
                            V_LOAD(wv[v], wr + v * 16);                       \
                        _Pragma("GCC unroll 16") for (int m = 0; m < MB;      \
                                                      m++) {                  \
                            v16f xv;                                          \
                            LANES_X(FORM, xv, m, i);                          \
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
/* [form][NV - 1]: pixels MB1..MB4 of one vector of channels, TMB1..TMB4
 * of two, SMB1..SMB4 spread. Spread pixels hold no channels in
 * registers, so their blocks take more of them. Pixels of two vectors
 * take two registers each: at 8 pixels of one vector of columns (6 of
 * two) GCC spilled a pixel's vector and the weights to the stack and
 * reloaded them for every row of a term (`objdump -d` of
 * lanes_avx512_two_1, _two_2); at 5 (4) it spills none, and the
 * grouped 2D example in NXC (two vectors, one vector of columns) took
 * 0.64-0.75 ms on the blocks loop against 0.79-0.93 at 8, and
 * g4mb1ic20ih112oc16oh223kh3sh2ph1 (two of columns) 0.20-0.26 at 4
 * against 0.28-0.30 at 6 (`DGRAD_OWN_LOOP=blocks dgrad bench --no-raw
 * --data-format NXC`, both threads, builds alternated three times, AMD
 * EPYC Zen 4 VM). */
#define LANES_KERNELS(PREFIX, MB1, MB2, MB3, MB4, TMB1, TMB2, TMB3, TMB4,   \
        SMB1, SMB2, SMB3, SMB4)                                               \
    DEFINE_LANES_KERNEL(PREFIX##_1, MB1, 1, LANES_BY_ONE)                     \
    DEFINE_LANES_KERNEL(PREFIX##_2, MB2, 2, LANES_BY_ONE)                     \
    DEFINE_LANES_KERNEL(PREFIX##_3, MB3, 3, LANES_BY_ONE)                     \
    DEFINE_LANES_KERNEL(PREFIX##_4, MB4, 4, LANES_BY_ONE)                     \
    DEFINE_LANES_KERNEL(PREFIX##_two_1, TMB1, 1, LANES_BY_TWO)                \
    DEFINE_LANES_KERNEL(PREFIX##_two_2, TMB2, 2, LANES_BY_TWO)                \
    DEFINE_LANES_KERNEL(PREFIX##_two_3, TMB3, 3, LANES_BY_TWO)                \
    DEFINE_LANES_KERNEL(PREFIX##_two_4, TMB4, 4, LANES_BY_TWO)                \
    DEFINE_LANES_KERNEL(PREFIX##_spread_1, SMB1, 1, LANES_BY_SPREAD)          \
    DEFINE_LANES_KERNEL(PREFIX##_spread_2, SMB2, 2, LANES_BY_SPREAD)          \
    DEFINE_LANES_KERNEL(PREFIX##_spread_3, SMB3, 3, LANES_BY_SPREAD)          \
    DEFINE_LANES_KERNEL(PREFIX##_spread_4, SMB4, 4, LANES_BY_SPREAD)
LANES_KERNELS(lanes_avx512, 8, 6, 4, 4, 5, 4, 4, 4, 12, 8, 6, 5)
LANES_KERNELS(lanes_short_avx512, 4, 4, 4, 4, 4, 4, 4, 4, 3, 4, 4, 4)

/* Blocks as DEFINE_LANES_KERNEL's (FORM LANES_BY_ONE or _TWO) where a
 * call has all NT taps of the last axis: term (u, d) of block m reads
 * pixel m - d of @p src[u] (the pixel of block 0 at tap 0) with the
 * weights at @p w[u] + d x @p tap_step. Each pixel is permuted once for
 * the NT blocks that read it, not once per block and tap: MB + NT - 1
 * pixels a row of a term feed MB x NT products. The grouped 2D example
 * in NXC (2 taps, two vectors of channels) took 0.38-0.57 ms on the
 * blocks loop against 0.63-0.75 with a permute per block and tap (both
 * threads, four alternating rounds, `DGRAD_OWN_LOOP=blocks dgrad bench
 * --no-raw --data-format NXC`, AMD EPYC Zen 4 VM; bench/README.md,
 * thirty-fourth look). */
#define DEFINE_LANES_TAPS(NAME, MB, NV, NT, FORM)                             \
    AVX512 static void NAME(const float *const *src, int64_t nu,            \
            int64_t in_step, int64_t cin, int64_t rows,                       \
            const int32_t *pattern, const float *const *w, int64_t tap_step, \
            int64_t np, int64_t col, const float *brow, int64_t ncols,        \
            const epilogue_t *epp, float *out, int64_t pitch,                 \
            int64_t count) {                                                  \
        enum { P = (MB) + (NT) - 1 }; /* pixels a block of MB reads */        \
        const epilogue_t e_ = *epp, *ep = &e_;                                \
        LANES_MASKS(cin);                                                     \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            for (int64_t j0 = 0; j0 < ncols; j0 += NV * 16) {                 \
                v16f acc[MB][NV];                                             \
                BLOCK_ACC_BIAS(v16f, 16, MB, NV, acc, brow + col + j0);       \
                for (int64_t u = 0; u < nu; u++) {                            \
                    /* pixel q is block q - (NT - 1)'s at tap 0; past the     \
                     * last block, the last block's */                        \
                    __m512 lo[P], hi[P];                                      \
                    _Pragma("GCC unroll 16") for (int q = 0; q < P; q++) {    \
                        const float *s_ = src[u]                              \
                                + (x + (q < mb + (NT) - 1 ? q : mb + (NT) - 2) \
                                          - ((NT) - 1))                       \
                                        * in_step;                            \
                        lo[q] = _mm512_maskz_loadu_ps(k0, s_);                \
                        hi[q] = FORM == LANES_BY_TWO                          \
                                ? _mm512_maskz_loadu_ps(k1, s_ + 16)          \
                                : lo[q];                                      \
                    }                                                         \
                    const float *wr = w[u] + col + j0;                        \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        __m512i idx = _mm512_loadu_si512(pattern + 16 * i);   \
                        v16f wv[NT][NV];                                      \
                        _Pragma("GCC unroll 4") for (int d = 0; d < (NT); d++) \
                            _Pragma("GCC unroll 4") for (int v = 0; v < NV;   \
                                                         v++)                 \
                                V_LOAD(wv[d][v], wr + d * tap_step + v * 16); \
                        _Pragma("GCC unroll 16") for (int q = 0; q < P;       \
                                                      q++) {                  \
                            v16f xv = FORM == LANES_BY_TWO                    \
                                    ? (v16f)_mm512_permutex2var_ps(lo[q],     \
                                            idx, hi[q])                       \
                                    : (v16f)_mm512_permutexvar_ps(idx,        \
                                            lo[q]);                           \
                            _Pragma("GCC unroll 4") for (int d = 0;           \
                                                         d < (NT); d++) {     \
                                int m = q - ((NT) - 1) + d;                   \
                                if (m < 0 || m >= (MB)) continue;             \
                                _Pragma("GCC unroll 4") for (int v = 0;       \
                                                             v < NV; v++)     \
                                    acc[m][v] += xv * wv[d][v];               \
                            }                                                 \
                        }                                                     \
                    }                                                         \
                }                                                             \
                BLOCK_STORE(v16f, v16i, 16, MB, NV, STORE_PART_V16, acc, mb,  \
                        j0);                                                  \
            }                                                                 \
        }                                                                     \
    }
/* [one, two][NT - 2][NV - 1], pixels a call as many as GCC keeps in
 * registers with the accumulators and NT x NV weights: no vector
 * register spilled to the stack (`objdump -d`); with a pixel more each
 * kernel spilled a pixel's vector or the index, 2 to 14 stack accesses.
 * For the grouped 2D example (lanes_taps_two_2_1) 4 pixels and 5, whose
 * spill is one reload a row of a term, ran alike (0.37-0.41 ms and
 * 0.38-0.53, four alternating rounds, both threads). */
DEFINE_LANES_TAPS(lanes_taps_2_1, 8, 1, 2, LANES_BY_ONE)
DEFINE_LANES_TAPS(lanes_taps_2_2, 4, 2, 2, LANES_BY_ONE)
DEFINE_LANES_TAPS(lanes_taps_3_1, 5, 1, 3, LANES_BY_ONE)
DEFINE_LANES_TAPS(lanes_taps_3_2, 4, 2, 3, LANES_BY_ONE)
DEFINE_LANES_TAPS(lanes_taps_two_2_1, 4, 1, 2, LANES_BY_TWO)
DEFINE_LANES_TAPS(lanes_taps_two_2_2, 3, 2, 2, LANES_BY_TWO)
DEFINE_LANES_TAPS(lanes_taps_two_3_1, 4, 1, 3, LANES_BY_TWO)
DEFINE_LANES_TAPS(lanes_taps_two_3_2, 3, 2, 3, LANES_BY_TWO)

/* One block (an end of a row) in the lanes form: the terms go round
 * LANES_SINGLE_CHAINS partial sums, added at the end, so that the FMAs
 * of one pixel are not one chain of their latency each (a row end of
 * deconv_ci_3d:grouped: 18 terms x 4 channels). */
#define LANES_SINGLE_CHAINS 4
#define DEFINE_LANES_SINGLE(NAME, NV, FORM)                                   \
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
                    const float *s[1];                                        \
                    __m512 lo[1], hi[1];                                      \
                    LANES_PIXEL(FORM, 0, src[t0 + q]);                        \
                    const float *wr = w[t0 + q] + col + j0;                   \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        __m512i idx = FORM == LANES_BY_SPREAD                 \
                                ? _mm512_setzero_si512()                      \
                                : _mm512_loadu_si512(pattern + 16 * i);       \
                        v16f xv;                                              \
                        LANES_X(FORM, xv, 0, i);                              \
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
#define LANES_SINGLES(PREFIX, FORM, SUFFIX)                                   \
    DEFINE_LANES_SINGLE(PREFIX##SUFFIX##_1, 1, FORM)                          \
    DEFINE_LANES_SINGLE(PREFIX##SUFFIX##_2, 2, FORM)                          \
    DEFINE_LANES_SINGLE(PREFIX##SUFFIX##_3, 3, FORM)                          \
    DEFINE_LANES_SINGLE(PREFIX##SUFFIX##_4, 4, FORM)
LANES_SINGLES(lanes_single_avx512, LANES_BY_ONE, )
LANES_SINGLES(lanes_single_avx512, LANES_BY_TWO, _two)
LANES_SINGLES(lanes_single_avx512, LANES_BY_SPREAD, _spread)
/* Blocks of the spread copy listed one by one (lanes_list_fn): block m
 * reads term t's input at in + soff[t] + pix[m], its weights at w +
 * woff[t], and stores its columns at out + dst[m], so that blocks of
 * several short rows fill one kernel's MB pixels (offsets, not pointers:
 * lists made once serve every execution's buffers). The terms go round
 * P partial sums (a few blocks are otherwise chains of dependent FMAs).
 * All columns in one call (ncols <= NV x W);
 * with @p colidx (their output offsets: the output not channels-last)
 * they are scattered, else stored contiguous, by STORE_COLS (o, j, r,
 * n: vector r as columns j to j + n of o). */
#define DEFINE_LANES_LIST(NAME, TARGET, VF, VI, W, MB, NV, P, STORE_COLS)     \
    TARGET static void NAME(const float *in, const int64_t *soff,            \
            int64_t nterms, const int64_t *pix, int64_t rows, const float *w, \
            const int64_t *woff, int64_t np, const float *brow,               \
            int64_t ncols, const int32_t *colidx, const epilogue_t *epp,      \
            float *out, const int64_t *dst, int64_t count) {                  \
        const epilogue_t e_ = *epp, *ep = &e_;                                \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            VF acc[P][MB][NV];                                                \
            BLOCK_ACC_BIAS(VF, W, MB, NV, acc[0], brow);                      \
            _Pragma("GCC unroll 4") for (int q = 1; q < P; q++)               \
                _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)         \
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)      \
                        acc[q][m][v] = (VF){0};                               \
            for (int64_t t0 = 0; t0 < nterms; t0 += P)                        \
                _Pragma("GCC unroll 4") for (int q = 0; q < P; q++) {         \
                    if (t0 + q >= nterms) break;                              \
                    const float *s[MB];                                       \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)     \
                        s[m] = in + soff[t0 + q]                              \
                                + pix[x + (m < mb ? m : mb - 1)];             \
                    const float *wr = w + woff[t0 + q];                       \
                    for (int64_t i = 0; i < rows; i++, wr += np) {            \
                        VF wv[NV];                                            \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
                            V_LOAD(wv[v], wr + v * W);                        \
                        _Pragma("GCC unroll 16") for (int m = 0; m < MB;      \
                                                      m++) {                  \
                            VF xv;                                            \
                            V_LOAD(xv, s[m] + W * i);                         \
                            _Pragma("GCC unroll 4") for (int v = 0; v < NV;   \
                                                         v++)                 \
                                acc[q][m][v] += xv * wv[v];                   \
                        }                                                     \
                    }                                                         \
                }                                                             \
            _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++) {           \
                if (m >= mb) break;                                           \
                float *o = out + dst[x + m];                                  \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {        \
                    int64_t j = v * W;                                        \
                    if (j >= ncols) break;                                    \
                    VF r = acc[0][m][v];                                      \
                    _Pragma("GCC unroll 4") for (int q = 1; q < P; q++)       \
                        r += acc[q][m][v];                                    \
                    if (ep->on) V_EPILOGUE(VF, VI, ep, r);                    \
                    STORE_COLS(o, j, r, ncols - j < W ? ncols - j : W);       \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
/* Columns of a list kernel: one masked store or scatter (AVX-512), or
 * lane by lane at constant lane numbers (AVX2: see STORE_LANES). */
#define LIST_COLS_V16(o, j, r, n)                                             \
    do {                                                                      \
        __mmask16 k_ = (__mmask16)((n) >= 16 ? 0xffffu : (1u << (n)) - 1u);   \
        if (colidx)                                                           \
            _mm512_mask_i32scatter_ps((o), k_,                                \
                    _mm512_loadu_si512(colidx + (j)), (__m512)(r), 4);        \
        else                                                                  \
            _mm512_mask_storeu_ps((o) + (j), k_, (__m512)(r));                \
    } while (0)
#define LIST_COLS_V8(o, j, r, n)                                              \
    do {                                                                      \
        int64_t c_ = (n);                                                     \
        if (colidx) {                                                         \
            _Pragma("GCC unroll 8") for (int l_ = 0; l_ < 8; l_++)            \
                if (l_ < c_) (o)[colidx[(j) + l_]] = (r)[l_];                 \
        } else if (c_ == 8) {                                                 \
            V_STORE((o) + (j), r);                                            \
        } else {                                                              \
            STORE_LANES(8, (o) + (j), r, c_);                                 \
        }                                                                     \
    } while (0)
/* [size: many blocks, 4, 2, 1][NV - 1]: 4 x NV or more accumulators
 * for every size */
#define LANES_LISTS(NV, MANY)                                                 \
    DEFINE_LANES_LIST(lanes_list_avx512_##NV, AVX512, v16f, v16i, 16, MANY,   \
            NV, 1, LIST_COLS_V16)                                             \
    DEFINE_LANES_LIST(lanes_list4_avx512_##NV, AVX512, v16f, v16i, 16, 4, NV, \
            1, LIST_COLS_V16)                                                 \
    DEFINE_LANES_LIST(lanes_list2_avx512_##NV, AVX512, v16f, v16i, 16, 2, NV, \
            2, LIST_COLS_V16)                                                 \
    DEFINE_LANES_LIST(lanes_list1_avx512_##NV, AVX512, v16f, v16i, 16, 1, NV, \
            4, LIST_COLS_V16)
LANES_LISTS(1, 8)
LANES_LISTS(2, 6)
LANES_LISTS(3, 5)
LANES_LISTS(4, 4)
/* AVX2 has the one the row vectors loop runs (one block, one vector). */
DEFINE_LANES_LIST(lanes_list1_avx2_1, AVX2, v8f, v8i, 8, 1, 1, 4,
        LIST_COLS_V8)
#endif

/* One set per CPU target, static: a run's arguments point at theirs
 * (a copy of the set's 608 bytes at every run was most of the cost of
 * building them, blocks_args_geometry). */
#if defined(__x86_64__) && defined(__GNUC__)
#define LANES_SET(PREFIX)                                                     \
    {{PREFIX##_1, PREFIX##_2, PREFIX##_3, PREFIX##_4},                        \
            {PREFIX##_two_1, PREFIX##_two_2, PREFIX##_two_3, PREFIX##_two_4}, \
            {PREFIX##_spread_1, PREFIX##_spread_2, PREFIX##_spread_3,         \
                    PREFIX##_spread_4}}
#define LIST_SET(PREFIX)                                                      \
    {PREFIX##_1, PREFIX##_2, PREFIX##_3, PREFIX##_4}
static const block_kernels_t kernels_avx512 = {
        {block_avx512_1, block_avx512_2, block_avx512_3, block_avx512_4},
        {short_avx512_1, short_avx512_2, short_avx512_3, short_avx512_4},
        {single_avx512_1, single_avx512_2, single_avx512_3,
                single_avx512_4},
        LANES_SET(lanes_avx512), LANES_SET(lanes_short_avx512),
        LANES_SET(lanes_single_avx512),
        {LIST_SET(lanes_list_avx512), LIST_SET(lanes_list4_avx512),
                LIST_SET(lanes_list2_avx512), LIST_SET(lanes_list1_avx512)},
        {8, 6, 5, 4}, 4, 16,
        {{{lanes_taps_2_1, lanes_taps_2_2}, {lanes_taps_3_1, lanes_taps_3_2}},
                {{lanes_taps_two_2_1, lanes_taps_two_2_2},
                        {lanes_taps_two_3_1, lanes_taps_two_3_2}}}};
static const block_kernels_t kernels_avx2 = {{block_avx2_1, block_avx2_2},
        {short_avx2_1, short_avx2_2}, {single_avx2_1, single_avx2_2}, {{0}},
        {{0}}, {{0}}, {[LIST_1] = {lanes_list1_avx2_1}}, {0}, 2, 8, {{{0}}}};
#endif
static const block_kernels_t kernels_portable = {
        {block_portable_1, block_portable_2},
        {short_portable_1, short_portable_2},
        {single_portable_1, single_portable_2}, {{0}}, {{0}}, {{0}}, {{0}},
        {0}, 2, 4, {{{0}}}};

const block_kernels_t *direct_blocks_kernels(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512f() && !plan->direct_avx2) return &kernels_avx512;
    if (cpu_has_avx2_fma()) return &kernels_avx2;
#endif
    (void)plan;
    return &kernels_portable;
}
