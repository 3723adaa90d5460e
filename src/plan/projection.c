/*
 * The projection: a transposed convolution of an input with one position
 * (every X = 1) whose output is exactly the kernel's footprint (pads 0,
 * Y = K, no dilation gaps) is one matrix product,
 *   out[n, (co, k)] = sum_ci in[n, ci] * W[ci, co, k],
 * the first layer of DCGAN-style generators ("project and reshape").
 * Where the output and the weights both hold (co, k...) or both hold
 * (k..., co) at one stride each (NCX with OIX weights, NXC with XIO), the
 * product reads the user's tensors and writes the user's output as
 * strided 2-D views, so it is one oneDNN matmul with nothing around it:
 * the bias rides on it, the weights are read where they are (or packed
 * into the matmul's own layout, a candidate of its own for constant
 * weights), and a chain runs as the pass after it (post_pass.c).
 *
 * Chosen by timing against the best plan of the other strategies
 * (choice.c, challenge_with_projection); problems too large to time as
 * they are (choice on a reduced copy) do not meet it. On
 * dcgan:g1_100to512_k4s1 (16 images, 100 -> 512 x 4x4, f32) the
 * convolution primitives took 0.71-0.88 ms, the matmul 0.167-0.23
 * (bench/README.md, twenty-fifth look).
 *
 * The views replace the io descs of the three tensors (the staging
 * conversions keep their own strides, which the views were made from);
 * io_strides keep the canonical tensors' strides.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <string.h>

#include "dtype.h"

/* Column order of the product: channel-major (co, k...) or tap-major
 * (k..., co). */
enum { ORDER_CHANNEL = 0, ORDER_TAP = 1, N_ORDERS = 2 };

/* Axis j (outermost first) of order @p order over [C, K...] (axes 1..nsp+1
 * of a canonical output or weights tensor). */
static int order_axis(int order, int nsp, int j) {
    if (order == ORDER_CHANNEL) return 1 + j;
    return j < nsp ? 2 + j : 1;
}

/* The one stride of axes 1..nsp+1 of a tensor of @p dims and @p strides
 * taken in @p order as one axis, or 0 where they do not flatten (each
 * axis's stride its inner neighbour's times that one's size; axes of
 * size 1 have no say). */
static int64_t flat_stride(int nsp, const int64_t *dims,
        const int64_t *strides, int order) {
    int64_t inner = 0, span = 1;
    for (int j = nsp; j >= 0; j--) {
        int a = order_axis(order, nsp, j);
        if (dims[a] == 1) continue;
        if (inner == 0) inner = strides[a];
        else if (strides[a] != span) return 0;
        span = strides[a] * dims[a];
    }
    return inner ? inner : 1;
}

/* Whether the projection applies to @p p's geometry: one group, one input
 * position, pads 0, output the kernel's footprint. */
static int projection_geometry(const dgrad_problem_t *p) {
    if (p->G != 1) return 0;
    for (int i = 0; i < p->nsp; i++)
        if (p->X[i] != 1 || p->PB[i] != 0 || p->Y[i] != p->K[i]
                || (p->K[i] > 1 && p->D[i] != 1))
            return 0;
    return 1;
}

/* The column stride of the output and of the weights for the first order
 * both flatten in; 0 where none does. */
static int projection_strides(const dgrad_plan_t *plan, int64_t *out_col,
        int64_t *wei_col, int *order) {
    int64_t in[5], wei[6], out[5];
    canonical_dims(&plan->p, in, wei, out);
    for (int o = 0; o < N_ORDERS; o++) {
        *out_col = flat_stride(plan->p.nsp, out, plan->out.io_strides, o);
        /* one group: the weights' io layout has no group axis */
        *wei_col = flat_stride(plan->p.nsp, wei + 1, plan->wei.io_strides, o);
        if (*out_col && *wei_col) {
            *order = o;
            return 1;
        }
    }
    return 0;
}

/* The three tensors as 2-D views of their io layouts: in [N, Cin],
 * weights [Cin, Cout*K], out [N, Cout*K]; the bias [1, Cout*K] f32. */
static dnnl_status_t projection_views(dgrad_plan_t *plan, int64_t out_col,
        int64_t wei_col, dnnl_data_type_t dt) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cols = p->Cout;
    for (int i = 0; i < p->nsp; i++) cols *= p->K[i];
    const int64_t d_in[2] = {p->N, p->Cin}, d_wei[2] = {p->Cin, cols},
                  d_out[2] = {p->N, cols}, d_bias[2] = {1, cols};
    const int64_t s_in[2] = {plan->in.io_strides[0], plan->in.io_strides[1]},
                  s_wei[2] = {plan->wei.io_strides[0], wei_col},
                  s_out[2] = {plan->out.io_strides[0], out_col},
                  s_bias[2] = {cols, 1};
    md_free(&plan->in.io_md);
    md_free(&plan->wei.io_md);
    md_free(&plan->out.io_md);
    dnnl_status_t s = ACQUIRE(md_strided(&plan->in.io_md, 2, d_in, dt, s_in));
    if (s == dnnl_success)
        s = ACQUIRE(md_strided(&plan->wei.io_md, 2, d_wei, dt, s_wei));
    if (s == dnnl_success)
        s = ACQUIRE(md_strided(&plan->out.io_md, 2, d_out, dt, s_out));
    if (s == dnnl_success && p->has_bias) {
        s = ACQUIRE(md_strided(&plan->bias_md, 2, d_bias, dnnl_f32, s_bias));
        plan->bias_bytes = (size_t)cols * sizeof(float);
    }
    return s;
}

/* The matmul pd on the views, weights on their view or (@p packed) in the
 * matmul's own layout; dnnl_unimplemented for oneDNN's reference kernel. */
static dnnl_status_t projection_pd(const dgrad_plan_t *plan, int packed,
        const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd) {
    md_t wei = MD_EMPTY;
    dnnl_status_t s = packed ? md_any(&wei, md_ref(&plan->wei.io_md),
                                       md_data_type(md_ref(&plan->wei.io_md)))
                             : ACQUIRE(md_copy(&wei, md_ref(&plan->wei.io_md)));
    if (s == dnnl_success)
        s = ACQUIRE(matmul_pd(pd, engine, md_ref(&plan->in.io_md),
                md_ref(&wei), plan->p.has_bias ? md_ref(&plan->bias_md) : NULL,
                md_ref(&plan->out.io_md), attr));
    if (s == dnnl_success && impl_is_generic(pd_impl_name(*pd)))
        s = dnnl_unimplemented;
    md_free(&wei);
    return s;
}

dgrad_plan_t *build_projection(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int packed) {
    if (!projection_geometry(problem)) return NULL;
    dgrad_plan_t *plan = plan_alloc_whole_box(problem, policy);
    if (!plan) return NULL;
    int64_t out_col, wei_col;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_data_type_t dt = staged ? dnnl_f32 : to_dnnl_dt(problem->dt);
    int order;
    dnnl_status_t s = plan->empty ? dnnl_unimplemented
                                  : init_io_mds(plan, staged);
    if (s == dnnl_success && !projection_strides(plan, &out_col, &wei_col,
                                     &order))
        s = dnnl_unimplemented;
    if (s == dnnl_success) s = projection_views(plan, out_col, wei_col, dt);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) s = projection_pd(plan, packed, attr, &pd);
    if (s == dnnl_success)
        s = take_conv_mds(plan, pd, dnnl_query_src_md, dnnl_query_dst_md);
    if (s == dnnl_success) s = make_step(&plan->conv, pd, &plan->scratch_size);
    /* the activations are the matmul's own views: only the weights may
     * be reordered (packed) */
    if (s == dnnl_success) s = make_reorder(plan, &plan->wei, 0);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        plan_destroy(plan);
        return NULL;
    }
    plan->projection = order == ORDER_TAP ? PROJECTION_TAP_MAJOR
                                          : PROJECTION_CHANNEL_MAJOR;
    plan->prepared_weights_bytes = step_exists(&plan->wei.reorder) || staged
            ? md_size(md_ref(&plan->wei.conv_md)) : 0;
    snprintf(plan->impl, sizeof plan->impl, "matmul:%s", plan->conv.impl);
    return plan;
}

void projection_bias(const dgrad_plan_t *plan, const void *bias,
        float *cols) {
    const dgrad_problem_t *p = &plan->p;
    int64_t taps = 1;
    for (int i = 0; i < p->nsp; i++) taps *= p->K[i];
    for (int64_t co = 0; co < p->Cout; co++) {
        float b = (float)dgrad_load(bias, p->dt, co * p->bias_stride);
        for (int64_t k = 0; k < taps; k++)
            cols[plan->projection == PROJECTION_TAP_MAJOR
                            ? k * p->Cout + co : co * taps + k] = b;
    }
}
