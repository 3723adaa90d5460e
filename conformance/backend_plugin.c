/*
 * The runner's backend over a plugin table, as a graph compiler would
 * drive dgrad: ops built by kind and attributes from text, compiled and
 * executed through the ABI structs; post-op chains appended
 * (op_append_post_op) or taken from graph_partition's fused partitions,
 * both ABI 1.2. The ABI 1.0 entries run every case without a chain, so
 * any major-1 plugin runs those suites. The table is the loaded module's
 * (`dgrad conform`) or the same table linked in over the core library
 * (backend_core.c: tests and dgrad_conform_core).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"
#include "dgrad/dgrad_plugin.h"
#include "plugin_calls.h"

static const dgrad_plugin_api_t *api_of(void *ctx) { return ctx; }

static dgrad_status_t op_create(void *ctx, dgrad_op_kind_t kind,
        const char *name, void **op) {
    dgrad_op_t *o = NULL;
    dgrad_status_t st = api_of(ctx)->op_create(&o, 0, kind, name);
    *op = o;
    return st;
}

static dgrad_status_t op_set_attr(void *ctx, void *op, const char *name,
        const char *value) {
    return api_of(ctx)->op_set_attr_by_name(op, name, value);
}

static void op_destroy(void *ctx, void *op) { api_of(ctx)->op_destroy(op); }

static dgrad_status_t compile(void *ctx, void *op, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs, dgrad_logical_tensor_t *output,
        void **compiled) {
    dgrad_compiled_op_t *c = NULL;
    dgrad_status_t st = tool_plugin_compile(api_of(ctx), op, n_inputs, inputs,
            output, &c);
    *compiled = c;
    return st;
}

static dgrad_status_t execute(void *ctx, void *compiled, size_t n_inputs,
        const void *const *inputs, void *output, size_t capacity,
        dgrad_logical_tensor_t *output_lt) {
    return tool_plugin_execute(api_of(ctx), compiled, n_inputs, inputs,
            output, capacity, output_lt);
}

static void compiled_destroy(void *ctx, void *compiled) {
    api_of(ctx)->compiled_op_destroy(compiled);
}

static const char *impl_name(void *ctx, void *compiled) {
    const char *s = api_of(ctx)->compiled_op_impl_name(compiled);
    return s ? s : "?";
}

static const char *last_error(void *ctx) {
    const char *s = api_of(ctx)->last_error_message();
    return s && *s ? s : "(no message)";
}

static const char *status_name(void *ctx, dgrad_status_t st) {
    const char *s = api_of(ctx)->status_name(st);
    return s ? s : "unknown_status";
}

static dgrad_status_t op_append_post_op(void *ctx, void *op, const char *kind,
        size_t n_attrs, const char *const *names, const char *const *values) {
    return api_of(ctx)->op_append_post_op(op, kind, n_attrs, names, values);
}

static dgrad_status_t partition_fused(void *ctx, size_t n_ops,
        const dgrad_plugin_graph_op_t *ops, size_t op_id, cf_partition_t *part,
        void **handle) {
    const dgrad_plugin_api_t *api = api_of(ctx);
    dgrad_plugin_partition_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.n_ops = n_ops;
    args.ops = ops;
    args.flags = DGRAD_PLUGIN_PARTITION_FUSE;
    memset(part, 0, sizeof *part);
    *handle = NULL;
    dgrad_status_t st = api->graph_partition(&args);
    if (st != dgrad_success) return st;
    *handle = args.partitions;
    size_t n = 0;
    st = api->partitions_count(args.partitions, &n);
    for (size_t i = 0; st == dgrad_success && i < n && !part->found; i++) {
        dgrad_plugin_partition_info_t info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        st = api->partitions_get(args.partitions, i, &info);
        if (st != dgrad_success || !info.n_op_ids || info.op_ids[0] != op_id)
            continue;
        part->found = 1;
        part->claimed = info.claimed;
        part->op = info.op;
        snprintf(part->reason, sizeof part->reason, "%s",
                info.reason ? info.reason : "");
        part->n_op_ids = info.n_op_ids;
        for (size_t k = 0; k < info.n_op_ids && k < 1 + CF_MAX_POST; k++)
            part->op_ids[k] = info.op_ids[k];
        part->n_inputs = info.n_inputs;
        for (size_t k = 0; k < info.n_inputs && k < 3 + CF_MAX_POST; k++)
            part->input_ids[k] = info.input_ids[k];
        part->output_id = info.output_id;
    }
    return st;
}

static void partitions_destroy(void *ctx, void *handle) {
    api_of(ctx)->partitions_destroy(handle);
}

static dgrad_status_t in_place_input(void *ctx, void *compiled,
        int64_t *index) {
    return api_of(ctx)->compiled_op_query_in_place_input(compiled, index);
}

void cf_backend_plugin_init(cf_backend_t *b, const dgrad_plugin_api_t *api) {
    memset(b, 0, sizeof *b);
    b->name = "plugin";
    b->ctx = (void *)api;
    b->op_create = op_create;
    b->op_set_attr = op_set_attr;
    b->op_destroy = op_destroy;
    b->compile = compile;
    b->execute = execute;
    b->compiled_destroy = compiled_destroy;
    b->impl_name = impl_name;
    b->last_error = last_error;
    b->status_name = status_name;
    if (DGRAD_PLUGIN_API_HAS(api, op_append_post_op)) {
        b->op_append_post_op = op_append_post_op;
        b->partition_fused = partition_fused;
        b->partitions_destroy = partitions_destroy;
    }
    if (DGRAD_PLUGIN_API_HAS(api, compiled_op_query_in_place_input))
        b->in_place_input = in_place_input;
}
