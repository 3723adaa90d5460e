/*
 * One vocabulary for oneDNN 2.x and 3.x: the only file of dgrad that knows
 * which major it is built against (onednn_compat.c holds the differences).
 *
 * What changed between the majors, and how it is hidden here:
 * - Memory descriptors are a plain struct in 2.x and an opaque handle in
 *   3.x. dgrad keeps them as md_t, a descriptor it owns (made by the md_*
 *   makers, released by md_free), and passes md_ref_t, a borrowed
 *   reference, to oneDNN calls whose signature is otherwise the same in
 *   both (dnnl_memory_create, dnnl_reorder_primitive_desc_create,
 *   dnnl_memory_desc_equal, dnnl_memory_desc_get_size ...).
 * - Op descriptors are gone in 3.x: the *_pd makers below take everything
 *   at once in both.
 * - What a primitive descriptor reports (pd_md) is borrowed from it in
 *   both; md_copy keeps a copy beyond the pd's life.
 * Engines, streams, primitives, attributes, arguments, format tags and
 * statuses are the same in both and used directly.
 *
 * An md_t is empty when zeroed (calloc, or MD_EMPTY): md_free accepts one,
 * and every maker releases what its target held before, so a field can be
 * made again without a leak. Makers return oneDNN's status (out of memory
 * included, for the planning's ACQUIRE).
 */
#ifndef DGRAD_ONEDNN_COMPAT_H
#define DGRAD_ONEDNN_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_version.h>

#if defined(DGRAD_ONEDNN_MAJOR) && DGRAD_ONEDNN_MAJOR != DNNL_VERSION_MAJOR
#error "oneDNN headers of another major than the oneDNN CMake found"
#endif

#if DNNL_VERSION_MAJOR >= 3
#define DGRAD_ONEDNN_V3 1
typedef const_dnnl_memory_desc_t md_ref_t;
typedef struct md {
    dnnl_memory_desc_t h; /* owned handle, NULL when empty */
} md_t;
static inline md_ref_t md_ref(const md_t *m) { return m->h; }
#else
#define DGRAD_ONEDNN_V3 0
typedef const dnnl_memory_desc_t *md_ref_t;
typedef struct md {
    dnnl_memory_desc_t d; /* ndims 0 when empty */
} md_t;
static inline md_ref_t md_ref(const md_t *m) {
    return m->d.ndims ? &m->d : NULL;
}
#endif

#define MD_EMPTY {0}

/* ------------------------------------------------- owned descriptors */

void md_free(md_t *m);
/* Moves @p src's descriptor into @p dst (releasing dst's); src is left
 * empty. */
void md_move(md_t *dst, md_t *src);
/* A copy of a borrowed descriptor (empty when @p src is NULL). */
dnnl_status_t md_copy(md_t *m, md_ref_t src);
/* Plain strided layout of @p nd axes. */
dnnl_status_t md_strided(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, const int64_t *strides);
/* A format tag's layout (dnnl_format_tag_any: the primitive's choice). */
dnnl_status_t md_tagged(md_t *m, int nd, const int64_t *dims,
        dnnl_data_type_t dt, dnnl_format_tag_t tag);
/* The box of @p ext elements per axis at the origin of @p parent: same
 * strides and blocks (a sub-memory at offset 0). */
dnnl_status_t md_box(md_t *m, md_ref_t parent, const int64_t *ext);

/* ---------------------------------------------------------- queries */

int md_ndims(md_ref_t md);
/* The first md_ndims values of @p dims. */
void md_dims(md_ref_t md, int64_t *dims);
dnnl_data_type_t md_data_type(md_ref_t md);
size_t md_size(md_ref_t md);
int md_equal(md_ref_t a, md_ref_t b);

/* A blocked layout spelled out (DNNL_MAX_NDIMS entries each). */
typedef struct md_layout {
    int ndims;
    int64_t dims[DNNL_MAX_NDIMS], padded_dims[DNNL_MAX_NDIMS];
    int64_t padded_offsets[DNNL_MAX_NDIMS], strides[DNNL_MAX_NDIMS];
    int inner_nblks;
    int64_t inner_blks[DNNL_MAX_NDIMS], inner_idxs[DNNL_MAX_NDIMS];
    int64_t offset0;
    dnnl_data_type_t dt;
} md_layout_t;
/* Fills @p l and returns 1 when @p md is a blocked layout (plain strided
 * ones included) with no extra data (compensations); else returns 0. */
int md_layout(md_ref_t md, md_layout_t *l);

/* ------------------------------------------- primitive descriptors */

/* What a primitive descriptor reports, borrowed from it (NULL if none). */
md_ref_t pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what);

/* Convolution forward (direct algorithm; @p bias may be NULL) and
 * backward data (@p hint: a forward pd, or NULL). @p strides, @p dilates
 * (0: none), @p pad_l and @p pad_r have one value per spatial axis. */
dnnl_status_t conv_forward_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_prop_kind_t prop, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr);
dnnl_status_t conv_backward_data_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t diff_src, md_ref_t wei, md_ref_t diff_dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, const_dnnl_primitive_desc_t hint,
        const_dnnl_primitive_attr_t attr);
/* Deconvolution forward (inference, direct; @p bias may be NULL), as a
 * oneDNN user runs a transposed convolution with post-ops: @p wei is
 * [G,] Cout/G, Cin/G, K... with Cout the output's channels. */
dnnl_status_t deconv_forward_pd(dnnl_primitive_desc_t *pd,
        dnnl_engine_t eng, md_ref_t src, md_ref_t wei, md_ref_t bias,
        md_ref_t dst, const int64_t *strides, const int64_t *dilates,
        const int64_t *pad_l, const int64_t *pad_r,
        const_dnnl_primitive_attr_t attr);
dnnl_status_t binary_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        dnnl_alg_kind_t alg, md_ref_t src0, md_ref_t src1, md_ref_t dst,
        const_dnnl_primitive_attr_t attr);
dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
        md_ref_t src, md_ref_t wei, md_ref_t bias, md_ref_t dst,
        const_dnnl_primitive_attr_t attr);
/* ------------------------------------------------------- post-ops */

/* Appends canonical unary post-op @p alg (canonical.h) with @p alpha,
 * @p beta to @p po, as one or more oneDNN eltwise post-ops: 2.x has no
 * hardsigmoid (linear then clip), its hardswish has no parameters and its
 * soft_relu no alpha (scaled by linear post-ops around it).
 * dnnl_unimplemented when this oneDNN cannot express it. */
dnnl_status_t post_ops_append_unary(dnnl_post_ops_t po, int32_t alg,
        double alpha, double beta);
/* The algorithm and parameters of post-op @p index when it is an eltwise
 * one (returns 1), else 0. */
int post_ops_eltwise_at(const_dnnl_post_ops_t po, int index,
        dnnl_alg_kind_t *alg, float *alpha, float *beta);
/* Appends binary post-op @p alg with operand layout @p src1. */
dnnl_status_t post_ops_append_binary(dnnl_post_ops_t po,
        dnnl_alg_kind_t alg, md_ref_t src1);
/* Appends an accumulation onto the destination (sum, scale 1, in the
 * destination's type). */
dnnl_status_t post_ops_append_sum(dnnl_post_ops_t po);

/* oneDNN's name of @p pd's implementation ("unknown" where it gives
 * none). */
const char *pd_impl_name(const_dnnl_primitive_desc_t pd);

/* Turns *@p pd into the next implementation oneDNN offers for the same
 * operation (its layouts chosen anew; on 2.x *@p pd is replaced by a new
 * handle and the old one destroyed): a status other than dnnl_success,
 * *@p pd unchanged, when there is none (dnnl_last_impl_reached on 3.x,
 * dnnl_unimplemented on 2.x) or when it cannot be found (2.x: a backward
 * pass, whose forward hint the pd does not keep). */
dnnl_status_t pd_next_impl(dnnl_primitive_desc_t *pd);

#endif
