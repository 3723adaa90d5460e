/*
 * A oneDNN Graph file's graph as a whole, and the post-op chains in it.
 *
 * The graph reader runs each op dgrad runs together with the chain of
 * post-ops that follows it, as one fused partition, the way a graph
 * compiler gets it from graph_partition with DGRAD_PLUGIN_PARTITION_FUSE
 * (runner_fused.c hands the whole graph over and checks the partition).
 * Which ops make the chain is read here from dgrad_plugin.h's rules, and
 * whether a link is a valid post-op with its attributes and operand is
 * the conformance model's call (model_post.c), so neither the plugin's
 * partitioning nor src/post_ops.c decides what is expected of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_chain.h"

/* A JSON value as attribute text: integers, f32 numbers (9 digits give
 * the float back), strings, booleans, and lists of numbers. */
static void value_text(json_t *v, char *buf, size_t size) {
    buf[0] = '\0';
    if (json_is_object(v)) v = json_object_get(v, "value");
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(buf, size, "%.9g", json_real_value(v));
    } else if (json_is_string(v)) {
        snprintf(buf, size, "%s", json_string_value(v));
    } else if (json_is_boolean(v)) {
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
    } else if (json_is_array(v)) {
        size_t i, used = 0;
        json_t *e;
        if (!json_array_size(v)) snprintf(buf, size, "[]");
        json_array_foreach(v, i, e) {
            char one[40];
            value_text(e, one, sizeof one);
            if (used + strlen(one) + 2 >= size) break;
            used += (size_t)snprintf(buf + used, size - used, "%s%s",
                    i ? "," : "", one);
        }
    }
}

static void read_lt(json_t *lt, cf_graph_lt_t *t) {
    memset(t, 0, sizeof *t);
    t->id = (size_t)json_integer_value(json_object_get(lt, "id"));
    const char *dt = json_string_value(json_object_get(lt, "dtype"));
    t->dt = dt ? cf_data_type_named(dt) : dgrad_data_type_undef;
    const char *layout = json_string_value(json_object_get(lt, "layout_type"));
    const char *prop = json_string_value(json_object_get(lt, "property_type"));
    t->t.layout_any = layout && !strcmp(layout, "any");
    t->constant = prop && !strcmp(prop, "constant");
    json_t *shape = json_object_get(lt, "shape");
    size_t n = json_array_size(shape);
    if (!json_is_array(shape) || n > DGRAD_MAX_NDIMS) {
        t->t.ndims = DGRAD_UNKNOWN_NDIMS;
        return;
    }
    t->t.ndims = (int32_t)n;
    for (size_t d = 0; d < n; d++)
        t->t.dims[d] = json_integer_value(json_array_get(shape, d));
    json_t *stride = json_object_get(lt, "stride");
    int ok = !t->t.layout_any && json_is_array(stride)
            && json_array_size(stride) == n && n > 0;
    for (size_t d = 0; ok && d < n; d++) {
        json_t *s = json_array_get(stride, d);
        ok = json_is_integer(s) && json_integer_value(s) >= 0;
        t->t.strides[d] = json_integer_value(s);
    }
    t->t.has_strides = ok; /* else dense, as the graph reader takes it */
}

static int read_lts(json_t *arr, cf_graph_lt_t **out, int *n) {
    size_t i, k = 0;
    json_t *lt;
    *n = 0;
    *out = calloc(json_array_size(arr) + 1, sizeof **out);
    if (!*out) return 0;
    json_array_foreach(arr, i, lt) {
        if (!json_is_integer(json_object_get(lt, "id"))) continue;
        read_lt(lt, &(*out)[k++]);
    }
    *n = (int)k;
    return 1;
}

int cf_graph_read(json_t *ops, cf_graph_t *g) {
    memset(g, 0, sizeof *g);
    g->ops = calloc(json_array_size(ops) + 1, sizeof *g->ops);
    if (!g->ops) return 0;
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) {
        json_t *id = json_object_get(op, "id");
        const char *kind = json_string_value(json_object_get(op, "kind"));
        if (!json_is_integer(id) || !kind) continue;
        cf_graph_op_t *o = &g->ops[g->n_ops++];
        o->id = (size_t)json_integer_value(id);
        snprintf(o->kind, sizeof o->kind, "%s", kind);
        json_t *attrs = json_object_get(op, "attrs");
        o->attrs = calloc(json_object_size(attrs) + 1, sizeof *o->attrs);
        if (!o->attrs) return 0;
        const char *key;
        json_t *v;
        json_object_foreach(attrs, key, v) {
            cf_attr_t *a = &o->attrs[o->n_attrs++];
            snprintf(a->name, sizeof a->name, "%s", key);
            value_text(v, a->value, sizeof a->value);
        }
        if (!read_lts(json_object_get(op, "inputs"), &o->inputs, &o->n_inputs)
                || !read_lts(json_object_get(op, "outputs"), &o->outputs,
                        &o->n_outputs))
            return 0;
    }
    return 1;
}

void cf_graph_free(cf_graph_t *g) {
    for (int i = 0; i < g->n_ops; i++) {
        free(g->ops[i].attrs);
        free(g->ops[i].inputs);
        free(g->ops[i].outputs);
    }
    free(g->ops);
    g->ops = NULL;
    g->n_ops = 0;
}

/* ------------------------------------------------------------ chains */

static int commutative(const char *kind) {
    return !strcmp(kind, "Add") || !strcmp(kind, "Multiply")
            || !strcmp(kind, "Maximum") || !strcmp(kind, "Minimum");
}

/* The one op that reads tensor @p id (and which of its inputs), or NULL
 * when none or several do (an op reading it twice counts twice). */
static const cf_graph_op_t *only_reader(const cf_graph_t *g, size_t id,
        int *pos) {
    const cf_graph_op_t *r = NULL;
    int uses = 0;
    for (int i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++)
            if (g->ops[i].inputs[k].id == id) {
                r = &g->ops[i];
                *pos = k;
                uses++;
            }
    return uses == 1 ? r : NULL;
}

/* The known dims of @p t agree with @p want (R of them). */
static int dims_agree(const cf_tensor_t *t, const int64_t *want, int R) {
    if (t->ndims < 0) return 1;
    if (t->ndims != R) return 0;
    for (int d = 0; d < R; d++)
        if (t->dims[d] >= 0 && t->dims[d] != want[d]) return 0;
    return 1;
}

int cf_graph_chain(const cf_graph_t *g, size_t op_id, cf_case_t *c) {
    const cf_graph_op_t *op = NULL;
    for (int i = 0; i < g->n_ops && !op; i++)
        if (g->ops[i].id == op_id) op = &g->ops[i];
    if (!op || op->n_outputs != 1) return 0;
    cf_case_t *trial = malloc(sizeof *trial);
    if (!trial) return 0;
    size_t tail = op->outputs[0].id;
    c->n_post = 0;
    while (c->n_post < DGRAD_MAX_POST_OPS) {
        int pos = 0;
        const cf_graph_op_t *u = only_reader(g, tail, &pos);
        if (!u || u->n_outputs != 1 || u->n_attrs > CF_POST_ATTRS) break;
        int operands = cf_model_post_kind_operands(u->kind);
        if (operands < 0 || u->n_inputs != 1 + operands
                || (pos == 1 && !commutative(u->kind)))
            break;
        *trial = *c;
        cf_post_t *po = &trial->post[trial->n_post++];
        memset(po, 0, sizeof *po);
        snprintf(po->kind, sizeof po->kind, "%s", u->kind);
        po->n_attrs = u->n_attrs;
        memcpy(po->attrs, u->attrs, (size_t)u->n_attrs * sizeof *u->attrs);
        po->graph_id = u->id;
        po->chain_input = pos;
        if (operands) {
            const cf_graph_lt_t *other = &u->inputs[1 - pos];
            po->has_operand = 1;
            po->operand = other->t; /* in the run's type, as the op's */
            po->operand_id = other->id;
        }
        trial->output = u->outputs[0].t;
        cf_geom_t geom;
        char why[CF_MESSAGE / 2];
        int64_t want[2 + CF_MAX_SPATIAL];
        if (!cf_model_resolve(trial, &geom, why, sizeof why)) break;
        cf_model_output_dims(&geom, want);
        if (!dims_agree(&trial->output, want, 2 + geom.nsp)) break;
        *c = *trial;
        c->graph_output_id = tail = u->outputs[0].id;
    }
    free(trial);
    if (c->n_post) {
        c->graph = g;
        c->graph_op_id = op_id;
    }
    return c->n_post;
}
