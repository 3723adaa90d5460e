/*
 * `dgrad conform --oracle onednn-graph`: a case's expected output from
 * oneDNN Graph's own ConvolutionBackwardData (tools/graph_anchor.h) on the
 * same canonical data, instead of the oracle library's reference. The
 * canonical problem goes to oneDNN Graph as the oneDNN dialect writes it:
 * NCX data, OIX weights ([G, Cin/G, Cout/G, K...] dense is OIX
 * [Cin, Cout/G, K...]), explicit pads, dst_shape; a bias (ONNX) is added
 * afterwards in double, since ConvolutionBackwardData has none. Where
 * oneDNN Graph refuses the problem the run is skipped with its reason:
 * those are the cases on which the two disagree about meaning or range
 * (the README lists them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph_anchor.h"
#include "runner.h"

int cf_oracle_graph(const cf_geom_t *g, cdata_t *d, char *why, size_t size) {
    graph_anchor_desc_t a = {.nsp = g->nsp, .n = g->N, .g = g->G,
            .cin = g->Cin, .cout = g->Cout, .dt = d->dt};
    for (int i = 0; i < g->nsp; i++) {
        int64_t natural = (g->X[i] - 1) * g->S[i] + (g->K[i] - 1) * g->D[i]
                + 1;
        a.in[i] = g->X[i];
        a.out[i] = g->Y[i];
        a.k[i] = g->K[i];
        a.s[i] = g->S[i];
        a.d[i] = g->D[i];
        a.pb[i] = g->PB[i];
        a.pe[i] = natural - g->Y[i] - g->PB[i];
    }
    size_t es = dgrad_data_type_size(d->dt);
    void *out = malloc((size_t)(d->n_out > 0 ? d->n_out : 1) * es);
    d->oracle = malloc((size_t)(d->n_out > 0 ? d->n_out : 1) * sizeof(double));
    if (!out || !d->oracle) {
        free(out);
        snprintf(why, size, "out of memory");
        return -1;
    }
    graph_anchor_t *anchor = graph_anchor_create(&a, d->in, d->wei, out, why,
            size);
    int ok = anchor && graph_anchor_execute(anchor) == 0;
    if (anchor && !ok) snprintf(why, size, "oneDNN Graph's execution failed");
    graph_anchor_destroy(anchor);
    if (ok) {
        int64_t spatial = 1;
        for (int i = 0; i < g->nsp; i++) spatial *= g->Y[i];
        for (int64_t i = 0; i < d->n_out; i++) {
            double v = dgrad_load(out, d->dt, i);
            if (g->has_bias)
                v += dgrad_load(d->bias, d->dt, (i / spatial) % g->Cout);
            d->oracle[i] = v;
        }
    } else {
        free(d->oracle);
        d->oracle = NULL;
    }
    free(out);
    return ok;
}
