/*
 * The raw oneDNN baseline.
 *
 * The baseline is what a direct, competent but plain oneDNN user writes:
 * one convolution backward-data primitive created on the user's own memory
 * (format tags from the user's layout: ncw/nchw/ncdhw or nwc/nhwc/ndhwc for
 * the data, oihw/goihw-style or hwio/hwigo-style weights as the user has
 * them), the forward primitive descriptor as the hint (as a training
 * framework has it), memory objects and a stream created once, default
 * attributes (library-managed scratchpad).
 *
 * The preferred-layout baseline asks oneDNN for the same primitive with
 * format_tag_any on every tensor: what oneDNN itself prefers (blocked
 * nChw16c-style layouts as a rule), on data reordered into them once,
 * outside the timing. No caller that holds user layouts can pay less than
 * that primitive alone, so dgrad's time minus its time is dgrad's added
 * cost.
 *
 * Under --post-ops the baseline is one deconvolution forward primitive
 * with the chain as its post-ops attribute (oneDNN's API refuses any
 * attribute on a convolution backward-data primitive, 3.7.1's
 * conv_attr_check), on the same layouts: how a oneDNN user fuses.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "bench.h"
#include "canonical.h"
#include "plan/onednn_compat.h"

static dnnl_engine_t engine;

static dnnl_status_t get_engine(void) {
    if (engine) return dnnl_success;
    return dnnl_engine_create(&engine, dnnl_cpu, 0);
}

struct bench_raw {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t in, wei, out;
    /* Under --post-ops: the deconvolution's bias and binary operands, and
     * the arguments of an execution. */
    dnnl_memory_t bias, operand[BENCH_MAX_POST_OPS];
    dnnl_exec_arg_t args[4 + BENCH_MAX_POST_OPS];
    int n_args;
    /* Buffers in the primitive's layouts (weights prepacked, or every
     * tensor on the preferred layouts), and the user's output to reorder
     * the result into (preferred layouts only). */
    void *own_in, *own_wei, *own_out;
    dnnl_memory_t user_out;
    char impl[128];
};

/* Reorders @p from once into @p to, on @p stream, and waits. */
static dnnl_status_t reorder_once(dnnl_stream_t stream, dnnl_memory_t from,
        dnnl_memory_t to) {
    md_ref_t from_md, to_md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_status_t s = dnnl_memory_get_memory_desc(from, &from_md);
    if (s == dnnl_success) s = dnnl_memory_get_memory_desc(to, &to_md);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&pd, from_md, engine, to_md,
                engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&r, pd);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        s = dnnl_primitive_execute(r, stream, 2, args);
        if (s == dnnl_success) s = dnnl_stream_wait(stream);
    }
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

/* A memory object in layout @p md on a buffer of its own (*@p own), filled
 * from the user's buffer @p user (layout @p user_md) when that is given. */
static dnnl_status_t own_memory(bench_raw_t *raw, md_ref_t md, void **own,
        md_ref_t user_md, void *user, dnnl_memory_t *mem) {
    dnnl_memory_t from = NULL;
    *own = bench_alloc(md_size(md));
    if (!*own) return dnnl_out_of_memory;
    dnnl_status_t s = dnnl_memory_create(mem, md, engine, *own);
    if (s == dnnl_success && user) {
        s = dnnl_memory_create(&from, user_md, engine, user);
        if (s == dnnl_success) s = reorder_once(raw->stream, from, *mem);
    }
    dnnl_memory_destroy(from);
    return s;
}

/* Format tags of the user's layouts, by spatial rank. */
static const dnnl_format_tag_t data_tags[2][3] = {
        {dnnl_ncw, dnnl_nchw, dnnl_ncdhw}, {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc}};
/* OIX: [Cin, Cout/G, K...] = oneDNN's (g)oi... with o = Cin (the conv's
 * output channels are the op's data input). XIO: [K..., Cout/G, Cin] =
 * (w|hw|dhw)io, and with groups (Cin = G x Cin/G, g outer) ...igo. */
static const dnnl_format_tag_t wei_tags[2][2][3] = {
        {{dnnl_oiw, dnnl_oihw, dnnl_oidhw}, {dnnl_wio, dnnl_hwio, dnnl_dhwio}},
        {{dnnl_goiw, dnnl_goihw, dnnl_goidhw},
                {dnnl_wigo, dnnl_hwigo, dnnl_dhwigo}}};

dgrad_data_type_t bench_raw_operand_dt(const bench_post_op_t *op,
        dgrad_data_type_t raw_dt) {
    dgrad_data_type_t t = bench_operand_dt(op, raw_dt);
    return t == dgrad_f16 ? dgrad_f32 : t;
}

/* The deconvolution's weights, [G,] Cout/G, Cin/G, K... (o = the output's
 * channels), over the user's OIX [Cin][Cout/G][K...] or XIO
 * [K...][Cout/G][Cin] buffer: strides, as no format tag names these. */
static dnnl_status_t deconv_weights_md(md_t *m, const bench_desc_t *d,
        bench_wlayout_t wl, dnnl_data_type_t ddt) {
    int g = d->g > 1, nsp = d->nsp;
    int64_t cig = d->ic / d->g, cog = d->oc / d->g, ksize = 1;
    int64_t dims[6], st[6], kst[3];
    for (int a = nsp - 1; a >= 0; a--) {
        kst[a] = ksize;
        ksize *= d->k[a];
    }
    if (g) dims[0] = d->g;
    dims[g] = cog;
    dims[g + 1] = cig;
    for (int a = 0; a < nsp; a++) dims[g + 2 + a] = d->k[a];
    if (wl == bench_oix) {
        if (g) st[0] = cig * cog * ksize;
        st[g] = ksize;
        st[g + 1] = cog * ksize;
        for (int a = 0; a < nsp; a++) st[g + 2 + a] = kst[a];
    } else {
        if (g) st[0] = cig;
        st[g] = d->ic;
        st[g + 1] = 1;
        for (int a = 0; a < nsp; a++) st[g + 2 + a] = kst[a] * cog * d->ic;
    }
    return md_strided(m, 2 + nsp + g, dims, ddt, st);
}

/* The chain as the deconvolution's attribute: a leading BiasAdd as its
 * bias (@p bias_md set), the rest as post-ops (unary ones through
 * post_ops_append_unary, as dgrad's lowering writes them), each binary
 * operand bound to its post-op's position. */
static dnnl_status_t chain_attr(bench_raw_t *raw, const bench_chain_t *c,
        const bench_desc_t *d, dgrad_data_type_t dt, int nxc,
        void *const *operands, md_t *bias_md, dnnl_primitive_attr_t *attr) {
    dnnl_post_ops_t po = NULL;
    md_t m = MD_EMPTY;
    int first = 0;
    dnnl_status_t s = dnnl_success;
    if (c->n && !strcmp(c->ops[0].kind, "BiasAdd")) {
        int64_t oc = d->oc, one = 1;
        dgrad_data_type_t bdt = bench_raw_operand_dt(&c->ops[0], dt);
        s = md_strided(bias_md, 1, &oc, (dnnl_data_type_t)bench_dnnl_dt(bdt),
                &one);
        if (s == dnnl_success)
            s = dnnl_memory_create(&raw->bias, md_ref(bias_md), engine,
                    operands[0]);
        first = 1;
    }
    if (s == dnnl_success) s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success) s = dnnl_post_ops_create(&po);
    for (int i = first; s == dnnl_success && i < c->n; i++) {
        const bench_post_op_t *op = &c->ops[i];
        if (!dgrad_post_alg_is_binary(op->alg)) {
            s = post_ops_append_unary(po, op->alg, op->alpha, op->beta);
            continue;
        }
        int64_t dims[5], st[5];
        int nd = bench_operand_canonical(op, d, nxc, dims, st);
        int at = dnnl_post_ops_len(po);
        s = md_strided(&m, nd, dims, (dnnl_data_type_t)bench_dnnl_dt(
                bench_raw_operand_dt(op, dt)), st);
        if (s == dnnl_success)
            s = post_ops_append_binary(po,
                    (dnnl_alg_kind_t)bench_dnnl_binary_alg(op->alg),
                    md_ref(&m));
        if (s == dnnl_success)
            s = dnnl_memory_create(&raw->operand[i], md_ref(&m), engine,
                    operands[i]);
        if (s == dnnl_success)
            raw->args[raw->n_args++] = (dnnl_exec_arg_t){
                    DNNL_ARG_ATTR_MULTIPLE_POST_OP(at) | DNNL_ARG_SRC_1,
                    raw->operand[i]};
        md_free(&m);
    }
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return s;
}

bench_raw_t *bench_raw_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout,
        bench_raw_layout_t raw_layout, int prepacked, void *in, void *wei,
        void *out, const bench_chain_t *chain, void *const *operands,
        char *err, size_t err_size) {
    dnnl_data_type_t ddt = dt == dgrad_bf16 ? dnnl_bf16 : dnnl_f32;
    int deconv = chain && chain->n;
    int64_t in_dims[5] = {d->mb, d->ic}, out_dims[5] = {d->mb, d->oc},
            wei_dims[6] = {0}, strides[3], dilates[3], pl[3], pr[3];
    int g = d->g > 1, nd = 2 + d->nsp;
    if (g) wei_dims[0] = d->g;
    /* The deconvolution's o is the output's channels: the conv's i. */
    wei_dims[g] = deconv ? d->oc / d->g : d->ic / d->g;
    wei_dims[g + 1] = deconv ? d->ic / d->g : d->oc / d->g;
    for (int a = 0; a < d->nsp; a++) {
        in_dims[2 + a] = d->i[a];
        out_dims[2 + a] = d->o[a];
        wei_dims[g + 2 + a] = d->k[a];
        strides[a] = d->s[a];
        dilates[a] = d->d[a];
        pl[a] = d->p[a];
        pr[a] = bench_desc_pad_end(d, a);
    }
    md_t in_md = MD_EMPTY, wei_md = MD_EMPTY, out_md = MD_EMPTY;
    md_t in_any = MD_EMPTY, wei_any = MD_EMPTY, out_any = MD_EMPTY;
    md_t bias_md = MD_EMPTY;
    dnnl_primitive_attr_t attr = NULL;
    int preferred = raw_layout == bench_raw_preferred;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    bench_raw_t *raw = calloc(1, sizeof *raw);
    const char *what = "engine creation";
    dnnl_status_t s = raw ? get_engine() : dnnl_out_of_memory;
    if (s == dnnl_success) {
        what = "memory descriptors";
        s = md_tagged(&in_md, nd, in_dims, ddt, data_tags[layout][d->nsp - 1]);
    }
    if (s == dnnl_success)
        s = md_tagged(&out_md, nd, out_dims, ddt,
                data_tags[layout][d->nsp - 1]);
    if (s == dnnl_success)
        s = deconv ? deconv_weights_md(&wei_md, d, wlayout, ddt)
                   : md_tagged(&wei_md, nd + g, wei_dims, ddt,
                           wei_tags[g][wlayout][d->nsp - 1]);
    if (s == dnnl_success)
        s = md_tagged(&in_any, nd, in_dims, ddt, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = md_tagged(&out_any, nd, out_dims, ddt, dnnl_format_tag_any);
    if (s == dnnl_success)
        s = md_tagged(&wei_any, nd + g, wei_dims, ddt, dnnl_format_tag_any);
    /* The layouts the primitive is asked for. */
    int wei_given = !preferred && !prepacked;
    md_ref_t imd = md_ref(preferred ? &in_any : &in_md),
             omd = md_ref(preferred ? &out_any : &out_md),
             wmd = md_ref(wei_given ? &wei_md : &wei_any);
    if (s == dnnl_success && deconv) {
        what = "post-ops attribute";
        s = chain_attr(raw, chain, d, dt, layout == bench_nxc, operands,
                &bias_md, &attr);
        what = "deconvolution primitive descriptor";
        if (s == dnnl_success)
            s = deconv_forward_pd(&pd, engine, imd, wmd, md_ref(&bias_md),
                    omd, strides, dilates, pl, pr, attr);
    } else if (s == dnnl_success) {
        what = "forward hint";
        conv_forward_pd(&hint, engine, dnnl_forward_training, omd, wmd, NULL,
                imd, strides, dilates, pl, pr, NULL);
        what = "primitive descriptor";
        s = conv_backward_data_pd(&pd, engine, omd, wmd, imd, strides,
                dilates, pl, pr, hint, NULL);
    }
    if (s == dnnl_success) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(raw->impl, sizeof raw->impl, "%s", impl ? impl : "?");
        what = "primitive";
        s = dnnl_primitive_create(&raw->prim, pd);
    }
    if (s == dnnl_success) {
        what = "stream";
        s = dnnl_stream_create(&raw->stream, engine,
                dnnl_stream_default_flags);
    }
    if (s == dnnl_success && !preferred) {
        what = "memory objects";
        s = dnnl_memory_create(&raw->in, md_ref(&in_md), engine, in);
        if (s == dnnl_success)
            s = dnnl_memory_create(&raw->out, md_ref(&out_md), engine, out);
    }
    if (s == dnnl_success && preferred) {
        what = "reorders into the preferred layouts";
        s = own_memory(raw, pd_md(pd, deconv ? dnnl_query_src_md
                : dnnl_query_diff_dst_md), &raw->own_in, md_ref(&in_md), in,
                &raw->in);
        if (s == dnnl_success)
            s = own_memory(raw, pd_md(pd, deconv ? dnnl_query_dst_md
                    : dnnl_query_diff_src_md), &raw->own_out, NULL, NULL,
                    &raw->out);
        if (s == dnnl_success)
            s = dnnl_memory_create(&raw->user_out, md_ref(&out_md), engine,
                    out);
    }
    if (s == dnnl_success && wei_given) {
        what = "memory objects";
        s = dnnl_memory_create(&raw->wei, md_ref(&wei_md), engine, wei);
    } else if (s == dnnl_success) {
        what = "weights prepacking";
        s = own_memory(raw, pd_md(pd, dnnl_query_weights_md), &raw->own_wei,
                md_ref(&wei_md), wei, &raw->wei);
    }
    if (s == dnnl_success) {
        dnnl_exec_arg_t *a = raw->args + raw->n_args;
        a[0] = (dnnl_exec_arg_t){deconv ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST,
                raw->in};
        a[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, raw->wei};
        a[2] = (dnnl_exec_arg_t){deconv ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC,
                raw->out};
        raw->n_args += 3;
        if (raw->bias)
            raw->args[raw->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS,
                    raw->bias};
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(hint);
    dnnl_primitive_attr_destroy(attr);
    md_free(&bias_md);
    md_free(&in_md);
    md_free(&wei_md);
    md_free(&out_md);
    md_free(&in_any);
    md_free(&wei_any);
    md_free(&out_any);
    if (s != dnnl_success) {
        snprintf(err, err_size, "oneDNN %s failed (%s)", what,
                dnnl_status2str(s));
        bench_raw_destroy(raw);
        return NULL;
    }
    return raw;
}

int bench_raw_execute(bench_raw_t *raw) {
    if (dnnl_primitive_execute(raw->prim, raw->stream, raw->n_args,
                raw->args) != dnnl_success)
        return -1;
    return dnnl_stream_wait(raw->stream) == dnnl_success ? 0 : -1;
}

int bench_raw_copy_out(bench_raw_t *raw) {
    if (!raw->user_out) return 0;
    return reorder_once(raw->stream, raw->out, raw->user_out) == dnnl_success
            ? 0 : -1;
}

const char *bench_raw_impl(const bench_raw_t *raw) { return raw->impl; }

const char *bench_raw_baseline_name(bench_raw_layout_t raw_layout,
        int prepacked) {
    if (raw_layout == bench_raw_preferred) return "preferred";
    return prepacked ? "prepacked_weights" : "user";
}

void bench_raw_destroy(bench_raw_t *raw) {
    if (!raw) return;
    dnnl_primitive_destroy(raw->prim);
    dnnl_stream_destroy(raw->stream);
    dnnl_memory_destroy(raw->in);
    dnnl_memory_destroy(raw->wei);
    dnnl_memory_destroy(raw->out);
    dnnl_memory_destroy(raw->user_out);
    dnnl_memory_destroy(raw->bias);
    for (int i = 0; i < BENCH_MAX_POST_OPS; i++)
        dnnl_memory_destroy(raw->operand[i]);
    free(raw->own_in);
    free(raw->own_wei);
    free(raw->own_out);
    free(raw);
}
