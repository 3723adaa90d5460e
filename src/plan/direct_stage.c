/*
 * The rows loop's input rows staged: the vector kernels (AVX2 and
 * AVX-512) read f32 copies of the input rows kept in the thread's
 * scratch, each copied once while it stays in use, where that is
 * measured to pay (below).
 *
 * Cache-set aliasing: a term list reads one input row per (input
 * channel, outer tap), all at the same position at once. Channel planes
 * of common sizes are whole multiples of the L1 set period apart (224^2
 * f32 = 49 x 4 KiB; 224^3 f32 = 343 x 128 KiB), so those rows fall in the
 * same sets and evict each other at every step. The kernel alone, one
 * thread, 2 channels, 11 + 22 terms of 224 positions: 43-44 GFLOP/s on
 * rows 4 KiB-multiples apart, 64 on rows 1152 bytes apart
 * (`dgrad_rows_kernel 2 447 11 11 50176` against `... 11 11`, AMD EPYC
 * Zen 3; bench/README.md "What limits the rows loop on AVX2").
 *
 * Slots: a row's slot is its position on each outer axis modulo that
 * axis's window (a power of 2 no smaller than the positions one output
 * row reads there), then its channel in the group, so that the rows of
 * one output row never share a slot, lie next to each other, and the
 * next output row finds most of them where they were (on the last outer
 * axis only one new row per channel and outer tap). In 2D that axis's
 * window is at least WINDOW_2D rows; in 3D and up it is made as large as
 * the copies' budget lets, up to the whole axis, and where it cannot
 * cover the axis the loop goes in tiles of it (direct_for_rows): each
 * row is then copied about once, not once per output depth reading it
 * (3 for stride 2), and read from L1/L2 by those depths instead of from
 * L3 or memory.
 *
 * Padding: each copy has zeros before and after it, as many as the terms
 * of a row read outside it up to the end of their phase's last step: the
 * kernels then never mask a load, and take the long kernels (8
 * accumulator chains) on phases of one step and up (direct_avx2.c). That
 * is what short rows need: the 3D example at 56^3 has phases of 56, where
 * in place the 4-chain kernels ran, latency-bound, with every fourth step
 * masked.
 *
 * When: the copies cost a pass over the input, repaid by each of these
 * (direct_stage_plan; the policy's stage_rows, from
 * `DGRAD_STAGE_ROWS=never|always`, overrides).
 * Measured, `DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX`,
 * both threads, AMD EPYC Zen 3, in place against the rule:
 * - more of an output row's rows sharing one set than the L1 cache has
 *   ways, on average over the output rows: dense 2D example (20 rows a
 *   set) 1.83 -> 1.47 ms; 20 -> 2 channels 0.60 -> 0.49 ms; 2 groups of
 *   10 -> 4 0.81 -> 0.72 ms. With few rows a set the copies lose: grouped
 *   2D example (5 a set) 0.55 -> 0.70 ms forced;
 * - 3D and up (rows kept for the next output depths):
 *   `g4mb1ic20id16ih224iw224oc8od31oh447ow447kd3kh3kw3sd2sh2sw2pd1ph1pw1`
 *   (the full 3D example's rows, in tiles of 29) 25.9 -> 21.4-22.2 ms,
 *   `mb1ic16id32ih32iw32oc4od63oh63ow63kd3kh3kw3sd2sh2sw2pd1ph1pw1`
 *   1.73-1.87 -> 1.32-1.43 ms, `g2mb1ic8id24ih48iw96oc4od48oh96ow192
 *   kd4kh4kw4sd2sh2sw2pd1ph1pw1` 2.95-3.19 -> 2.32-2.55 ms;
 * - short rows that padding lets take the long kernels
 *   (direct_avx2_padding_pays): 3D example at 56^3 9.2 -> 6.8 ms (with
 *   direct.c's per-row savings; 8.3 -> 6.9-7.1 ms against in place on
 *   the same build);
 * - for the AVX-512 kernels, windows of 3 at stride 2: padded copies
 *   let them load each run once for both phases (direct_avx512.c; dense
 *   2D example 1.34 -> 0.80-1.10 ms, Sapphire Rapids, bench/README.md
 *   "fourteenth look");
 * - 16-bit rows, wherever they fit: the copy widens each element once
 *   where the kernels widened it at every load (bf16 / f16, the examples:
 *   dense 2D 1.99 / 1.97 -> 1.66 / 1.64 ms, grouped 2D 0.79 / 0.66-0.73
 *   -> 0.72 / 0.66-0.68 ms, 3D at 56^3 17.3 / 17.2 -> 13.6 / 13.2 ms,
 *   `--dt bf16|f16 --batch bench/suites/spec_examples.txt`).
 * Not in 1D, where each row is read by one output row.
 */
#include "direct_rows.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

/* The buckets counted for the set period. */
#define PERIOD_LINES_MAX 1024
#define PHASES_MAX 8 /* output rows counted per outer axis */
#define TILE_MIN 8    /* output rows a tile, or none */
/* In 2D the window of the height axis is at least this (where the
 * copies fit): the term lists kept for the next row of a class (direct.c)
 * are moved by whole rows until a slot would wrap, then term by term,
 * which with a window of 2 was every row (bf16 / f16 grouped 2D example,
 * one thread: 1.13 / 0.93 ms with a window of 2, 1.07 / 1.03 with 4,
 * 1.03 / 0.85 with 16, the same with 64; `OMP_NUM_THREADS=1
 * DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX --dt bf16
 * g4mb1ic20ih224oc8oh447kh3sh2ph1`, AMD EPYC Zen 3). */
#define WINDOW_2D 16

/* How many of the rows one output row reads start on the same L1 line of
 * the set period (then they share sets all along the row), the most of
 * any line, averaged over the output rows of one period of the strides
 * (from the middle of each outer axis, at most PHASES_MAX a stride;
 * the plan's tap tables give the input positions each one reads):
 * with stride 2 every other row reads twice the rows of the next. */
static double rows_per_set(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t period = cpu_l1d_set_period(), lines = period / 64;
    if (lines < 1 || lines > PERIOD_LINES_MAX) return 0;
    int64_t es = (int64_t)dgrad_data_type_size(
            plan->staged ? dgrad_f32 : p->dt);
    const int64_t *is = plan->in.io_strides;
    int64_t phase[DGRAD_MAX_SPATIAL] = {0}, sum = 0, rows_seen = 0;
    for (;;) {
        const int64_t *e[DGRAD_MAX_SPATIAL];
        int64_t j[DGRAD_MAX_SPATIAL] = {0};
        int empty = 0;
        for (int i = 0; i < l; i++) {
            int64_t y = p->Y[i] / 2 + phase[i];
            empty |= y >= p->Y[i]
                    || (e[i] = direct_outer_taps(plan, i, y))[0] == 0;
        }
        int count[PERIOD_LINES_MAX] = {0}, most = 0;
        for (int64_t ci = 0; !empty && ci < p->Cin / p->G; ci++)
            for (;;) {
                int64_t off = ci * is[1];
                for (int i = 0; i < l; i++)
                    off += e[i][2 + 2 * j[i]] * is[2 + i];
                int64_t b = ((off * es) % period + period) % period / 64;
                if (++count[b] > most) most = count[b];
                int i = l - 1;
                while (i >= 0 && ++j[i] == e[i][0]) j[i--] = 0;
                if (i < 0) break;
            }
        sum += most;
        rows_seen++;
        int i = l - 1;
        while (i >= 0 && ++phase[i] == (p->S[i] < PHASES_MAX ? p->S[i]
                                                             : PHASES_MAX))
            phase[i--] = 0;
        if (i < 0) break;
    }
    return (double)sum / (double)rows_seen;
}

/* Zeros before and after each copy so that every term of a row reads
 * whole steps (no masked loads: direct_padded_end), or 0 where the
 * padding would exceed HALO_MAX on a side (large pads: the terms then
 * keep their ranges). */
#define HALO_MAX 128
static int stage_halos(const dgrad_plan_t *plan, int64_t halo[2]) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t X = p->X[l];
    halo[0] = halo[1] = 0;
    for (int64_t r = 0; r < p->S[l]; r++) {
        int64_t count, q0;
        direct_phase_geometry(p, r, &count, &q0);
        if (count == 0) continue;
        const int64_t *e = direct_last_taps(plan, r);
        for (int64_t k = 0; k < e[0]; k++) {
            /* m reads position m + q0 - tx of the row (row_terms) */
            int64_t tx = e[2 + 2 * k];
            if (tx - q0 >= count || X + tx - q0 <= 0) continue; /* no term */
            int64_t before = tx - q0,
                    after = direct_padded_end(count) + q0 - tx - X;
            if (before > halo[0]) halo[0] = before;
            if (after > halo[1]) halo[1] = after;
        }
    }
    halo[0] = (halo[0] + 15) / 16 * 16; /* rows start on whole lines */
    if (halo[0] <= HALO_MAX && halo[1] <= HALO_MAX) return 1;
    halo[0] = halo[1] = 0;
    return 0;
}

/* The copies' budget of one thread: half of the core's L2 (the output
 * rows and the weights keep the rest), within [STAGE_BYTES_MIN,
 * STAGE_BYTES_MAX]; `DGRAD_STAGE_BYTES=n` sets it (for measuring). A
 * larger ring covers more of the height axis in 3D: fewer tiles, fewer
 * rows copied twice at their borders. The full 3D example on Zen 4 (1
 * MiB L2), both threads, alternating rounds, median ms: 256 KiB 215-227,
 * 512 KiB 208-215, 1 MiB 202-213 (`DGRAD_STAGE_BYTES=n dgrad bench
 * --no-raw --data-format NCX --reps 5
 * g4mb1ic20id224ih224iw224oc8od447oh447ow447kd3kh3kw3sd2sh2sw2pd1ph1pw1`);
 * 128 KiB 261-266. The 2D and 56^3 examples in f32, bf16 and f16 moved
 * within the noise. 256 KiB was Zen 3's (512 KiB L2) before the rule. */
#define STAGE_BYTES_MIN ((int64_t)256 << 10)
#define STAGE_BYTES_MAX ((int64_t)1 << 20)
static int64_t stage_bytes(void) {
    const char *set = getenv("DGRAD_STAGE_BYTES");
    int64_t bytes = set ? strtoll(set, NULL, 10) : cpu_l2_bytes() / 2;
    if (set && bytes > 0) return bytes;
    return bytes < STAGE_BYTES_MIN ? STAGE_BYTES_MIN
            : bytes > STAGE_BYTES_MAX ? STAGE_BYTES_MAX : bytes;
}

/* Rows ahead on the last outer axis that a copy requests in 3D and up
 * (stage_row; one in 2D). Distance 2 against 1, alternating rounds of
 * one build (the distance from an environment variable, a prototype),
 * `DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX`, AMD EPYC
 * Zen 4 VM, median ms: 3D example at 56^3, seven rounds, 4.9-6.7 against
 * 6.3-8.3 (faster in each round); at 112^3, six rounds, 37.8-55.0 against
 * 37.5-50.1 (median of the rounds 40.1 against 43); 3 rows ahead at 56^3
 * 6.3-7.1. Two builds, six rounds at 56^3: 4.6-6.7 against 4.8-6.7
 * (median of the rounds 5.9 against 6.6; 4 faster). The 2D examples
 * moved within their noise (dense 0.91-1.74 ms either way), and keep 1
 * (bench/README.md, thirty-fifth look). */
#define PREFETCH_ROWS_3D 2

void direct_stage_plan(dgrad_plan_t *plan, int vector_kernels,
        int padding_pays) {
    direct_stage_t *st = &plan->direct_stage;
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    memset(st, 0, sizeof *st);
    /* Not in 1D (bf16 and f16 1D example 4.0 and 3.6 us in place, 4.1
     * and 4.0 us copied). */
    int widen = (plan->staged ? dgrad_f32 : p->dt) != dgrad_f32;
    if (!vector_kernels || l < 1) return;
    int64_t slots = p->Cin / p->G, span[DGRAD_MAX_SPATIAL],
            budget = stage_bytes();
    for (int i = 0; i < l; i++) {
        span[i] = (p->K[i] - 1) * p->D[i] / p->S[i] + 1;
        if (span[i] > p->X[i]) span[i] = p->X[i];
        st->window[i] = 1;
        while (st->window[i] < span[i]) st->window[i] *= 2;
        slots *= st->window[i];
    }
    int padded = stage_halos(plan, st->halo);
    int64_t pitch = (st->halo[0] + p->X[l] + st->halo[1] + 15) / 16 * 16;
    /* The last outer axis's window made as large as fits, up to
     * WINDOW_2D rows in 2D, up to that axis's whole extent in 3D and up:
     * each row is then copied once, not once per position of the axis
     * outside it that reads it (3 for stride 2). Where it cannot cover
     * the axis the loop goes in tiles of that axis whose rows fit the
     * window (direct_for_rows); rows at the tiles' borders are copied
     * twice. */
    int i = l - 1;
    int64_t want = l == 1 && WINDOW_2D < p->X[i] ? WINDOW_2D : p->X[i],
            per_position = slots / st->window[i] * pitch
            * (int64_t)sizeof(float);
    while (st->window[i] < want
            && 2 * st->window[i] * per_position <= budget) {
        st->window[i] *= 2;
        slots *= 2;
    }
    int64_t tile = 0;
    if (l >= 2) {
        /* output rows whose inputs span at most the window: T - 1 +
         * D (K - 1) < S window */
        if (st->window[i] < p->X[i])
            tile = (st->window[i] - 1) * p->S[i] - p->D[i] * (p->K[i] - 1)
                    + 1;
        if (tile < TILE_MIN) tile = 0; /* the term lists' cache needs runs */
    }
    /* The policy's stage_rows: never, always (where it fits), else as
     * the file comment says: 16-bit rows; rows kept for the output depths
     * that read them again; short rows that padding lets take the long
     * kernels; rows sharing L1 sets beyond the cache's ways. */
    int never = plan->policy.stage_rows == 1,
        always = plan->policy.stage_rows == 2,
        kept = l >= 2 && (tile || st->window[l - 1] >= p->X[l - 1]);
    if (never || slots * pitch * (int64_t)sizeof(float) > budget
            || (!always && !widen && !kept && !(padded && padding_pays)
                    && rows_per_set(plan) <= cpu_l1d_ways())) {
        memset(st, 0, sizeof *st); /* read in place */
        return;
    }
    st->slots = slots;
    st->x = p->X[l];
    st->channels = p->Cin / p->G;
    st->xl_slots = slots / st->window[l - 1];
    st->pitch = pitch;
    st->padded = padded;
    st->tile = tile;
    st->next = plan->in.io_strides[2 + l - 1];
    st->prefetch = (l >= 2 ? PREFETCH_ROWS_3D : 1) * st->next;
    st->ahead = l >= 2 ? plan->in.io_strides[2 + l - 2] : 0;
}

void direct_stage_clear(const direct_stage_t *st, float *rows,
        int64_t *tags) {
    memset(tags, 0, (size_t)st->slots * sizeof *tags);
    /* the zeros around each copy: the copies never write there */
    if (st->halo[0] + st->halo[1])
        for (int64_t s = 0; s < st->slots; s++) {
            float *copy = rows + s * st->pitch + st->halo[0];
            memset(copy - st->halo[0], 0, (size_t)st->halo[0] * sizeof *copy);
            memset(copy + st->x, 0, (size_t)st->halo[1] * sizeof *copy);
        }
}

/* Copies input row @p row (elements from @p in) into slot @p s unless
 * the slot holds it, and starts a row further on the last outer axis on
 * its way (st->prefetch: a copy otherwise waits on each line: with
 * staging forced on
 * `g4mb1ic20id16ih224iw224oc8od31oh447ow447kd3kh3kw3sd2sh2sw2pd1ph1pw1`
 * 30.0 -> 27.2 ms, two runs each, one row ahead). Where the slot holds
 * it already, in 3D and up, starts the row one position further on the
 * axis outside the runs' instead: at stride 2 every other run of output
 * rows reads only rows held since the run before and the next run copies
 * those further rows, which the prefetch one row ahead reached too late
 * (one thread on that problem, `perf record`: memmove 11.1% -> 5.5% of
 * the samples). */
static void stage_row(const direct_stage_t *st, const void *in,
        dgrad_data_type_t dt, int64_t row, int64_t s, float *rows,
        int64_t *tags) {
    int64_t es = (int64_t)dgrad_data_type_size(dt);
    const char *from = (const char *)in + row * es;
    if (tags[s] == row + 1) {
        for (int64_t c = 0; st->ahead && c < st->x * es; c += 64)
            __builtin_prefetch(from + st->ahead * es + c, 0, 2);
        return;
    }
    convert_run_to_f32(dt, from, rows + s * st->pitch + st->halo[0], st->x);
    tags[s] = row + 1;
    for (int64_t c = 0; c < st->x * es; c += 64)
        __builtin_prefetch(from + st->prefetch * es + c, 0, 2);
}

void direct_stage_fill(const direct_stage_t *st, int nsp, const void *in,
        dgrad_data_type_t dt, const term_t *t, int n, int per_row,
        float *rows, int64_t *tags) {
    /* the first Cin/G terms of each block of per_row x Cin/G read the
     * block's rows, the others the same ones again */
    int icg = (int)st->channels, block = per_row * icg;
    for (int b = 0; b < n; b += block)
        for (int k = b; k < b + icg; k++)
            stage_row(st, in, dt, t[k].row, direct_stage_slot(st, &t[k], nsp),
                    rows, tags);
}

/* The copies of every row that output position @p y (its other outer
 * axes) reads at positions [@p from, @p to] of the last outer axis, of
 * the group at @p in_group. */
static void fill_span(const dgrad_plan_t *plan, const void *in,
        dgrad_data_type_t dt, int64_t in_group, const int64_t *y,
        int64_t from, int64_t to, float *rows, int64_t *tags) {
    const dgrad_problem_t *p = &plan->p;
    const direct_stage_t *st = &plan->direct_stage;
    const int64_t *is = plan->in.io_strides;
    int last = p->nsp - 2; /* the last outer axis */
    const int64_t *e[DGRAD_MAX_SPATIAL];
    int64_t j[DGRAD_MAX_SPATIAL] = {0};
    for (int i = 0; i < last; i++)
        if ((e[i] = direct_outer_taps(plan, i, y[i]))[0] == 0) return;
    /* every combination of the other outer axes' taps (row_terms' order
     * of slots), then every position of the span and input channel */
    for (;;) {
        int64_t off = in_group, slot = 0;
        for (int i = 0; i < last; i++) {
            int64_t x = e[i][2 + 2 * j[i]];
            off += x * is[2 + i];
            slot = slot * st->window[i] + (x & (st->window[i] - 1));
        }
        for (int64_t x = from; x <= to; x++)
            for (int64_t ci = 0; ci < st->channels; ci++)
                stage_row(st, in, dt, off + ci * is[1] + x * st->next,
                        direct_stage_slot_at(st, slot * st->channels + ci, x,
                                p->nsp),
                        rows, tags);
        int i = last - 1;
        while (i >= 0 && ++j[i] == e[i][0]) j[i--] = 0;
        if (i < 0) break;
    }
}

/* Along a run the positions mostly grow by one or none a row; with
 * dilation on that axis the highest valid one can also step back. */
void direct_stage_run_rows(const dgrad_plan_t *plan, const void *in,
        dgrad_data_type_t dt, int64_t in_group, const int64_t *y,
        int64_t span[2], float *staged, int64_t *tags) {
    int last = plan->p.nsp - 2;
    /* the input positions the row reaches: its taps' lowest and highest
     * (the table lists them by tap, highest position first) */
    const int64_t *e = direct_outer_taps(plan, last, y[last]);
    if (e[0] == 0) return;
    int64_t lo = e[2 * e[0]], hi = e[2];
    if (span[0] <= lo && hi <= span[1]) return;
    int64_t window = plan->direct_stage.window[last];
    int64_t a = lo < span[0] ? lo : span[0], b = hi > span[1] ? hi : span[1];
    if (span[0] > span[1] || b - a >= window) {
        /* a fresh span (slots it would share are no longer counted) */
        fill_span(plan, in, dt, in_group, y, lo, hi, staged, tags);
        span[0] = lo;
        span[1] = hi;
        return;
    }
    if (lo < span[0])
        fill_span(plan, in, dt, in_group, y, lo, span[0] - 1, staged, tags);
    if (hi > span[1])
        fill_span(plan, in, dt, in_group, y, span[1] + 1, hi, staged, tags);
    span[0] = a;
    span[1] = b;
}
