/*
 * The runner's backend over the core API (include/dgrad/dgrad.h), for the
 * Criterion tests and the development runner. It needs the whole library:
 * nothing in the `dgrad` command refers to this file, so the static
 * library's copy of it is never linked there.
 */
#include <string.h>

#include "conform.h"

static dgrad_status_t op_create(void *ctx, dgrad_op_kind_t kind,
        const char *name, void **op) {
    dgrad_op_t *o = NULL;
    dgrad_status_t st = dgrad_op_create(&o, 0, kind, name);
    *op = o;
    return st;
}

static dgrad_status_t op_set_attr(void *ctx, void *op, const char *name,
        const char *value) {
    return dgrad_op_set_attr_by_name(op, name, value);
}

static void op_destroy(void *ctx, void *op) { dgrad_op_destroy(op); }

static dgrad_status_t compile(void *ctx, void *op, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs, dgrad_logical_tensor_t *output,
        void **compiled) {
    dgrad_compiled_op_t *c = NULL;
    dgrad_status_t st = dgrad_compiled_op_create(&c, op, n_inputs, inputs, output);
    *compiled = c;
    return st;
}

static dgrad_status_t execute(void *ctx, void *compiled, size_t n_inputs,
        const void *const *inputs, void *output, size_t capacity,
        dgrad_logical_tensor_t *output_lt) {
    return dgrad_compiled_op_execute_dynamic(compiled, n_inputs, inputs,
            output, capacity, output_lt);
}

static void compiled_destroy(void *ctx, void *compiled) {
    dgrad_compiled_op_destroy(compiled);
}

static const char *impl_name(void *ctx, void *compiled) {
    return dgrad_compiled_op_impl_name(compiled);
}

static const char *last_error(void *ctx) {
    const char *s = dgrad_last_error_message();
    return *s ? s : "(no message)";
}

static const char *status_name(void *ctx, dgrad_status_t st) {
    return dgrad_status_name(st);
}

void cf_backend_core_init(cf_backend_t *b) {
    memset(b, 0, sizeof *b);
    b->name = "core";
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
