/*
 * The output of every op dgrad runs in a rewritten batch run is inferred
 * again.
 *
 * ConvolutionBackwardData: a dst_shape the line's --op-attrs gives (not
 * all zeros) is the output shape (benchdnn's rule). Otherwise N follows
 * diff_dst, the channels follow the weights and groups, and the spatial
 * sizes stay the file's when the op's geometry (input spatial sizes,
 * kernel, strides, dilations, pads, auto_pad) is unchanged, else they are
 * the natural ones (F - pads for explicit pads, F for VALID, X * stride
 * for SAME_*); a non-zero dst_shape in the file is rewritten to match.
 *
 * ConvTranspose: its output shape is a function of its attributes, so it
 * is always computed, as benchdnn does: F - pads + output_padding, with
 * VALID's pads 0 and SAME_*'s total max((K-1)*D+1 - S, 0). (benchdnn's
 * own SAME total is K - S, dilation left out, and keeps the file's pads
 * when that is negative; oneDNN's library, whose rule the op's output
 * must follow, dilates the kernel and pads 0. They agree on every line of
 * oneDNN's harness; where they would not, the library's rule is the one
 * an output must satisfy.)
 *
 * The element-wise ops around them (the quantization ops that feed a
 * quantized pattern, the post-ops after it) keep their input's dims, or
 * broadcast both inputs (numpy): so a line that rewrites a quantized
 * pattern's graph inputs still gives its ConvTranspose and post-ops
 * their shapes, as benchdnn's shape inference does.
 *
 * Output strides follow benchdnn: the output's own tag, or the data
 * input's tag when the line changed a layout or a rank.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "reader_batch.h"

/* Integer list attribute @p name of @p op, or @p dflt (n values). */
static int op_ints(json_t *op, const char *name, int64_t *v, int n,
        int64_t dflt) {
    json_t *a = json_object_get(json_object_get(json_object_get(op, "attrs"),
            name), "value");
    int m = json_is_array(a) ? (int)json_array_size(a) : 0;
    for (int i = 0; i < n; i++)
        v[i] = i < m ? json_integer_value(json_array_get(a, (size_t)i)) : dflt;
    return m;
}

static const char *op_str(json_t *op, const char *name, const char *dflt) {
    const char *s = json_string_value(json_object_get(
            json_object_get(json_object_get(op, "attrs"), name), "value"));
    return s ? s : dflt;
}

/* The spatial geometry of an op dgrad runs: what its output spatial sizes
 * depend on. */
typedef struct geom {
    int nsp, nxc;
    int64_t N, Cout, X[3], K[3], S[3], D[3], pb[3], pe[3], op[3];
    char auto_pad[24];
} geom_t;

static int op_geom(json_t *op, geom_t *g) {
    memset(g, 0, sizeof *g);
    json_t *ins = json_object_get(op, "inputs");
    int64_t x[DGRAD_MAX_NDIMS], w[DGRAD_MAX_NDIMS];
    int nx = batch_lt_dims(json_array_get(ins, 0), x), nw = batch_lt_dims(json_array_get(ins, 1), w);
    if (nx < 3 || nx > 5 || nw != nx) return 0;
    g->nsp = nx - 2;
    g->nxc = strcmp(op_str(op, "data_format", "NXC"), "NCX") != 0;
    /* ConvTranspose's names of the same two layouts: XOI (default) has
     * XIO's shape [K..., Cout/G, Cin], IOX OIX's [Cin, Cout/G, K...]. */
    int ct = batch_is_ct(op);
    int xio = strcmp(op_str(op, "weights_format", ct ? "XOI" : "XIO"),
                      ct ? "IOX" : "OIX") != 0;
    json_t *groups = json_object_get(json_object_get(json_object_get(op, "attrs"),
            "groups"), "value");
    int64_t G = json_is_integer(groups) ? json_integer_value(groups) : 1;
    g->N = x[0];
    g->Cout = G * (xio ? w[g->nsp] : w[1]);
    for (int i = 0; i < g->nsp; i++) {
        g->X[i] = g->nxc ? x[1 + i] : x[2 + i];
        g->K[i] = xio ? w[i] : w[2 + i];
    }
    op_ints(op, "strides", g->S, g->nsp, 1);
    op_ints(op, "dilations", g->D, g->nsp, 1);
    op_ints(op, "pads_begin", g->pb, g->nsp, 0);
    op_ints(op, "pads_end", g->pe, g->nsp, 0);
    op_ints(op, "output_padding", g->op, g->nsp, 0); /* 12 zeros: zeros */
    snprintf(g->auto_pad, sizeof g->auto_pad, "%s", op_str(op, "auto_pad", "None"));
    for (char *p = g->auto_pad; *p; p++) *p = (char)tolower((unsigned char)*p);
    return 1;
}

static int same_spatial_geom(const geom_t *a, const geom_t *b) {
    size_t n = (size_t)a->nsp * sizeof(int64_t);
    return a->nsp == b->nsp && !memcmp(a->X, b->X, n) && !memcmp(a->K, b->K, n)
            && !memcmp(a->S, b->S, n) && !memcmp(a->D, b->D, n)
            && !memcmp(a->pb, b->pb, n) && !memcmp(a->pe, b->pe, n)
            && !strcmp(a->auto_pad, b->auto_pad);
}

/* ConvTranspose's output spatial sizes: always from its attributes. */
static void ct_sizes(const geom_t *g, int64_t *y) {
    for (int i = 0; i < g->nsp; i++) {
        int64_t reach = (g->K[i] - 1) * g->D[i] + 1;
        int64_t F = g->S[i] * (g->X[i] - 1) + reach, total = reach - g->S[i];
        if (!strncmp(g->auto_pad, "same", 4))
            y[i] = F + g->op[i] - (total > 0 ? total : 0);
        else if (!strcmp(g->auto_pad, "valid")) y[i] = F + g->op[i];
        else y[i] = F - g->pb[i] - g->pe[i] + g->op[i];
    }
}

/* The output dims (dialect order) of op @p op after the rewrites; @p orig
 * is the same op in the file as written. */
static int infer_output(json_t *op, json_t *orig, int dst_shape_given,
        int64_t *out, int *nd) {
    geom_t g, g0;
    if (!op_geom(op, &g)) return 0;
    *nd = g.nsp + 2;
    int64_t v[CF_MAX_LIST];
    int n = op_ints(op, "dst_shape", v, CF_MAX_LIST, 0);
    if (dst_shape_given) { /* the line's own dst_shape: benchdnn's rule */
        if (n != *nd) return 0;
        memcpy(out, v, (size_t)n * sizeof *v);
        return 1;
    }
    int64_t y[3];
    int ct = batch_is_ct(op);
    if (ct) ct_sizes(&g, y);
    int keep = !ct && op_geom(orig, &g0) && same_spatial_geom(&g, &g0);
    if (keep) { /* the file's spatial sizes: its dst_shape, else output */
        int64_t f[CF_MAX_LIST];
        int nf = op_ints(orig, "dst_shape", f, CF_MAX_LIST, 0), zero = 1;
        for (int i = 0; i < nf; i++) zero = zero && f[i] == 0;
        if (zero) nf = batch_lt_dims(json_array_get(json_object_get(orig, "outputs"), 0), f);
        keep = nf == *nd;
        for (int i = 0; keep && i < g.nsp; i++) {
            y[i] = f[g0.nxc ? 1 + i : 2 + i];
            keep = y[i] > 0;
        }
    }
    for (int i = 0; !ct && !keep && i < g.nsp; i++) {
        int64_t F = g.S[i] * (g.X[i] - 1) + (g.K[i] - 1) * g.D[i] + 1;
        if (!strncmp(g.auto_pad, "same", 4)) y[i] = g.X[i] * g.S[i];
        else if (!strcmp(g.auto_pad, "valid")) y[i] = F;
        else y[i] = F - g.pb[i] - g.pe[i];
    }
    out[0] = g.N;
    out[g.nxc ? *nd - 1 : 1] = g.Cout;
    for (int i = 0; i < g.nsp; i++) out[g.nxc ? 1 + i : 2 + i] = y[i];
    return 1;
}

/* The output dims of an element-wise op from its inputs' (current) dims,
 * as oneDNN Graph's shape inference gives them: the quantization ops and
 * the unary post-op kinds keep their input's; the binary ones broadcast
 * both inputs by numpy's rules (auto_broadcast none: the first input's);
 * BiasAdd keeps its first input's. 0 for other kinds or shapes that do
 * not broadcast. */
static int infer_elementwise(json_t *op, int64_t *out, int *nd) {
    static const char *const same[] = {"Dequantize", "Quantize", "TypeCast",
            "DynamicDequantize", "DynamicQuantize", "BiasAdd"};
    const char *kind = json_string_value(json_object_get(op, "kind"));
    json_t *ins = json_object_get(op, "inputs");
    int operands = kind ? cf_model_post_kind_operands(kind) : -1;
    int keep = operands == 0;
    for (size_t k = 0; kind && k < sizeof same / sizeof same[0]; k++)
        keep |= !strcmp(kind, same[k]);
    if (!keep && operands != 1) return 0;
    *nd = batch_lt_dims(json_array_get(ins, 0), out);
    if (*nd < 0) return 0;
    if (keep || !strcmp(op_str(op, "auto_broadcast", "numpy"), "none")) return 1;
    int64_t b[DGRAD_MAX_NDIMS];
    int nb = batch_lt_dims(json_array_get(ins, 1), b);
    if (nb < 0) return 0;
    int n = *nd > nb ? *nd : nb;
    int64_t r[DGRAD_MAX_NDIMS];
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - *nd ? 1 : out[i - (n - *nd)];
        int64_t y = i < n - nb ? 1 : b[i - (n - nb)];
        if (x != y && x != 1 && y != 1) return 0;
        r[i] = x == 1 ? y : x;
    }
    memcpy(out, r, (size_t)n * sizeof *r);
    *nd = n;
    return 1;
}

/* Sets the output of @p op to @p dims, with its tag (or the data input's
 * when the line changed a layout or a rank); 1 when that changed it. */
static int set_output(doc_t *d, json_t *op, const int64_t *dims, int nd) {
    json_t *o = json_array_get(json_object_get(op, "outputs"), 0);
    json_t *ins = json_object_get(op, "inputs");
    int64_t old[DGRAD_MAX_NDIMS];
    int old_nd = batch_lt_dims(o, old);
    tensor_info_t *t = batch_tensor(d, json_integer_value(json_object_get(o, "id")));
    tensor_info_t *in0 = batch_tensor(d, json_integer_value(json_object_get(
            json_array_get(ins, 0), "id")));
    char tag[DGRAD_MAX_NDIMS + 1] = "";
    if (d->change_stride && in0) snprintf(tag, sizeof tag, "%s", in0->tag);
    else if (t) snprintf(tag, sizeof tag, "%s", t->tag);
    int changed = old_nd != nd || memcmp(old, dims, (size_t)nd * sizeof *dims)
            || (t && strcmp(t->tag, tag));
    if (t) {
        snprintf(t->tag, sizeof t->tag, "%s", tag);
        t->inferred = 1;
    }
    batch_set_tensor(d, json_integer_value(json_object_get(o, "id")), dims, nd, tag);
    return changed;
}

/* Outputs of the ops dgrad runs and of the element-wise ops, inferred
 * again in graph order, repeated until nothing changes (a file lists its
 * ops in order; one pass per op at most otherwise). */
void batch_reinfer_outputs(doc_t *d, json_t *orig_ops,
        const unsigned char *dst_shape_given) {
    size_t i, passes = json_array_size(d->ops) + 1;
    json_t *op;
    for (size_t pass = 0; pass < passes; pass++) {
        int changed = 0;
        json_array_foreach(d->ops, i, op) {
            json_t *o = json_array_get(json_object_get(op, "outputs"), 0);
            int64_t dims[DGRAD_MAX_NDIMS];
            int nd;
            if (!json_is_object(o)) continue;
            if (!batch_is_run(op)) {
                if (infer_elementwise(op, dims, &nd))
                    changed |= set_output(d, op, dims, nd);
                continue;
            }
            if (!infer_output(op, json_array_get(orig_ops, i),
                        i < 256 && dst_shape_given[i], dims, &nd))
                continue; /* the graph reader reports what is wrong */
            json_t *dst = json_object_get(json_object_get(op, "attrs"), "dst_shape");
            int64_t v[CF_MAX_LIST];
            int n = op_ints(op, "dst_shape", v, CF_MAX_LIST, 0), zero = 1;
            for (int k = 0; k < n; k++) zero = zero && v[k] == 0;
            if (json_is_object(dst) && !zero) /* rewritten to match */
                json_object_set_new(dst, "value", batch_ints_json(dims, nd));
            changed |= set_output(d, op, dims, nd);
        }
        if (!changed) break;
    }
}
