/*
 * A plain activation tensor (N, C, spatial..., the spatial axes one run)
 * copied into blocks of 16 channels (aBc16b, aBcd16b, aBcde16b) or back,
 * as dgrad's own copy: 16 runs of 16 lanes loaded, transposed in
 * AVX-512 registers (transpose_avx512.h) and stored, the pixels past a
 * run's end and the channels past C masked.
 *
 * oneDNN 2.6's `jit:uni` reorder of alexnet:deconv2_1d's bf16 input
 * (2 x 256 x 27, 27 KB, NCX into aBc16b) took 4.1 us on one thread and
 * 6.4-6.6 on two, dgrad's scatter 5.2-5.7 and this copy 0.86-0.90; of
 * its output (2 x 96 x 27) the other way 1.6 and 5.0-5.2 against 0.32-
 * 0.38 (AMD EPYC Zen 5, planning's own timing: `DGRAD_LAYOUT_SEARCH=
 * verbose dgrad bench --dt bf16 --data-format NCX
 * g2mb2oc96ow27ic256iw27kw5pw2`; bench/README.md, thirty-ninth look).
 * f32 copies run at about oneDNN's `jit:blk` one-thread speed: timing
 * keeps whichever is faster.
 *
 * Offered beside the scatter (small_copy.c), under its conditions (at
 * most SMALL_COPY_MAX_BYTES a side, a destination at its offset 0), and
 * timed against it and oneDNN's reorder. Into blocks it writes every
 * element, the channels past C as zeros, as oneDNN's reorder does; out
 * of them it writes only the tensor's own elements, so it may write the
 * user's output, where the scatter may not.
 */
#include "plan_impl.h"

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "transpose_avx512.h"
#endif

#define CHANNEL_BLOCK 16

/* Whether @p p is plain (N, C, spatial axes in one run) and @p b its
 * 16-channel blocks with dense pixels, of one type. */
static int plain_and_blocks(const md_layout_t *p, const md_layout_t *b) {
    int nd = b->ndims;
    if (nd < 3 || p->ndims != nd || p->dt != b->dt || p->inner_nblks != 0
            || b->inner_nblks != 1 || b->inner_blks[0] != CHANNEL_BLOCK
            || b->inner_idxs[0] != 1 || b->offset0 != 0
            || p->strides[nd - 1] != 1 || b->strides[nd - 1] != CHANNEL_BLOCK)
        return 0;
    for (int a = 0; a < nd; a++)
        if (p->dims[a] != b->dims[a]) return 0;
    /* the spatial axes one run on both sides */
    for (int a = 2; a < nd - 1; a++)
        if (p->strides[a] != p->strides[a + 1] * p->dims[a + 1]
                || b->strides[a] != b->strides[a + 1] * b->dims[a + 1])
            return 0;
    int64_t pixels = b->strides[2] * b->dims[2] / CHANNEL_BLOCK;
    return b->strides[1] == pixels * CHANNEL_BLOCK
            && b->strides[0] == b->padded_dims[1] * pixels;
}

int channel_blocks_fits(const md_layout_t *f, const md_layout_t *t) {
    size_t es = dnnl_data_type_size(t->dt);
    if (!cpu_has_avx512f() || (es == 2 && !cpu_has_avx512bw())
            || (es != 2 && es != 4))
        return 0;
    return plain_and_blocks(f, t) || plain_and_blocks(t, f);
}

#if defined(__x86_64__) && defined(__GNUC__)

/* 16 vectors of 16 lanes of one tensor moved to the other through a
 * transpose: from plain, channels [c0, c0 + rows) (rows <= 16) of
 * pixels [p, p + len) (len <= 16) at @p plain (channel stride @p cs)
 * into the block of pixel vectors at @p block, the channels past rows
 * as zeros; to plain, the reverse, only rows channels written. */
__attribute__((target("avx512f"))) static void block_f32(float *plain,
        int64_t cs, int rows, int len, float *block, int to_plain) {
    __m512 r[16];
    __mmask16 m = (__mmask16)((1u << len) - 1);
    for (int i = 0; i < 16; i++)
        r[i] = to_plain ? (i < len ? _mm512_loadu_ps(block + i * 16)
                                   : _mm512_setzero_ps())
                        : (i < rows ? _mm512_maskz_loadu_ps(m, plain + i * cs)
                                    : _mm512_setzero_ps());
    transpose16(r);
    if (to_plain)
        for (int c = 0; c < rows; c++)
            _mm512_mask_storeu_ps(plain + c * cs, m, r[c]);
    else
        for (int i = 0; i < len; i++) _mm512_storeu_ps(block + i * 16, r[i]);
}

/* The same for 2-byte elements, widened to 32-bit lanes for the
 * transpose and narrowed back. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void block_16(
        uint16_t *plain, int64_t cs, int rows, int len, uint16_t *block,
        int to_plain) {
    __m512 r[16];
    __mmask16 m = (__mmask16)((1u << len) - 1);
    for (int i = 0; i < 16; i++) {
        __m256i v = _mm256_setzero_si256();
        if (to_plain && i < len)
            v = _mm256_loadu_si256((const __m256i *)(block + i * 16));
        else if (!to_plain && i < rows)
            v = _mm256_maskz_loadu_epi16(m, plain + i * cs);
        r[i] = _mm512_castsi512_ps(_mm512_cvtepu16_epi32(v));
    }
    transpose16(r);
    if (to_plain)
        for (int c = 0; c < rows; c++)
            _mm256_mask_storeu_epi16(plain + c * cs, m,
                    _mm512_cvtepi32_epi16(_mm512_castps_si512(r[c])));
    else
        for (int i = 0; i < len; i++)
            _mm256_storeu_si256((__m256i *)(block + i * 16),
                    _mm512_cvtepi32_epi16(_mm512_castps_si512(r[i])));
}

void channel_blocks_run(const step_t *step, const void *from, void *to) {
    int to_plain = step->own_to.inner_nblks == 0;
    const md_layout_t *p = to_plain ? &step->own_to : &step->own_from,
                      *b = to_plain ? &step->own_from : &step->own_to;
    char *plain = (char *)(uintptr_t)(to_plain ? to : from);
    char *blocks = (char *)(uintptr_t)(to_plain ? from : to);
    size_t es = dnnl_data_type_size(b->dt);
    int64_t C = b->dims[1], pixels = b->strides[1] / CHANNEL_BLOCK;
    int64_t nblocks = b->padded_dims[1] / CHANNEL_BLOCK;
    for (int64_t n = 0; n < b->dims[0]; n++)
        for (int64_t k = 0; k < nblocks; k++) {
            int64_t c0 = k * CHANNEL_BLOCK;
            int64_t po = p->offset0 + n * p->strides[0] + c0 * p->strides[1];
            int64_t bo = n * b->strides[0] + k * b->strides[1];
            int rows = (int)(C - c0 < CHANNEL_BLOCK ? C - c0 : CHANNEL_BLOCK);
            for (int64_t x = 0; x < pixels; x += CHANNEL_BLOCK) {
                int len = (int)(pixels - x < CHANNEL_BLOCK ? pixels - x
                                                           : CHANNEL_BLOCK);
                size_t at_plain = (size_t)(po + x) * es;
                size_t at_block = (size_t)(bo + x * CHANNEL_BLOCK) * es;
                if (es == 4)
                    block_f32((float *)(plain + at_plain), p->strides[1],
                            rows, len, (float *)(blocks + at_block),
                            to_plain);
                else
                    block_16((uint16_t *)(plain + at_plain), p->strides[1],
                            rows, len, (uint16_t *)(blocks + at_block),
                            to_plain);
            }
        }
}

#else

void channel_blocks_run(const step_t *step, const void *from, void *to) {
    (void)step;
    (void)from;
    (void)to;
}

#endif
