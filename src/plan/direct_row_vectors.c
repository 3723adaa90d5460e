/*
 * dgrad's own loop for problems whose output rows are short: a whole
 * row along the last axis (Y pixels by Cout channels, at most
 * ROWV_MAX_LANES values) is one to eight vectors, and each vector is a
 * sum of terms, one per kernel position that reaches the row, each an
 * input vector times a weight vector (the ONNX test data's problems,
 * deconv1d:1, benchdnn's small depthwise 2D problems). Its tables are made once, at plan creation:
 *   - for each vector of a row, kernel tap kw of the last axis and input
 *     channel i of a group, the input element behind each lane (x, co):
 *     position (x + PB - kw * D) / S of channel i of co's group where that
 *     divides and is in the row, else none (0);
 *   - the weight behind each lane of each (vector, kernel position,
 *     channel), the same for every row;
 *   - for each vector of each output row, its terms: the outer kernel
 *     positions whose input rows are in the input, by the last axis' taps
 *     that reach some lane of the vector.
 * An execution spreads the input rows into those vectors (gathers, in
 * scratch), packs the weights unless they are prepared, and runs each
 * output vector through the blocks loop's list kernel of one block
 * (direct_blocks_kernels.c), which stores it once, straight into a
 * channels-last output or scattered into another layout (or into f32 in
 * scratch, rounded into a 16-bit output). Stride, padding, dilation and
 * groups are all in the tables: no row is special.
 *
 * Where it pays: onnx:convtranspose_3d (1 -> 2 channels, 3x4x5, k3) has
 * rows of 7 pixels, which the blocks loop covers in 5 calls (3 whole
 * blocks and 4 ends), each 27 terms of one input channel on vectors of
 * 16 lanes holding 2 values; here each row is one call on 14 of 16
 * lanes. The work is bounded (ROWV_MAX_MACS) below where the other own
 * loops share rows over threads, so it runs on the calling thread.
 * Vectors are of 16 lanes with AVX-512, of 8 with AVX2 (vector_lanes):
 * the tables, the spread input and the packed weights are made at that
 * width, and the kernel is that target's.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "alloc.h"
#include "direct_blocks_kernels.h"
#include "dtype.h"
#include "gather_avx512.h"

/* Values of an output row at most (8 vectors of 16 lanes, 16 of 8): 5 x
 * 16 depthwise channels (deconv_ci_2d:depthwise) take 80. */
#define ROWV_MAX_LANES 128
/* Input channels of a group at most (vectors of a term). */
#define ROWV_MAX_GROUP_CHANNELS 16
/* Floats of the spread input and of the packed weights at most: both
 * stay in L1 or L2 beside the output. */
#define ROWV_MAX_FLOATS ((int64_t)1 << 14)
/* Multiply-adds of an execution at most (terms of every output vector
 * times the channels of a group times the lanes): 2^16 is under the 1e5
 * from which the other own loops share their rows out over threads
 * (direct_for_rows_after). */
#define ROWV_MAX_MACS ((int64_t)1 << 16)

/* The plan's tables (direct_row_vectors_prepare; one allocation,
 * plan_destroy frees it). Vector v of an output row holds lanes [vl v,
 * vl v + vl) of its lanes (x, co), co fastest. */
typedef struct row_vectors {
    int64_t vl, nvec, lanes, taps, outer_taps, rows_in, rows_out;
    int64_t w_last; /* the user's weights' last element */
    lanes_list_fn kernel; /* the list kernel of one block, one vector */
    /* [vector][tap kw][channel i][lane]: an input row's element, or -1 */
    int32_t *spread_idx;
    /* [vector][outer kernel position][kw][i][lane]: a weight, or -1 */
    int32_t *w_idx;
    /* [lane]: its output offset from the row's first (x * pixel stride +
     * co * channel stride), and its channel (-1 past the row) */
    int32_t *colidx, *lane_co;
    /* [output row][vector + 1]: where each vector's terms start in soff
     * and woff (offsets into the spread input and the packed weights) */
    int64_t *terms_at, *soff, *woff;
    /* [output row]: its first element in the output */
    int64_t *out_off;
} row_vectors_t;

/* Lanes of a vector: the width of the plan's kernel set where it has
 * the one-block list kernel (16 with AVX-512, 8 with AVX2), else 0 (the
 * loop does not apply). */
static int64_t vector_lanes(const dgrad_plan_t *plan) {
    const block_kernels_t *k = direct_blocks_kernels(plan);
    return k->lanes_list[LIST_1][0] ? k->w : 0;
}

static int64_t lanes_of(const dgrad_problem_t *p) {
    return p->Y[p->nsp - 1] * p->Cout;
}

static int64_t vectors_of(const dgrad_problem_t *p, int64_t vl) {
    return (lanes_of(p) + vl - 1) / vl;
}

/* Kernel positions of the outer axes (every combination), input rows
 * (image, outer positions) and output rows. */
static int64_t outer_kernel(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->K[i];
    return n;
}

static int64_t rows_in(const dgrad_problem_t *p) {
    int64_t n = p->N;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->X[i];
    return n;
}

static int64_t rows_out(const dgrad_problem_t *p) {
    int64_t n = p->N;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->Y[i];
    return n;
}

static int64_t cig_of(const dgrad_problem_t *p) {
    return p->Cin / p->G;
}

/* Floats of the spread input: each input row's vectors by taps by
 * channels of a group, @p vl each. */
static int64_t spread_floats(const dgrad_problem_t *p, int64_t vl) {
    return rows_in(p) * vectors_of(p, vl) * p->K[p->nsp - 1] * cig_of(p) * vl;
}

static int64_t weights_floats(const dgrad_problem_t *p, int64_t vl) {
    return vectors_of(p, vl) * outer_kernel(p) * p->K[p->nsp - 1] * cig_of(p)
            * vl;
}

/* Whether the loop reads and writes the user's 16-bit tensors itself
 * (else they are f32, the user's or the plan's copies). */
static int rows_16bit(const dgrad_plan_t *plan) {
    return !plan->staged && plan->p.dt != dgrad_f32;
}

/* Whether an output row's lanes are its elements in order (channels
 * contiguous, pixels Cout apart): vectors are stored, not scattered. */
static int row_contiguous(const dgrad_plan_t *plan) {
    const int64_t *os = plan->out.io_strides;
    int l = plan->p.nsp - 1;
    return os[1] == 1 && os[2 + l] == plan->p.Cout;
}

/* The terms of vector @p v of output row (image @p n, outer positions
 * @p y) into @p soff and @p woff, their count into @p nterms: each tap kw
 * of the last axis that reaches a lane of the vector, by each outer
 * kernel position whose input row is in the input. */
static void row_terms(const dgrad_problem_t *p, const row_vectors_t *rv,
        int64_t n, const int64_t *y, int64_t v, int64_t *soff,
        int64_t *woff, int64_t *nterms) {
    int l = p->nsp - 1;
    int64_t K = p->K[l], cig = cig_of(p), vl = rv->vl;
    *nterms = 0;
    for (int64_t kw = 0; kw < K; kw++) {
        const int32_t *idx = rv->spread_idx + (v * K + kw) * cig * vl;
        int reach = 0;
        for (int64_t j = 0; j < vl; j++) reach |= idx[j] >= 0;
        if (!reach) continue;
        int64_t k[DGRAD_MAX_SPATIAL] = {0};
        for (int64_t ko = 0; ko < rv->outer_taps; ko++) {
            int64_t row = n;
            int in = 1;
            for (int i = 0; i < l; i++) {
                int64_t nat = y[i] + p->PB[i] - k[i] * p->D[i];
                in &= nat >= 0 && nat % p->S[i] == 0
                        && nat / p->S[i] < p->X[i];
                row = row * p->X[i] + (in ? nat / p->S[i] : 0);
            }
            for (int i = l - 1; i >= 0 && ++k[i] == p->K[i]; i--) k[i] = 0;
            if (!in) continue;
            soff[*nterms] = ((row * rv->nvec + v) * K + kw) * cig * vl;
            woff[*nterms] = ((v * rv->outer_taps + ko) * K + kw) * cig * vl;
            ++*nterms;
        }
    }
}

int direct_row_vectors_applicable(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t vl = vector_lanes(plan);
    epilogue_t ep;
    if (!vl || p->Cout > ROWV_MAX_LANES
            || p->Y[l] > ROWV_MAX_LANES / p->Cout
            || cig_of(p) > ROWV_MAX_GROUP_CHANNELS
            || (p->n_post_ops
                    && post_chain_epilogue(p, &ep) < p->n_post_ops))
        return 0;
    /* sizes, each bounded before the next multiplies it */
    int64_t ko = 1, ri = p->N, ro = p->N;
    for (int i = 0; i < p->nsp; i++) {
        if (p->K[i] > ROWV_MAX_FLOATS || p->X[i] > ROWV_MAX_FLOATS
                || p->Y[i] > ROWV_MAX_FLOATS)
            return 0;
        if (i < l) {
            ko *= p->K[i];
            ri *= p->X[i];
            ro *= p->Y[i];
            if (ko > ROWV_MAX_FLOATS || ri > ROWV_MAX_FLOATS
                    || ro > ROWV_MAX_MACS)
                return 0;
        }
    }
    int64_t row_floats = vectors_of(p, vl) * p->K[l] * cig_of(p) * vl;
    if (ri > ROWV_MAX_FLOATS / row_floats || ko > ROWV_MAX_FLOATS / row_floats
            || ro * ko * row_floats > ROWV_MAX_MACS)
        return 0;
    /* strides >= 0, and 32-bit offsets within an input row, a row of the
     * output, the weights (each stride bounded first: no product of
     * these sizes overflows); a 16-bit input small enough to widen */
    for (int i = 0; i < 3 + p->nsp; i++)
        if (ws[i] < 0 || ws[i] > INT32_MAX) return 0;
    for (int i = 0; i < 2 + p->nsp; i++)
        if (is[i] < 0 || is[i] > INT32_MAX) return 0;
    return os[1] >= 0 && os[2 + l] >= 0 && os[1] <= INT32_MAX
            && os[2 + l] <= INT32_MAX
            && (!rows_16bit(plan) || input_span_of(plan) <= ROWV_MAX_FLOATS)
            && (p->Cin - 1) * is[1] + (p->X[l] - 1) * is[2 + l] <= INT32_MAX
            && (p->Cout - 1) * os[1] + (p->Y[l] - 1) * os[2 + l] <= INT32_MAX
            && weights_last_offset(p) <= INT32_MAX;
#else
    (void)plan;
    return 0;
#endif
}

/* The spread input, then the bias along the lanes, then (16-bit) one
 * f32 output row, that row rounded, the input widened. */
size_t direct_row_vectors_scratch(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int64_t vl = vector_lanes(plan);
    return ((size_t)(spread_floats(p, vl) + 3 * vectors_of(p, vl) * vl
                            + (rows_16bit(plan) ? input_span_of(plan) : 0))
                           * sizeof(float)
                   + 63)
            / 64 * 64;
}

size_t direct_row_vectors_weights_size(const dgrad_plan_t *plan) {
    return (size_t)weights_floats(&plan->p, vector_lanes(plan))
            * sizeof(float);
}

/* The tables into @p rv's arrays. */
static void tables_fill(const dgrad_plan_t *plan, row_vectors_t *rv) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *os = plan->out.io_strides, *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t K = p->K[l], cig = cig_of(p), cog = p->Cout / p->G,
            C = p->Cout, cs = plan->in.io_strides[1],
            xs = plan->in.io_strides[2 + l], vl = rv->vl;
    for (int64_t j = 0; j < rv->nvec * vl; j++) {
        int64_t v = j / vl, L = j % vl, x = j / C, co = j % C,
                g = co / cog;
        int in = j < rv->lanes;
        rv->colidx[j] = in ? (int32_t)(x * os[2 + l] + co * os[1]) : 0;
        rv->lane_co[j] = in ? (int32_t)co : -1;
        for (int64_t kw = 0; kw < K; kw++) {
            int64_t nat = x + p->PB[l] - kw * p->D[l], xi = nat / p->S[l];
            int hit = in && nat >= 0 && nat % p->S[l] == 0 && xi < p->X[l];
            for (int64_t i = 0; i < cig; i++)
                rv->spread_idx[((v * K + kw) * cig + i) * vl + L] = hit
                        ? (int32_t)((g * cig + i) * cs + xi * xs)
                        : -1;
        }
        int64_t k[DGRAD_MAX_SPATIAL] = {0};
        for (int64_t ko = 0; ko < rv->outer_taps; ko++) {
            int64_t off = g * ws[0] + (co % cog) * ws[2];
            for (int i = 0; i < l; i++) off += k[i] * ws[3 + i];
            for (int i = l - 1; i >= 0 && ++k[i] == p->K[i]; i--) k[i] = 0;
            for (int64_t kw = 0; kw < K; kw++)
                for (int64_t i = 0; i < cig; i++)
                    rv->w_idx[(((v * rv->outer_taps + ko) * K + kw) * cig + i)
                                    * vl
                            + L] = in ? (int32_t)(off + i * ws[1]
                                              + kw * ws[3 + l])
                                      : -1;
        }
    }
    /* the output rows, image then outer positions, counted on */
    int64_t y[DGRAD_MAX_SPATIAL] = {0}, n = 0, at = 0;
    for (int64_t r = 0; r < rv->rows_out; r++) {
        rv->out_off[r] = n * os[0];
        for (int i = 0; i < l; i++) rv->out_off[r] += y[i] * os[2 + i];
        for (int64_t v = 0; v < rv->nvec; v++) {
            int64_t nt;
            rv->terms_at[r * (rv->nvec + 1) + v] = at;
            row_terms(p, rv, n, y, v, rv->soff + at, rv->woff + at, &nt);
            at += nt;
        }
        rv->terms_at[r * (rv->nvec + 1) + rv->nvec] = at;
        int i = l - 1;
        while (i >= 0 && ++y[i] == p->Y[i]) y[i--] = 0;
        if (i < 0) n++;
    }
}

int direct_row_vectors_prepare(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t vl = vector_lanes(plan);
    row_vectors_t rv = {.vl = vl,
            .nvec = vectors_of(p, vl),
            .w_last = weights_last_offset(p),
            .kernel = direct_blocks_kernels(plan)->lanes_list[LIST_1][0],
            .lanes = lanes_of(p),
            .taps = p->K[l],
            .outer_taps = outer_kernel(p),
            .rows_in = rows_in(p),
            .rows_out = rows_out(p)};
    int64_t vec = rv.nvec * vl, cig = cig_of(p),
            terms = rv.rows_out * rv.nvec * rv.outer_taps * rv.taps;
    /* each array at a multiple of 8 bytes after the header */
    size_t sizes[] = {(size_t)(rv.nvec * rv.taps * cig * vl) * 4,
            (size_t)(weights_floats(p, vl)) * 4, (size_t)vec * 4,
            (size_t)vec * 4, (size_t)(rv.rows_out * (rv.nvec + 1)) * 8,
            (size_t)terms * 8, (size_t)terms * 8, (size_t)rv.rows_out * 8};
    size_t at[9];
    at[0] = (sizeof rv + 7) / 8 * 8;
    for (int i = 0; i < 8; i++) at[i + 1] = at[i] + (sizes[i] + 7) / 8 * 8;
    char *m = allocated(dgrad_malloc(at[8]));
    if (!m) return 0;
    rv.spread_idx = (int32_t *)(m + at[0]);
    rv.w_idx = (int32_t *)(m + at[1]);
    rv.colidx = (int32_t *)(m + at[2]);
    rv.lane_co = (int32_t *)(m + at[3]);
    rv.terms_at = (int64_t *)(m + at[4]);
    rv.soff = (int64_t *)(m + at[5]);
    rv.woff = (int64_t *)(m + at[6]);
    rv.out_off = (int64_t *)(m + at[7]);
    tables_fill(plan, &rv);
    memcpy(m, &rv, sizeof rv);
    plan->direct_row_vectors = (struct row_vectors *)m;
    return 1;
}


#if defined(__x86_64__) && defined(__GNUC__)
/* @p n floats at element offsets @p idx (-1: 0) of @p src into @p dst,
 * 8 at a time (n a multiple of 8): f32 by AVX2 gathers, 16-bit widened
 * element by element (only the weights are gathered from 16-bit). */
__attribute__((target("avx2"))) static void gather_lanes8(const int32_t *idx,
        int64_t n, dgrad_data_type_t dt, const void *src, float *dst) {
    if (dt != dgrad_f32) {
        for (int64_t j = 0; j < n; j++)
            dst[j] = idx[j] < 0 ? 0.0f : (float)dgrad_load(src, dt, idx[j]);
        return;
    }
    for (int64_t j = 0; j < n; j += 8) {
        __m256i i = _mm256_loadu_si256((const __m256i *)(idx + j));
        __m256 k = _mm256_castsi256_ps(
                _mm256_cmpgt_epi32(i, _mm256_set1_epi32(-1)));
        _mm256_storeu_ps(dst + j, _mm256_mask_i32gather_ps(
                _mm256_setzero_ps(), src, i, k, 4));
    }
}
#endif

/* @p n floats (a multiple of the plan's lanes) gathered by @p idx from
 * @p src (elements of @p dt, @p last its last one's offset) into
 * @p dst, at the plan's width. */
static void gather_lanes(const row_vectors_t *rv, const int32_t *idx,
        int64_t n, dgrad_data_type_t dt, const void *src, int64_t last,
        float *dst) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (rv->vl == 16)
        gather_vectors(idx, n / 16, dt, src, last, dst);
    else
        gather_lanes8(idx, n, dt, src, dst);
#else
    (void)rv, (void)idx, (void)n, (void)dt, (void)src, (void)last, (void)dst;
#endif
}

/* Packed weights: the user's weight behind each lane of each (vector,
 * kernel position, channel), 0 past the row. */
void direct_row_vectors_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed) {
    const row_vectors_t *rv = plan->direct_row_vectors;
    gather_lanes(rv, rv->w_idx, weights_floats(&plan->p, rv->vl), plan->p.dt,
            user, rv->w_last, packed);
}

/* The spread input rows (image, outer positions) into @p spread,
 * gathered from the user's f32 input or from a 16-bit one widened into
 * @p widened first (one run: NCX rows of 5 pixels widened 5 elements
 * at a time took deconv_ci_2d:depthwise from 3.5 us in f32 to 7-8 in
 * f16, most of it in the conversions' scalar tails). */
static void spread_rows(const dgrad_plan_t *plan, const void *in,
        float *spread, float *widened) {
    const dgrad_problem_t *p = &plan->p;
    const row_vectors_t *rv = plan->direct_row_vectors;
    const int64_t *is = plan->in.io_strides;
    int l = p->nsp - 1;
    int64_t per_row = rv->nvec * rv->taps * cig_of(p) * rv->vl,
            pos[DGRAD_MAX_SPATIAL] = {0}, n = 0;
    const float *src = in;
    if (rows_16bit(plan)) {
        convert_run_to_f32(p->dt, in, widened, input_span_of(plan));
        src = widened;
    }
    for (int64_t r = 0; r < rv->rows_in; r++) {
        int64_t base = n * is[0];
        for (int i = 0; i < l; i++) base += pos[i] * is[2 + i];
        gather_lanes(rv, rv->spread_idx, per_row, dgrad_f32, src + base, -1,
                spread + r * per_row);
        int i = l - 1;
        while (i >= 0 && ++pos[i] == p->X[i]) pos[i--] = 0;
        if (i < 0) n++;
    }
}

void direct_row_vectors_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    const row_vectors_t *rv = plan->direct_row_vectors;
    int wide = rows_16bit(plan), contiguous = row_contiguous(plan);
    int64_t nv = rv->nvec, cig = cig_of(p), vl = rv->vl;
    float *spread = (float *)scratch, *brow = spread + spread_floats(p, vl),
          *row = brow + nv * vl;
    uint16_t *rounded = (uint16_t *)(row + nv * vl);
    spread_rows(plan, in, spread, row + 2 * nv * vl);
    for (int64_t j = 0; j < nv * vl; j++)
        brow[j] = bias && rv->lane_co[j] >= 0 ? bias[rv->lane_co[j]] : 0.0f;
    /* the whole chain is the epilogue (direct_row_vectors_applicable) */
    epilogue_t ep = {0};
    if (plan->post.fused) post_chain_epilogue(p, &ep);
    static const int64_t first = 0;
    for (int64_t r = 0; r < rv->rows_out; r++) {
        const int64_t *at = rv->terms_at + r * (nv + 1);
        for (int64_t v = 0; v < nv; v++) {
            int64_t ncols = rv->lanes - vl * v < vl ? rv->lanes - vl * v : vl,
                    dst = wide ? vl * v
                            : contiguous ? rv->out_off[r] + vl * v
                                         : rv->out_off[r];
            rv->kernel(spread, rv->soff + at[v], at[v + 1] - at[v], &first,
                    cig, w, rv->woff + at[v], vl, brow + vl * v, ncols,
                    wide || contiguous ? NULL : rv->colidx + vl * v, &ep,
                    wide ? row : (float *)out, &dst, 1);
        }
        if (!wide) continue;
        if (contiguous) {
            convert_run_from_f32(p->dt, row,
                    (char *)out + (size_t)rv->out_off[r] * sizeof(uint16_t),
                    rv->lanes);
            continue;
        }
        convert_run_from_f32(p->dt, row, rounded, rv->lanes);
        for (int64_t j = 0; j < rv->lanes; j++)
            ((uint16_t *)out)[rv->out_off[r] + rv->colidx[j]] = rounded[j];
    }
}
