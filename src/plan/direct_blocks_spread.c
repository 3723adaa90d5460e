/*
 * The blocks loop's spread input and the runs of rows it takes from
 * lists (direct_blocks_impl.h; the lanes form, AVX-512): each input
 * pixel as Cin / G vectors of 16 lanes, vector i holding channel i of
 * each lane's group (a 16-bit input widened), made by the threads
 * before the rows; then the blocks of rows that share their terms,
 * several rows at a time, from lists made once at plan creation where
 * they are not too many; a 16-bit output rounded from f32 rows.
 */
#include "direct_blocks_impl.h"

#include <string.h>

#include "alloc.h"
#include "dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "transpose_avx512.h"

/* 16 values of 16-bit type @p dt as f32 (exact). */
__attribute__((target("avx512f"))) static inline __m512 widen16(
        dgrad_data_type_t dt, const uint16_t *h) {
    __m256i v = _mm256_loadu_si256((const __m256i *)h);
    return dt == dgrad_f16
            ? _mm512_cvtph_ps(v)
            : _mm512_castsi512_ps(
                    _mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/* Whether an image's input positions are one run along each channel
 * (NCX without gaps between rows), its channels a plane apart. */
static int positions_one_run(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    int64_t step = 1;
    for (int i = p->nsp - 1; i >= 0; i--) {
        if (is[2 + i] != step) return 0;
        step *= p->X[i];
    }
    return is[1] != 1;
}

/* blocks_spread_pixels where the positions are one run
 * (positions_one_run): 16 positions of an image at a time, each
 * channel's loaded as a vector (a 16-bit one widened), the vectors
 * transposed into the positions' channels (16 channels at a time), then
 * permuted as one pixel's are. Gathering them instead, a channel stride
 * apart, took 28-30% of deconv_ci_3d:grouped's time in NCX (`perf
 * record` of `dgrad bench --no-raw`, f32 and f16). */
__attribute__((target("avx512f"))) static void spread_transposed(
        const blocks_args_t *a, float *into, int64_t i0, int64_t i1) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *is = a->plan->in.io_strides;
    int64_t R = a->rows, cs = is[1], P = 1;
    for (int i = 0; i < p->nsp; i++) P *= p->X[i];
    int halves = p->Cin > 16 ? 2 : 1;
    for (int64_t px = i0; px < i1;) {
        int64_t n = px / P, f = px - n * P, cnt = P - f;
        if (cnt > 16) cnt = 16;
        if (cnt > i1 - px) cnt = i1 - px;
        __mmask16 k = (__mmask16)((1u << cnt) - 1u);
        __m512 v[2][16];
        for (int h = 0; h < halves; h++) {
            for (int64_t c = 0; c < 16; c++) {
                int64_t ch = h * 16 + c;
                int64_t off = n * is[0] + ch * cs + f;
                if (ch >= p->Cin) {
                    v[h][c] = _mm512_setzero_ps();
                } else if (a->esize == sizeof(float)) {
                    v[h][c] = _mm512_maskz_loadu_ps(k,
                            (const float *)a->user_in + off);
                } else if (cnt == 16) {
                    v[h][c] = widen16(p->dt,
                            (const uint16_t *)a->user_in + off);
                } else {
                    uint16_t w16[16] = {0};
                    memcpy(w16, (const uint16_t *)a->user_in + off,
                            (size_t)cnt * sizeof *w16);
                    v[h][c] = widen16(p->dt, w16);
                }
            }
            transpose16(v[h]);
        }
        float *dst = into + px * R * 16;
        for (int64_t j = 0; j < cnt; j++, dst += R * 16) {
            __m512 hi = halves > 1 ? v[1][j] : _mm512_setzero_ps();
            for (int64_t r = 0; r < R; r++)
                _mm512_storeu_ps(dst + 16 * r,
                        _mm512_permutex2var_ps(v[0][j],
                                _mm512_loadu_si512(a->pattern[r]), hi));
        }
        px += cnt;
    }
}

/* Input pixels [@p i0, @p i1) (image, then positions) spread
 * (blocks_lanes_spread) into @p into: where an image's positions are one run,
 * spread_transposed's way; else the pixel's channels loaded, or gathered
 * a channel stride apart (a 16-bit pixel's widened one by one first: at
 * most LANES_MAX_CIN of them), then permuted by each row of the pattern
 * into its vectors. */
__attribute__((target("avx512f"))) void blocks_spread_pixels(
        const blocks_args_t *a, float *into, int64_t i0, int64_t i1) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *is = a->plan->in.io_strides;
    if (positions_one_run(a->plan)) {
        spread_transposed(a, into, i0, i1);
        return;
    }
    int64_t R = a->rows, cs = is[1], pos[DGRAD_MAX_SPATIAL], rest = i0;
    for (int i = p->nsp - 1; i >= 0; i--) {
        pos[i] = rest % p->X[i];
        rest /= p->X[i];
    }
    int64_t n = rest;
    __mmask16 k0 = (__mmask16)(p->Cin >= 16 ? 0xffffu
                                            : (1u << p->Cin) - 1u),
              k1 = (__mmask16)(p->Cin > 16 ? (1u << (p->Cin - 16)) - 1u : 0u);
    __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
            12, 13, 14, 15);
    __m512i g0 = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)cs)),
            g1 = _mm512_add_epi32(g0, _mm512_set1_epi32((int)(16 * cs)));
    float *dst = into + i0 * R * 16;
    for (int64_t px = i0; px < i1; px++, dst += R * 16) {
        int64_t off = n * is[0];
        for (int i = 0; i < p->nsp; i++) off += pos[i] * is[2 + i];
        __m512 lo, hi;
        if (a->esize != sizeof(float)) {
            /* the pixel's 16-bit channels, zeros past Cin, widened 16 at
             * a time */
            uint16_t h[LANES_MAX_CIN] = {0};
            const uint16_t *src = (const uint16_t *)a->user_in + off;
            if (cs == 1) memcpy(h, src, (size_t)p->Cin * sizeof *h);
            else
                for (int64_t c = 0; c < p->Cin; c++) h[c] = src[c * cs];
            lo = widen16(p->dt, h);
            hi = widen16(p->dt, h + 16);
        } else if (cs == 1) {
            const float *src = (const float *)a->user_in + off;
            lo = _mm512_maskz_loadu_ps(k0, src);
            hi = _mm512_maskz_loadu_ps(k1, src + 16);
        } else {
            const float *src = (const float *)a->user_in + off;
            lo = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k0, g0, src,
                    4);
            hi = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k1, g1, src,
                    4);
        }
        for (int64_t r = 0; r < R; r++)
            _mm512_storeu_ps(dst + 16 * r,
                    _mm512_permutex2var_ps(lo,
                            _mm512_loadu_si512(a->pattern[r]), hi));
        for (int i = p->nsp - 1; i >= 0; i--) {
            if (++pos[i] < p->X[i]) break;
            pos[i] = 0;
            if (i == 0) n++;
        }
    }
}

/* @p px channels-last pixels of @p C channels at @p rows into @p tmp,
 * channel by channel (px floats each): 16 pixels by 16 channels at a
 * time, transposed in registers (gathering each channel's pixels, 16 at
 * a time, took 6% of deconv_ci_3d:grouped's f16 time in NCX). */
__attribute__((target("avx512f"))) static void channels_apart(
        const float *rows, int64_t px, int64_t C, float *tmp) {
    for (int64_t j0 = 0; j0 < px; j0 += 16) {
        int64_t nj = px - j0 < 16 ? px - j0 : 16;
        __mmask16 kj = (__mmask16)((1u << nj) - 1u);
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
            int64_t nc = C - c0 < 16 ? C - c0 : 16;
            __mmask16 kc = (__mmask16)((1u << nc) - 1u);
            __m512 v[16];
            for (int64_t j = 0; j < 16; j++)
                v[j] = j < nj ? _mm512_maskz_loadu_ps(kc,
                                        rows + (j0 + j) * C + c0)
                              : _mm512_setzero_ps();
            transpose16(v);
            for (int64_t m = 0; m < nc; m++)
                _mm512_mask_storeu_ps(tmp + (c0 + m) * px + j0, kj, v[m]);
        }
    }
}
#endif

/* @p nrows channels-last f32 output rows (Y pixels of Cout each, one
 * after the other) rounded into the user's 16-bit output, the first at
 * element @p out_off, each @p row_step after the one before; through
 * @p tmp (2 x nrows x Y x Cout floats) where the output is not
 * channels-last. Channels-last: a run per row (one where the rows are
 * contiguous). Channels a plane apart (NCX): the rows' pixels of each
 * channel put together in @p tmp first (channels_apart, all rows at
 * once), then rounded as one run after that in @p tmp and copied out a
 * channel at a time (a row at a time where the rows are not
 * contiguous). Else element by element. */
static void blocks_round_rows(const blocks_args_t *a, const float *rows,
        int64_t nrows, int64_t out_off, int64_t row_step, float *tmp) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *os = a->plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t C = p->Cout, Y = p->Y[l], px = nrows * Y;
    size_t es = a->esize;
    if (a->out_cl) {
        if (row_step == Y * C) {
            convert_run_from_f32(p->dt, rows, a->out + (size_t)out_off * es,
                    px * C);
            return;
        }
        for (int64_t k = 0; k < nrows; k++)
            convert_run_from_f32(p->dt, rows + k * Y * C,
                    a->out + (size_t)(out_off + k * row_step) * es, Y * C);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (os[2 + l] == 1) { /* the lanes form runs only with AVX-512 */
        uint16_t *rounded = (uint16_t *)(tmp + px * C);
        channels_apart(rows, px, C, tmp);
        convert_run_from_f32(p->dt, tmp, rounded, px * C);
        for (int64_t co = 0; co < C; co++) {
            char *dst = a->out + (size_t)(out_off + co * os[1]) * es;
            if (row_step == Y) {
                memcpy(dst, rounded + co * px, (size_t)px * es);
                continue;
            }
            for (int64_t k = 0; k < nrows; k++)
                memcpy(dst + (size_t)(k * row_step) * es,
                        rounded + co * px + k * Y, (size_t)Y * es);
        }
        return;
    }
#endif
    (void)tmp;
    for (int64_t k = 0; k < nrows; k++)
        for (int64_t co = 0; co < C; co++)
            for (int64_t y = 0; y < Y; y++)
                dgrad_store(a->out, p->dt,
                        out_off + k * row_step + co * os[1] + y * os[2 + l],
                        rows[(k * Y + y) * C + co]);
}

/* Blocks a list call takes at most. */
#define LIST_MAX_BLOCKS 64

/* Where the list calls of a chunk of rows go: to the kernels now (rec
 * NULL: the image's input and output, the weights, the bias row, the
 * column offsets or NULL), or into a plan's lists (rec), only counted
 * while its arrays are NULL (blocks_lists_make's first pass). */
typedef struct list_sink {
    const blocks_args_t *a;
    const float *in, *w, *brow;
    float *out;
    const int32_t *colidx;
    blocks_lists_t *rec;
} list_sink_t;

/* The list kernels on @p count blocks (input offsets @p pix, output
 * offsets @p dst) of terms @p soff, @p woff, columns [@p c0, @p c0 +
 * @p ncols): as many of the widest kernel's blocks as fill it, the rest
 * 4, 2 or 1 at a time; run now or recorded. */
static void list_blocks(list_sink_t *o, const int64_t *soff,
        const int64_t *woff, int64_t nterms, int64_t c0, int64_t ncols,
        const int64_t *pix, const int64_t *dst, int64_t count) {
    const blocks_args_t *a = o->a;
    blocks_lists_t *rec = o->rec;
    int nv = (int)((ncols + 15) / 16) - 1;
    int64_t x = 0, many = a->k->list_many[nv];
    if (rec) {
        if (rec->sets) {
            rec->sets[rec->nsets] = (list_set_t){.terms_at = rec->nterms,
                    .nterms = nterms,
                    .c0 = c0,
                    .ncols = ncols,
                    .calls_at = rec->ncalls};
            memcpy(rec->soff + rec->nterms, soff,
                    (size_t)nterms * sizeof *soff);
            memcpy(rec->woff + rec->nterms, woff,
                    (size_t)nterms * sizeof *woff);
            memcpy(rec->pix + rec->nblocks, pix, (size_t)count * sizeof *pix);
            memcpy(rec->dst + rec->nblocks, dst, (size_t)count * sizeof *dst);
        }
        rec->nsets++;
        rec->nterms += nterms;
    }
    while (x < count) {
        int64_t left = count - x;
        int size = left >= many ? LIST_MANY
                : left >= 3     ? LIST_4
                : left == 2     ? LIST_2
                                : LIST_1;
        int64_t step = size == LIST_MANY ? left / many * many
                : size == LIST_4         ? (left >= 4 ? left / 4 * 4 : left)
                                         : left;
        lanes_list_fn fn = a->k->lanes_list[size][nv];
        if (rec) {
            if (rec->sets) {
                rec->calls[rec->ncalls] = (list_call_t){
                        .fn = fn, .first = rec->nblocks + x, .count = step};
                rec->sets[rec->nsets - 1].ncalls++;
            }
            rec->ncalls++;
        } else {
            fn(o->in, soff, nterms, pix + x, a->rows, o->w, woff, a->np,
                    o->brow + c0, ncols, o->colidx ? o->colidx + c0 : NULL,
                    &a->ep, o->out + (o->colidx ? 0 : c0), dst + x, step);
        }
        x += step;
    }
    if (rec) rec->nblocks += count;
}

/* The calls of chunk @p chunk of a plan's lists, run. */
static void list_chunk_run(const blocks_lists_t *b, int64_t chunk,
        const list_sink_t *o) {
    const blocks_args_t *a = o->a;
    for (int64_t s = b->chunk_sets[chunk]; s < b->chunk_sets[chunk + 1];
            s++) {
        const list_set_t *set = &b->sets[s];
        const int64_t *soff = b->soff + set->terms_at,
                      *woff = b->woff + set->terms_at;
        const int32_t *colidx = o->colidx ? o->colidx + set->c0 : NULL;
        float *out = o->out + (o->colidx ? 0 : set->c0);
        for (int64_t c = set->calls_at; c < set->calls_at + set->ncalls;
                c++) {
            const list_call_t *call = &b->calls[c];
            call->fn(o->in, soff, set->nterms, b->pix + call->first, a->rows,
                    o->w, woff, a->np, o->brow + set->c0, set->ncols, colidx,
                    &a->ep, out, b->dst + call->first, call->count);
        }
    }
}

/* Rows [@p y[r], @p y[r] + @p rows) of the run axis r (the last outer
 * one; in 1D the one row) at outer positions @p y of an image, from the
 * spread copy, its rows in groups of the same terms (the phase and the
 * taps in the input along that axis; the other outer axes are the
 * line's): the same input offsets from each row's own and the same
 * weights, so that the blocks of a group's rows go to the list kernels
 * together, the blocks that have every tap and column in one list, each
 * block of the ends (taps or columns cut) with its like of the other
 * rows. Offsets from the image's input and output (16-bit: from the
 * chunk's f32 rows, row k at k * Y * Cout). deconv_ci_3d:grouped's rows
 * of 5 blocks, 3 of them whole, fill blocks of 8 that way, where row by
 * row they took calls of 3 and of one block: with variable weights,
 * over raw oneDNN on its preferred layouts in the same run, +2.4-2.7 ->
 * +1.1-1.4 us in NXC, +4.2-4.6 -> +2.5 in NCX. */
static void chunk_lists(const blocks_args_t *a, const int64_t *y,
        int64_t rows, list_sink_t *o) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *is = a->is, *os = a->plan->out.io_strides;
    int l = p->nsp - 1, r = l - 1; /* r: the run's axis, if any */
    int64_t T = a->T, R = a->rows, np = a->np, S = p->S[l], C = p->Cout;
    int64_t ox = a->in_f32 ? C : os[2 + l];
    /* the outer axes' tap-0 input positions and phases at the chunk's
     * first row */
    int64_t q[DGRAD_MAX_SPATIAL], phase[DGRAD_MAX_SPATIAL];
    int64_t in_run = 0, out_run = 0;
    for (int i = 0; i < l; i++) {
        int64_t nat = y[i] + p->PB[i];
        q[i] = div_floor(nat, p->S[i]);
        phase[i] = nat - q[i] * p->S[i];
        in_run += q[i] * is[2 + i];
        out_run += y[i] * os[2 + i];
    }
    /* per row: its key (phase on axis r, and which of its taps there
     * stay in the input), tap-0 input position there, offsets */
    int64_t key[LIST_MAX_ROWS][3], qr[LIST_MAX_ROWS], in_row[LIST_MAX_ROWS],
            out_row[LIST_MAX_ROWS];
    int done[LIST_MAX_ROWS] = {0};
    for (int64_t k = 0; k < rows; k++) {
        key[k][0] = key[k][1] = key[k][2] = 0;
        qr[k] = 0;
        in_row[k] = in_run;
        out_row[k] = a->in_f32 ? k * p->Y[l] * C : out_run + (l ? k * os[2 + r] : 0);
        if (!l) continue;
        int64_t nat = y[r] + k + p->PB[r], taps = a->taps[r];
        qr[k] = p->S[r] == 1 ? nat : div_floor(nat, p->S[r]);
        /* the phase, and the taps that stay in the input: [first, last]
         * (last < first: none) */
        key[k][0] = nat - qr[k] * p->S[r];
        key[k][1] = qr[k] - p->X[r] + 1 > 0 ? qr[k] - p->X[r] + 1 : 0;
        key[k][2] = qr[k] < taps - 1 ? qr[k] : taps - 1;
        in_row[k] += (qr[k] - q[r]) * is[2 + r];
    }
    for (int64_t k0 = 0; k0 < rows; k0++) {
        if (done[k0]) continue;
        /* the group's terms: outer tap combinations u that reach (kernel
         * positions inside K, input rows in the input), as input offsets
         * from a row's tap-0 position, tap t of the last axis t pixels
         * before; t-major, so that the taps a block at a row's end has
         * are one stretch */
        int64_t soff[BLOCKS_MAX_TERMS], woff[BLOCKS_MAX_TERMS],
                rel[BLOCKS_MAX_TERMS], wu[BLOCKS_MAX_TERMS], nu = 0, ph = 0,
                ta[DGRAD_MAX_SPATIAL], qi[DGRAD_MAX_SPATIAL],
                phi[DGRAD_MAX_SPATIAL];
        for (int i = 0; i < l; i++) {
            qi[i] = i == r ? qr[k0] : q[i];
            phi[i] = i == r ? key[k0][0] : phase[i];
            ph = ph * p->S[i] + phi[i];
            ta[i] = 0;
        }
        int64_t wph = ph * a->ot * T * R * np;
        for (int64_t u = 0; u < a->ot; u++) {
            int64_t off = 0;
            int reached = 1;
            for (int i = 0; i < l; i++) {
                reached &= phi[i] + p->S[i] * ta[i] < p->K[i]
                        && qi[i] - ta[i] >= 0 && qi[i] - ta[i] < p->X[i];
                off -= ta[i] * is[2 + i];
            }
            for (int i = l - 1; i >= 0 && ++ta[i] == a->taps[i]; i--)
                ta[i] = 0;
            if (!reached) continue;
            rel[nu] = off;
            wu[nu++] = wph + u * T * R * np;
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t u = 0; u < nu; u++) {
                soff[t * nu + u] = rel[u] - t * is[2 + l];
                woff[t * nu + u] = wu[u] + t * R * np;
            }
        /* the blocks of the group's rows: those with every tap and column
         * (x = x0 - 1 stands for them), then each end block */
        for (int64_t x = a->x0 - 1; x <= a->x1; x++) {
            int whole = x < a->x0;
            if (!whole && x >= a->lo && x <= a->hi) continue;
            int64_t t0 = 0, t1 = T - 1, b0 = 0, b1 = S, xa = x, xb = x;
            if (whole) {
                xa = a->lo;
                xb = a->hi;
            } else {
                if (t0 < x - p->X[l] + 1) t0 = x - p->X[l] + 1;
                if (t1 > x) t1 = x;
                if (b0 < p->PB[l] - S * x) b0 = p->PB[l] - S * x;
                if (b1 > p->Y[l] + p->PB[l] - S * x)
                    b1 = p->Y[l] + p->PB[l] - S * x;
            }
            int64_t nt = t1 >= t0 ? (t1 - t0 + 1) * nu : 0;
            const int64_t *ss = soff + (nt ? t0 * nu : 0),
                          *ws = woff + (nt ? t0 * nu : 0);
            int64_t shifted[BLOCKS_MAX_TERMS];
            if (b0) {
                for (int64_t j = 0; j < nt; j++) shifted[j] = ws[j] + b0 * C;
                ws = shifted;
            }
            int64_t pix[LIST_MAX_BLOCKS], dst[LIST_MAX_BLOCKS], count = 0;
            for (int64_t k = k0; k < rows; k++) {
                if (memcmp(key[k], key[k0], sizeof key[k])) continue;
                done[k] = 1;
                for (int64_t xx = xa; xx <= xb; xx++) {
                    pix[count] = in_row[k] + xx * is[2 + l];
                    dst[count++] = out_row[k] + (xx * S - p->PB[l]) * ox;
                    if (count < LIST_MAX_BLOCKS) continue;
                    list_blocks(o, ss, ws, nt, b0 * C, (b1 - b0) * C, pix,
                            dst, count);
                    count = 0;
                }
            }
            if (count)
                list_blocks(o, ss, ws, nt, b0 * C, (b1 - b0) * C, pix, dst,
                        count);
        }
    }
}

/* Lines of an image (outer positions but the run axis) and chunks of
 * list_rows rows of a line (in 1D: one of one row). */
static int64_t list_lines(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i + 2 < p->nsp; i++) n *= p->Y[i];
    return n;
}

static int64_t line_rows(const dgrad_problem_t *p) {
    return p->nsp > 1 ? p->Y[p->nsp - 2] : 1;
}

/* Line @p line's outer positions into @p y (the run axis' left 0). */
static void line_positions(const dgrad_problem_t *p, int64_t line,
        int64_t *y) {
    for (int i = p->nsp - 3; i >= 0; i--) {
        y[i] = line % p->Y[i];
        line /= p->Y[i];
    }
    if (p->nsp > 1) y[p->nsp - 2] = 0;
}

void blocks_listed(const blocks_args_t *a, const char *in, const float *w,
        int64_t n, const int64_t *y, int64_t run, const float *brow,
        float *rounded) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *os = a->plan->out.io_strides;
    const blocks_lists_t *b = a->plan->direct_lists;
    int l = p->nsp - 1, r = l - 1;
    /* f32 output: the blocks go to the user's, channels-last or
     * scattered by colidx. 16-bit: to f32 rows in @p rounded, rounded
     * into the user's once a chunk is done. */
    list_sink_t o = {.a = a,
            .in = (const float *)in + n * a->is[0],
            .w = w,
            .brow = brow,
            .out = a->in_f32 ? rounded : (float *)a->out + n * os[0],
            .colidx = a->out_cl || a->in_f32 ? NULL : a->colidx};
    int64_t at[DGRAD_MAX_SPATIAL] = {0}, line = 0, out_line = n * os[0];
    for (int i = 0; i < l; i++) at[i] = y[i];
    for (int i = 0; i < r; i++) {
        line = line * p->Y[i] + y[i];
        out_line += y[i] * os[2 + i];
    }
    /* chunks of the line, list_rows rows each from its first: whole ones
     * from the plan's lists where it has them, a part of one (where the
     * run starts or ends in it) made now */
    int64_t L = a->list_rows, pos = l ? y[r] : 0, end = pos + run,
            rows_line = line_rows(p), chunks = (rows_line + L - 1) / L;
    while (pos < end) {
        int64_t c = pos / L, stop = (c + 1) * L;
        if (stop > rows_line) stop = rows_line;
        int whole = pos == c * L && stop <= end;
        if (stop > end) stop = end;
        if (b && whole) {
            list_chunk_run(b, line * chunks + c, &o);
        } else {
            if (l) at[r] = pos;
            chunk_lists(a, at, stop - pos, &o);
        }
        if (a->in_f32)
            blocks_round_rows(a, rounded, stop - pos,
                    out_line + (l ? pos * os[2 + r] : 0),
                    l ? os[2 + r] : 0,
                    rounded + (stop - pos) * p->Y[l] * p->Cout);
        pos = stop;
    }
}

/* Every chunk of every line recorded into @p rec (counted only, while
 * its arrays are NULL). */
static void lists_record(const blocks_args_t *a, blocks_lists_t *rec) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t L = a->list_rows, rows_line = line_rows(p),
            chunks = (rows_line + L - 1) / L, lines = list_lines(p),
            y[DGRAD_MAX_SPATIAL] = {0};
    list_sink_t o = {.a = a, .rec = rec};
    if (rec->chunk_sets) rec->chunk_sets[0] = 0;
    for (int64_t line = 0; line < lines; line++) {
        line_positions(p, line, y);
        for (int64_t c = 0; c < chunks; c++) {
            int64_t first = c * L,
                    rows = rows_line - first < L ? rows_line - first : L;
            if (l) y[l - 1] = first;
            chunk_lists(a, y, rows, &o);
            if (rec->chunk_sets)
                rec->chunk_sets[line * chunks + c + 1] = rec->nsets;
        }
    }
}

int blocks_lists_make(const blocks_args_t *a, blocks_lists_t **lists) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t L = a->list_rows, rows_line = line_rows(p),
            chunks = (rows_line + L - 1) / L, lines = list_lines(p),
            blocks = p->X[l] + a->T + 1;
    *lists = NULL;
    /* blocks a row has at most (the whole ones and each end one) */
    if (lines > LISTS_MAX_BLOCKS / rows_line
            || blocks > LISTS_MAX_BLOCKS / (lines * rows_line))
        return 1;
    /* counted first, then written into one allocation: the header, then
     * each array at a multiple of 8 bytes */
    blocks_lists_t n = {0};
    lists_record(a, &n);
    size_t sizes[] = {(size_t)(lines * chunks + 1) * sizeof *n.chunk_sets,
            (size_t)n.nsets * sizeof *n.sets,
            (size_t)n.ncalls * sizeof *n.calls,
            (size_t)n.nterms * sizeof *n.soff,
            (size_t)n.nterms * sizeof *n.woff,
            (size_t)n.nblocks * sizeof *n.pix,
            (size_t)n.nblocks * sizeof *n.dst};
    size_t at[8];
    at[0] = (sizeof n + 7) / 8 * 8;
    for (int i = 0; i < 7; i++) at[i + 1] = at[i] + (sizes[i] + 7) / 8 * 8;
    char *m = allocated(dgrad_malloc(at[7]));
    if (!m) return 0;
    blocks_lists_t *b = (blocks_lists_t *)m;
    *b = (blocks_lists_t){.chunk_sets = (int64_t *)(m + at[0]),
            .sets = (list_set_t *)(m + at[1]),
            .calls = (list_call_t *)(m + at[2]),
            .soff = (int64_t *)(m + at[3]),
            .woff = (int64_t *)(m + at[4]),
            .pix = (int64_t *)(m + at[5]),
            .dst = (int64_t *)(m + at[6])};
    lists_record(a, b);
    *lists = b;
    return 1;
}
