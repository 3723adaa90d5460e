/*
 * AVX-512 gathers dgrad's own loops share (direct_blocks_pack.c,
 * direct_row_vectors.c): 16-bit elements through 32-bit words.
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
#endif

#endif
