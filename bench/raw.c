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
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "bench.h"

static dnnl_engine_t engine;

static dnnl_status_t get_engine(void) {
    if (engine) return dnnl_success;
    return dnnl_engine_create(&engine, dnnl_cpu, 0);
}

struct bench_raw {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t in, wei, out;
    void *packed; /* weights in the primitive's layout (prepack mode) */
    char impl[128];
};

/* Reorders the user's weights once into the primitive's layout. */
static dnnl_status_t prepack(bench_raw_t *raw, const dnnl_memory_desc_t *user_md,
        void *user, const dnnl_memory_desc_t *md) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_memory_t from = NULL;
    size_t size = dnnl_memory_desc_get_size(md);
    raw->packed = bench_alloc(size);
    if (!raw->packed) return dnnl_out_of_memory;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, user_md, engine,
            md, engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&r, pd);
    if (s == dnnl_success) s = dnnl_memory_create(&from, user_md, engine, user);
    if (s == dnnl_success) s = dnnl_memory_create(&raw->wei, md, engine, raw->packed);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, raw->wei}};
        s = dnnl_primitive_execute(r, raw->stream, 2, args);
        if (s == dnnl_success) s = dnnl_stream_wait(raw->stream);
    }
    dnnl_memory_destroy(from);
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(pd);
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

bench_raw_t *bench_raw_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout, int prepacked,
        void *in, void *wei, void *out, char *err, size_t err_size) {
    dnnl_data_type_t ddt = dt == dgrad_bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t in_dims = {d->mb, d->ic}, out_dims = {d->mb, d->oc},
                wei_dims = {0}, strides, dilates, pl, pr;
    int g = d->g > 1, nd = 2 + d->nsp;
    if (g) wei_dims[0] = d->g;
    wei_dims[g] = d->ic / d->g;
    wei_dims[g + 1] = d->oc / d->g;
    for (int a = 0; a < d->nsp; a++) {
        in_dims[2 + a] = d->i[a];
        out_dims[2 + a] = d->o[a];
        wei_dims[g + 2 + a] = d->k[a];
        strides[a] = d->s[a];
        dilates[a] = d->d[a];
        pl[a] = d->p[a];
        pr[a] = bench_desc_pad_end(d, a);
    }
    dnnl_memory_desc_t in_md, wei_md, out_md, wei_any;
    dnnl_convolution_desc_t fwd, bwd;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    bench_raw_t *raw = calloc(1, sizeof *raw);
    const char *what = "engine creation";
    dnnl_status_t s = raw ? get_engine() : dnnl_out_of_memory;
    if (s == dnnl_success) {
        what = "memory descriptors";
        s = dnnl_memory_desc_init_by_tag(&in_md, nd, in_dims, ddt,
                data_tags[layout][d->nsp - 1]);
    }
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&out_md, nd, out_dims, ddt,
                data_tags[layout][d->nsp - 1]);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wei_md, nd + g, wei_dims, ddt,
                wei_tags[g][wlayout][d->nsp - 1]);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wei_any, nd + g, wei_dims, ddt,
                dnnl_format_tag_any);
    const dnnl_memory_desc_t *wmd = prepacked ? &wei_any : &wei_md;
    if (s == dnnl_success) {
        what = "forward hint";
        if (dnnl_dilated_convolution_forward_desc_init(&fwd,
                    dnnl_forward_training, dnnl_convolution_direct, &out_md,
                    wmd, NULL, &in_md, strides, dilates, pl, pr)
                        == dnnl_success)
            dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
        what = "convolution backward data descriptor";
        s = dnnl_dilated_convolution_backward_data_desc_init(&bwd,
                dnnl_convolution_direct, &out_md, wmd, &in_md, strides,
                dilates, pl, pr);
    }
    if (s == dnnl_success) {
        what = "primitive descriptor";
        s = dnnl_primitive_desc_create(&pd, &bwd, NULL, engine, hint);
    }
    if (s == dnnl_success) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(raw->impl, sizeof raw->impl, "%s", impl ? impl : "?");
        what = "primitive";
        s = dnnl_primitive_create(&raw->prim, pd);
    }
    if (s == dnnl_success) {
        what = "memory objects";
        s = dnnl_memory_create(&raw->in, &in_md, engine, in);
    }
    if (s == dnnl_success)
        s = dnnl_memory_create(&raw->out, &out_md, engine, out);
    if (s == dnnl_success) {
        what = "stream";
        s = dnnl_stream_create(&raw->stream, engine,
                dnnl_stream_default_flags);
    }
    if (s == dnnl_success && !prepacked)
        s = dnnl_memory_create(&raw->wei, &wei_md, engine, wei);
    if (s == dnnl_success && prepacked) {
        what = "weights prepacking";
        s = prepack(raw, &wei_md, wei,
                dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(hint);
    if (s != dnnl_success) {
        snprintf(err, err_size, "oneDNN %s failed (%s)", what,
                dnnl_status2str(s));
        bench_raw_destroy(raw);
        return NULL;
    }
    return raw;
}

int bench_raw_execute(bench_raw_t *raw) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, raw->in},
            {DNNL_ARG_WEIGHTS, raw->wei}, {DNNL_ARG_DIFF_SRC, raw->out}};
    if (dnnl_primitive_execute(raw->prim, raw->stream, 3, args)
            != dnnl_success)
        return -1;
    return dnnl_stream_wait(raw->stream) == dnnl_success ? 0 : -1;
}

const char *bench_raw_impl(const bench_raw_t *raw) { return raw->impl; }

void bench_raw_destroy(bench_raw_t *raw) {
    if (!raw) return;
    dnnl_primitive_destroy(raw->prim);
    dnnl_stream_destroy(raw->stream);
    dnnl_memory_destroy(raw->in);
    dnnl_memory_destroy(raw->wei);
    dnnl_memory_destroy(raw->out);
    free(raw->packed);
    free(raw);
}
