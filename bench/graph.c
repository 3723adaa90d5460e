/*
 * The anchor in `dgrad bench`: oneDNN Graph's own partition for the
 * problem (tools/graph_anchor.c), in the run's formats and type on the
 * user's buffers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "graph_anchor.h"

struct bench_graph {
    graph_anchor_t *a;
};

bench_graph_t *bench_graph_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout, int constant_weights,
        void *in, void *wei, void *out, char *err, size_t err_size) {
    graph_anchor_desc_t g = {.nsp = d->nsp, .n = d->mb, .g = d->g,
            .cin = d->ic, .cout = d->oc, .nxc = layout == bench_nxc,
            .xio = wlayout == bench_xio, .constant_weights = constant_weights,
            .dt = dt};
    for (int a = 0; a < d->nsp; a++) {
        g.in[a] = d->i[a];
        g.out[a] = d->o[a];
        g.k[a] = d->k[a];
        g.s[a] = d->s[a];
        g.d[a] = d->d[a] + 1; /* bench descriptors count from 0 */
        g.pb[a] = d->p[a];
        g.pe[a] = bench_desc_pad_end(d, a);
    }
    graph_anchor_t *a = graph_anchor_create(&g, in, wei, out, err, err_size);
    if (!a) return NULL;
    bench_graph_t *b = malloc(sizeof *b);
    if (!b) {
        graph_anchor_destroy(a);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    b->a = a;
    return b;
}

int bench_graph_execute(bench_graph_t *g) { return graph_anchor_execute(g->a); }

void bench_graph_destroy(bench_graph_t *g) {
    if (!g) return;
    graph_anchor_destroy(g->a);
    free(g);
}

int bench_graph_available(void) { return graph_anchor_available(); }
