/*
 * dgrad's op for one problem, built the way a graph compiler builds it:
 * through the backend's plugin table, a ConvolutionBackwardData op with the
 * user's data and weights formats, on dense logical tensors in the user's
 * axis order, and with --post-ops the chain appended to it.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "plugin_calls.h"

/* Data dims in the user's order: NXC [N, X..., C], NCX [N, C, X...]. */
static int data_dims(const bench_desc_t *d, bench_layout_t layout, int64_t c,
        const int64_t *sp, int64_t *dims) {
    dims[0] = d->mb;
    if (layout == bench_nxc) {
        for (int a = 0; a < d->nsp; a++) dims[1 + a] = sp[a];
        dims[1 + d->nsp] = c;
    } else {
        dims[1] = c;
        for (int a = 0; a < d->nsp; a++) dims[2 + a] = sp[a];
    }
    return 2 + d->nsp;
}

/* Weights dims: OIX [Cin, Cout/G, K...], XIO [K..., Cout/G, Cin]. */
static int wei_dims(const bench_desc_t *d, bench_wlayout_t wl, int64_t *dims) {
    if (wl == bench_oix) {
        dims[0] = d->ic;
        dims[1] = d->oc / d->g;
        for (int a = 0; a < d->nsp; a++) dims[2 + a] = d->k[a];
    } else {
        for (int a = 0; a < d->nsp; a++) dims[a] = d->k[a];
        dims[d->nsp] = d->oc / d->g;
        dims[d->nsp + 1] = d->ic;
    }
    return 2 + d->nsp;
}

/* Runs one call of the table; on failure the message is the call and
 * dgrad's error. */
#define BE_TRY(call)                                                        \
    do {                                                                    \
        if ((call) != dgrad_success) {                                      \
            snprintf(err, err_size, "%s: %s", #call,                        \
                    be->api->last_error_message());                         \
            return -1;                                                      \
        }                                                                   \
    } while (0)

/* The chain's post-ops on the op, and their operands' logical tensors
 * (ids 4...): BiasAdd's [C] along the op's data_format, the others at the
 * output's rank in the user's axis order. */
static int append_chain(bench_op_t *r, const bench_backend_t *be,
        const bench_desc_t *d, dgrad_data_type_t dt, const bench_options_t *o,
        const bench_chain_t *chain, char *err, size_t err_size) {
    const dgrad_plugin_api_t *api = be->api;
    if (api->struct_size < offsetof(dgrad_plugin_api_t, op_append_post_op)
                    + sizeof api->op_append_post_op
            || !api->op_append_post_op) {
        snprintf(err, err_size, "--post-ops: the %s has no op_append_post_op "
                "(plugin ABI 1.2)", be->name);
        return -1;
    }
    for (int i = 0; i < chain->n; i++) {
        const bench_post_op_t *po = &chain->ops[i];
        const char *names[3], *values[3];
        size_t n = 0;
        for (int a = 0; a < po->n_attrs; a++, n++) {
            names[n] = po->names[a];
            values[n] = po->values[a];
        }
        int bias = !strcmp(po->kind, "BiasAdd");
        if (bias) {
            names[n] = "data_format";
            values[n++] = bench_layout_name(o->layout);
        }
        BE_TRY(api->op_append_post_op(r->op, po->kind, n, names, values));
        if (po->operand == bench_operand_none) continue;
        int64_t cd[5], cs[5], dims[5];
        int nd = bench_operand_canonical(po, d, o->layout == bench_nxc, cd,
                cs);
        if (bias) {
            nd = 1;
            dims[0] = d->oc;
        } else if (o->layout == bench_nxc) {
            dims[0] = cd[0];
            for (int a = 2; a < nd; a++) dims[a - 1] = cd[a];
            dims[nd - 1] = cd[1];
        } else {
            memcpy(dims, cd, sizeof dims);
        }
        BE_TRY(api->logical_tensor_init(&r->lts[r->n_inputs],
                (int64_t)(4 + r->n_inputs), bench_operand_dt(po, dt), nd,
                dims, dgrad_layout_type_strided,
                dgrad_property_type_variable));
        r->n_inputs++;
    }
    return 0;
}

int bench_op_build(bench_op_t *r, const bench_backend_t *be,
        const bench_desc_t *d, dgrad_data_type_t dt, const bench_options_t *o,
        const bench_chain_t *chain, char *err, size_t err_size) {
    const dgrad_plugin_api_t *api = be->api;
    int64_t dims[8], v[3], pe[3];
    int nsp = d->nsp;
    memset(r, 0, sizeof *r);
    r->be = be;
    for (int a = 0; a < nsp; a++) {
        pe[a] = bench_desc_pad_end(d, a);
        if (pe[a] < 0) {
            /* Output padding: Y - (F - PB - PE) must stay below S. */
            if (-pe[a] >= d->s[a]) {
                snprintf(err, err_size, "output padding %lld on axis %d is not "
                        "below the stride (%lld): not a ConvolutionBackwardData "
                        "problem", (long long)-pe[a], a, (long long)d->s[a]);
                return -1;
            }
            pe[a] = 0;
        }
    }
    BE_TRY(api->op_create(&r->op, 1, dgrad_op_convolution_backward_data,
            "bench"));
    BE_TRY(api->op_set_attr_s64s(r->op, dgrad_op_attr_strides, d->s, nsp));
    BE_TRY(api->op_set_attr_s64s(r->op, dgrad_op_attr_pads_begin, d->p, nsp));
    BE_TRY(api->op_set_attr_s64s(r->op, dgrad_op_attr_pads_end, pe, nsp));
    for (int a = 0; a < nsp; a++) v[a] = d->d[a] + 1;
    BE_TRY(api->op_set_attr_s64s(r->op, dgrad_op_attr_dilations, v, nsp));
    BE_TRY(api->op_set_attr_s64(r->op, dgrad_op_attr_groups, d->g));
    BE_TRY(api->op_set_attr_str(r->op, dgrad_op_attr_data_format,
            bench_layout_name(o->layout)));
    BE_TRY(api->op_set_attr_str(r->op, dgrad_op_attr_weights_format,
            bench_wlayout_name(o->wlayout)));
    int nd = data_dims(d, o->layout, d->oc, d->o, dims);
    BE_TRY(api->op_set_attr_s64s(r->op, dgrad_op_attr_dst_shape, dims, nd));
    BE_TRY(api->logical_tensor_init(&r->out_lt, 3, dt, nd, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable));
    nd = data_dims(d, o->layout, d->ic, d->i, dims);
    BE_TRY(api->logical_tensor_init(&r->lts[0], 1, dt, nd, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable));
    nd = wei_dims(d, o->wlayout, dims);
    BE_TRY(api->logical_tensor_init(&r->lts[1], 2, dt, nd, dims,
            dgrad_layout_type_strided, o->constant_weights
                    ? dgrad_property_type_constant
                    : dgrad_property_type_variable));
    r->n_inputs = 2;
    if (chain && chain->n) return append_chain(r, be, d, dt, o, chain, err,
            err_size);
    return 0;
}

int bench_op_compile(const bench_op_t *r, dgrad_compiled_op_t **c,
        char *err, size_t err_size) {
    const bench_backend_t *be = r->be;
    dgrad_logical_tensor_t out = r->out_lt;
    BE_TRY(tool_plugin_compile(be->api, r->op, r->n_inputs, r->lts, &out, c));
    return 0;
}

void bench_op_destroy(bench_op_t *r) {
    if (!r->be) return;
    r->be->api->compiled_op_destroy(r->compiled);
    r->be->api->op_destroy(r->op);
    r->compiled = NULL;
    r->op = NULL;
}

void bench_op_own_weights(bench_op_t *r) {
    if (r->turned) r->inputs[1] = r->other_weights;
    r->other_weights = NULL;
    r->turned = 0;
}

int bench_op_execute(void *p) {
    bench_op_t *r = p;
    if (r->other_weights) {
        const void *w = r->inputs[1];
        r->inputs[1] = r->other_weights;
        r->other_weights = w;
        r->turned = !r->turned;
    }
    return tool_plugin_execute(r->be->api, r->compiled, r->n_inputs,
                   r->inputs, r->out, 0, NULL) == dgrad_success ? 0 : -1;
}
