/*
 * The blocks loop's f32 rows between it and the user's tensors
 * (direct_blocks_impl.h): a 16-bit input's rows widened into a thread's
 * scratch and kept there for the output rows that read them (the loop
 * rounds its output a stretch at a time itself, direct_blocks.c), and
 * rows computed channels-last stored into an output that is not.
 */
#include "direct_blocks_impl.h"

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "dtype.h"

/* Input row @p in_off (elements) of @p in, a 16-bit tensor, widened
 * into @p row: X pixels of Cin channels, contiguous. */
static void widen_input_row(const blocks_args_t *a, const char *in,
        int64_t in_off, float *row) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t step = a->plan->in.io_strides[2 + l];
    const char *src = in + (size_t)in_off * a->esize;
    if (step == p->Cin) {
        convert_run_to_f32(p->dt, src, row, p->X[l] * p->Cin);
        return;
    }
    for (int64_t x = 0; x < p->X[l]; x++)
        convert_run_to_f32(p->dt, src + (size_t)(x * step) * a->esize,
                row + x * p->Cin, p->Cin);
}

void blocks_widened_reset(widened_t *wd) {
    wd->clock = 0;
    for (int64_t s = 0; s < WIDENED_MAX_ROWS; s++)
        wd->row[s] = wd->last[s] = -1;
}

int64_t blocks_widened_slot(const blocks_args_t *a, const char *in,
        int64_t in_off, widened_t *wd, float *rows) {
    const dgrad_problem_t *p = &a->plan->p;
    int64_t victim = 0, slots = widened_rows(p);
    for (int64_t s = 0; s < slots; s++) {
        if (wd->row[s] == in_off) {
            wd->last[s] = wd->clock;
            return s;
        }
        if (wd->last[s] < wd->last[victim]) victim = s;
    }
    widen_input_row(a, in, in_off, rows + victim * p->X[p->nsp - 1] * p->Cin);
    wd->row[victim] = in_off;
    wd->last[victim] = wd->clock;
    return victim;
}

/* blocks_store_row, channel by channel: 16 pixels of a channel gathered
 * at a time with AVX-512, else one by one (the row is in L1 or L2; the
 * user's rows are written in order). */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void store_row_avx512(
        const float *row, int64_t pixels, int64_t C, float *out,
        int64_t c_stride) {
    __m512i idx = _mm512_mullo_epi32(_mm512_set1_epi32((int)C),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                    14, 15));
    for (int64_t co = 0; co < C; co++) {
        const float *src = row + co;
        float *dst = out + co * c_stride;
        int64_t y = 0;
        for (; y + 16 <= pixels; y += 16)
            _mm512_storeu_ps(dst + y,
                    _mm512_i32gather_ps(idx, src + y * C, 4));
        if (y < pixels) {
            __mmask16 m = (__mmask16)((1u << (pixels - y)) - 1u);
            _mm512_mask_storeu_ps(dst + y, m,
                    _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx,
                            src + y * C, 4));
        }
    }
}

#endif

void blocks_store_row(const blocks_args_t *a, const float *row, float *out) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *os = a->plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t C = p->Cout, Y = p->Y[l];
#if defined(__x86_64__) && defined(__GNUC__)
    /* gather indices are 32-bit: Y * C < 2^31 (BLOCKS_MAX_ROW_VALUES) */
    if (os[2 + l] == 1 && cpu_has_avx512f() && !a->plan->direct_avx2) {
        store_row_avx512(row, Y, C, out, os[1]);
        return;
    }
#endif
    for (int64_t co = 0; co < C; co++)
        for (int64_t y = 0; y < Y; y++)
            out[co * os[1] + y * os[2 + l]] = row[y * C + co];
}
