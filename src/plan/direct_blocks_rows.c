/*
 * The blocks loop's f32 rows between it and the user's tensors
 * (direct_blocks_impl.h): a 16-bit input's rows widened into a thread's
 * scratch and kept there for the output rows that read them (the loop
 * rounds its output a stretch at a time itself, direct_blocks.c); rows
 * computed channels-last stored into an output that is not; and, where
 * the plan stages a 16-bit NCX problem in f32 copies, each thread's
 * share of the input widened into the copy and each row it stored
 * rounded into the user's output.
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

/* Where the plan stages a 16-bit problem in f32 and stores rows channel
 * by channel (not channels-last, not from lists), each thread rounds the
 * rows it stored into the user's output right after (blocks_round_row)
 * instead of one pass over the whole staging copy after the region: that
 * pass read on the calling thread what the other thread had written, and
 * the other thread's next stores took those lines back.
 * `fcn8s:upscore2` in f16 NCX (21 channels, 34x34 out) ran its rows in
 * 16 us on the calling thread and 29 on the other, against 19 each in
 * f32; with the input widened the same way (below), f16 went from 34-35
 * to 25 us and bf16 from 35-38 to 24-27 (f32 19; `DGRAD_OWN_LOOP=blocks
 * dgrad bench --data-format NCX --weights-format OIX --dt f16|bf16`,
 * bench/README.md, thirty-eighth look). Rows along the last axis must be
 * runs of unit stride on both sides. */
int direct_blocks_rounds_output(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    return plan->staged && p->dt != dgrad_f32 && !blocks_output_cl(plan)
            && !(blocks_lanes_form(plan) && blocks_spread_listed(plan))
            && plan->out.io_strides[2 + l] == 1 && p->out_strides[2 + l] == 1;
}

/* The input the same way, before the rows (before_rows_share): each
 * thread widens the input rows of its share of the outer positions, so
 * that the rows a thread reads are mostly in its own cache; not where
 * the input is spread (the spread reads the staging copy). */
int direct_blocks_widens_input(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    return direct_blocks_rounds_output(plan) && !blocks_lanes_spread(plan)
            && plan->in.io_strides[2 + l] == 1 && p->in_strides[2 + l] == 1;
}

/* The row of image @p n at outer position @p y, just stored into the
 * f32 staging output at @p out_off, rounded into the user's output
 * channel by channel (direct_blocks_rounds_output). */
void blocks_round_row(const blocks_args_t *a, int64_t n,
        const int64_t *y, int64_t out_off) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *os = a->plan->out.io_strides, *us = p->out_strides;
    int l = p->nsp - 1;
    int64_t user_off = n * us[0];
    for (int i = 0; i < l; i++) user_off += y[i] * us[2 + i];
    size_t es = dgrad_data_type_size(p->dt);
    for (int64_t co = 0; co < p->Cout; co++)
        convert_run_from_f32(p->dt, (const float *)a->out + out_off
                        + co * os[1],
                a->round_into + (size_t)(user_off + co * us[1]) * es,
                p->Y[l]);
}

/* Thread @p th of @p nth's share of the input widened into the staging
 * copy: the rows (image, outer input positions) in the same proportion
 * as its share of the output's rows, every channel of each. */
void blocks_widen_share(const blocks_args_t *a, int th, int nth) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *us = p->in_strides, *ss = a->plan->in.io_strides;
    int l = p->nsp - 1;
    int64_t outer = 1, r0, r1;
    for (int i = 0; i < l; i++) outer *= p->X[i];
    direct_share_of(p->N * outer, th, nth, &r0, &r1);
    size_t es = dgrad_data_type_size(p->dt);
    for (int64_t r = r0; r < r1; r++) {
        int64_t rest = r % outer, uo = r / outer * us[0],
                so = r / outer * ss[0];
        for (int i = l - 1; i >= 0; i--) {
            uo += rest % p->X[i] * us[2 + i];
            so += rest % p->X[i] * ss[2 + i];
            rest /= p->X[i];
        }
        for (int64_t ci = 0; ci < p->Cin; ci++)
            convert_run_to_f32(p->dt,
                    a->widen_from + (size_t)(uo + ci * us[1]) * es,
                    /* the staging copy: the context's own buffer */
                    (float *)(uintptr_t)a->in + so + ci * ss[1], p->X[l]);
    }
}
