/*
 * What some oneDNN versions get wrong, and how the lowering steers clear
 * (one predicate for the affected versions, the evidence beside each
 * measure):
 * - reorders checked before a plan uses them, and dgrad's own copy where
 *   oneDNN's is wrong (below);
 * - primitives not offered (pd_untrusted; pd_trusted_or_next takes the
 *   next implementation oneDNN offers instead), among them chains with
 *   an operand oneDNN's gemm convolution reads at the wrong positions
 *   and 2.6's AMX brgemm convolution, which reads past a heap block;
 * - 1x1 forward convolutions not created (onednn_1x1_forward_crashes),
 *   nor brgemm ones with windows wholly in the padding or with the
 *   depth taps they drop (pd_safe_for_padding), nor brgemm
 *   backward-data ones with positions no tap reaches
 *   (pd_bwd_safe_for_padding);
 * - post-op chains that repeat an eltwise algorithm with other
 *   parameters kept from oneDNN where it mixes them up
 *   (eltwise_params_shared).
 *
 * A oneDNN reorder checked before a plan uses it. oneDNN 3.7.0 to 3.8.0
 * have jit reorders ("jit:uni") that leave elements out: with 3.7.1 on an
 * AMD Zen 5, plain 1x1x2x2 f32 weights reordered into ABcd16a16b keep only
 * their first element, so a 2x2 transposed convolution computes with a
 * 1x1 kernel (tests/test_onednn_defects.c; oneDNN issue
 * #3280, fixed in 3.8.1). On those versions, and wherever
 * DGRAD_CHECK_REORDERS=1 asks for it, every reorder dgrad makes is run
 * once on scratch buffers: the source filled with distinct bit patterns,
 * the destination with NaN, then each element of the destination (all
 * of them up to CHECK_ALL elements, a spread sample beyond) must hold its
 * source element and, checked in full, each padding element zero. A
 * reorder that fails is replaced by dgrad's own copy between the two
 * layouts (own_reorder_run: element by element, threaded, far slower than
 * oneDNN's kernels, exact), which the timed choice then weighs like any
 * other step.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors up to this many elements are checked element by element, with
 * their padding; larger ones on a sample of this many elements. */
#define CHECK_ALL ((int64_t)1 << 22)
/* Larger tensors (bytes, either side) are not checked: the scratch
 * buffers would double a plan's memory at planning. */
#define CHECK_MAX_BYTES ((size_t)1 << 28)
/* Checks on buffers this large give their memory back at once. */
#define CHECK_TRIM_BYTES ((size_t)1 << 20)

static int version_needs_check(void) {
    const dnnl_version_t *v = dnnl_version();
    return v->major == 3 && (v->minor == 7 || (v->minor == 8 && v->patch == 0));
}

/* oneDNN's plain-layout convolutions of 3.7 ("jit_uni_ncsp_convolution:
 * conv+..." wrappers) reorder to blocked layouts inside, with the same
 * jit reorders, which dgrad cannot check: on those versions they give
 * wrong results (the ci:3d_dilated problem of bench/suites/ci_small.txt in
 * NCX, against raw oneDNN on its preferred layouts) and are not offered. */
static int ncsp_wrapper_untrusted(const char *impl) {
    return version_needs_check() && strstr(impl, "jit_uni_ncsp_convolution");
}

/* 1 when the first dimension of @p md (images) is more than one and its
 * stride is not the dense one, as in the output box of a plan whose tail
 * dgrad computes (an image of the caller's output is larger than the
 * box). A layout it cannot read counts as such; none (a query the pd
 * does not answer) does not. */
static int batch_stride_relaxed(md_ref_t md) {
    md_layout_t l;
    if (!md || md_ndims(md) == 0) return 0;
    if (!md_layout(md, &l)) return 1;
    if (l.dims[0] <= 1) return 0;
    int64_t dense = 1;
    for (int d = 1; d < l.ndims; d++) dense *= l.padded_dims[d];
    return l.strides[0] != dense;
}

/* oneDNN 3's convolutions accept data whose batch stride is not the dense
 * one, then step from image to image by the dense size: from the second
 * image on the output is written (or the input read) in the wrong place.
 * Seen on 3.7.1 in channels-last with "x64:gemm:jit" (f32) and
 * "brgconv_strided:avx512_core_bf16" (bf16): the output-tail case
 * onednn_nxc_xio_groups_output_tail of
 * conformance/suites/vectors/edge_cases.json gets 140 of 336 elements
 * wrong from image 1 on, and a standalone oneDNN program with diff_src
 * strides {168, 1, 24, 6} for dims {2, 6, 6, 4} 137 of 288, on one
 * thread and on two. Whichever implementation oneDNN picks may take the
 * relaxed stride, so on every 3.x (later versions were not checked) no
 * primitive is offered with one; 2.6 refuses such layouts or computes
 * them right (tests/test_onednn_defects.c). */
static int batch_stride_ignored(const_dnnl_primitive_desc_t pd) {
    if (dnnl_version()->major < 3) return 0;
    const dnnl_query_t data[] = {dnnl_query_src_md, dnnl_query_dst_md,
            dnnl_query_diff_src_md, dnnl_query_diff_dst_md};
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++)
        if (batch_stride_relaxed(pd_md(pd, data[i]))) return 1;
    return 0;
}

/* oneDNN 2.6.3's gemm convolution ("x64:gemm:jit") with groups on a
 * channels-last output applies a binary post-op whose operand varies
 * over positions at the wrong positions (from a row's second position
 * on): GroupConvolutionBackpropData 1D, 2 groups of 5 -> 17 channels,
 * stride 1, a full-tensor Subtract, NXC, folded into a forward
 * convolution (conformance sweep case sweep-quick#0364 with
 * DGRAD_PHASE_FOLD=only, on an AMD EPYC Zen 3 where timing picks gemm;
 * test post_ops_api::a_grouped_channels_last_gemm_carries_no_positional_operand).
 * Per-channel and scalar operands come out right, and so does NCX. Not
 * checked on oneDNN 3, so distrusted on every version: such a chain is
 * applied by the pass instead. */
static int binary_operand_misplaced(const_dnnl_primitive_desc_t pd) {
    md_ref_t dst = pd_md(pd, dnnl_query_dst_md), wei =
            pd_md(pd, dnnl_query_weights_md);
    const_dnnl_primitive_attr_t attr = NULL;
    const_dnnl_post_ops_t po = NULL;
    md_layout_t l;
    if (!strstr(pd_impl_name(pd), "gemm") || !dst || !wei
            || md_ndims(wei) != md_ndims(dst) + 1 || !md_layout(dst, &l)
            || l.dims[1] <= 1 || l.strides[1] != 1
            || dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success
            || dnnl_primitive_attr_get_post_ops(attr, &po) != dnnl_success)
        return 0;
    for (int i = 0; i < dnnl_post_ops_len(po); i++) {
        dnnl_alg_kind_t alg;
        md_ref_t src1 = NULL;
        if (dnnl_post_ops_get_kind(po, i) != dnnl_binary
                || dnnl_post_ops_get_params_binary(po, i, &alg, &src1)
                        != dnnl_success)
            continue;
        int64_t dims[DNNL_MAX_NDIMS];
        md_dims(src1, dims);
        for (int d = 2; d < md_ndims(src1); d++)
            if (dims[d] > 1) return 1;
    }
    return 0;
}

/* oneDNN 2.6.3's AMX brgemm forward convolution
 * ("brgconv:avx512_core_amx_bf16") reads past the end of a heap block
 * while its primitive is created, whatever the shape: a standalone
 * program creating each implementation oneDNN offers in a child process
 * under Electric Fence (`LD_PRELOAD=libefence.so`, every block ending at
 * an unmapped page) crashed on exactly that one, for bf16 1D, 2D and 3D
 * channels-last convolutions of 1-32 channels, windows of 3, pads 0-2;
 * its 1x1 sibling, the jit AMX kernels, the backward-data ones and
 * brgconv:avx512_core_bf16 were clean (an Intel Xeon with AMX-BF16 and
 * AVX512-FP16 under KVM: Sapphire Rapids' features).
 * Under AddressSanitizer the over-read crashed the quick sweep's folds
 * in one run of four (onnx_convtranspose.json#test_convtranspose_3d in
 * bf16, NXC, one thread; SIGSEGV in dnnl_primitive_create). Not offered
 * on 2.x: oneDNN's next implementation (jit:avx512_core_amx_bf16) takes
 * its place (test pd_untrusted::amx_brgemm_forward_gives_way_on_2_6). */
static int amx_brgemm_over_reads(const char *impl) {
    return dnnl_version()->major == 2
            && !strncmp(impl, "brgconv:avx512_core_amx", 23);
}

int pd_untrusted(const_dnnl_primitive_desc_t pd) {
    const char *impl = pd_impl_name(pd);
    return ncsp_wrapper_untrusted(impl) || amx_brgemm_over_reads(impl)
            || batch_stride_ignored(pd) || binary_operand_misplaced(pd);
}

/* Moves *@p pd on to the next implementation oneDNN offers (@p allowed:
 * there may be one worth taking); where there is none, destroys it and
 * returns dnnl_unimplemented with *@p pd NULL. */
static dnnl_status_t next_impl_or_none(dnnl_primitive_desc_t *pd,
        int allowed) {
    if (allowed && ACQUIRE(pd_next_impl(pd)) == dnnl_success)
        return dnnl_success;
    dnnl_primitive_desc_destroy(*pd);
    *pd = NULL;
    return dnnl_unimplemented;
}

dnnl_status_t pd_trusted_or_next(dnnl_primitive_desc_t *pd, dnnl_status_t s) {
    if (s != dnnl_success) return s;
    /* The layouts are the same for every implementation: none can be
     * trusted with them. */
    int next = !batch_stride_ignored(*pd);
    while (pd_untrusted(*pd))
        if (next_impl_or_none(pd, next) != dnnl_success)
            return dnnl_unimplemented;
    return dnnl_success;
}

/* oneDNN 3.7's brgemm 1x1 forward convolution divides by zero while
 * choosing its blocking for some shapes on this machine (SIGFPE in
 * brg_blocking_t::est_eff_1x1 creating the folded convolution of
 * unet:up1_1024to512, K = S = 2, whose window is 1x1; `dgrad bench
 * mb1ic1024ih28oc512oh56kh2sh2ph0` on oneDNN 3.7.1, AMD EPYC Zen 5): the
 * fold does not offer 1x1 windows there, and no 1x1 problem gets a
 * forward hint (primitives.c). */
int onednn_1x1_forward_crashes(void) { return version_needs_check(); }

/* oneDNN 3.7.1's brgemm forward convolution crashes (SIGSEGV in
 * brgemm_convolution_fwd_t::perform_outwork) where an output position's
 * window lies wholly in the padding: conformance sweep case
 * sweep-quick#0012 in bf16 (17 groups of one channel folded into a
 * dense 1D convolution mb1_ic17oc17_iw2ow7kw3sw1dw0pw2, right padding 5,
 * "brg_conv_fwd:avx512_core_bf16"), AMD EPYC Zen 4; the AVX2-only
 * machines never ran that kernel. */
static int windows_in_padding(int nsp, const int64_t *pl, const int64_t *pr,
        const int64_t *extent) {
    for (int i = 0; i < nsp; i++)
        if (pl[i] >= extent[i] || pr[i] >= extent[i]) return 1;
    return 0;
}

/* The same kernel in bf16 leaves out (or mixes up) most of the output of
 * a 3D convolution with one input channel per group whose input depth is
 * shorter than the window and padded in front: sweep-quick#0157
 * (GroupConvolutionBackpropData 3D, 3 groups of 1 -> 1 channel, folded
 * into g3 mb1_ic3oc9_id1od3kd3pd2_ih3oh4kh2ph1_iw4ow5kw2pw1) gets 231 of
 * 504 elements wrong on 3.7.1, AMD EPYC Zen 4, one thread or two. A
 * standalone oneDNN program over 1-3 groups, 1-16 channels, depths 1-4,
 * windows 1-5, pads 0-4 and planes up to 16x16 found it wrong exactly
 * where the input has one channel per group, depth 1 under a window of
 * 2-4, front padding and a window wider than 1 on the other axes; f32,
 * two or more input channels, depths of 2 and up and a height or width
 * of 1 are right. Fenced a little wider (f16 too, any input depth
 * shorter than the window), and on every 3.x: later versions were not
 * checked, and their brgemm kernels still get narrow 3D bf16 shapes wrong
 * (PyTorch reports one on 3.12 with a strided innermost output of 1, a
 * shape the fold never makes); the shapes fenced are rare and small.
 * On an Intel Xeon with AMX (amx_brgemm_over_reads' machine) 3.7.1's AMX
 * kernel ("brg_conv_fwd:avx10_1_512_amx") and its AVX-512 one get the same
 * shapes wrong with any odd count of input channels per group (the
 * dense fold of sweep-quick#0157, 3 channels with block-diagonal
 * weights: 228 of 504 elements wrong): the same kind of standalone
 * program over 1 or 3 groups of 1-9 input channels, depths 1-3, windows
 * 1-4 and front pads 0-3 found them wrong exactly at depth 1 under a
 * window of 2-4 with front padding and an odd channel count; even
 * counts, depths of 2 and up, and f16 (its AVX512-FP16 kernel) are
 * right. So the fence takes odd counts. */
static int depth_taps_dropped(const_dnnl_primitive_desc_t pd, int nsp,
        const int64_t *pl, const int64_t *extent) {
    md_ref_t src = pd_md(pd, dnnl_query_src_md),
             wei = pd_md(pd, dnnl_query_weights_md);
    if (nsp != 3 || !src || !wei || md_ndims(src) != 5) return 0;
    dnnl_data_type_t dt = md_data_type(src);
    if (dt != dnnl_bf16 && dt != dnnl_f16) return 0;
    int64_t sd[DNNL_MAX_NDIMS], wd[DNNL_MAX_NDIMS];
    md_dims(src, sd);
    md_dims(wei, wd);
    int64_t in_per_group = wd[md_ndims(wei) - 4];
    return in_per_group % 2 == 1 && sd[2] < extent[0] && pl[0] >= 1;
}

dnnl_status_t pd_safe_for_padding(dnnl_primitive_desc_t *pd, int nsp,
        const int64_t *pl, const int64_t *pr, const int64_t *extent) {
    if (!*pd || dnnl_version()->major < 3) return dnnl_success;
    int whole = version_needs_check() && windows_in_padding(nsp, pl, pr, extent);
    while (pd_untrusted(*pd)
            || (strstr(pd_impl_name(*pd), "brg")
                    && (whole || depth_taps_dropped(*pd, nsp, pl, extent))))
        if (next_impl_or_none(pd, 1) != dnnl_success)
            return dnnl_unimplemented;
    return dnnl_success;
}

/* The brgemm backward-data convolution of 3.7.1 crashes the same way
 * (SIGSEGV in brgemm_convolution_fwd_t::perform_outwork, under
 * brgemm_convolution_bwd_t) where a position of its result has no tap
 * in its input: `dgrad conform --sweep full` case sweep-full#2574 in bf16
 * (3D, 2 -> 3 channels, input 1x1x2, window 2x1x4 dilated 2x2x1, front
 * padding 1 on depth, so depth position 0 reads positions -1 and 1 of
 * an axis of 1), "brg_conv_bwd:avx10_1_512_amx+brg_conv_fwd:...", on an
 * Intel Xeon with AMX; fenced on every 3.x, as the depth taps are.
 * tests/test_onednn_defects.c checks the predicate on every machine. */
int pd_positions_without_taps(const_dnnl_primitive_desc_t pd, int nsp,
        const int64_t *strides, const int64_t *dilates, const int64_t *pl) {
    md_ref_t src = pd_md(pd, dnnl_query_diff_src_md),
             dst = pd_md(pd, dnnl_query_diff_dst_md),
             wei = pd_md(pd, dnnl_query_weights_md);
    if (!src || !dst || !wei) return 0;
    int ns = md_ndims(src), nw = md_ndims(wei);
    int64_t sd[DNNL_MAX_NDIMS], dd[DNNL_MAX_NDIMS], wd[DNNL_MAX_NDIMS];
    md_dims(src, sd);
    md_dims(dst, dd);
    md_dims(wei, wd);
    for (int i = 0; i < nsp; i++) {
        int64_t Y = sd[ns - nsp + i], X = dd[ns - nsp + i],
                K = wd[nw - nsp + i], step = dilates[i] + 1;
        for (int64_t o = 0; o < Y; o++) {
            int reached = 0;
            for (int64_t k = 0; k < K && !reached; k++) {
                int64_t t = o + pl[i] - k * step;
                reached = t >= 0 && t % strides[i] == 0
                        && t / strides[i] < X;
            }
            if (!reached) return 1;
        }
    }
    return 0;
}

dnnl_status_t pd_bwd_safe_for_padding(dnnl_primitive_desc_t *pd, int nsp,
        const int64_t *strides, const int64_t *dilates, const int64_t *pl) {
    if (!*pd || dnnl_version()->major < 3) return dnnl_success;
    while (pd_untrusted(*pd)
            || (strstr(pd_impl_name(*pd), "brg")
                    && pd_positions_without_taps(*pd, nsp, strides, dilates,
                            pl)))
        if (next_impl_or_none(pd, 1) != dnnl_success)
            return dnnl_unimplemented;
    return dnnl_success;
}

/* oneDNN 2.6.3's binary primitive ("jit:uni") gives every eltwise post-op
 * of one algorithm the parameters of the first: linear(2) then
 * linear(0.5) turns 33 into 132, not 33 (the ref:any kernel computes it
 * right). Measured by running exactly that once per process on 16
 * values: 1 when the result is wrong (or the probe could not run). */
static int probe_eltwise_params(void) {
    enum { N = 16 };
    static float buf[N];
    static const float zero = 0;
    int64_t dims[2] = {1, N}, strides[2] = {N, 1}, one[2] = {1, 1};
    md_t out = MD_EMPTY, scalar = MD_EMPTY;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t m[3] = {NULL, NULL, NULL};
    dnnl_stream_t stream = NULL;
    int wrong = 1;
    dnnl_status_t s = md_strided(&out, 2, dims, dnnl_f32, strides);
    if (s == dnnl_success) s = md_strided(&scalar, 2, one, dnnl_f32, one);
    if (s == dnnl_success) s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success) s = dnnl_post_ops_create(&po);
    if (s == dnnl_success) s = post_ops_append_unary(po, dgrad_post_relu, 2, 0);
    if (s == dnnl_success) s = post_ops_append_unary(po, dgrad_post_relu, 0.5, 0);
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, po);
    if (s == dnnl_success)
        s = binary_pd(&pd, engine, dnnl_binary_add, md_ref(&out),
                md_ref(&scalar), md_ref(&out), attr);
    if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
    for (int i = 0; i < 3 && s == dnnl_success; i++)
        s = dnnl_memory_create(&m[i], md_ref(i == 1 ? &scalar : &out), engine,
                i == 1 ? (void *)(uintptr_t)&zero : buf);
    if (s == dnnl_success)
        s = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
    if (s == dnnl_success) {
        /* relu(alpha) scales negatives: -33 -> -66 -> -33 when right */
        for (int i = 0; i < N; i++) buf[i] = -33;
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, m[0]},
                {DNNL_ARG_SRC_1, m[1]}, {DNNL_ARG_DST, m[2]}};
        s = dnnl_primitive_execute(prim, stream, 3, args);
        if (s == dnnl_success) s = dnnl_stream_wait(stream);
        wrong = s != dnnl_success;
        for (int i = 0; i < N && !wrong; i++) wrong = buf[i] != -33;
    }
    dnnl_stream_destroy(stream);
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(m[i]);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    md_free(&out);
    md_free(&scalar);
    return wrong;
}

int eltwise_params_shared(void) {
    static atomic_int shared = -1; /* measured once per process */
    int v = atomic_load(&shared);
    if (v < 0) {
        v = probe_eltwise_params();
        atomic_store(&shared, v);
    }
    return v;
}

int reorder_check_wanted(void) {
    static atomic_int wanted = -1; /* read once per process */
    int w = atomic_load(&wanted);
    if (w < 0) {
        const char *env = getenv("DGRAD_CHECK_REORDERS");
        w = env && !strcmp(env, "1") ? 1
                : env && !strcmp(env, "0") ? 0 : version_needs_check();
        atomic_store(&wanted, w);
    }
    return w;
}

/* Element offset of logical index @p idx in layout @p l (oneDNN's blocked
 * addressing: outer blocks by the strides, inner blocks nested in their
 * order). */
static int64_t offset_of(const md_layout_t *l, const int64_t *idx) {
    int64_t blk[DNNL_MAX_NDIMS], off = l->offset0, inner = 0;
    for (int d = 0; d < DNNL_MAX_NDIMS; d++) blk[d] = 1;
    for (int k = 0; k < l->inner_nblks; k++) blk[l->inner_idxs[k]] *= l->inner_blks[k];
    for (int d = 0; d < l->ndims; d++) off += idx[d] / blk[d] * l->strides[d];
    for (int k = 0; k < l->inner_nblks; k++) {
        int d = (int)l->inner_idxs[k];
        int64_t below = 1; /* blocks of the same dim nested inside */
        for (int j = k + 1; j < l->inner_nblks; j++)
            if (l->inner_idxs[j] == d) below *= l->inner_blks[j];
        inner = inner * l->inner_blks[k] + idx[d] / below % l->inner_blks[k];
    }
    return off + inner;
}

/* A distinct finite bit pattern per offset, in elements of @p es bytes. */
static uint32_t pattern(int64_t off, size_t es) {
    uint32_t h = (uint32_t)off * 2654435761u;
    /* f32: a normal positive number; 16-bit: below the first inf/NaN
     * exponent of f16 and bf16, and not zero. */
    return es == 4 ? 0x3f800000u | (h >> 9) : 1u + (h >> 16) % 0x7b00u;
}

static uint32_t load_bits(const char *buf, int64_t off, size_t es) {
    if (es == 4) {
        uint32_t v;
        memcpy(&v, buf + off * 4, 4);
        return v;
    }
    uint16_t v;
    memcpy(&v, buf + off * 2, 2);
    return v;
}

static void store_bits(char *buf, int64_t off, size_t es, uint32_t bits) {
    if (es == 4) {
        memcpy(buf + off * 4, &bits, 4);
    } else {
        uint16_t v = (uint16_t)bits;
        memcpy(buf + off * 2, &v, 2);
    }
}

/* Logical index number @p n (row-major over @p dims). */
static void index_of(int nd, const int64_t *dims, int64_t n, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = dims[d] ? n % dims[d] : 0;
        n = dims[d] ? n / dims[d] : 0;
    }
}

/* Whether the reorder's destination is right: every element checked (or
 * a sample), padding zero when checked in full. */
static int destination_right(const md_layout_t *f, const md_layout_t *t,
        const char *from, const char *to, size_t es) {
    int64_t count = 1, padded = 1, idx[DNNL_MAX_NDIMS];
    for (int d = 0; d < t->ndims; d++) {
        count *= t->dims[d];
        padded *= t->padded_dims[d];
    }
    int full = count <= CHECK_ALL;
    int64_t n = full ? count : CHECK_ALL, step = full ? 1 : count / n;
    for (int64_t i = 0; i < n; i++) {
        index_of(t->ndims, t->dims, i * step + (full ? 0 : i % step), idx);
        if (load_bits(to, offset_of(t, idx), es)
                != load_bits(from, offset_of(f, idx), es))
            return 0;
    }
    if (!full || padded == count) return 1;
    for (int64_t i = 0; i < padded; i++) {
        index_of(t->ndims, t->padded_dims, i, idx);
        int pad = 0;
        for (int d = 0; d < t->ndims; d++) pad |= idx[d] >= t->dims[d];
        if (pad && load_bits(to, offset_of(t, idx), es) != 0) return 0;
    }
    return 1;
}

dnnl_status_t reorder_check(const step_t *step, md_ref_t from, md_ref_t to) {
    md_layout_t f, t;
    if (!md_layout(from, &f) || !md_layout(to, &t) || f.ndims != t.ndims
            || f.dt != t.dt)
        return dnnl_success; /* not a layout copy dgrad can address */
    size_t es = dnnl_data_type_size(f.dt);
    size_t fb = md_size(from), tb = md_size(to);
    if ((es != 4 && es != 2) || fb > CHECK_MAX_BYTES || tb > CHECK_MAX_BYTES)
        return dnnl_success;
    scratch_reorder_t r;
    dnnl_status_t s = scratch_reorder_make(&r, step, from, to);
    if (s == dnnl_success) {
        for (int64_t o = 0; o < (int64_t)(fb / es); o++)
            store_bits(r.from, o, es, pattern(o, es));
        memset(r.to, 0xff, tb); /* NaN in every type */
        s = scratch_reorder_run(&r, step);
    }
    if (s == dnnl_success && !destination_right(&f, &t, r.from, r.to, es)) {
        if (layout_search_verbose())
            fprintf(stderr, "dgrad layout search: reorder %s gives wrong "
                    "results here: refused\n", step->impl);
        s = dnnl_unimplemented;
    }
    scratch_reorder_free(&r);
    /* Buffers of the reorder's size, made and freed once for each
     * reorder of each candidate: glibc keeps them in its heap once its
     * mmap threshold has grown past them, and a folded candidate's 27
     * phase reorders grew it by 100-230 MB while the 3D specification
     * example was planned: peaks of f32 250-334 MB and f16 208-229, 128
     * and 153 with this (tests/test_planning_memory.c, oneDNN 3.7.1, AMD
     * EPYC Zen 5). */
    if (fb + tb >= CHECK_TRIM_BYTES) return_freed_memory();
    return s;
}

/* The offset axis @p a at index @p i adds in layout @p l: its outer
 * block's stride share and its digits within the inner blocks. */
static int64_t axis_offset(const md_layout_t *l, int a, int64_t i) {
    int64_t idx[DNNL_MAX_NDIMS] = {0}, zero[DNNL_MAX_NDIMS] = {0};
    idx[a] = i;
    return offset_of(l, idx) - offset_of(l, zero);
}

dnnl_status_t reorder_make_safe(step_t *step, md_ref_t from, md_ref_t to) {
    if (!reorder_check_wanted()) return dnnl_success;
    /* A chunked reorder runs one primitive on every chunk: its chunk is
     * checked; dgrad's copy takes the whole tensor at once. */
    int chunked = step->n_chunks > 1;
    dnnl_status_t s = reorder_check(step,
            chunked ? md_ref(&step->chunks.from_md) : from,
            chunked ? md_ref(&step->chunks.to_md) : to);
    return s == dnnl_unimplemented ? own_copy_make(step, from, to) : s;
}

dnnl_status_t own_copy_make(step_t *step, md_ref_t from, md_ref_t to) {
    md_layout_t *f = &step->own_from, *t = &step->own_to;
    if (!md_layout(from, f) || !md_layout(to, t) || t->ndims > MAX_NDIMS)
        return dnnl_unimplemented;
    for (int a = 0; a < t->ndims; a++) {
        int64_t n = t->padded_dims[a];
        step->own_tab[a] = allocated(dgrad_malloc(
                (size_t)(2 * n > 0 ? 2 * n : 1) * sizeof(int64_t)));
        if (!step->own_tab[a]) return dnnl_out_of_memory;
        for (int64_t i = 0; i < n; i++) {
            step->own_tab[a][i] = i < f->dims[a] ? axis_offset(f, a, i) : 0;
            step->own_tab[a][n + i] = axis_offset(t, a, i);
        }
    }
    dnnl_primitive_destroy(step->prim);
    step->prim = NULL;
    step->own = OWN_COPY_PADDED;
    step->scratch_bytes = 0;
    step->n_chunks = 1;
    chunking_free(&step->chunks);
    snprintf(step->impl, sizeof step->impl, "dgrad:copy");
    return dnnl_success;
}

/* Copies (or zeroes, in the padding) one run along the innermost axis at
 * outer offsets @p fo and @p to_off. */
static void copy_run(const step_t *step, const char *from, char *to,
        int64_t fo, int64_t to_off, int pad, size_t es) {
    const md_layout_t *t = &step->own_to;
    int last = t->ndims - 1;
    int64_t n = t->padded_dims[last], d = t->dims[last];
    const int64_t *ft = step->own_tab[last], *tt = step->own_tab[last] + n;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = pad || i >= d ? 0 : load_bits(from, fo + ft[i], es);
        store_bits(to, to_off + tt[i], es, bits);
    }
}

void own_reorder_run(const step_t *step, const void *from, void *to) {
    const md_layout_t *f = &step->own_from, *t = &step->own_to;
    size_t es = dnnl_data_type_size(f->dt);
    int nd = t->ndims;
    if (step->own == OWN_COPY_SCATTER) {
        small_copy_run(step, from, to);
        return;
    }
    if (step->own == OWN_COPY_CHANNEL_BLOCKS) {
        channel_blocks_run(step, from, to);
        return;
    }
    /* Every index of the padded outer axes; padding gets zeros, as
     * oneDNN's reorders leave it. */
    int64_t outer = 1;
    for (int a = 0; a < nd - 1; a++) outer *= t->padded_dims[a];
    #pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; o++) {
        int64_t rest = o, fo = f->offset0, tof = t->offset0;
        int pad = 0;
        for (int a = nd - 2; a >= 0; a--) {
            int64_t n = t->padded_dims[a], i = rest % n;
            rest /= n;
            pad |= i >= t->dims[a];
            fo += step->own_tab[a][i];
            tof += step->own_tab[a][n + i];
        }
        copy_run(step, from, to, fo, tof, pad, es);
    }
}
