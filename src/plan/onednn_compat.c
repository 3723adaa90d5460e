/*
 * The differences between oneDNN 2.x and 3.x behind onednn_compat.h: each
 * function has one body per major, side by side.
 */
#include "onednn_compat.h"

#include "canonical.h"

#include <stdio.h>
#include <string.h>

static void copy_dims(dnnl_dims_t to, int n, const int64_t *from) {
    memset(to, 0, sizeof(dnnl_dims_t));
    for (int i = 0; i < n && i < DNNL_MAX_NDIMS; i++) to[i] = from[i];
}

/* A convolution's spatial parameters as oneDNN takes them. */
typedef struct conv_spatial {
    dnnl_dims_t strides, dilates, pad_l, pad_r;
} conv_spatial_t;

static void conv_spatial(conv_spatial_t *c, int nsp, const int64_t *strides,
        const int64_t *dilates, const int64_t *pad_l, const int64_t *pad_r) {
    copy_dims(c->strides, nsp, strides);
    copy_dims(c->dilates, nsp, dilates);
    copy_dims(c->pad_l, nsp, pad_l);
    copy_dims(c->pad_r, nsp, pad_r);
}

#if DGRAD_ONEDNN_V3

void md_free(md_t *m) {
    if (m->h) dnnl_memory_desc_destroy(m->h);
    m->h = NULL;
}

dnnl_status_t md_copy(md_t *m, md_ref_t src) {
    md_free(m);
    return src ? dnnl_memory_desc_clone(&m->h, src) : dnnl_success;
}

dnnl_status_t md_strided(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, const int64_t *strides) {
    dnnl_dims_t d, s;
    copy_dims(d, nd, dims);
    copy_dims(s, nd, strides);
    md_free(m);
    return dnnl_memory_desc_create_with_strides(&m->h, nd, d, dt, s);
}

dnnl_status_t md_tagged(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    copy_dims(d, nd, dims);
    md_free(m);
    return dnnl_memory_desc_create_with_tag(&m->h, nd, d, dt, tag);
}

dnnl_status_t md_box(md_t *m, md_ref_t parent, const int64_t *ext) {
    dnnl_dims_t d, zero = {0};
    copy_dims(d, md_ndims(parent), ext);
    md_free(m);
    return dnnl_memory_desc_create_submemory(&m->h, parent, d, zero);
}

int md_ndims(md_ref_t md) {
    int n = 0;
    if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &n)
                    != dnnl_success)
        return 0;
    return n;
}

/* A dims-valued query of @p md into @p out (zeros when it fails). */
static void query_dims(md_ref_t md, dnnl_query_t q, int n, int64_t *out) {
    const dnnl_dims_t *v = NULL;
    if (dnnl_memory_desc_query(md, q, &v) != dnnl_success || !v) {
        for (int i = 0; i < n; i++) out[i] = 0;
        return;
    }
    for (int i = 0; i < n; i++) out[i] = (*v)[i];
}

void md_dims(md_ref_t md, int64_t *dims) {
    query_dims(md, dnnl_query_dims, md_ndims(md), dims);
}

dnnl_data_type_t md_data_type(md_ref_t md) {
    dnnl_data_type_t dt = dnnl_data_type_undef;
    if (md) dnnl_memory_desc_query(md, dnnl_query_data_type, &dt);
    return dt;
}

int md_layout(md_ref_t md, md_layout_t *l) {
    dnnl_format_kind_t kind = dnnl_format_kind_undef;
    memset(l, 0, sizeof *l);
    if (!md || dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind)
                    != dnnl_success
            || kind != dnnl_blocked)
        return 0;
    /* oneDNN 3 does not report a descriptor's extra data; it is only set
     * on int8 weights with compensations, which dgrad never makes. */
    l->ndims = md_ndims(md);
    l->dt = md_data_type(md);
    query_dims(md, dnnl_query_dims, l->ndims, l->dims);
    query_dims(md, dnnl_query_padded_dims, l->ndims, l->padded_dims);
    query_dims(md, dnnl_query_padded_offsets, l->ndims, l->padded_offsets);
    query_dims(md, dnnl_query_strides, l->ndims, l->strides);
    if (dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32,
                &l->inner_nblks) != dnnl_success)
        return 0;
    query_dims(md, dnnl_query_inner_blks, l->inner_nblks, l->inner_blks);
    query_dims(md, dnnl_query_inner_idxs, l->inner_nblks, l->inner_idxs);
    if (dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64,
                &l->offset0) != dnnl_success)
        return 0;
    return 1;
}

dnnl_status_t conv_forward_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_prop_kind_t prop, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(dst) - 2;
    conv_spatial_t c;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    return dnnl_convolution_forward_primitive_desc_create(pd, eng, prop,
            dnnl_convolution_direct, src, wei, bias, dst, c.strides, c.dilates,
            c.pad_l, c.pad_r, attr);
}

dnnl_status_t conv_backward_data_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t diff_src, md_ref_t wei, md_ref_t diff_dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, const_dnnl_primitive_desc_t hint,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(diff_src) - 2;
    conv_spatial_t c;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    return dnnl_convolution_backward_data_primitive_desc_create(pd, eng,
            dnnl_convolution_direct, diff_src, wei, diff_dst, c.strides,
            c.dilates, c.pad_l, c.pad_r, hint, attr);
}

dnnl_status_t deconv_forward_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(dst) - 2;
    conv_spatial_t c;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    return dnnl_deconvolution_forward_primitive_desc_create(pd, eng,
            dnnl_forward_inference, dnnl_deconvolution_direct, src, wei, bias,
            dst, c.strides, c.dilates, c.pad_l, c.pad_r, attr);
}

dnnl_status_t binary_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_alg_kind_t alg, md_ref_t src0, md_ref_t src1, md_ref_t dst,
        const_dnnl_primitive_attr_t attr) {
    return dnnl_binary_primitive_desc_create(pd, eng, alg, src0, src1, dst,
            attr);
}

dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        md_ref_t src, md_ref_t wei, md_ref_t bias, md_ref_t dst,
        const_dnnl_primitive_attr_t attr) {
    return dnnl_matmul_primitive_desc_create(pd, eng, src, wei, bias, dst,
            attr);
}

dnnl_status_t pd_next_impl(dnnl_primitive_desc_t *pd) {
    return dnnl_primitive_desc_next_impl(*pd);
}

static dnnl_status_t eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
        double alpha, double beta) {
    return dnnl_post_ops_append_eltwise(po, alg, (float)alpha, (float)beta);
}

int post_ops_eltwise_at(const_dnnl_post_ops_t po, int index,
        dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    return dnnl_post_ops_get_kind(po, index) == dnnl_eltwise
            && dnnl_post_ops_get_params_eltwise(po, index, alg, alpha, beta)
                    == dnnl_success;
}

dnnl_status_t post_ops_append_binary(dnnl_post_ops_t po,
        dnnl_alg_kind_t alg, md_ref_t src1) {
    return dnnl_post_ops_append_binary(po, alg, src1);
}

dnnl_status_t post_ops_append_sum(dnnl_post_ops_t po) {
    return dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
}

#else /* oneDNN 2.x */

void md_free(md_t *m) { memset(&m->d, 0, sizeof m->d); }

dnnl_status_t md_copy(md_t *m, md_ref_t src) {
    md_free(m);
    if (src) m->d = *src;
    return dnnl_success;
}

dnnl_status_t md_strided(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, const int64_t *strides) {
    dnnl_dims_t d, s;
    copy_dims(d, nd, dims);
    copy_dims(s, nd, strides);
    md_free(m);
    return dnnl_memory_desc_init_by_strides(&m->d, nd, d, dt, s);
}

dnnl_status_t md_tagged(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    copy_dims(d, nd, dims);
    md_free(m);
    return dnnl_memory_desc_init_by_tag(&m->d, nd, d, dt, tag);
}

dnnl_status_t md_box(md_t *m, md_ref_t parent, const int64_t *ext) {
    dnnl_dims_t d, zero = {0};
    copy_dims(d, md_ndims(parent), ext);
    md_free(m);
    return dnnl_memory_desc_init_submemory(&m->d, parent, d, zero);
}

int md_ndims(md_ref_t md) { return md ? md->ndims : 0; }

void md_dims(md_ref_t md, int64_t *dims) {
    for (int i = 0; i < md_ndims(md); i++) dims[i] = md->dims[i];
}

dnnl_data_type_t md_data_type(md_ref_t md) {
    return md ? md->data_type : dnnl_data_type_undef;
}

int md_layout(md_ref_t md, md_layout_t *l) {
    memset(l, 0, sizeof *l);
    if (!md || md->format_kind != dnnl_blocked || md->extra.flags) return 0;
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    l->ndims = md->ndims;
    l->dt = md->data_type;
    for (int i = 0; i < md->ndims; i++) {
        l->dims[i] = md->dims[i];
        l->padded_dims[i] = md->padded_dims[i];
        l->padded_offsets[i] = md->padded_offsets[i];
        l->strides[i] = b->strides[i];
    }
    l->inner_nblks = b->inner_nblks;
    for (int i = 0; i < b->inner_nblks; i++) {
        l->inner_blks[i] = b->inner_blks[i];
        l->inner_idxs[i] = b->inner_idxs[i];
    }
    l->offset0 = md->offset0;
    return 1;
}

dnnl_status_t conv_forward_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_prop_kind_t prop, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(dst) - 2;
    conv_spatial_t c;
    dnnl_convolution_desc_t cd;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&cd, prop,
            dnnl_convolution_direct, src, wei, bias, dst, c.strides, c.dilates,
            c.pad_l, c.pad_r);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &cd, attr, eng, NULL);
}

dnnl_status_t conv_backward_data_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t diff_src, md_ref_t wei, md_ref_t diff_dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, const_dnnl_primitive_desc_t hint,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(diff_src) - 2;
    conv_spatial_t c;
    dnnl_convolution_desc_t cd;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    dnnl_status_t st = dnnl_dilated_convolution_backward_data_desc_init(&cd,
            dnnl_convolution_direct, diff_src, wei, diff_dst, c.strides,
            c.dilates, c.pad_l, c.pad_r);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &cd, attr, eng, hint);
}

dnnl_status_t deconv_forward_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr) {
    int nsp = md_ndims(dst) - 2;
    conv_spatial_t c;
    dnnl_deconvolution_desc_t dd;
    conv_spatial(&c, nsp, strides, dilates, pad_l, pad_r);
    dnnl_status_t st = dnnl_dilated_deconvolution_forward_desc_init(&dd,
            dnnl_forward_inference, dnnl_deconvolution_direct, src, wei, bias,
            dst, c.strides, c.dilates, c.pad_l, c.pad_r);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &dd, attr, eng, NULL);
}

static dnnl_status_t eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
        double alpha, double beta) {
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, (float)alpha,
            (float)beta);
}

int post_ops_eltwise_at(const_dnnl_post_ops_t po, int index,
        dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    float scale;
    return dnnl_post_ops_get_kind(po, index) == dnnl_eltwise
            && dnnl_post_ops_get_params_eltwise(po, index, &scale, alg,
                       alpha, beta) == dnnl_success;
}

dnnl_status_t post_ops_append_binary(dnnl_post_ops_t po,
        dnnl_alg_kind_t alg, md_ref_t src1) {
    return dnnl_post_ops_append_binary(po, alg, src1);
}

dnnl_status_t post_ops_append_sum(dnnl_post_ops_t po) {
    return dnnl_post_ops_append_sum(po, 1.0f);
}

dnnl_status_t binary_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_alg_kind_t alg, md_ref_t src0, md_ref_t src1, md_ref_t dst,
        const_dnnl_primitive_attr_t attr) {
    dnnl_binary_desc_t bd;
    dnnl_status_t st = dnnl_binary_desc_init(&bd, alg, src0, src1, dst);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &bd, attr, eng, NULL);
}

dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        md_ref_t src, md_ref_t wei, md_ref_t bias, md_ref_t dst,
        const_dnnl_primitive_attr_t attr) {
    dnnl_matmul_desc_t md;
    dnnl_status_t st = dnnl_matmul_desc_init(&md, src, wei, bias, dst);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &md, attr, eng, NULL);
}

/* 2.x has no next_impl: the same op descriptor and attributes are
 * iterated anew and the first implementation after the last one of *@p
 * pd's name is taken (one name offered twice is stepped past as a whole,
 * so a caller moving on until it likes the name always ends). */
dnnl_status_t pd_next_impl(dnnl_primitive_desc_t *pd) {
    const_dnnl_op_desc_t op = NULL;
    dnnl_engine_t eng = NULL;
    const_dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_iterator_t it = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_op_d, 0, &op)
                    != dnnl_success
            || dnnl_primitive_desc_query(*pd, dnnl_query_engine, 0, &eng)
                    != dnnl_success
            || dnnl_primitive_desc_get_attr(*pd, &attr) != dnnl_success
            || dnnl_primitive_desc_iterator_create(&it, op, attr, eng, NULL)
                    != dnnl_success)
        return dnnl_unimplemented;
    char name[128];
    snprintf(name, sizeof name, "%s", pd_impl_name(*pd));
    dnnl_primitive_desc_t next = NULL;
    int past = 0; /* an implementation of that name seen */
    do {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        if (!c) break;
        int same = !strcmp(pd_impl_name(c), name);
        if (same) { /* a later one of the name: look on past it */
            dnnl_primitive_desc_destroy(next);
            next = NULL;
            past = 1;
        }
        if (past && !same && !next)
            next = c;
        else
            dnnl_primitive_desc_destroy(c);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    if (!next) return dnnl_unimplemented;
    dnnl_primitive_desc_destroy(*pd);
    *pd = next;
    return dnnl_success;
}

#endif

const char *pd_impl_name(const_dnnl_primitive_desc_t pd) {
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name)
            != dnnl_success || !name)
        return "unknown";
    return name;
}

void md_move(md_t *dst, md_t *src) {
    md_free(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}

size_t md_size(md_ref_t md) { return md ? dnnl_memory_desc_get_size(md) : 0; }

int md_equal(md_ref_t a, md_ref_t b) {
    if (!a || !b) return a == b;
    return dnnl_memory_desc_equal(a, b);
}

md_ref_t pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what) {
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

/* ------------------------------------------------------- post-ops */

dnnl_status_t post_ops_append_unary(dnnl_post_ops_t po, int32_t alg,
        double alpha, double beta) {
#if !DGRAD_ONEDNN_V3
    dnnl_status_t s = dnnl_success;
#endif
    switch ((dgrad_post_alg_t)alg) {
        case dgrad_post_abs: return eltwise(po, dnnl_eltwise_abs, 0, 0);
        case dgrad_post_clip:
            return eltwise(po, dnnl_eltwise_clip, alpha, beta);
        case dgrad_post_elu: return eltwise(po, dnnl_eltwise_elu, alpha, 0);
        case dgrad_post_exp: return eltwise(po, dnnl_eltwise_exp, 0, 0);
        case dgrad_post_gelu_erf:
            return eltwise(po, dnnl_eltwise_gelu_erf, 0, 0);
        case dgrad_post_gelu_tanh:
            return eltwise(po, dnnl_eltwise_gelu_tanh, 0, 0);
        case dgrad_post_relu: return eltwise(po, dnnl_eltwise_relu, alpha, 0);
        case dgrad_post_log: return eltwise(po, dnnl_eltwise_log, 0, 0);
        case dgrad_post_logistic:
            return eltwise(po, dnnl_eltwise_logistic, 0, 0);
        case dgrad_post_mish: return eltwise(po, dnnl_eltwise_mish, 0, 0);
        case dgrad_post_round: return eltwise(po, dnnl_eltwise_round, 0, 0);
        case dgrad_post_sqrt: return eltwise(po, dnnl_eltwise_sqrt, 0, 0);
        case dgrad_post_square: return eltwise(po, dnnl_eltwise_square, 0, 0);
        case dgrad_post_tanh: return eltwise(po, dnnl_eltwise_tanh, 0, 0);
#if DGRAD_ONEDNN_V3
        case dgrad_post_hardsigmoid:
            return eltwise(po, dnnl_eltwise_hardsigmoid, alpha, beta);
        case dgrad_post_hardswish:
            return eltwise(po, dnnl_eltwise_hardswish, alpha, beta);
        case dgrad_post_soft_relu:
            return eltwise(po, dnnl_eltwise_soft_relu, alpha, 0);
#else
        case dgrad_post_hardsigmoid:
            s = eltwise(po, dnnl_eltwise_linear, alpha, beta);
            return s == dnnl_success ? eltwise(po, dnnl_eltwise_clip, 0, 1)
                                     : s;
        case dgrad_post_hardswish:
            /* 2.x: x * relu6(x + 3) / 6, the parameters 1/6 and 1/2. */
            if (alpha != 1.0 / 6 || beta != 0.5) return dnnl_unimplemented;
            return eltwise(po, dnnl_eltwise_hardswish, 0, 0);
        case dgrad_post_soft_relu:
            /* 2.x: log(1 + exp(x)); scaled by alpha before, 1/alpha after
             * (pow with exponent 1: not a second linear, see
             * eltwise_params_shared in onednn_defects.c). */
            if (alpha != 1) s = eltwise(po, dnnl_eltwise_linear, alpha, 0);
            if (s == dnnl_success) s = eltwise(po, dnnl_eltwise_soft_relu, 0, 0);
            if (s == dnnl_success && alpha != 1)
                s = eltwise(po, dnnl_eltwise_pow, 1 / alpha, 1);
            return s;
#endif
        default: return dnnl_unimplemented;
    }
}
