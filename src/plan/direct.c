/*
 * dgrad's own loop for transposed convolutions with few channels per
 * group on layouts whose innermost axis is the last spatial one (plain
 * NCX), in f32, bf16 or f16 (read and written in the user's type,
 * computed in f32, bias added before the one rounding).
 *
 * oneDNN's kernels vectorize over channels: 4 groups of 5 -> 2 channels
 * (the specification's grouped examples) fill 2 of 16 lanes, and its
 * forward convolution on folded phases pays a reorder into channels-last
 * and strided phase reorders out (phase_fold.c); neither comes within 2x
 * of the memory roofline there (bench/README.md). This loop vectorizes
 * along the output row instead. Per output row (n, output channel, outer
 * spatial position) and phase r of the last axis (output x = a_r + S*m,
 * natural position S*q + r), the value at m is
 *   bias + sum over (input channel, outer taps reaching the row, taps k
 *   with D*k = r mod S) of w * in[..., q0_r + m - t_k],
 * a list of terms each of which is one contiguous input run: 16 outputs
 * of a phase are 16 lanes (8 with AVX2), one load per term shared by up
 * to 4 output channels (one FMA each; up to 12 with AVX2, and with
 * AVX-512 where both phases share the loads). For S = 2 both phases of
 * 32 positions are accumulated together and interleaved by permutes
 * straight into the output row, and with windows of 3 one load of each
 * input run feeds the one tap of one phase and a tap of the other; other
 * strides go through a small buffer. Each output row is written once, in
 * order, by one thread.
 * The kernels are in direct_avx2.c and direct_avx512.c; where the input
 * rows of an output row would evict each other from L1, they read f32
 * copies of them (direct_stage.c).
 * Chosen only where timing finds it faster than the best oneDNN plan
 * (timing.c), checked by the same reference tests, sweeps and fault
 * injection as the rest.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "direct_rows.h"
#include "dtype.h"

/* Limits that keep a row's term list and buffers small (the loop is for
 * few channels and small kernels; larger problems are oneDNN's). */
#define DIRECT_MAX_CHANNELS 1024  /* (Cin/G) * (Cout/G) */
#define DIRECT_MAX_TERMS 4096     /* terms of one phase of one row */
#define DIRECT_MAX_STRIDE 64      /* S of the last axis */
#define DIRECT_MAX_ROW (1 << 20)  /* output positions of the last axis */

/* Phase values of one output channel of the block: the row's length plus
 * a block of slack. */
static int64_t values_len(const dgrad_problem_t *p) {
    return p->Y[p->nsp - 1] + 16 * VEC_BLOCK;
}

/* Term lists of the previous row of each phase class of the last outer
 * axis (stride 2: two classes), kept for the next row of the class: its
 * taps are the same but one input row further on, so only the offsets
 * move (row_terms took 40% of the loop on the 3D example at 56^3 without
 * it: perf, one thread). Both phases of stride 2 on the last axis (the
 * pair kernels) or its one phase at stride 1: 4 -> 4 channels, 32^3,
 * stride 1, 1.05-1.29 -> 0.50-0.84 ms with it (`DGRAD_OWN_LOOP=only dgrad
 * bench --no-raw --data-format NCX mb1ic4id32ih32iw32oc4od34oh34ow34
 * kd3kh3kw3`, both threads, AMD EPYC Zen 3). Lists longer than
 * CACHE_TERMS are not kept. */
#define CACHE_CLASSES 2
#define CACHE_TERMS 512
typedef struct row_cache {
    int valid, cb, n[2], per_row[2];
    terms_span_t common[2];
    int64_t xl_lo, xl_hi; /* window positions of their rows, if staged */
    int64_t in_group, y[DGRAD_MAX_SPATIAL];
    const float *w;
    term_t t[2][CACHE_TERMS];
} row_cache_t;

static int block_width(const dgrad_plan_t *plan);

/* Rows of f32 values in a thread's scratch before the last two: the
 * first phase's (or, with both phases of stride 2 at once, the 16-bit
 * output's) for each channel of a block, the second phase's for blocks
 * of CO_BLOCK (the only ones that take phases one at a time). */
static int64_t values_rows(const dgrad_plan_t *plan) {
    int width = block_width(plan);
    return (width > CO_BLOCK ? width : CO_BLOCK) + CO_BLOCK;
}

/* Bytes of one thread's scratch: the row caches, the terms of two
 * phases, the values rows, one f32 row for 16-bit output, one row of a
 * 16-bit post-op operand's values; then, where the plan stages input
 * rows, their copies and the record of which row each slot holds. */
static size_t values_bytes(const dgrad_plan_t *plan) {
    size_t n = CACHE_CLASSES * sizeof(row_cache_t)
            + 2 * DIRECT_MAX_TERMS * sizeof(term_t)
            + (size_t)((values_rows(plan) + 2) * values_len(&plan->p))
                    * sizeof(float);
    return (n + 63) / 64 * 64;
}

static size_t thread_scratch(const dgrad_plan_t *plan) {
    const direct_stage_t *st = &plan->direct_stage;
    size_t n = values_bytes(plan)
            + (size_t)st->slots * ((size_t)st->pitch * sizeof(float)
                                          + sizeof(int64_t));
    return (n + 63) / 64 * 64; /* each thread's part aligned */
}

/* A thread's staged rows and their tags. */
static float *stage_rows(const dgrad_plan_t *plan, char *scratch) {
    return (float *)(scratch + values_bytes(plan));
}
static int64_t *stage_tags(const direct_stage_t *st, float *rows) {
    return (int64_t *)(rows + st->slots * st->pitch);
}

/* The CPU's vector units: AVX-512 for every type, with its byte/word
 * instructions for 16-bit loads; else AVX2 with FMA and F16C for every
 * type; else the portable loop (f32 only: 16-bit tensors then travel
 * through f32 copies, rows_applicable). */
static int have_avx512(void) { return cpu_has_avx512f(); }
static int have_avx512_bw(void) { return cpu_has_avx512bw(); }
static int have_avx2_fma(void) { return cpu_has_avx2_fma(); }

/* Whether the AVX-512 kernels read type @p dt on this CPU. */
static int avx512_reads(dgrad_data_type_t dt) {
    return dt == dgrad_f32 ? have_avx512() : have_avx512_bw();
}

/* The kernels a plan runs, every one from the same set: AVX-512 where
 * they read the plan's io type, else AVX2, else the portable loop. The
 * block widths and the staged copies are planned for that set, so a
 * kernel reading the f32 copies of a 16-bit plan is the set's too (on a
 * CPU with AVX-512F but not BW, AVX2: the AVX-512 f32 kernels take at
 * most CO_BLOCK channels, AVX2's up to CO_BLOCK_WIDE). */
typedef enum { KERNELS_PORTABLE, KERNELS_AVX2, KERNELS_AVX512 } kernels_t;
static dgrad_data_type_t io_type(const dgrad_plan_t *plan);
static kernels_t plan_kernels(const dgrad_plan_t *plan) {
    return avx512_reads(io_type(plan)) && !plan->direct_avx2 ? KERNELS_AVX512
            : have_avx2_fma()                              ? KERNELS_AVX2
                                                           : KERNELS_PORTABLE;
}

/* Whether this loop applies to a plan with these io descs (compute type
 * f32, innermost axis the last spatial one on both activations). */
int direct_rows_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int last = 2 + p->nsp - 1;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    int64_t kouter = 1;
    for (int i = 0; i < p->nsp - 1; i++) kouter *= p->K[i];
    int64_t taps_x = p->K[p->nsp - 1];
    return (plan->staged || p->dt == dgrad_f32 || have_avx512_bw()
                   || have_avx2_fma())
            && (is[last] == 1 || p->X[p->nsp - 1] == 1)
            && (os[last] == 1 || p->Y[p->nsp - 1] == 1)
            && (p->Cin / p->G) * (p->Cout / p->G) <= DIRECT_MAX_CHANNELS
            && p->S[p->nsp - 1] <= DIRECT_MAX_STRIDE
            && p->Y[p->nsp - 1] <= DIRECT_MAX_ROW
            && (p->Cin / p->G) * kouter * taps_x <= DIRECT_MAX_TERMS;
}

int direct_rows_avx2_differs(const dgrad_plan_t *plan) {
    return have_avx2_fma() && avx512_reads(io_type(plan));
}

size_t direct_rows_thread_scratch(const dgrad_plan_t *plan) {
    return thread_scratch(plan);
}

size_t direct_rows_weights_size(const dgrad_problem_t *p) {
    int64_t n = p->Cin * (p->Cout / p->G);
    for (int i = 0; i < p->nsp; i++) n *= p->K[i];
    return (size_t)n * sizeof(float);
}

/* Weights as f32 [G][Cout/G][Cin/G][K...], from the user's type and
 * strides. */
void direct_rows_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cg = p->Cout / p->G, icg = p->Cin / p->G, kn = 1;
    for (int i = 0; i < p->nsp; i++) kn *= p->K[i];
    const int64_t *ws = p->wei_strides;
    float *dst = packed;
    for (int64_t g = 0; g < p->G; g++)
        for (int64_t co = 0; co < cg; co++)
            for (int64_t ci = 0; ci < icg; ci++)
                for (int64_t k = 0; k < kn; k++) {
                    int64_t rest = k, off = g * ws[0] + ci * ws[1] + co * ws[2];
                    for (int i = p->nsp - 1; i >= 0; i--) {
                        off += rest % p->K[i] * ws[3 + i];
                        rest /= p->K[i];
                    }
                    *dst++ = (float)dgrad_load(user, p->dt, off);
                }
}

int direct_rows_taps_init(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t n = p->S[l] * direct_taps_width(p, l);
    for (int i = 0; i < l; i++) n += p->Y[i] * direct_taps_width(p, i);
    int64_t *t = allocated(dgrad_calloc((size_t)n, sizeof *t));
    if (!t) return 0;
    plan->direct_taps = t;
    for (int i = 0; i < l; i++) t = direct_position_taps(p, i, t);
    for (int64_t r = 0; r < p->S[l]; r++, t += direct_taps_width(p, l))
        for (int64_t k = 0; k < p->K[l]; k++) {
            int64_t num = p->D[l] * k - r;
            if (num % p->S[l]) continue;
            t[1 + 2 * t[0]] = k;
            t[2 + 2 * t[0]] = num / p->S[l];
            t[0]++;
        }
    kernels_t kernels = plan_kernels(plan);
    int vector = kernels != KERNELS_PORTABLE;
    /* the AVX-512 kernels share loads on padded copies alone */
    int pays = kernels == KERNELS_AVX512 && direct_shared_taps(plan) >= 0;
#if defined(__x86_64__) && defined(__GNUC__)
    int64_t count = (p->Y[l] + p->S[l] - 1) / p->S[l], cg = p->Cout / p->G;
    int cb = cg < block_width(plan) ? (int)cg : block_width(plan);
    pays |= kernels == KERNELS_AVX2 && direct_avx2_padding_pays(cb, count);
#endif
    direct_stage_plan(plan, vector, pays);
    return 1;
}

/* The terms of phase @p r of one row: input channel runs of the group at
 * @p in_group (element offset), outer taps reaching the row (@p y: per
 * outer axis, output position), weights of the block's @p cb output
 * channels from @p w (packed, the block's first channel). Returns their
 * count; in @p per_row, the terms each input row has: the list is
 * blocks of per_row x Cin/G terms, one per combination of outer taps,
 * whose first Cin/G read the block's rows (every phase of a row reads
 * the same rows). */
static int row_terms(const dgrad_plan_t *plan, const int64_t *is,
        int64_t in_group, const int64_t *y, const float *w, int cb,
        int64_t r, int64_t count, int64_t q0, term_t *t, int *per_row) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1, n = 0;
    int64_t icg = p->Cin / p->G, kl = p->K[l], kn = 1;
    for (int i = 0; i < p->nsp; i++) kn *= p->K[i];
    int64_t co_stride = icg * kn;
    /* This row's entry of each outer axis's table, and the last axis's
     * entry of phase r. */
    const int64_t *row[DGRAD_MAX_SPATIAL];
    *per_row = 0;
    for (int i = 0; i < l; i++)
        if ((row[i] = direct_outer_taps(plan, i, y[i]))[0] == 0) return 0;
    /* the last axis's entries follow the outer axes' */
    const int64_t *last = direct_last_taps(plan, r);
    int64_t j[DGRAD_MAX_SPATIAL] = {0};
    const direct_stage_t *st = &plan->direct_stage;
    for (int first = 1;; first = 0) {
        /* the outer positions' share of the input offset and, where rows
         * are staged, of the slot (the last outer axis's kept apart) */
        int64_t in_off = 0, k_index = 0, slot = 0, xl = 0;
        for (int i = 0; i < l; i++) {
            int64_t x = row[i][2 + 2 * j[i]];
            in_off += x * is[2 + i];
            k_index = k_index * p->K[i] + row[i][1 + 2 * j[i]];
            if (st->slots && i < l - 1)
                slot = slot * st->window[i] + (x & (st->window[i] - 1));
            xl = x;
        }
        for (int64_t e = 0; e < last[0]; e++) {
            int64_t kx = last[1 + 2 * e], tx = last[2 + 2 * e];
            int64_t lo = tx - q0, hi = p->X[l] + tx - q0;
            if (lo < 0) lo = 0;
            if (hi > count) hi = count;
            if (lo >= hi) continue;
            if (first) ++*per_row; /* the same taps in every block */
            for (int64_t ci = 0; ci < icg; ci++) {
                const float *wk = w + ci * kn + k_index * kl + kx;
                t[n].row = in_group + ci * is[1] + in_off;
                t[n].xl = xl;
                t[n].slot = slot * icg + ci;
                t[n].off = (st->slots ? direct_stage_slot(st, &t[n], p->nsp)
                                               * st->pitch
                                               + st->halo[0]
                                      : t[n].row)
                        + q0 - tx;
                /* padded copies: zeros wherever the run is out of range */
                t[n].lo = st->padded ? 0 : lo;
                t[n].hi = st->padded ? direct_padded_end(count) : hi;
                for (int c = 0; c < cb; c++) t[n].w[c] = wk[c * co_stride];
                n++;
            }
        }
        int i = l - 1;
        while (i >= 0 && ++j[i] == row[i][0]) j[i--] = 0;
        if (i < 0) break;
    }
    return n;
}

/* Phase values v[j][m] = bias[j] + sum of terms, m in [0, count), for
 * the block's @p cb channels: portable (f32 input only). */
static void phase_values_scalar(const float *in, const term_t *t, int n,
        const float *bias, int cb, int64_t count, float *const *v) {
    for (int j = 0; j < cb; j++) {
        for (int64_t m = 0; m < count; m++) v[j][m] = bias[j];
        for (int k = 0; k < n; k++)
            for (int64_t m = t[k].lo; m < t[k].hi; m++)
                v[j][m] += t[k].w[j] * in[t[k].off + m];
    }
}



/* The type the loop reads and writes: the user's, or f32 when the
 * tensors travel through staging copies. */
static dgrad_data_type_t io_type(const dgrad_plan_t *plan) {
    return plan->staged ? dgrad_f32 : plan->p.dt;
}

static int type_index(dgrad_data_type_t dt) {
    return dt == dgrad_bf16 ? 1 : dt == dgrad_f16 ? 2 : 0;
}

static void phase_values(kernels_t kernels, dgrad_data_type_t dt, int padded,
        const void *in, const term_t *t, int n, const float *bias, int cb,
        int64_t count, float *const *v) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (kernels == KERNELS_AVX512) {
        direct_avx512_values(type_index(dt), cb)(in, t, n, bias, count, v);
        return;
    }
    if (kernels == KERNELS_AVX2) {
        direct_avx2_values(type_index(dt), cb, count, padded)(in, t, n,
                bias, count, v);
        return;
    }
#endif
    (void)kernels;
    (void)padded;
    phase_values_scalar(in, t, n, bias, cb, count, v);
}

/* The kernel of the set @p kernels for both phases of stride 2 at once,
 * for input type @p dt, @p cb channels and rows of @p len (on padded
 * copies where @p padded), writing f32 rows, or where @p out is 16-bit
 * rounding into rows of it as it stores (f32 input, AVX2 only: the
 * AVX-512 kernels write f32 rows); NULL where there is none (then phase
 * by phase, or rounded by convert.c). */
static phase_pair_fn phase_pair_for_cpu(kernels_t kernels,
        dgrad_data_type_t dt, dgrad_data_type_t out, int padded, int cb,
        int64_t len) {
#if defined(__x86_64__) && defined(__GNUC__)
    int64_t count = (len + 1) / 2;
    if (out != dgrad_f32)
        return dt == dgrad_f32 && kernels == KERNELS_AVX2
                ? direct_avx2_pair_rounding(type_index(out), cb, count, padded)
                : NULL;
    if (kernels == KERNELS_AVX512)
        return direct_avx512_pair(type_index(dt), cb);
    if (kernels == KERNELS_AVX2)
        return direct_avx2_pair(type_index(dt), cb, count, padded);
#endif
    (void)kernels;
    (void)dt;
    (void)out;
    (void)padded;
    (void)cb;
    (void)len;
    return NULL;
}

/* The kernel sharing each input run's loads between both phases, for
 * output type @p out (f32 rows or, rounding, 16-bit ones), where phase
 * @p one_tap has one tap (direct_shared_phase), else NULL. */
static phase_shared_fn phase_shared_for_cpu(kernels_t kernels, int one_tap,
        dgrad_data_type_t out, int cb) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (one_tap >= 0 && kernels == KERNELS_AVX512)
        return direct_avx512_pair_shared(type_index(out), cb, one_tap);
    if (one_tap >= 0)
        return direct_avx2_pair_shared(type_index(out), cb, one_tap);
#endif
    (void)kernels;
    (void)one_tap;
    (void)out;
    (void)cb;
    return NULL;
}

/* Output channels per block: CO_BLOCK, or where the AVX2 kernels take
 * both phases of stride 2 at once or the AVX-512 ones share loads
 * between them (on staged f32 copies), up to CO_BLOCK_WIDE in equal
 * blocks:
 * each input vector then feeds every channel of the group, not 4 of them
 * (one thread on the dense 2D specification example, 10 channels, four
 * runs alternating: 4.4-6.3 ms as one block, 6.2-7.2 ms as blocks of 4,
 * 4 and 2; `OMP_NUM_THREADS=1 DGRAD_OWN_LOOP=only dgrad bench --no-raw
 * --data-format NCX mb1ic20ih224oc10oh447kh3sh2ph1`, AMD EPYC Zen 3). */
static int block_width(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t cg = p->Cout / p->G;
    kernels_t k = plan_kernels(plan);
    int wide = k == KERNELS_AVX2
            || (k == KERNELS_AVX512 && direct_shared_phase(plan) >= 0);
    if (!wide || p->S[l] != 2 || p->Y[l] < 2 || cg <= CO_BLOCK)
        return CO_BLOCK;
    int64_t blocks = (cg + CO_BLOCK_WIDE - 1) / CO_BLOCK_WIDE;
    return (int)((cg + blocks - 1) / blocks);
}

static void interleave2(kernels_t kernels, const float *e, const float *o,
        int64_t len, float *out) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (kernels == KERNELS_AVX512) {
        direct_avx512_interleave2(e, o, len, out);
        return;
    }
#endif
    (void)kernels;
    for (int64_t x = 0; x < len; x++) out[x] = (x & 1) ? o[x / 2] : e[x / 2];
}

/* Whether the taps of the last outer axis reaching positions @p a and
 * @p b are the same k's (then b's inputs are a's moved by whole rows). */
static int same_outer_taps(const dgrad_plan_t *plan, int64_t a, int64_t b) {
    const dgrad_problem_t *p = &plan->p;
    int i = p->nsp - 2;
    const int64_t *ea = direct_outer_taps(plan, i, a),
                  *eb = direct_outer_taps(plan, i, b);
    if (ea[0] != eb[0]) return 0;
    for (int64_t e = 0; e < ea[0]; e++)
        if (ea[1 + 2 * e] != eb[1 + 2 * e]) return 0;
    return 1;
}

/* Where the terms of a row one input row further on the last outer axis
 * read: the same places moved by one stride of the source the kernels
 * read (the user's input, or the copies while no slot wraps around the
 * window). */
static int64_t row_move(const dgrad_plan_t *plan, const int64_t *is) {
    const dgrad_problem_t *p = &plan->p;
    const direct_stage_t *st = &plan->direct_stage;
    int i = p->nsp - 2;
    return st->slots ? st->xl_slots * st->pitch : is[2 + i];
}

/* The lowest and highest window positions of the rows a cached entry's
 * terms read, on the last outer axis (where rows are staged: moving them
 * all by dx keeps every slot while these stay inside the window). */
static void window_positions(const dgrad_plan_t *plan, row_cache_t *rc) {
    int64_t last = plan->direct_stage.window[plan->p.nsp - 2] - 1;
    rc->xl_lo = last;
    rc->xl_hi = 0;
    for (int ph = 0; ph < 2; ph++)
        for (int k = 0; k < rc->n[ph]; k++) {
            int64_t x = rc->t[ph][k].xl & last;
            if (x < rc->xl_lo) rc->xl_lo = x;
            if (x > rc->xl_hi) rc->xl_hi = x;
        }
}

/* The cached term lists (both phases of stride 2, or the one phase of
 * stride 1, on the last axis) for the row at @p y,
 * or NULL when the row's class has none that fits: same group, image
 * and channel block, same outer position but on the last outer axis,
 * where the taps must be the same k's. They are read @p *dx input rows
 * further on that axis: the caller moves the source by dx row_move's.
 * Where staged slots would wrap around their window the terms are moved
 * here instead, one by one, and dx is 0. */
static row_cache_t *cached_terms(const dgrad_plan_t *plan, const int64_t *is,
        int64_t in_group, const int64_t *y, const float *w, int cb,
        row_cache_t *cache, int64_t *dx) {
    const dgrad_problem_t *p = &plan->p;
    int i = p->nsp - 2;
    if (i < 0 || p->S[i] > CACHE_CLASSES) return NULL;
    row_cache_t *rc = &cache[y[i] % p->S[i]];
    if (!rc->valid || rc->in_group != in_group || rc->w != w || rc->cb != cb)
        return NULL;
    for (int j = 0; j < i; j++)
        if (rc->y[j] != y[j]) return NULL;
    if (!same_outer_taps(plan, rc->y[i], y[i])) return NULL;
    *dx = (y[i] - rc->y[i]) / p->S[i];
    const direct_stage_t *st = &plan->direct_stage;
    if (!st->slots
            || (rc->xl_lo + *dx >= 0 && rc->xl_hi + *dx < st->window[i]))
        return rc;
    for (int ph = 0; ph < 2; ph++)
        for (int k = 0; k < rc->n[ph]; k++) {
            term_t *t = &rc->t[ph][k];
            int64_t from = direct_stage_slot(st, t, p->nsp);
            t->row += *dx * is[2 + i];
            t->xl += *dx;
            t->off += (direct_stage_slot(st, t, p->nsp) - from) * st->pitch;
        }
    rc->y[i] = y[i];
    window_positions(plan, rc);
    *dx = 0;
    return rc;
}

/* Keeps a row's term lists in its class's cache when they fit. */
static void keep_terms(const dgrad_plan_t *plan, int64_t in_group,
        const int64_t *y, const float *w, int cb, const term_t *te, int ne,
        int pe, const term_t *to, int no, int po, row_cache_t *cache) {
    const dgrad_problem_t *p = &plan->p;
    int i = p->nsp - 2;
    if (i < 0 || p->S[i] > CACHE_CLASSES) return;
    row_cache_t *rc = &cache[y[i] % p->S[i]];
    rc->valid = ne <= CACHE_TERMS && no <= CACHE_TERMS;
    if (!rc->valid) return;
    rc->in_group = in_group;
    rc->w = w;
    rc->cb = cb;
    for (int j = 0; j <= i; j++) rc->y[j] = y[j];
    rc->n[0] = ne;
    rc->n[1] = no;
    rc->per_row[0] = pe;
    rc->per_row[1] = po;
    rc->common[0] = direct_terms_common(te, ne);
    rc->common[1] = direct_terms_common(to, no);
    memcpy(rc->t[0], te, (size_t)ne * sizeof *te);
    if (no) memcpy(rc->t[1], to, (size_t)no * sizeof *to);
    window_positions(plan, rc);
}

/* The post-op chain from post-op @p from (with @p operands) on the f32
 * rows @p rows of the block's @p cb channels from @p c at image @p n,
 * outer position @p y. */
static void chain_rows(const dgrad_plan_t *plan, const void *const *operands,
        int64_t n, int64_t c, const int64_t *y, int cb, int from,
        float *const *rows, float *tmp) {
    const dgrad_problem_t *p = &plan->p;
    int64_t idx[2 + DGRAD_MAX_SPATIAL] = {n, c};
    for (int i = 0; i < p->nsp - 1; i++) idx[2 + i] = y[i];
    for (int j = 0; j < cb; j++, idx[1]++)
        post_chain_row(p, operands, from, idx, p->Y[p->nsp - 1], rows[j],
                tmp);
}

/* What every row of an execution shares: its tensors, the blocks of
 * output channels, and where both phases of stride 2 start (computed
 * once: count and q0 of each, even first). */
typedef struct rows_args {
    const dgrad_plan_t *plan;
    const void *in;
    const float *w, *bias;
    const void *const *operands;
    void *out;
    int64_t blocks;
    int width; /* output channels per block (the last may have fewer) */
    int64_t count[2], q0[2], r[2];
    int64_t values_rows; /* values_rows(plan) */
    kernels_t kernels;   /* plan_kernels(plan) */
    size_t stage_off;    /* where a thread's staged rows start */
    int shared;          /* direct_shared_phase(plan) */
} rows_args_t;

/* Whether the plan's kernel set has kernels sharing each run's loads
 * between both phases (phase_shared_fn): AVX-512, or AVX2 on a CPU with
 * AVX-512VL (registers 16-31). */
static int kernels_share(const dgrad_plan_t *plan) {
    kernels_t k = plan_kernels(plan);
    return k == KERNELS_AVX512 || (k == KERNELS_AVX2 && cpu_has_avx512vl());
}

/* direct_shared_taps, where the rows loop's kernels share those loads: they
 * read padded copies (whole steps, no ranges). */
int direct_shared_phase(const dgrad_plan_t *plan) {
    if (plan->direct != DIRECT_ROWS || !kernels_share(plan)
            || !plan->direct_stage.padded)
        return -1;
    return direct_shared_taps(plan);
}

/* The rows of @p cb output channels from @p c (at element @p out_off of
 * @p out, channel stride @p out_cs) at image @p n, outer position @p y
 * and the @p run - 1 positions after it on the last outer axis (in
 * order; @p y is moved along): every phase of the last axis into f32
 * values, then each row assembled in f32 (in the output itself for f32),
 * given the chain where the plan carries it (@p operands) and, for
 * 16-bit output, rounded once into the output. What the rows share is
 * set up once per run (rows_row has the measurement). */
static void direct_rows(const rows_args_t *a, int64_t in_group,
        int64_t n_img, int64_t c, int64_t *y, int64_t run, const float *w,
        const float *bias, int cb, int64_t out_off, char *scratch) {
    const dgrad_plan_t *plan = a->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    const void *in = a->in, *const *operands = a->operands;
    void *out = a->out;
    int64_t out_cs = plan->out.io_strides[1];
    int l = p->nsp - 1;
    /* output elements from one position of the last outer axis to the
     * next (a run has one position in 1D) */
    int64_t out_next = l >= 1 ? plan->out.io_strides[2 + l - 1] : 0;
    int64_t S = p->S[l], Y = p->Y[l], len = values_len(p);
    dgrad_data_type_t dt = io_type(plan);
    int64_t es = (int64_t)dgrad_data_type_size(dt);
    int f32 = dt == dgrad_f32, interleave = S == 2 && Y >= 2;
    row_cache_t *cache = (row_cache_t *)scratch;
    term_t *own_t = (term_t *)(cache + CACHE_CLASSES),
           *own_t2 = own_t + DIRECT_MAX_TERMS;
    float *v0 = (float *)(own_t2 + DIRECT_MAX_TERMS);
    int64_t rows = a->values_rows, first = rows - CO_BLOCK;
    float *ph[2][CO_BLOCK], *row32 = v0 + rows * len,
          *tmp = row32 + len;
    for (int j = 0; j < CO_BLOCK; j++) {
        ph[0][j] = v0 + j * len; /* phase by phase: blocks of CO_BLOCK */
        ph[1][j] = v0 + (first + j) * len;
    }
    /* Where the plan stages input rows, the kernels read the f32 copies. */
    const direct_stage_t *st = &plan->direct_stage;
    float *staged = st->slots ? (float *)(scratch + a->stage_off) : NULL;
    int64_t *tags = st->slots ? stage_tags(st, staged) : NULL;
    dgrad_data_type_t kt = st->slots ? dgrad_f32 : dt;
    kernels_t kernels = a->kernels;
    const void *src = st->slots ? (const void *)staged : in;
    /* bytes the kernels' source moves for cached terms one input row
     * further on the last outer axis */
    int64_t row_bytes = row_move(plan, is) * (int64_t)dgrad_data_type_size(kt);
    phase_pair_fn pair = interleave
            ? phase_pair_for_cpu(kernels, kt, dgrad_f32, st->padded, cb, Y)
            : NULL;
    epilogue_t ep;
    int from = pair && plan->post.fused ? post_chain_epilogue(p, &ep) : 0;
    int chain_after = pair && plan->post.fused && from < p->n_post_ops;
    /* 16-bit output from f32 rows with nothing after the kernel: rounded
     * as the kernel stores it, where the kernel a row takes can */
    int round_out = pair && !f32 && !chain_after;
    phase_pair_fn rounding = round_out
            ? phase_pair_for_cpu(kernels, kt, dt, st->padded, cb, Y)
            : NULL;
    phase_shared_fn shared = pair
            ? phase_shared_for_cpu(kernels, a->shared, dgrad_f32, cb)
            : NULL;
    phase_shared_fn shared_rounding = shared && round_out
            ? phase_shared_for_cpu(kernels, a->shared, dt, cb)
            : NULL;
    int64_t staged_span[2] = {1, 0}; /* none yet: direct_stage_run_rows */
    for (int64_t k = 0; k < run; k++, out_off += out_next) {
        if (k) y[l - 1]++;
        char *out_row[CO_BLOCK_MAX];
        for (int j = 0; j < cb; j++)
            out_row[j] = (char *)out + (out_off + j * out_cs) * es;
        /* Where each channel's f32 row is assembled. */
        float *assembled[CO_BLOCK_MAX];
        for (int j = 0; j < cb; j++)
            assembled[j] = f32 ? (float *)out_row[j]
                    : S == 1 ? ph[0][j] : interleave ? row32 : ph[1][j];
        term_t *t = own_t, *t2 = own_t2;
        if (pair) {
            int ne, no, pe, po;
            terms_span_t ce, co;
            int64_t dx = 0;
            row_cache_t *rc =
                    cached_terms(plan, is, in_group, y, w, cb, cache, &dx);
            if (rc) {
                t = rc->t[0];
                t2 = rc->t[1];
                ne = rc->n[0];
                no = rc->n[1];
                pe = rc->per_row[0];
                po = rc->per_row[1];
                ce = rc->common[0];
                co = rc->common[1];
            } else {
                ne = row_terms(plan, is, in_group, y, w, cb, a->r[0],
                        a->count[0], a->q0[0], t, &pe);
                no = row_terms(plan, is, in_group, y, w, cb, a->r[1],
                        a->count[1], a->q0[1], t2, &po);
                keep_terms(plan, in_group, y, w, cb, t, ne, pe, t2, no, po,
                        cache);
                ce = direct_terms_common(t, ne);
                co = direct_terms_common(t2, no);
            }
            if (st->slots) /* staged only in 2D and up */
                direct_stage_run_rows(plan, in, dt, in_group, y, staged_span,
                        staged, tags);
            int odd_one = a->shared == 1;
            int sharing = shared && (odd_one ? po : pe) == 1
                    && (odd_one ? pe : po) == 2;
            int rounds = sharing ? shared_rounding != NULL : rounding != NULL;
            /* 16-bit output through f32 rows: the values rows */
            for (int j = 0; j < cb && !f32 && !rounds; j++)
                assembled[j] = v0 + j * len;
            void *dst[CO_BLOCK_MAX];
            for (int j = 0; j < cb; j++)
                dst[j] = rounds ? (void *)out_row[j] : (void *)assembled[j];
            const char *in_rows = (const char *)src + dx * row_bytes;
            /* the one-tap phase's list first (every row's taps present) */
            if (sharing)
                (rounds ? shared_rounding : shared)(in_rows,
                        odd_one ? t2 : t, odd_one ? no : ne,
                        odd_one ? t : t2, (int)(p->Cin / p->G), bias,
                        from ? &ep : NULL, Y, dst);
            else
                (rounds ? rounding : pair)(in_rows, t, ne, ce, t2, no, co,
                        bias, from ? &ep : NULL, Y, dst);
            if (rounds) continue;
            if (chain_after)
                chain_rows(plan, operands, n_img, c, y, cb, from, assembled,
                        tmp);
            for (int j = 0; j < cb && !f32; j++)
                convert_run_from_f32(dt, assembled[j], out_row[j], Y);
            continue;
        }
        for (int64_t r = 0; r < S; r++) {
            int64_t count, q0;
            int64_t x0 = direct_phase_geometry(p, r, &count, &q0);
            if (count == 0) continue;
            int per_row = 0, n;
            int64_t dx = 0;
            /* One phase (stride 1): the row's class keeps its term list
             * and stages its rows per run, as the pair path does. */
            row_cache_t *rc = S == 1
                    ? cached_terms(plan, is, in_group, y, w, cb, cache, &dx)
                    : NULL;
            if (rc) {
                t = rc->t[0];
                n = rc->n[0];
            } else {
                t = own_t;
                n = row_terms(plan, is, in_group, y, w, cb, r, count, q0, t,
                        &per_row);
                if (S == 1)
                    keep_terms(plan, in_group, y, w, cb, t, n, per_row, NULL,
                            0, 0, cache);
            }
            float *const *dst = S == 1 ? assembled : ph[interleave ? x0 : 0];
            if (st->slots && S == 1)
                direct_stage_run_rows(plan, in, dt, in_group, y, staged_span,
                        staged, tags);
            else if (st->slots)
                direct_stage_fill(st, p->nsp, in, dt, t, n, per_row, staged,
                        tags);
            phase_values(kernels, kt, st->padded,
                    (const char *)src + dx * row_bytes, t, n, bias, cb, count,
                    dst);
            if (S > 1 && !interleave)
                for (int j = 0; j < cb; j++)
                    for (int64_t m = 0; m < count; m++)
                        assembled[j][x0 + S * m] = ph[0][j][m];
        }
        /* one channel at a time: 16-bit rows of both phases share row32 */
        for (int j = 0; j < cb; j++) {
            if (interleave)
                interleave2(kernels, ph[0][j], ph[1][j], Y, assembled[j]);
            if (plan->post.fused)
                chain_rows(plan, operands, n_img, c + j, y, 1, 0,
                        &assembled[j], tmp);
            if (!f32) convert_run_from_f32(dt, assembled[j], out_row[j], Y);
        }
    }
}

/* The rows of direct_run at @p rest = (image, group, block of output
 * channels), outer position @p y and the @p run - 1 positions after it
 * on the last outer axis. Runs, not rows, with the staged rows copied as
 * the run reaches them (direct_stage_run_rows): one thread, 3D example
 * at 56^3 13.1-14.5 -> 11.6-12.5 ms, grouped 2D 0.86-0.89 -> 0.78-0.83
 * ms; both threads 6.26-6.73 -> 5.48-6.10 and 0.436-0.449 -> 0.415-0.421
 * ms (`DGRAD_OWN_LOOP=only dgrad bench --no-raw --data-format NCX
 * g4mb1ic20id56oc8od111kd3sd2pd1 g4mb1ic20ih224oc8oh447kh3sh2ph1`,
 * alternating builds, AMD EPYC Zen 3). */
static void rows_row(void *arg, int64_t rest, const int64_t *y, int64_t run,
        char *scratch) {
    const rows_args_t *a = arg;
    const dgrad_plan_t *plan = a->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    static const float zeros[CO_BLOCK_MAX];
    int l = p->nsp - 1;
    int64_t cg = p->Cout / p->G, icg = p->Cin / p->G, kn = 1;
    for (int i = 0; i < p->nsp; i++) kn *= p->K[i];
    int64_t b = rest % a->blocks, g = rest / a->blocks % p->G,
            n = rest / a->blocks / p->G;
    int64_t c = g * cg + b * a->width;
    int cb = (int)(cg - b * a->width < a->width ? cg - b * a->width
                                                 : a->width);
    int64_t out_off = n * os[0] + c * os[1], at[DGRAD_MAX_SPATIAL];
    for (int i = 0; i < l; i++) {
        out_off += y[i] * os[2 + i];
        at[i] = y[i];
    }
    direct_rows(a, n * is[0] + g * icg * is[1], n, c, at, run,
            a->w + c * icg * kn, a->bias ? a->bias + c : zeros, cb, out_off,
            scratch);
}

/* The whole output: rows (n, block of output channels, outer position)
 * shared out over the OpenMP threads, each with its own scratch. */
void direct_rows_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, const void *const *operands,
        void *out, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t cg = p->Cout / p->G, outer = 1;
    for (int i = 0; i < l; i++) outer *= p->Y[i];
    int width = block_width(plan);
    int64_t blocks = (cg + width - 1) / width;
    int64_t rows = p->N * p->G * blocks * outer;
    size_t per_thread = thread_scratch(plan);
    /* Cached term lists hold weights: none survives from an execution
     * with other weights. */
    for (int th = 0; th < plan->direct_threads; th++) {
        char *mine = scratch + per_thread * (size_t)th;
        row_cache_t *cache = (row_cache_t *)mine;
        for (int c = 0; c < CACHE_CLASSES; c++) cache[c].valid = 0;
        /* staged rows are this execution's input's */
        if (plan->direct_stage.slots) {
            float *copies = stage_rows(plan, mine);
            direct_stage_clear(&plan->direct_stage, copies,
                    stage_tags(&plan->direct_stage, copies));
        }
    }
    rows_args_t args = {plan, in, w, bias, operands, out, blocks, width,
            {0}, {0}, {0, 1}, values_rows(plan), plan_kernels(plan),
            values_bytes(plan), direct_shared_phase(plan)};
    /* even positions are the phase starting at 0 */
    for (int64_t r = 0; r < 2 && r < p->S[l]; r++) {
        int64_t count, q0, ph = direct_phase_geometry(p, r, &count, &q0) != 0;
        args.count[ph] = count;
        args.q0[ph] = q0;
        args.r[ph] = r;
    }
    direct_for_rows(plan, rows, plan->direct_stage.tile,
            (double)rows * (double)p->Y[l]
                    * (double)(p->Cin / p->G),
            per_thread, scratch, rows_row, &args);
}
