/*
 * AVX-512 gathers dgrad's own loops share (direct_blocks_pack.c,
 * direct_row_vectors.c, direct_phase_pair.c): 16-bit elements through
 * 32-bit words, and whole vectors of elements by index tables.
 */
#ifndef DGRAD_PLAN_GATHER_AVX512_H
#define DGRAD_PLAN_GATHER_AVX512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>

#include "plan_impl.h"

/* Lanes @p m of 16-bit elements (@p dt) at @p src past offsets @p off,
 * as f32: the 32-bit words at the elements gathered (little-endian: the
 * element is the low half), but a lane at the tensor's last element
 * (@p last past @p src), whose word would pass the tensor's end, read
 * alone. */
__attribute__((target("avx512f"))) static inline __m512 gather16(
        dgrad_data_type_t dt, __m512i off, __mmask16 m, const uint16_t *src,
        int64_t last) {
    __mmask16 end = last >= 0 && last <= INT32_MAX
            ? _mm512_mask_cmpeq_epi32_mask(m, off,
                      _mm512_set1_epi32((int32_t)last))
            : 0;
    __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(),
            m & (__mmask16)~end, off, src, 2);
    if (end) w = _mm512_mask_set1_epi32(w, end, src[last]);
    if (dt == dgrad_bf16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w));
}

/* @p nvec vectors of 16 floats at element offsets @p idx (-1: 0) of
 * @p src into @p dst: f32, or (@p dt 16-bit) widened, @p last the
 * offset of the tensor's last element (gather16). */
__attribute__((target("avx512f"))) static inline void gather_vectors(
        const int32_t *idx, int64_t nvec, dgrad_data_type_t dt,
        const void *src, int64_t last, float *dst) {
    for (int64_t v = 0; v < nvec; v++) {
        __m512i i = _mm512_loadu_si512(idx + 16 * v);
        __mmask16 k = _mm512_cmpge_epi32_mask(i, _mm512_setzero_si512());
        _mm512_storeu_ps(dst + 16 * v, dt == dgrad_f32
                        ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, i,
                                  src, 4)
                        : gather16(dt, i, k, src, last));
    }
}
#endif

#endif
