/* The plugin table's compile and execute entries take their arguments in
 * versioned structs; these fill them the same way for every tool that
 * drives dgrad as a graph compiler does (dgrad bench, dgrad conform). */
#ifndef DGRAD_TOOL_PLUGIN_CALLS_H
#define DGRAD_TOOL_PLUGIN_CALLS_H

#include <string.h>

#include "dgrad/dgrad_plugin.h"

/* compiled_op_create; *compiled is NULL on failure. */
static inline dgrad_status_t tool_plugin_compile(
        const dgrad_plugin_api_t *api, const dgrad_op_t *op, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs, dgrad_logical_tensor_t *output,
        dgrad_compiled_op_t **compiled) {
    dgrad_plugin_compile_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.op = op;
    args.n_inputs = n_inputs;
    args.inputs = inputs;
    args.output = output;
    dgrad_status_t st = api->compiled_op_create(&args);
    *compiled = st == dgrad_success ? args.compiled : NULL;
    return st;
}

/* compiled_op_execute; @p capacity and @p output_lt as in
 * dgrad_plugin_execute_args_t (0 and NULL when the output is known). */
static inline dgrad_status_t tool_plugin_execute(
        const dgrad_plugin_api_t *api, const dgrad_compiled_op_t *compiled,
        size_t n_inputs, const void *const *inputs, void *output,
        size_t capacity, dgrad_logical_tensor_t *output_lt) {
    dgrad_plugin_execute_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.compiled = compiled;
    args.n_inputs = n_inputs;
    args.inputs = inputs;
    args.output = output;
    args.output_capacity = capacity;
    args.output_lt = output_lt;
    return api->compiled_op_execute(&args);
}

#endif
