/*
 * Memory descriptors of the three tensors and the axis orders behind them.
 *
 * The canonical gather is a oneDNN convolution backward-data:
 *   diff_dst = our `in`  (OC = Cin),
 *   diff_src = our `out` (IC = Cout),
 *   weights  = our W, which is oneDNN's grouped forward weights goi[k]
 *              (o = Cin/G, i = Cout/G); plain oi[k] when G == 1.
 * oneDNN wants non-negative pads and an exact size equation, so the
 * primitive runs only on the sub-box [lo, hi) of the output that can
 * receive terms; the rest is filled with zeros (or the bias) by the
 * execution (execute.c).
 *
 * Each tensor travels a path  user <-> io <-> conv:
 *   io   = the user's memory as oneDNN sees it (strided desc), or, when
 *          the primitive computes in another type than the user's (f16 on
 *          oneDNN 2.6) or the user's strides are not nested (see
 *          layouts_nested), an f32 "staging" copy in the user's axis
 *          order, filled by dgrad's own loops (convert.c);
 *   conv = the layout the primitive chose; a oneDNN reorder io <-> conv
 *          runs only when the two differ.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <string.h>

#include "aliasing.h"

/* Output region that can receive terms, per axis [lo, hi). Returns 0 when
 * it is empty on some axis (or there is nothing to sum over). With
 * @p extend_tail, hi is the output size. */
int compute_region(dgrad_plan_t *plan, int extend_tail) {
    const dgrad_problem_t *p = &plan->p;
    int nonempty = p->Cin > 0;
    plan->out_offset = 0;
    plan->full_box = 1;
    for (int i = 0; i < p->nsp; i++) {
        int64_t f = dgrad_problem_natural_size(p, i);
        int64_t lo = p->PB[i] < 0 ? -p->PB[i] : 0;
        int64_t hi = f - p->PB[i] < p->Y[i] ? f - p->PB[i] : p->Y[i];
        if (p->X[i] <= 0 || hi <= lo) nonempty = 0;
        /* The tail past the natural size receives no term: the primitive
         * can compute it too (negative right padding, zeros) instead of
         * the border fill. */
        if (extend_tail && hi > lo) hi = p->Y[i];
        plan->lo[i] = lo;
        plan->hi[i] = hi;
        plan->out_offset += lo * p->out_strides[2 + i];
        if (lo != 0 || hi != p->Y[i]) plan->full_box = 0;
    }
    return nonempty;
}

/* The axes of a tensor outermost first: larger strides, then (ties)
 * larger dims, so that a size-1 axis sits inside the axis it ties with (a
 * one-channel NXC tensor stays channels-last for oneDNN's layout
 * matching), then canonical order. Every axis order of this layer comes
 * from here. */
static void axis_order(int nd, const int64_t *dims, const int64_t *strides,
        int *order) {
    for (int i = 0; i < nd; i++) {
        int j = i;
        for (; j > 0 && (strides[order[j - 1]] < strides[i]
                        || (strides[order[j - 1]] == strides[i]
                                && dims[order[j - 1]] < dims[i]));
                j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
}

/* Dense strides for @p dims with the axes in @p order (outermost first). */
static void dense_in_order(int nd, const int64_t *dims, const int *order,
        int64_t *strides) {
    int64_t acc = 1;
    for (int j = nd - 1; j >= 0; j--) {
        strides[order[j]] = acc;
        acc *= dims[order[j]];
    }
}

/* Prepares the user <-> staging conversion and returns, in @p dense, f32
 * strides that keep the user's axis order. */
static void init_convert(convert_t *cv, int nd, const int64_t *dims,
        const int64_t *strides, int64_t *dense) {
    int order[MAX_NDIMS];
    axis_order(nd, dims, strides, order);
    dense_in_order(nd, dims, order, dense);
    /* Axes outermost first; size-1 axes dropped; an axis merged into the
     * next inner one when both sides are contiguous across them (longer
     * runs for the vector loops). */
    int n = 0;
    for (int j = 0; j < nd; j++) {
        int64_t d = dims[order[j]], us = strides[order[j]],
                ss = dense[order[j]];
        if (d == 1 && nd > 1) continue;
        cv->dims[n] = d;
        cv->user_strides[n] = us;
        cv->stage_strides[n] = ss;
        n++;
    }
    if (n == 0) {
        cv->dims[0] = 1;
        cv->user_strides[0] = cv->stage_strides[0] = 1;
        n = 1;
    }
    int m = 0;
    for (int j = 1; j < n; j++) {
        if (cv->user_strides[m] == cv->dims[j] * cv->user_strides[j]
                && cv->stage_strides[m] == cv->dims[j] * cv->stage_strides[j]) {
            cv->dims[j] *= cv->dims[m];
        } else {
            m++;
        }
        cv->dims[m] = cv->dims[j];
        cv->user_strides[m] = cv->user_strides[j];
        cv->stage_strides[m] = cv->stage_strides[j];
    }
    cv->ndims = m + 1;
}

/* The strides of size-1 axes do not address anything; oneDNN's layout
 * matching compares them all the same. Gives each the value it has in the
 * dense layout of the axis order init_convert uses (a one-channel NXC
 * tensor then matches nwc/nhwc/ndhwc, a one-channel NCX one ncw/...). */
static void canon_size1_strides(int nd, const int64_t *dims,
        const int64_t *strides, int64_t *out) {
    int order[MAX_NDIMS];
    axis_order(nd, dims, strides, order);
    for (int i = 0; i < nd; i++) out[i] = strides[i];
    int64_t inner = 1; /* stride the next axis outwards would have */
    for (int j = nd - 1; j >= 0; j--) {
        int a = order[j];
        if (dims[a] == 1) out[a] = inner;
        else inner = out[a] * dims[a];
    }
}

/* The io desc of a tensor: the user's memory, or its f32 staging copy. */
static dnnl_status_t init_path(tensor_path_t *t, int nd, const int64_t *dims,
        const int64_t *strides, dnnl_data_type_t user_dt, int staged) {
    int64_t dense[MAX_NDIMS];
    if (!staged) canon_size1_strides(nd, dims, strides, dense);
    else init_convert(&t->cv, nd, dims, strides, dense);
    memcpy(t->io_strides, dense, (size_t)nd * sizeof dense[0]);
    return ACQUIRE(md_strided(&t->io_md, nd, dims,
            staged ? dnnl_f32 : user_dt, dense));
}

/* io descs of the three tensors in canonical dims (out = the sub-box).
 * The weights drop the G dim when G == 1 (oneDNN's plain 'oi...'). */
dnnl_status_t init_io_mds(dgrad_plan_t *plan, int staged) {
    const dgrad_problem_t *p = &plan->p;
    int64_t in[5], wei[6], out[5];
    int g = p->G > 1, nd = 2 + p->nsp;
    dnnl_data_type_t dt = to_dnnl_dt(p->dt);
    in[0] = out[0] = p->N;
    in[1] = p->Cin;
    out[1] = p->Cout;
    if (g) wei[0] = p->G;
    wei[g] = p->Cin / p->G;
    wei[g + 1] = p->Cout / p->G;
    for (int i = 0; i < p->nsp; i++) {
        in[2 + i] = p->X[i];
        out[2 + i] = plan->hi[i] - plan->lo[i];
        wei[g + 2 + i] = p->K[i];
    }
    plan->staged = staged;
    dnnl_status_t s = init_path(&plan->in, nd, in, p->in_strides, dt,
            staged);
    if (s == dnnl_success)
        s = init_path(&plan->wei, nd + g, wei, p->wei_strides + !g, dt,
                staged);
    if (s == dnnl_success)
        s = init_path(&plan->out, nd, out, p->out_strides, dt, staged);
    return s;
}

dnnl_status_t md_any(md_t *md, md_ref_t like, dnnl_data_type_t dt) {
    int64_t dims[DNNL_MAX_NDIMS];
    md_dims(like, dims);
    return ACQUIRE(md_tagged(md, md_ndims(like), dims, dt,
            dnnl_format_tag_any));
}

/* Elements a tensor of @p dims and @p strides spans. */
int64_t span_of(int nd, const int64_t *dims, const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] <= 0) return 0;
        last += (dims[i] - 1) * strides[i];
    }
    return last + 1;
}

int64_t input_span_of(const dgrad_plan_t *plan) {
    int64_t in[5], wei[6], out[5];
    canonical_dims(&plan->p, in, wei, out);
    return span_of(2 + plan->p.nsp, in, plan->in.io_strides);
}

int64_t weights_last_offset(const dgrad_problem_t *p) {
    int64_t in[5], wei[6], out[5];
    canonical_dims(p, in, wei, out);
    return span_of(3 + p->nsp, wei, p->wei_strides) - 1;
}

dnnl_status_t md_nxc(md_t *md, md_ref_t like, dnnl_data_type_t dt) {
    static const dnnl_format_tag_t tags[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    int64_t dims[DNNL_MAX_NDIMS];
    int nd = md_ndims(like), nsp = nd - 2;
    if (nsp < 1 || nsp > 3) return dnnl_invalid_arguments;
    md_dims(like, dims);
    return ACQUIRE(md_tagged(md, nd, dims, dt, tags[nsp - 1]));
}

dnnl_status_t md_act(md_t *md, md_ref_t io, dnnl_data_type_t dt,
        act_mode_t m) {
    if (m == ACT_IO) return ACQUIRE(md_copy(md, io));
    return m == ACT_ANY ? md_any(md, io, dt) : md_nxc(md, io, dt);
}

/* Dims of the three tensors in canonical order (weights with G first),
 * matching the problem's strides. */
void canonical_dims(const dgrad_problem_t *p, int64_t in[5],
        int64_t wei[6], int64_t out[5]) {
    in[0] = out[0] = p->N;
    in[1] = p->Cin;
    out[1] = p->Cout;
    wei[0] = p->G;
    wei[1] = p->Cin / p->G;
    wei[2] = p->Cout / p->G;
    for (int i = 0; i < p->nsp; i++) {
        in[2 + i] = p->X[i];
        out[2 + i] = p->Y[i];
        wei[3 + i] = p->K[i];
    }
}

/* Dense strides for @p dims in the axis order of @p old_strides (as
 * canon_size1_strides orders them). */
void dense_like(int nd, const int64_t *old_dims,
        const int64_t *old_strides, const int64_t *dims, int64_t *strides) {
    int order[MAX_NDIMS];
    axis_order(nd, old_dims, old_strides, order);
    dense_in_order(nd, dims, order, strides);
}

/* Whether all three tensors have nested layouts (see aliasing.h). One
 * that is not (an input whose elements share addresses, such as a stride
 * 0 broadcast, or interleaved strides, which oneDNN 2.6's memory
 * descriptors refuse) travels through a dense f32 staging copy made by
 * dgrad's own conversion loops, which read and write any strides. */
int layouts_nested(const dgrad_problem_t *p) {
    int64_t in[5], out[5], wei[6];
    canonical_dims(p, in, wei, out);
    return dgrad_layout_is_nested(2 + p->nsp, in, p->in_strides)
            && dgrad_layout_is_nested(3 + p->nsp, wei, p->wei_strides)
            && dgrad_layout_is_nested(2 + p->nsp, out, p->out_strides);
}

/* Short text of a blocked layout, oneDNN style: dims outermost first by
 * stride, blocked dims in capitals, then the inner blocks ("aBcd16b"). */
void md_format(char *buf, size_t size, md_ref_t md) {
    md_layout_t l, *b = &l;
    int order[DNNL_MAX_NDIMS], blocked[DNNL_MAX_NDIMS] = {0};
    size_t k = 0;
    if (!md_layout(md, &l)) {
        snprintf(buf, size, "?");
        return;
    }
    int n = l.ndims;
    for (int i = 0; i < b->inner_nblks; i++) blocked[b->inner_idxs[i]] = 1;
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && b->strides[order[j - 1]] < b->strides[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int i = 0; i < n && k + 1 < size; i++)
        buf[k++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int i = 0; i < b->inner_nblks && k + 8 < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%d%c", (int)b->inner_blks[i],
                'a' + (int)b->inner_idxs[i]);
    buf[k < size ? k : size - 1] = 0;
}

void dgrad_plan_output_order(int nsp, int *order) {
    order[0] = 0; /* N, then the spatial axes, C innermost */
    for (int i = 0; i < nsp; i++) order[1 + i] = 2 + i;
    order[nsp + 1] = 1;
}
