/*
 * oneDNN Graph's own ConvolutionBackwardData as an independent party: the
 * anchor `dgrad bench` times dgrad against, and an oracle of `dgrad
 * conform` (which also builds oneDNN Graph's inference op ConvTranspose,
 * for dgrad's "onednn:ConvTranspose"). Available in builds against
 * oneDNN 3 with its graph API (graph_anchor_available); elsewhere creation
 * fails with the reason.
 */
#ifndef DGRAD_GRAPH_ANCHOR_H
#define DGRAD_GRAPH_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

#include "dgrad/dgrad.h"

#define GRAPH_ANCHOR_MAX_SP 3

/* The op in oneDNN Graph's terms: cin channels in (diff_dst), cout out
 * (diff_src), spatial arrays outermost first; d the dilations counted
 * from 1, pb/pe the pads at the beginning and end, auto_pad its attribute
 * (NULL: "None"); out is dst_shape's spatial part; nxc/xio the data and
 * weights formats.
 * conv_transpose: ConvTranspose instead (cin channels in src, cout out of
 * dst): out is then the output's spatial dims, which oneDNN Graph infers
 * from the attributes and checks; op is its output_padding; xio means
 * XOI (the same shape [K..., Cout/G, Cin]), else IOX ([Cin, Cout/G,
 * K...]); bias, when not NULL, its [cout] values, an input. */
typedef struct graph_anchor_desc {
    int nsp;
    int64_t n, g, cin, cout;
    int64_t in[GRAPH_ANCHOR_MAX_SP], out[GRAPH_ANCHOR_MAX_SP];
    int64_t k[GRAPH_ANCHOR_MAX_SP], s[GRAPH_ANCHOR_MAX_SP];
    int64_t d[GRAPH_ANCHOR_MAX_SP], pb[GRAPH_ANCHOR_MAX_SP];
    int64_t pe[GRAPH_ANCHOR_MAX_SP];
    const char *auto_pad;
    int nxc, xio, constant_weights;
    dgrad_data_type_t dt;
    int conv_transpose;
    int64_t op[GRAPH_ANCHOR_MAX_SP];
    void *bias;
} graph_anchor_desc_t;

typedef struct graph_anchor graph_anchor_t;

/* Builds the graph, partitions it and compiles its one partition for
 * dense tensors in @p d's formats bound to @p in, @p wei, d->bias (read)
 * and @p out (written by each execution). NULL with the reason in @p err
 * when oneDNN Graph refuses any step. */
graph_anchor_t *graph_anchor_create(const graph_anchor_desc_t *d, void *in,
        void *wei, void *out, char *err, size_t err_size);
/* 0 on success. */
int graph_anchor_execute(graph_anchor_t *a);
/* NULL accepted. */
void graph_anchor_destroy(graph_anchor_t *a);
int graph_anchor_available(void);

#endif
