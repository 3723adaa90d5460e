/*
 * The partition flow: a host hands over a graph of ops (kind names, text
 * attributes, logical tensors with ids); every op becomes one partition,
 * claimed when dgrad can run it, otherwise left with the reason.
 *
 * "Can run" is decided by the same code as compile, minus oneDNN: the op
 * is built with dgrad_op_set_attr_by_name and its tensors are resolved
 * with dgrad_problem_resolve. Building no primitive keeps partitioning
 * cheap; the claimed op is kept in the result, so compiling it later
 * cannot disagree with the attributes that were checked.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "api_internal.h"
#include "dgrad/dgrad.h"
#include "error.h"
#include "plugin_internal.h"
#include "problem.h"

typedef struct partition {
    int claimed;
    int fused_away;      /* a post-op of another partition's op */
    size_t n_ops;        /* the op, then its post-ops */
    size_t op_ids[1 + DGRAD_MAX_POST_OPS];
    size_t op_index;     /* of the first op in the host's array */
    dgrad_op_kind_t kind;
    dgrad_op_t *op;      /* claimed partitions only */
    char *reason;        /* unclaimed partitions only */
    size_t n_inputs;     /* claimed: the op's inputs, then the operands */
    size_t input_ids[PLUGIN_MAX_COMPILE_INPUTS];
    size_t output_id;
} partition_t;

struct dgrad_plugin_partitions {
    size_t count;
    partition_t *items;
};

#define GRAPH_OP_SIZE PLUGIN_SIZE_THROUGH(dgrad_plugin_graph_op_t, outputs)
#define ATTR_SIZE PLUGIN_SIZE_THROUGH(dgrad_plugin_attr_t, value)

/* ------------------------------------------------------ graph checks */

/* An op's attribute array, inputs and outputs; NULL name or value texts
 * are errors (the host's graph is malformed, not merely unsupported). */
static dgrad_status_t check_graph_op(const dgrad_plugin_graph_op_t *g,
        size_t index) {
    char what[96];
    size_t stride;
    if (!g->kind)
        return dgrad_error(dgrad_invalid_arguments,
                "plugin: graph_partition ops[%zu] (id %zu) kind (NULL): "
                "every op needs a kind name", index, g->id);
    snprintf(what, sizeof what, "graph_partition ops[%zu] attrs", index);
    dgrad_status_t st = plugin_check_array(g->attrs, g->n_attrs, ATTR_SIZE,
            _Alignof(dgrad_plugin_attr_t), what, &stride);
    for (size_t a = 0; st == dgrad_success && a < g->n_attrs; a++) {
        const dgrad_plugin_attr_t *attr = plugin_element(g->attrs, stride, a);
        if (!attr->name || !attr->value)
            st = dgrad_error(dgrad_invalid_arguments,
                    "plugin: %s[%zu] %s (NULL): an attribute has a name and "
                    "a value text", what, a, !attr->name ? "name" : "value");
    }
    if (st == dgrad_success) {
        snprintf(what, sizeof what, "graph_partition ops[%zu] inputs", index);
        st = plugin_check_tensors(g->inputs, g->n_inputs, what, &stride);
    }
    if (st == dgrad_success) {
        snprintf(what, sizeof what, "graph_partition ops[%zu] outputs",
                index);
        st = plugin_check_tensors(g->outputs, g->n_outputs, what, &stride);
    }
    return st;
}

typedef struct id_owner {
    size_t id;
    size_t index;
} id_owner_t;

static int by_id_then_index(const void *a, const void *b) {
    const id_owner_t *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Partitions are reported by op id: two ops with one id would make the
 * answer ambiguous. Sorting keeps this O(n log n) for large graphs. */
static dgrad_status_t check_unique_op_ids(const dgrad_plugin_graph_op_t *ops,
        size_t n_ops, size_t stride) {
    if (n_ops < 2) return dgrad_success;
    id_owner_t *owners = dgrad_calloc(n_ops, sizeof *owners);
    if (!owners)
        return dgrad_error(dgrad_out_of_memory,
                "plugin: graph_partition (%zu ops): out of memory checking "
                "op ids", n_ops);
    for (size_t i = 0; i < n_ops; i++) {
        const dgrad_plugin_graph_op_t *g = plugin_element(ops, stride, i);
        owners[i] = (id_owner_t){g->id, i};
    }
    qsort(owners, n_ops, sizeof *owners, by_id_then_index);
    dgrad_status_t st = dgrad_success;
    for (size_t i = 1; i < n_ops && st == dgrad_success; i++)
        if (owners[i].id == owners[i - 1].id)
            st = dgrad_error(dgrad_invalid_arguments,
                    "plugin: graph_partition ops[%zu] and ops[%zu] id (%zu): "
                    "op ids must be unique", owners[i - 1].index,
                    owners[i].index, owners[i].id);
    free(owners);
    return st;
}

/* ------------------------------------------------------ classification */

/* Leaves the op unclaimed with a formatted reason. */
static dgrad_status_t leave(partition_t *p, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static dgrad_status_t leave(partition_t *p, const char *fmt, ...) {
    char text[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    p->reason = dgrad_strdup(text);
    if (!p->reason)
        return dgrad_error(dgrad_out_of_memory,
                "plugin: graph_partition: out of memory keeping a reason");
    return dgrad_success;
}

/* Builds the op of a dgrad kind and resolves its tensors. A failure of
 * the op's description is the reason it stays unclaimed (the core's
 * message names the kind, the values and the rule); only running out of
 * memory fails the whole partitioning. */
static dgrad_status_t classify_dgrad_op(const dgrad_plugin_graph_op_t *g,
        dgrad_op_kind_t kind, partition_t *p) {
    const char *kind_name = dgrad_op_kind_name(kind);
    dgrad_op_t *op = NULL;
    dgrad_logical_tensor_t inputs[PLUGIN_MAX_INPUTS], output;
    dgrad_resolved_t resolved;
    dgrad_status_t st = dgrad_op_create(&op, g->id, kind, NULL);
    if (st != dgrad_success) return st; /* out of memory, nothing held */
    /* The first rule the op breaks is its reason. */
    size_t attr_stride = g->n_attrs ? g->attrs->struct_size : 0;
    dgrad_status_t rule = dgrad_success;
    for (size_t a = 0; rule == dgrad_success && a < g->n_attrs; a++) {
        const dgrad_plugin_attr_t *attr =
                plugin_element(g->attrs, attr_stride, a);
        rule = dgrad_op_set_attr_by_name(op, attr->name, attr->value);
    }
    if (rule == dgrad_success && g->n_outputs != 1)
        rule = dgrad_error(dgrad_invalid_arguments,
                "%s: outputs (%zu given): the op has one output", kind_name,
                g->n_outputs);
    if (rule == dgrad_success && g->n_inputs > PLUGIN_MAX_INPUTS)
        rule = dgrad_error(dgrad_invalid_arguments,
                "%s: inputs (%zu given): the op takes 2 or 3", kind_name,
                g->n_inputs);
    if (rule == dgrad_success) {
        size_t stride = g->n_inputs ? g->inputs->struct_size : 0;
        for (size_t i = 0; i < g->n_inputs; i++)
            plugin_tensor_copy_in(&inputs[i],
                    plugin_element(g->inputs, stride, i));
        plugin_tensor_copy_in(&output, g->outputs);
        rule = dgrad_problem_resolve(dgrad_op_get_desc(op), g->n_inputs,
                inputs, &output, NULL, 0, &resolved);
    }
    if (rule == dgrad_out_of_memory) {
        dgrad_op_destroy(op);
        return rule;
    }
    if (rule == dgrad_success) {
        size_t stride = g->inputs->struct_size;
        p->claimed = 1;
        p->op = op;
        p->kind = kind;
        p->n_inputs = g->n_inputs;
        for (size_t i = 0; i < g->n_inputs; i++)
            p->input_ids[i] = ((const dgrad_logical_tensor_t *)plugin_element(
                    g->inputs, stride, i))->id;
        p->output_id = g->outputs->id;
    } else {
        dgrad_op_destroy(op);
        st = leave(p, "%s", dgrad_last_error_message());
    }
    return st;
}

/* ONNX and oneDNN Graph both call their op ConvTranspose. oneDNN Graph's
 * requires pads_begin and pads_end (its graph API refuses the op without
 * them), ONNX's has neither: a ConvTranspose with both is oneDNN Graph's,
 * any other ONNX's, as before dgrad ran both. One stray attribute (ONNX
 * with "groups") does not switch the meaning of the data layout. */
static dgrad_op_kind_t conv_transpose_dialect(
        const dgrad_plugin_graph_op_t *g) {
    size_t stride = g->n_attrs ? g->attrs->struct_size : 0;
    int begin = 0, end = 0;
    for (size_t a = 0; a < g->n_attrs; a++) {
        const char *name =
                ((const dgrad_plugin_attr_t *)plugin_element(g->attrs,
                         stride, a))->name;
        begin |= !strcmp(name, "pads_begin");
        end |= !strcmp(name, "pads_end");
    }
    return begin && end ? dgrad_op_onednn_conv_transpose
                        : dgrad_op_conv_transpose;
}

static dgrad_status_t classify(const dgrad_plugin_graph_op_t *g,
        partition_t *p) {
    p->n_ops = 1;
    p->op_ids[0] = g->id;
    dgrad_op_kind_t kind = plugin_kind_named(g->kind);
    if (kind == dgrad_op_conv_transpose) kind = conv_transpose_dialect(g);
    if (kind == dgrad_op_kind_undef)
        return leave(p, "op kind '%.64s' is not implemented by dgrad",
                g->kind);
    return classify_dgrad_op(g, kind, p);
}

/* ---------------------------------------------------------------- fusion */

/* Who reads a tensor: the consumers of every tensor id, sorted by id. */
typedef struct use {
    size_t tensor_id;
    size_t op_index;
    size_t position; /* which input of the op */
} use_t;

static int by_tensor(const void *a, const void *b) {
    const use_t *x = a, *y = b;
    if (x->tensor_id != y->tensor_id) return x->tensor_id < y->tensor_id ? -1 : 1;
    return x->op_index < y->op_index ? -1 : x->op_index > y->op_index;
}

/* The one use of tensor @p id, or NULL when it has none or several. */
static const use_t *only_use(const use_t *uses, size_t n, size_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (uses[mid].tensor_id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == n || uses[lo].tensor_id != id) return NULL;
    if (lo + 1 < n && uses[lo + 1].tensor_id == id) return NULL;
    return &uses[lo];
}

static const dgrad_logical_tensor_t *tensor_at(
        const dgrad_logical_tensor_t *array, size_t index) {
    return plugin_element(array, array->struct_size, index);
}

static int commutative(const char *kind) {
    return !strcmp(kind, "Add") || !strcmp(kind, "Multiply")
            || !strcmp(kind, "Maximum") || !strcmp(kind, "Minimum");
}

/* The op of partition @p p with post-ops @p chain (graph ops, in order)
 * built anew and resolved against its inputs and the last op's output:
 * dgrad_success and *@p out, or the rule it breaks (out of memory fails
 * the partitioning). @p operands: each post-op's other input, NULL for
 * unary ones. */
static dgrad_status_t build_fused(const dgrad_plugin_graph_op_t *g0,
        const partition_t *p, const dgrad_plugin_graph_op_t *const *chain,
        const dgrad_logical_tensor_t *const *operands, size_t n,
        dgrad_op_t **out) {
    dgrad_op_t *op = NULL;
    dgrad_status_t st = dgrad_op_create(&op, g0->id, p->kind, NULL);
    if (st != dgrad_success) return st;
    size_t stride = g0->n_attrs ? g0->attrs->struct_size : 0;
    for (size_t a = 0; st == dgrad_success && a < g0->n_attrs; a++) {
        const dgrad_plugin_attr_t *attr = plugin_element(g0->attrs, stride, a);
        st = dgrad_op_set_attr_by_name(op, attr->name, attr->value);
    }
    dgrad_logical_tensor_t inputs[PLUGIN_MAX_COMPILE_INPUTS], output;
    size_t n_inputs = g0->n_inputs;
    for (size_t i = 0; i < n_inputs; i++)
        plugin_tensor_copy_in(&inputs[i], tensor_at(g0->inputs, i));
    for (size_t k = 0; st == dgrad_success && k < n; k++) {
        const dgrad_plugin_graph_op_t *c = chain[k];
        const char *names[16], *values[16];
        size_t m = 0, cs = c->n_attrs ? c->attrs->struct_size : 0;
        for (size_t a = 0; a < c->n_attrs && m < 16; a++, m++) {
            const dgrad_plugin_attr_t *attr = plugin_element(c->attrs, cs, a);
            names[m] = attr->name;
            values[m] = attr->value;
        }
        st = c->n_attrs > 16 ? dgrad_error(dgrad_invalid_arguments,
                "%s: more than 16 attributes", c->kind)
                : dgrad_op_append_post_op(op, c->kind, m, names, values);
        if (operands[k]) plugin_tensor_copy_in(&inputs[n_inputs++], operands[k]);
    }
    if (st == dgrad_success) {
        dgrad_resolved_t resolved;
        plugin_tensor_copy_in(&output, chain[n - 1]->outputs);
        st = dgrad_problem_resolve(dgrad_op_get_desc(op), n_inputs, inputs,
                &output, NULL, 0, &resolved);
    }
    if (st == dgrad_success) *out = op;
    else dgrad_op_destroy(op);
    return st;
}

/* Extends claimed partition @p p with the ops that follow it (the rules in
 * dgrad_plugin.h), marking each one taken as fused away. */
static dgrad_status_t fuse_chain(const dgrad_plugin_graph_op_t *ops,
        size_t stride, partition_t *items, const use_t *uses, size_t n_uses,
        partition_t *p) {
    const dgrad_plugin_graph_op_t *g0 = plugin_element(ops, stride,
            p->op_index);
    const dgrad_plugin_graph_op_t *chain[DGRAD_MAX_POST_OPS];
    const dgrad_logical_tensor_t *operands[DGRAD_MAX_POST_OPS];
    size_t n = 0, index[DGRAD_MAX_POST_OPS], tail = p->output_id;
    for (;;) {
        const use_t *u = only_use(uses, n_uses, tail);
        if (!u) break;
        const dgrad_plugin_graph_op_t *c = plugin_element(ops, stride,
                u->op_index);
        partition_t *q = &items[u->op_index];
        if (q->claimed || q->fused_away || !dgrad_post_op_kind_known(c->kind))
            break;
        /* Where the chain stops at an op that could follow it, the op's
         * own partition says why it was not fused. */
        const char *why = n == DGRAD_MAX_POST_OPS
                ? "the chain already holds the most post-ops dgrad fuses"
                : c->n_outputs != 1 ? "a post-op has one output"
                : c->n_inputs < 1 || c->n_inputs > 2
                ? "a post-op takes one input, or two for a binary op"
                : c->n_inputs == 2 && u->position == 1
                        && !commutative(c->kind)
                ? "it takes the chain as its second input (only Add, "
                  "Multiply, Maximum and Minimum commute)"
                : c->n_inputs == 2
                        && tensor_at(c->inputs, 1 - u->position)->id == tail
                ? "both its inputs are the chain" : NULL;
        const dgrad_logical_tensor_t *other = !why && c->n_inputs == 2
                ? tensor_at(c->inputs, 1 - u->position) : NULL;
        dgrad_status_t st = dgrad_success;
        dgrad_op_t *op = NULL;
        if (!why) {
            chain[n] = c;
            operands[n] = other;
            st = build_fused(g0, p, chain, operands, n + 1, &op);
            if (st == dgrad_out_of_memory) return st;
        }
        if (why || st != dgrad_success) {
            char *old = q->reason;
            if (leave(q, "not fused after op %zu (%s): %s", g0->id,
                        g0->kind, why ? why : dgrad_last_error_message())
                    != dgrad_success) {
                q->reason = old;
                return dgrad_out_of_memory;
            }
            free(old);
            break;
        }
        dgrad_op_destroy(p->op);
        p->op = op;
        index[n++] = u->op_index;
        tail = c->outputs->id;
    }
    for (size_t k = 0; k < n; k++) {
        items[index[k]].fused_away = 1;
        p->op_ids[p->n_ops++] = chain[k]->id;
        if (operands[k]) p->input_ids[p->n_inputs++] = operands[k]->id;
    }
    p->output_id = tail;
    dgrad_error_clear(); /* a stopped chain is not an error */
    return dgrad_success;
}

/* Fuses every claimed partition with its post-ops, then drops the
 * partitions of the ops taken. */
static dgrad_status_t fuse(const dgrad_plugin_partition_args_t *args,
        size_t stride, dgrad_plugin_partitions_t *result) {
    size_t n_uses = 0;
    for (size_t i = 0; i < args->n_ops; i++)
        n_uses += ((const dgrad_plugin_graph_op_t *)plugin_element(args->ops,
                stride, i))->n_inputs;
    use_t *uses = dgrad_calloc(n_uses ? n_uses : 1, sizeof *uses);
    if (!uses)
        return dgrad_error(dgrad_out_of_memory, "plugin: graph_partition "
                "(%zu ops): out of memory finding the consumers of tensors",
                args->n_ops);
    size_t k = 0;
    for (size_t i = 0; i < args->n_ops; i++) {
        const dgrad_plugin_graph_op_t *g = plugin_element(args->ops, stride, i);
        for (size_t j = 0; j < g->n_inputs; j++)
            uses[k++] = (use_t){tensor_at(g->inputs, j)->id, i, j};
    }
    qsort(uses, n_uses, sizeof *uses, by_tensor);
    dgrad_status_t st = dgrad_success;
    for (size_t i = 0; st == dgrad_success && i < result->count; i++)
        if (result->items[i].claimed)
            st = fuse_chain(args->ops, stride, result->items, uses, n_uses,
                    &result->items[i]);
    free(uses);
    size_t kept = 0;
    for (size_t i = 0; i < result->count; i++) {
        if (result->items[i].fused_away) {
            free(result->items[i].reason);
            continue;
        }
        result->items[kept++] = result->items[i];
    }
    result->count = kept;
    return st;
}

/* --------------------------------------------------------------- entries */

dgrad_status_t plugin_partitions_destroy(
        dgrad_plugin_partitions_t *partitions) {
    if (!partitions) return dgrad_success;
    for (size_t i = 0; i < partitions->count; i++) {
        dgrad_op_destroy(partitions->items[i].op);
        free(partitions->items[i].reason);
    }
    free(partitions->items);
    free(partitions);
    return dgrad_success;
}

static dgrad_status_t partitions_create(size_t count,
        dgrad_plugin_partitions_t **out) {
    dgrad_plugin_partitions_t *result = dgrad_calloc(1, sizeof *result);
    if (result && count) {
        result->items = dgrad_calloc(count, sizeof *result->items);
        if (result->items) result->count = count;
    }
    if (!result || (count && !result->items)) {
        free(result);
        return dgrad_error(dgrad_out_of_memory,
                "plugin: graph_partition (%zu ops): out of memory", count);
    }
    *out = result;
    return dgrad_success;
}

dgrad_status_t plugin_graph_partition(dgrad_plugin_partition_args_t *args) {
    dgrad_error_clear();
    dgrad_plugin_partitions_t *result = NULL;
    size_t stride = 0;
    dgrad_status_t st = plugin_check_struct(args,
            PLUGIN_SIZE_THROUGH(dgrad_plugin_partition_args_t, partitions),
            "graph_partition args");
    if (st == dgrad_success)
        st = plugin_check_array(args->ops, args->n_ops, GRAPH_OP_SIZE,
                _Alignof(dgrad_plugin_graph_op_t), "graph_partition ops",
                &stride);
    for (size_t i = 0; st == dgrad_success && i < args->n_ops; i++)
        st = check_graph_op(plugin_element(args->ops, stride, i), i);
    if (st == dgrad_success)
        st = check_unique_op_ids(args->ops, args->n_ops, stride);
    if (st == dgrad_success) st = partitions_create(args->n_ops, &result);
    for (size_t i = 0; st == dgrad_success && i < args->n_ops; i++) {
        result->items[i].op_index = i;
        st = classify(plugin_element(args->ops, stride, i),
                &result->items[i]);
    }
    uint32_t flags = st == dgrad_success && args->struct_size
                    >= PLUGIN_SIZE_THROUGH(dgrad_plugin_partition_args_t, flags)
            ? args->flags : 0;
    if (st == dgrad_success && (flags & DGRAD_PLUGIN_PARTITION_FUSE))
        st = fuse(args, stride, result);
    if (st == dgrad_success) {
        args->partitions = result;
        /* Reasons of unclaimed ops passed through the error message; a
         * successful call leaves none behind. */
        dgrad_error_clear();
    } else {
        plugin_partitions_destroy(result);
    }
    return st;
}

dgrad_status_t plugin_partitions_count(
        const dgrad_plugin_partitions_t *partitions, size_t *count) {
    dgrad_error_clear();
    if (!partitions || !count)
        return dgrad_error(dgrad_invalid_arguments,
                "plugin: partitions_count %s (NULL): required",
                !partitions ? "partitions" : "count");
    *count = partitions->count;
    return dgrad_success;
}

dgrad_status_t plugin_partitions_get(
        const dgrad_plugin_partitions_t *partitions, size_t index,
        dgrad_plugin_partition_info_t *info) {
    dgrad_error_clear();
    dgrad_status_t st = partitions ? dgrad_success
            : dgrad_error(dgrad_invalid_arguments,
                    "plugin: partitions_get partitions (NULL): required");
    if (st == dgrad_success)
        st = plugin_check_struct(info,
                PLUGIN_SIZE_THROUGH(dgrad_plugin_partition_info_t, reason),
                "partitions_get info");
    if (st == dgrad_success && index >= partitions->count)
        st = dgrad_error(dgrad_invalid_arguments,
                "plugin: partitions_get index (%zu, %zu partitions): must be "
                "below the count", index, partitions->count);
    if (st == dgrad_success) {
        const partition_t *p = &partitions->items[index];
        info->claimed = p->claimed;
        info->n_op_ids = p->n_ops;
        info->op_ids = p->op_ids;
        info->op = p->op;
        info->reason = p->reason ? p->reason : "";
        /* ABI 1.2 fields, within the host's struct only. */
        if (info->struct_size >= PLUGIN_SIZE_THROUGH(
                    dgrad_plugin_partition_info_t, output_id)) {
            info->n_inputs = p->claimed ? p->n_inputs : 0;
            info->input_ids = p->input_ids;
            info->output_id = p->output_id;
        }
    }
    return st;
}
