/*
 * The oneDNN compatibility layer (src/plan/onednn_compat.h) says the same
 * thing on oneDNN 2 and 3: descriptors made by each maker read back as
 * made, boxes of blocked layouts keep strides and blocks, copies outlive
 * their source, and a maker reusing a field releases what it held (the
 * sanitizer build's leak check sees the oneDNN 3 handles).
 */
#include <criterion/criterion.h>

#include "plan/onednn_compat.h"

Test(onednn_compat, strided_descriptor_reads_back) {
    int64_t dims[4] = {2, 3, 5, 7}, strides[4] = {105, 1, 21, 3};
    md_t m = MD_EMPTY;
    cr_assert_eq(md_ref(&m), NULL);
    cr_assert_eq(md_strided(&m, 4, dims, dnnl_f32, strides), dnnl_success);
    md_layout_t l;
    cr_assert(md_layout(md_ref(&m), &l));
    cr_assert_eq(md_ndims(md_ref(&m)), 4);
    cr_assert_eq(md_data_type(md_ref(&m)), dnnl_f32);
    cr_assert_eq(md_size(md_ref(&m)), 2 * 3 * 5 * 7 * sizeof(float));
    int64_t got[4];
    md_dims(md_ref(&m), got);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(got[i], dims[i]);
        cr_assert_eq(l.strides[i], strides[i], "axis %d", i);
        cr_assert_eq(l.padded_dims[i], dims[i]);
    }
    cr_assert_eq(l.inner_nblks, 0);
    cr_assert_eq(l.offset0, 0);
    md_free(&m);
    cr_assert_eq(md_ref(&m), NULL);
    md_free(&m); /* an empty one is accepted */
}

Test(onednn_compat, box_of_a_blocked_layout_keeps_its_blocks) {
    /* nChw16c with 20 channels: C padded to 32. */
    int64_t dims[4] = {4, 20, 6, 10}, ext[4] = {2, 20, 3, 10};
    md_t parent = MD_EMPTY, box = MD_EMPTY;
    cr_assert_eq(md_tagged(&parent, 4, dims, dnnl_bf16, dnnl_aBcd16b),
            dnnl_success);
    md_layout_t p, b;
    cr_assert(md_layout(md_ref(&parent), &p));
    cr_assert_eq(p.inner_nblks, 1);
    cr_assert_eq(p.inner_blks[0], 16);
    cr_assert_eq(p.inner_idxs[0], 1);
    cr_assert_eq(p.padded_dims[1], 32);
    cr_assert_eq(md_box(&box, md_ref(&parent), ext), dnnl_success);
    cr_assert(md_layout(md_ref(&box), &b));
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(b.dims[i], ext[i], "axis %d", i);
        cr_assert_eq(b.strides[i], p.strides[i], "axis %d", i);
    }
    /* Cut axes are not padded; the whole axis keeps its padding. */
    cr_assert_eq(b.padded_dims[0], 2);
    cr_assert_eq(b.padded_dims[1], 32);
    cr_assert_eq(b.padded_dims[2], 3);
    cr_assert_eq(b.inner_nblks, 1);
    cr_assert_eq(b.inner_blks[0], 16);
    /* oneDNN sizes a box by its outermost axis: 2 images of the parent's
     * image stride (which counts the 16-channel blocks), bf16. */
    cr_assert_eq(p.strides[0], 2 * 6 * 10 * 16);
    cr_assert_eq(md_size(md_ref(&box)), (size_t)(2 * p.strides[0] * 2));
    cr_assert(!md_equal(md_ref(&box), md_ref(&parent)));
    md_free(&box);
    md_free(&parent);
}

Test(onednn_compat, copies_outlive_their_source_and_makers_replace) {
    int64_t dims[3] = {1, 8, 9};
    md_t a = MD_EMPTY, b = MD_EMPTY, c = MD_EMPTY;
    cr_assert_eq(md_tagged(&a, 3, dims, dnnl_f16, dnnl_acb), dnnl_success);
    cr_assert_eq(md_copy(&b, md_ref(&a)), dnnl_success);
    cr_assert(md_equal(md_ref(&a), md_ref(&b)));
    /* Made again: the old descriptor is released, the new one read. */
    cr_assert_eq(md_tagged(&a, 3, dims, dnnl_f32, dnnl_abc), dnnl_success);
    cr_assert(!md_equal(md_ref(&a), md_ref(&b)));
    cr_assert_eq(md_data_type(md_ref(&b)), dnnl_f16);
    md_layout_t l;
    cr_assert(md_layout(md_ref(&b), &l));
    cr_assert_eq(l.strides[1], 1); /* channels innermost (acb) */
    md_move(&c, &b);
    cr_assert_eq(md_ref(&b), NULL);
    cr_assert_eq(md_data_type(md_ref(&c)), dnnl_f16);
    cr_assert_eq(md_copy(&c, NULL), dnnl_success);
    cr_assert_eq(md_ref(&c), NULL);
    cr_assert(md_equal(NULL, NULL));
    cr_assert(!md_equal(md_ref(&a), NULL));
    md_free(&a);
}

Test(onednn_compat, format_any_is_not_a_layout) {
    int64_t dims[3] = {1, 8, 9};
    md_t a = MD_EMPTY;
    md_layout_t l;
    cr_assert_eq(md_tagged(&a, 3, dims, dnnl_f32, dnnl_format_tag_any),
            dnnl_success);
    cr_assert(!md_layout(md_ref(&a), &l));
    cr_assert_eq(md_ndims(md_ref(&a)), 3);
    md_free(&a);
}
