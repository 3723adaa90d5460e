/*
 * The runner's backend over a plugin table, as a graph compiler would
 * drive dgrad: ops built by kind and attributes from text, compiled and
 * executed through the ABI structs. Only ABI 1.0 entries are used, so any
 * major-1 plugin runs the suites. The table is the loaded module's
 * (`dgrad conform`) or the same table linked in over the core library
 * (backend_core.c: tests and dgrad_conform_core).
 */
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
}
