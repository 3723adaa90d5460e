/*
 * `dgrad conform --oracle onednn-graph`: a case's expected output from
 * oneDNN Graph's own ConvolutionBackwardData (tools/graph_anchor.h) on the
 * same canonical data, instead of the oracle library's reference.
 *
 * A case of oneDNN Graph's ConvTranspose ("onednn:ConvTranspose") is given
 * to oneDNN Graph's ConvTranspose itself, with its own attributes
 * (output_padding included) and its bias as an input, so that the
 * library's own shape inference and padding rules are what dgrad is
 * compared with; its data go in as NCX/IOX, the same bytes as the
 * canonical order. The rest of this comment is about the other dialects.
 *
 * oneDNN Graph is given the case as the oneDNN dialect writes it: a
 * ConvolutionBackwardData case's own attributes (strides, dilations, pads,
 * auto_pad, groups), any other dialect's case as cf_model_translate puts
 * it into that dialect (explicit pads where they express the problem,
 * else SAME_*), so that oneDNN Graph applies its own padding rules; the
 * output shape is dgrad's resolved one, as dst_shape. The data go in as
 * NCX/OIX (canonical dense [G, Cin/G, Cout/G, K...] is OIX
 * [Cin, Cout/G, K...]); a bias (ONNX) is added afterwards in double, since
 * ConvolutionBackwardData has none. Where oneDNN Graph refuses the case,
 * or the oneDNN dialect cannot express it, the run is skipped with the
 * reason; where it computes something else, the reference decides which
 * of the two is wrong (runner_judge.c).
 *
 * oneDNN Graph runs in a child process: 3.7.1 lets a C++ exception out of
 * its C API on some problems (partition compilation of a bf16 case of the
 * quick sweep: "terminate called after throwing an instance of
 * 'dnnl::error'"), which would end the whole conformance run. The child
 * runs on one OpenMP thread (a forked child may not use the parent's
 * thread pool) and hands the output back through shared memory.
 */
#define _DEFAULT_SOURCE

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtype.h"
#include "graph_anchor.h"
#include "runner.h"

/* The first @p n values of integer-list attribute @p name of @p c, or
 * @p fallback each when absent or empty. 0 on a malformed list. (Cases
 * reach the oracle once the model accepted them, so a longer list is
 * oneDNN's 12 zeros.) */
static int attr_list(const cf_case_t *c, const char *name, int n,
        int64_t fallback, int64_t *out) {
    int64_t v[CF_MAX_LIST];
    int count = 0;
    const char *text = cf_case_attr(c, name);
    for (int i = 0; i < n; i++) out[i] = fallback;
    if (!text) return 1;
    if (!cf_parse_ints(text, v, CF_MAX_LIST, &count)) return 0;
    if (!count) return 1;
    if (count < n) return 0;
    for (int i = 0; i < n; i++) out[i] = v[i];
    return 1;
}

/* oneDNN Graph's description of @p c (in the oneDNN dialect) with @p g's
 * sizes. */
static int describe(const cf_case_t *c, const cf_geom_t *g,
        graph_anchor_desc_t *a, char *why, size_t size) {
    int n = g->nsp;
    if (!attr_list(c, "strides", n, 1, a->s)
            || !attr_list(c, "dilations", n, 1, a->d)
            || !attr_list(c, "pads_begin", n, 0, a->pb)
            || !attr_list(c, "pads_end", n, 0, a->pe)) {
        snprintf(why, size, "an attribute list cannot be read");
        return 0;
    }
    const char *ap = cf_case_attr(c, "auto_pad");
    a->auto_pad = NULL;
    if (a->conv_transpose
            && !attr_list(c, "output_padding", n, 0, a->op)) {
        snprintf(why, size, "output_padding cannot be read");
        return 0;
    }
    if (ap && !strcasecmp(ap, "SAME_UPPER")) a->auto_pad = "SAME_UPPER";
    else if (ap && !strcasecmp(ap, "SAME_LOWER")) a->auto_pad = "SAME_LOWER";
    else if (ap && !strcasecmp(ap, "VALID")) a->auto_pad = "VALID";
    return 1;
}

int cf_oracle_graph(const cf_case_t *c, const cf_geom_t *g, cdata_t *d,
        char *why, size_t size) {
    graph_anchor_desc_t a = {.nsp = g->nsp, .n = g->N, .g = g->G,
            .cin = g->Cin, .cout = g->Cout, .dt = d->dt};
    for (int i = 0; i < g->nsp; i++) {
        a.in[i] = g->X[i];
        a.out[i] = g->Y[i];
        a.k[i] = g->K[i];
    }
    const cf_case_t *in_onednn = c;
    cf_case_t *t = NULL;
    if (c->kind == dgrad_op_onednn_conv_transpose) {
        a.conv_transpose = 1; /* NCX/IOX: canonical bytes */
        a.bias = g->has_bias ? d->bias : NULL;
    } else if (c->kind != dgrad_op_convolution_backward_data) {
        char reason[256];
        t = malloc(sizeof *t);
        if (!t) {
            snprintf(why, size, "out of memory");
            return -1;
        }
        if (!cf_model_translate(c, g, 0, 0, t, reason, sizeof reason)) {
            snprintf(why, size, "the oneDNN dialect cannot express the "
                    "case: %s", reason);
            free(t);
            return 0;
        }
        in_onednn = t;
    }
    int described = describe(in_onednn, g, &a, why, size);
    free(t);
    if (!described) return 0;

    size_t es = dgrad_data_type_size(d->dt);
    size_t out_bytes = (size_t)(d->n_out > 0 ? d->n_out : 1) * es;
    /* Shared with the child: its status, its reason, the output. */
    size_t head = 1024, shared_bytes = head + out_bytes;
    char *shared = mmap(NULL, shared_bytes, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    d->oracle = malloc((size_t)(d->n_out > 0 ? d->n_out : 1) * sizeof(double));
    if (shared == MAP_FAILED || !d->oracle) {
        if (shared != MAP_FAILED) munmap(shared, shared_bytes);
        free(d->oracle);
        d->oracle = NULL;
        snprintf(why, size, "out of memory");
        return -1;
    }
    shared[0] = 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        omp_set_num_threads(1);
        char reason[512] = "";
        graph_anchor_t *anchor = graph_anchor_create(&a, d->in, d->wei,
                shared + head, reason, sizeof reason);
        int ok = anchor && graph_anchor_execute(anchor) == 0;
        if (anchor && !ok)
            snprintf(reason, sizeof reason, "oneDNN Graph's execution failed");
        graph_anchor_destroy(anchor);
        snprintf(shared + 1, head - 1, "%s", reason);
        shared[0] = ok ? 'y' : 'n';
        _exit(0);
    }
    int status = 0, ok = 0;
    if (pid < 0) {
        snprintf(why, size, "cannot start oneDNN Graph's process");
    } else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)
            || shared[0] == 0) {
        snprintf(why, size, "oneDNN Graph ended its process (%s %d)",
                WIFSIGNALED(status) ? "signal" : "status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    } else if (shared[0] != 'y') {
        snprintf(why, size, "%s", shared + 1);
    } else {
        ok = 1;
    }
    if (ok) {
        int64_t spatial = 1;
        for (int i = 0; i < g->nsp; i++) spatial *= g->Y[i];
        for (int64_t i = 0; i < d->n_out; i++) {
            double v = dgrad_load(shared + head, d->dt, i);
            if (g->has_bias && !a.conv_transpose) /* else: oneDNN's */
                v += dgrad_load(d->bias, d->dt, (i / spatial) % g->Cout);
            d->oracle[i] = v;
        }
    } else {
        free(d->oracle);
        d->oracle = NULL;
    }
    munmap(shared, shared_bytes);
    return ok;
}
