/*
 * oneDNN Graph's own ConvolutionBackwardData, or its ConvTranspose
 * (graph_anchor.h). The op is described through the dnnl_graph C API as a
 * graph compiler hands it to dgrad (data and weights formats, explicit
 * pads, the output shape as dst_shape; ConvTranspose: its attributes, the
 * output shape it infers given as the output's dims, the bias as a third
 * input), the graph is finalized and partitioned, the one partition
 * compiled for the caller's logical tensors and executed on the caller's
 * buffers. Built only against oneDNN 3 with its graph API
 * (DGRAD_HAVE_ONEDNN_GRAPH); otherwise creation says why there is none.
 */
#include "graph_anchor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if DGRAD_HAVE_ONEDNN_GRAPH

#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl_graph.h>

/* Logical tensor ids, and the index of each in logical_tensors' array. */
enum { LT_IN = 1, LT_WEI = 2, LT_OUT = 3, LT_BIAS = 4 };

struct graph_anchor {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_graph_graph_t graph;
    dnnl_graph_partition_t partition;
    dnnl_graph_compiled_partition_t compiled;
    dnnl_graph_tensor_t inputs[3], output;
    size_t n_partitions, n_inputs;
};

static dnnl_data_type_t graph_dt(dgrad_data_type_t dt) {
    return dt == dgrad_bf16 ? dnnl_bf16 : dt == dgrad_f16 ? dnnl_f16 : dnnl_f32;
}

/* The logical tensors in the dialect's order of dims: data [N, C, X...]
 * (NCX) or [N, X..., C] (NXC), weights OIX / IOX [Cin, Cout/G, K...] or
 * XIO / XOI [K..., Cout/G, Cin] (Cin: the op's input channels), the
 * output, and ConvTranspose's bias [Cout] (lt[3], when it has one);
 * dense. */
static dnnl_status_t logical_tensors(const graph_anchor_desc_t *d,
        dnnl_graph_logical_tensor_t lt[4]) {
    int nd = 2 + d->nsp, nxc = d->nxc;
    dnnl_data_type_t dt = graph_dt(d->dt);
    dnnl_dims_t in = {d->n}, out = {d->n}, wei = {0};
    in[nxc ? nd - 1 : 1] = d->cin;
    out[nxc ? nd - 1 : 1] = d->cout;
    for (int a = 0; a < d->nsp; a++) {
        in[(nxc ? 1 : 2) + a] = d->in[a];
        out[(nxc ? 1 : 2) + a] = d->out[a];
    }
    if (!d->xio) {
        wei[0] = d->cin;
        wei[1] = d->cout / d->g;
        for (int a = 0; a < d->nsp; a++) wei[2 + a] = d->k[a];
    } else {
        for (int a = 0; a < d->nsp; a++) wei[a] = d->k[a];
        wei[d->nsp] = d->cout / d->g;
        wei[d->nsp + 1] = d->cin;
    }
    dnnl_status_t s = dnnl_graph_logical_tensor_init_with_dims(&lt[0], LT_IN,
            dt, nd, in, dnnl_graph_layout_type_strided,
            dnnl_graph_tensor_property_undef);
    if (s == dnnl_success)
        s = dnnl_graph_logical_tensor_init_with_dims(&lt[1], LT_WEI, dt, nd,
                wei, dnnl_graph_layout_type_strided,
                d->constant_weights ? dnnl_graph_tensor_property_constant
                                    : dnnl_graph_tensor_property_undef);
    if (s == dnnl_success)
        s = dnnl_graph_logical_tensor_init_with_dims(&lt[2], LT_OUT, dt, nd,
                out, dnnl_graph_layout_type_strided,
                dnnl_graph_tensor_property_undef);
    dnnl_dims_t bias = {d->cout};
    if (s == dnnl_success && d->bias)
        s = dnnl_graph_logical_tensor_init_with_dims(&lt[3], LT_BIAS, dt, 1,
                bias, dnnl_graph_layout_type_strided,
                dnnl_graph_tensor_property_undef);
    return s;
}

/* ConvTranspose and its attributes (the output shape is its own to
 * infer: no dst_shape). */
static dnnl_status_t make_conv_transpose(const graph_anchor_desc_t *d,
        const dnnl_graph_logical_tensor_t lt[4], dnnl_graph_op_t *op) {
    int64_t groups = d->g;
    const char *df = d->nxc ? "NXC" : "NCX";
    const char *wf = d->xio ? "XOI" : "IOX";
    size_t n = (size_t)d->nsp;
    dnnl_status_t s = dnnl_graph_op_create(op, 1,
            dnnl_graph_op_conv_transpose, "dgrad_anchor");
    if (s == dnnl_success) s = dnnl_graph_op_add_input(*op, &lt[0]);
    if (s == dnnl_success) s = dnnl_graph_op_add_input(*op, &lt[1]);
    if (s == dnnl_success && d->bias) s = dnnl_graph_op_add_input(*op, &lt[3]);
    if (s == dnnl_success) s = dnnl_graph_op_add_output(*op, &lt[2]);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_strides, d->s,
                n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_pads_begin,
                d->pb, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_pads_end,
                d->pe, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_dilations,
                d->d, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_output_padding,
                d->op, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_groups,
                &groups, 1);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_data_format,
                df, strlen(df));
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_weights_format,
                wf, strlen(wf));
    if (s == dnnl_success && d->auto_pad)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_auto_pad,
                d->auto_pad, strlen(d->auto_pad));
    return s;
}

/* The ConvolutionBackwardData op with its attributes. */
static dnnl_status_t make_op(const graph_anchor_desc_t *d,
        const dnnl_graph_logical_tensor_t lt[4], dnnl_graph_op_t *op) {
    if (d->conv_transpose) return make_conv_transpose(d, lt, op);
    int64_t shape[2 + GRAPH_ANCHOR_MAX_SP], groups = d->g;
    int nd = 2 + d->nsp;
    const int64_t *strides = d->s, *pb = d->pb, *pe = d->pe, *dil = d->d;
    memcpy(shape, lt[2].dims, sizeof(int64_t) * (size_t)nd);
    const char *df = d->nxc ? "NXC" : "NCX";
    const char *wf = d->xio ? "XIO" : "OIX";
    size_t n = (size_t)d->nsp;
    dnnl_status_t s = dnnl_graph_op_create(op, 1,
            dnnl_graph_op_convolution_backward_data, "dgrad_anchor");
    if (s == dnnl_success) s = dnnl_graph_op_add_input(*op, &lt[0]);
    if (s == dnnl_success) s = dnnl_graph_op_add_input(*op, &lt[1]);
    if (s == dnnl_success) s = dnnl_graph_op_add_output(*op, &lt[2]);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_strides,
                strides, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_pads_begin, pb,
                n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_pads_end, pe,
                n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_dilations,
                dil, n);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_groups,
                &groups, 1);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_s64(*op, dnnl_graph_op_attr_dst_shape,
                shape, (size_t)nd);
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_data_format,
                df, strlen(df));
    if (s == dnnl_success)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_weights_format,
                wf, strlen(wf));
    if (s == dnnl_success && d->auto_pad)
        s = dnnl_graph_op_set_attr_str(*op, dnnl_graph_op_attr_auto_pad,
                d->auto_pad, strlen(d->auto_pad));
    return s;
}

graph_anchor_t *graph_anchor_create(const graph_anchor_desc_t *d, void *in,
        void *wei, void *out, char *err, size_t err_size) {
    graph_anchor_t *g = calloc(1, sizeof *g);
    dnnl_graph_logical_tensor_t lt[4], ports[4];
    dnnl_graph_op_t op = NULL;
    const char *what = "engine creation";
    dnnl_status_t s = g ? dnnl_engine_create(&g->engine, dnnl_cpu, 0)
                        : dnnl_out_of_memory;
    if (s == dnnl_success) {
        what = "stream creation";
        s = dnnl_stream_create(&g->stream, g->engine,
                dnnl_stream_default_flags);
    }
    if (s == dnnl_success) {
        what = "logical tensors";
        s = logical_tensors(d, lt);
    }
    if (s == dnnl_success) {
        what = "the op";
        s = make_op(d, lt, &op);
    }
    if (s == dnnl_success) {
        what = "the graph";
        s = dnnl_graph_graph_create(&g->graph, dnnl_cpu);
    }
    if (s == dnnl_success) s = dnnl_graph_add_op(g->graph, op);
    if (s == dnnl_success) s = dnnl_graph_graph_finalize(g->graph);
    if (s == dnnl_success)
        s = dnnl_graph_graph_filter(g->graph,
                dnnl_graph_partition_policy_fusion);
    if (s == dnnl_success)
        s = dnnl_graph_graph_get_partition_num(g->graph, &g->n_partitions);
    if (s == dnnl_success && g->n_partitions != 1) {
        what = "partitioning (not one partition)";
        s = dnnl_unimplemented;
    }
    if (s == dnnl_success)
        s = dnnl_graph_graph_get_partitions(g->graph, 1, &g->partition);
    uint8_t supported = 0;
    if (s == dnnl_success)
        s = dnnl_graph_partition_is_supported(g->partition, &supported);
    if (s == dnnl_success && !supported) {
        what = "partitioning (the backend does not support the op)";
        s = dnnl_unimplemented;
    }
    /* The partition's input ports in its own order, matched by id. */
    size_t n_in = 0;
    if (s == dnnl_success) {
        g->n_inputs = d->bias ? 3 : 2;
        s = dnnl_graph_partition_get_input_ports_num(g->partition, &n_in);
    }
    if (s == dnnl_success && n_in != g->n_inputs) {
        what = "partitioning (not one input port per input)";
        s = dnnl_unimplemented;
    }
    if (s == dnnl_success)
        s = dnnl_graph_partition_get_input_ports(g->partition, n_in, ports);
    if (s == dnnl_success) {
        what = "compilation";
        s = dnnl_graph_compiled_partition_create(&g->compiled, g->partition);
    }
    const dnnl_graph_logical_tensor_t *ins[3], *outs[1] = {&lt[2]};
    void *handles[3];
    for (size_t i = 0; i < n_in && s == dnnl_success; i++) {
        size_t id = ports[i].id;
        ins[i] = &lt[id == LT_WEI ? 1 : id == LT_BIAS ? 3 : 0];
        handles[i] = id == LT_WEI ? wei : id == LT_BIAS ? d->bias : in;
    }
    if (s == dnnl_success)
        s = dnnl_graph_partition_compile(g->partition, g->compiled, n_in, ins,
                1, outs, g->engine);
    for (size_t i = 0; i < n_in && s == dnnl_success; i++) {
        what = "tensors";
        s = dnnl_graph_tensor_create(&g->inputs[i], ins[i], g->engine,
                handles[i]);
    }
    if (s == dnnl_success)
        s = dnnl_graph_tensor_create(&g->output, &lt[2], g->engine, out);
    dnnl_graph_op_destroy(op);
    if (s != dnnl_success) {
        snprintf(err, err_size, "oneDNN Graph %s failed (%s)", what,
                dnnl_status2str(s));
        graph_anchor_destroy(g);
        return NULL;
    }
    return g;
}

int graph_anchor_execute(graph_anchor_t *g) {
    const_dnnl_graph_tensor_t outs[1] = {g->output};
    if (dnnl_graph_compiled_partition_execute(g->compiled, g->stream,
                g->n_inputs,
                (const_dnnl_graph_tensor_t *)g->inputs, 1, outs)
            != dnnl_success)
        return -1;
    return dnnl_stream_wait(g->stream) == dnnl_success ? 0 : -1;
}

void graph_anchor_destroy(graph_anchor_t *g) {
    if (!g) return;
    for (int i = 0; i < 3; i++)
        if (g->inputs[i]) dnnl_graph_tensor_destroy(g->inputs[i]);
    if (g->output) dnnl_graph_tensor_destroy(g->output);
    if (g->compiled) dnnl_graph_compiled_partition_destroy(g->compiled);
    if (g->partition) dnnl_graph_partition_destroy(g->partition);
    if (g->graph) dnnl_graph_graph_destroy(g->graph);
    if (g->stream) dnnl_stream_destroy(g->stream);
    if (g->engine) dnnl_engine_destroy(g->engine);
    free(g);
}

int graph_anchor_available(void) { return 1; }

#else /* no oneDNN Graph */

graph_anchor_t *graph_anchor_create(const graph_anchor_desc_t *d, void *in,
        void *wei, void *out, char *err, size_t err_size) {
    snprintf(err, err_size, "built without oneDNN Graph (it needs oneDNN 3 "
            "with its graph API: scripts/build.sh --onednn3)");
    return NULL;
}

int graph_anchor_execute(graph_anchor_t *g) { return -1; }

void graph_anchor_destroy(graph_anchor_t *g) {}

int graph_anchor_available(void) { return 0; }

#endif
