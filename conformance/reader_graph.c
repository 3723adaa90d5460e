/*
 * Reader of oneDNN Graph JSON graph files, in benchdnn's format: version,
 * engine_kind, fpmath_mode, input_ports, output_ports and graph[] of ops
 * (id, name, kind, attrs as {type, value}, inputs and outputs as logical
 * tensors with id, dtype, shape, stride, layout_type, property_type).
 *
 * Every ConvolutionBackwardData op and every ConvTranspose op (oneDNN
 * Graph's inference op, dgrad's "onednn:ConvTranspose") runs on generated
 * data, with the logical tensors the file gives (strides included): on
 * its own, or with the chain of post-ops that follows it as one fused
 * partition (graph_chain.c: the case carries the chain and the whole
 * graph, which the runner hands to graph_partition). Ops of other kinds
 * are skipped with their kind named, the links of a chain excepted. The
 * dst_shape input's values are not in such files: they are the output's
 * dims. A ConvTranspose's optional third input is its bias.
 *
 * benchdnn writes an unset dst_shape or output_padding as DNNL_MAX_NDIMS
 * (12) zeros; such values are passed on as they are: "not given" is the
 * dialect's rule (src/problem.c, and the conformance model), not the
 * reader's.
 */
#include <stdio.h>
#include <string.h>

#include "graph_chain.h"

/* The oneDNN Graph op kinds this reader runs. */
typedef enum { OP_CBD = 1, OP_CT = 2 } op_bit_t;
typedef struct graph_kind {
    const char *name; /* the file's kind */
    op_bit_t bit;
    dgrad_op_kind_t kind;
    const char *inputs, *output; /* for messages */
} graph_kind_t;
static const graph_kind_t graph_kinds[] = {
        {"ConvolutionBackwardData", OP_CBD, dgrad_op_convolution_backward_data,
                "diff_dst, weights, optional dst_shape", "diff_src"},
        {"ConvTranspose", OP_CT, dgrad_op_onednn_conv_transpose,
                "src, weights, optional bias", "dst"},
};
#define N_GRAPH_KINDS (sizeof graph_kinds / sizeof graph_kinds[0])

typedef enum { A_LIST, A_INT, A_STRING } atype_t;
static const struct {
    const char *name;
    atype_t type;
    unsigned ops; /* op_bit_t of the ops that have it */
} conv_attrs[] = {
        {"strides", A_LIST, OP_CBD | OP_CT},
        {"pads_begin", A_LIST, OP_CBD | OP_CT},
        {"pads_end", A_LIST, OP_CBD | OP_CT},
        {"dilations", A_LIST, OP_CBD | OP_CT},
        {"auto_pad", A_STRING, OP_CBD | OP_CT},
        {"output_padding", A_LIST, OP_CBD | OP_CT},
        {"groups", A_INT, OP_CBD | OP_CT},
        {"data_format", A_STRING, OP_CBD | OP_CT},
        {"weights_format", A_STRING, OP_CBD | OP_CT},
        {"dst_shape", A_LIST, OP_CBD},
};
#define N_CONV_ATTRS (sizeof conv_attrs / sizeof conv_attrs[0])
static const char *const type_names[] = {"s64[]", "s64", "string"};

/* One {type, value} attribute of an op of kind @p k; *text empty when the
 * value means unset. */
static int read_attr(jctx_t *j, const graph_kind_t *k, const char *name,
        json_t *obj, const char *path, char *text, size_t size) {
    char p[JPATH];
    size_t a = 0;
    while (a < N_CONV_ATTRS && (strcmp(conv_attrs[a].name, name)
                                       || !(conv_attrs[a].ops & k->bit)))
        a++;
    if (a == N_CONV_ATTRS) {
        char list[256] = "";
        for (size_t i = 0; i < N_CONV_ATTRS; i++)
            if (conv_attrs[i].ops & k->bit)
                snprintf(list + strlen(list), sizeof list - strlen(list),
                        "%s%s", list[0] ? ", " : "", conv_attrs[i].name);
        return jerr(j, path, "unknown attribute", "'%.64s' is not an attribute "
                "of %s (it has %s)", name, k->name, list);
    }
    const char *type = NULL;
    if (!jexpect_object(j, obj, path)
            || !jget_string(j, obj, path, "type", 1, &type))
        return 0;
    json_t *v = json_object_get(obj, "value");
    if (!v) return jerr(j, path, "missing field", "an attribute has a 'value'");
    const char *want = type_names[conv_attrs[a].type];
    if (strcmp(type, want))
        return jerr(j, jpath_key(p, path, "type"), "wrong type", "%s is %s, "
                "not '%.32s'", name, want, type);
    jpath_key(p, path, "value");
    text[0] = '\0';
    if (conv_attrs[a].type == A_LIST) {
        int64_t vals[CF_MAX_LIST];
        int n;
        if (!jget_ints(j, v, p, INT64_MIN, vals, CF_MAX_LIST, &n)) return 0;
        if (n) cf_format_ints(text, size, vals, n);
        else snprintf(text, size, "[]"); /* an empty list, not "unset" */
    } else if (conv_attrs[a].type == A_INT) {
        if (!json_is_integer(v))
            return jerr(j, p, "wrong type", "expected an integer, got %s",
                    jtype(v));
        snprintf(text, size, "%lld", (long long)json_integer_value(v));
    } else {
        if (!json_is_string(v))
            return jerr(j, p, "wrong type", "expected a string, got %s", jtype(v));
        if (strlen(json_string_value(v)) >= size)
            return jerr(j, p, "too large", "the string is too long");
        snprintf(text, size, "%s", json_string_value(v));
    }
    return 1;
}

static int parse_dtype(const char *s, dgrad_data_type_t *dt) {
    *dt = cf_data_type_named(s);
    return *dt != dgrad_data_type_undef;
}

/* One logical tensor. Outputs may have unknown (-1) dims and layout any. */
static int read_lt(jctx_t *j, json_t *obj, const char *path, int output,
        cf_tensor_t *t, dgrad_data_type_t *dt, int *constant) {
    char p[JPATH];
    const char *dtype = NULL, *layout = "strided", *property = "undef";
    int64_t id;
    if (!jexpect_object(j, obj, path)
            || !jget_int(j, obj, path, "id", 1, &id, NULL)
            || !jget_string(j, obj, path, "dtype", 1, &dtype)
            || !jget_string(j, obj, path, "layout_type", 0, &layout)
            || !jget_string(j, obj, path, "property_type", 0, &property))
        return 0;
    if (!parse_dtype(dtype, dt))
        return jerr(j, jpath_key(p, path, "dtype"), "bad value", "'%.32s' is "
                "not one of f32, bf16, f16, s32, s64", dtype);
    json_t *shape = json_object_get(obj, "shape");
    if (!shape) return jerr(j, path, "missing field", "a logical tensor has a 'shape'");
    int nd;
    if (!jget_dims(j, shape, jpath_key(p, path, "shape"), output ? -1 : 0,
                t->dims, &nd))
        return 0;
    t->ndims = nd;
    if (!strcmp(layout, "any")) {
        if (!output)
            return jerr(j, jpath_key(p, path, "layout_type"), "bad value",
                    "an input's layout is strided (the runner provides it)");
        t->layout_any = 1;
    } else if (strcmp(layout, "strided") && strcmp(layout, "undef")) {
        return jerr(j, jpath_key(p, path, "layout_type"), "bad value", "'%.32s'"
                " is not strided, any or undef", layout);
    }
    if (strcmp(property, "constant") && strcmp(property, "variable")
            && strcmp(property, "undef"))
        return jerr(j, jpath_key(p, path, "property_type"), "bad value",
                "'%.32s' is not undef, variable or constant", property);
    *constant = !strcmp(property, "constant");
    json_t *stride = json_object_get(obj, "stride");
    if (stride && !t->layout_any) {
        int64_t s[DGRAD_MAX_NDIMS];
        int ns, unknown = 0;
        if (!jget_ints(j, stride, jpath_key(p, path, "stride"), -1, s,
                    DGRAD_MAX_NDIMS, &ns))
            return 0;
        for (int i = 0; i < ns; i++) unknown |= s[i] < 0;
        /* Empty or unknown (-1) strides: dense, as for layout undef. */
        if (ns && !unknown) {
            if (ns != nd)
                return jerr(j, jpath_key(p, path, "stride"), "inconsistent",
                        "%d strides for %d dims", ns, nd);
            memcpy(t->strides, s, (size_t)nd * sizeof *s);
            t->has_strides = 1;
        }
    }
    return 1;
}

/* The graph's chains: found in a first pass over the run ops (errors
 * silent: the second pass reports them), then each run op's case carries
 * its chain and the ops of the chains are not skips. */
typedef struct chains {
    const cf_graph_t *graph; /* NULL: no chains looked for */
    int deliver;             /* 0: the first pass */
    int n_fused;
    size_t fused[4 * DGRAD_MAX_POST_OPS];
} chains_t;

static int is_fused(const chains_t *ch, int64_t id) {
    for (int i = 0; i < ch->n_fused; i++)
        if ((int64_t)ch->fused[i] == id) return 1;
    return 0;
}

static void read_op(jctx_t *j, json_t *op, const char *path, chains_t *ch) {
    char p[JPATH], q[JPATH];
    int64_t id;
    const char *kind = NULL, *name = NULL;
    if (!jexpect_object(j, op, path) || !jget_int(j, op, path, "id", 1, &id, NULL)
            || !jget_string(j, op, path, "kind", 1, &kind)
            || !jget_string(j, op, path, "name", 0, &name))
        return;
    cf_case_t c;
    cf_case_init(&c);
    snprintf(c.name, sizeof c.name, "%s#op%lld:%.64s", j->file, (long long)id,
            name ? name : kind);
    snprintf(c.suite, sizeof c.suite, "%s", j->file);
    snprintf(c.where, sizeof c.where, "%s:%s", j->file, path);
    const graph_kind_t *k = NULL;
    for (size_t i = 0; i < N_GRAPH_KINDS && !k; i++)
        if (!strcmp(kind, graph_kinds[i].name)) k = &graph_kinds[i];
    if (!k) {
        if (!ch->deliver || is_fused(ch, id)) return; /* run in a chain */
        static const char *const runs[] = {"ConvolutionBackwardData",
                "ConvTranspose"};
        const char *near = cf_near_kind(kind, runs, 2);
        if (near) {
            jerr(j, jpath_key(p, path, "kind"), "unknown op kind", "'%.64s' is "
                    "not a oneDNN Graph op kind dgrad knows; did you mean %s?",
                    kind, near);
            return;
        }
        char reason[320];
        if (cf_model_post_kind_operands(kind) >= 0)
            snprintf(reason, sizeof reason, "op kind %.64s is not run (a "
                    "post-op runs in the chain after a ConvolutionBackwardData "
                    "or ConvTranspose, and the fusion rules of dgrad_plugin.h "
                    "put none before this one)", kind);
        else
            snprintf(reason, sizeof reason, "op kind %.64s is not run (dgrad "
                    "runs ConvolutionBackwardData and ConvTranspose)", kind);
        j->sink->on_skip(j->sink, j->file, c.name, reason);
        return;
    }
    c.kind = k->kind;
    json_t *attrs = json_object_get(op, "attrs");
    if (attrs) {
        jpath_key(p, path, "attrs");
        if (!jexpect_object(j, attrs, p)) return;
        const char *key;
        json_t *v;
        json_object_foreach(attrs, key, v) {
            char text[CF_ATTR_VALUE];
            if (!read_attr(j, k, key, v, jpath_key(q, p, key), text,
                        sizeof text))
                return;
            if (text[0] && !cf_case_add_attr(&c, key, text)) {
                jerr(j, q, "too large", "too many attributes");
                return;
            }
        }
    }
    json_t *ins = json_object_get(op, "inputs"), *outs = json_object_get(op, "outputs");
    if (!ins || !outs) {
        jerr(j, path, "missing field", "an op has '%s'", ins ? "outputs" : "inputs");
        return;
    }
    if (!json_is_array(ins) || json_array_size(ins) < 2 || json_array_size(ins) > 3) {
        jerr(j, jpath_key(p, path, "inputs"), "bad value", "%s takes 2 or 3 "
                "inputs (%s)", k->name, k->inputs);
        return;
    }
    if (!json_is_array(outs) || json_array_size(outs) != 1) {
        jerr(j, jpath_key(p, path, "outputs"), "bad value", "%s has 1 output "
                "(%s)", k->name, k->output);
        return;
    }
    dgrad_data_type_t dt;
    int constant, unused;
    jpath_key(p, path, "inputs");
    if (!read_lt(j, json_array_get(ins, 0), jpath_index(q, p, 0), 0, &c.data,
                &dt, &unused)
            || !read_lt(j, json_array_get(ins, 1), jpath_index(q, p, 1), 0,
                    &c.weights, &dt, &constant))
        return;
    c.constant_weights = constant;
    if (!read_lt(j, json_array_get(outs, 0),
                jpath_index(q, jpath_key(p, path, "outputs"), 0), 1, &c.output,
                &dt, &unused))
        return;
    if (json_array_size(ins) == 3 && k->bit == OP_CT) {
        /* The bias: 1-D, one value per output channel (the model checks
         * its length); its dtype is the run's, as the other tensors'. */
        dgrad_data_type_t bias_dt;
        jpath_index(q, jpath_key(p, path, "inputs"), 2);
        if (!read_lt(j, json_array_get(ins, 2), q, 0, &c.bias, &bias_dt, &unused))
            return;
        if (c.bias.ndims != 1) {
            jerr(j, q, "inconsistent", "the bias input is 1-D (%d dims "
                    "given)", (int)c.bias.ndims);
            return;
        }
        c.third = cf_third_bias;
    } else if (json_array_size(ins) == 3) {
        cf_tensor_t shape;
        memset(&shape, 0, sizeof shape);
        jpath_index(q, jpath_key(p, path, "inputs"), 2);
        if (!read_lt(j, json_array_get(ins, 2), q, 0, &shape, &c.shape_dt, &unused))
            return;
        if (c.shape_dt != dgrad_s32 && c.shape_dt != dgrad_s64) {
            jerr(j, q, "bad value", "the dst_shape input is s32 or s64");
            return;
        }
        if (shape.ndims != 1 || shape.dims[0] != c.output.ndims) {
            jerr(j, q, "inconsistent", "the dst_shape input is 1-D with one "
                    "value per output dim (%d)", (int)c.output.ndims);
            return;
        }
        for (int d = 0; d < c.output.ndims; d++)
            if (c.output.dims[d] < 0) {
                jerr(j, q, "inconsistent", "the dst_shape input's values are "
                        "not in the file and the output dims are unknown");
                return;
            }
        c.third = cf_third_shape;
        c.n_shape = (int)c.output.ndims;
        memcpy(c.shape_values, c.output.dims, sizeof c.shape_values);
    }
    /* The chain after the op (graph_chain.c): the case is then the fused
     * partition, named after its ops. */
    if (ch->graph && cf_graph_chain(ch->graph, (size_t)id, &c)) {
        for (int i = 0; i < c.n_post; i++) {
            if (!ch->deliver && ch->n_fused < (int)(sizeof ch->fused / sizeof ch->fused[0]))
                ch->fused[ch->n_fused++] = c.post[i].graph_id;
            size_t l = strlen(c.name);
            snprintf(c.name + l, sizeof c.name - l, "+op%zu:%s",
                    c.post[i].graph_id, c.post[i].kind);
        }
    }
    if (!ch->deliver) return;
    for (const char *s = c.name; *s; s++) c.seed = c.seed * 31u + (unsigned char)*s;
    j->sink->on_case(j->sink, &c);
}

static void quiet_case(cf_sink_t *s, const cf_case_t *c) { (void)s, (void)c; }
static void quiet_skip(cf_sink_t *s, const char *a, const char *b,
        const char *c) {
    (void)s, (void)a, (void)b, (void)c;
}
static void quiet_error(cf_sink_t *s, const char *a, const char *b) {
    (void)s, (void)a, (void)b;
}

static void read_root(jctx_t *j, json_t *root) {
    char p[JPATH];
    if (!jexpect_object(j, root, "$")) return;
    const char *s;
    if (!jget_string(j, root, "$", "version", 0, &s)
            || !jget_string(j, root, "$", "engine_kind", 0, &s)
            || !jget_string(j, root, "$", "fpmath_mode", 0, &s))
        return;
    static const char *const ports[] = {"input_ports", "output_ports"};
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(root, ports[k]);
        size_t i;
        json_t *e;
        if (!v) continue;
        if (!json_is_array(v)) {
            jerr(j, jpath_key(p, "$", ports[k]), "wrong type", "expected a list "
                    "of tensor ids, got %s", jtype(v));
            return;
        }
        json_array_foreach(v, i, e) if (!json_is_integer(e)) {
            char q[JPATH];
            jerr(j, jpath_index(q, jpath_key(p, "$", ports[k]), i),
                    "wrong type", "expected an integer, got %s", jtype(e));
            return;
        }
    }
    json_t *graph;
    if (!jget_array(j, root, "$", "graph", "a oneDNN Graph file has 'graph'",
                "an array of ops", &graph))
        return;
    size_t i;
    json_t *op;
    cf_graph_t g;
    chains_t ch;
    memset(&ch, 0, sizeof ch);
    if (cf_graph_read(graph, &g)) {
        cf_sink_t quiet = {quiet_case, quiet_skip, quiet_error};
        jctx_t first = {&quiet, j->file, 0};
        ch.graph = &g;
        json_array_foreach(graph, i, op)
            read_op(&first, op, jpath_index(p, "$.graph", i), &ch);
    }
    ch.deliver = 1;
    json_array_foreach(graph, i, op) read_op(j, op, jpath_index(p, "$.graph", i), &ch);
    cf_graph_free(&g);
}

int cf_graph_from_json(jctx_t *j, json_t *root) {
    read_root(j, root);
    return j->errors;
}
