/*
 * query_support: may dgrad run an op of this kind on these input tensors?
 *
 * It must allocate nothing, so that a graph compiler can ask about every
 * op of a graph cheaply. It therefore builds no op and compiles nothing:
 * it reads the kind name and judges the tensors' types and ranks by the
 * dialect layer's rules (dgrad_problem_check_operands, which allocates
 * nothing either), and writes the reason into a per-thread static buffer
 * with snprintf (which allocates for none of the formats used here: no
 * positional arguments, no wide characters, no large widths). The one allocation a thread can see is
 * the dynamic linker's lazy TLS block for this module, made once per
 * thread at its first use of any thread-local of the module (the error
 * message too), never per call; tests/plugin_fixtures/query_no_malloc.c
 * counts mallocs around repeated queries after a warm-up call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dgrad/dgrad.h"
#include "error.h"
#include "plugin_internal.h"
#include "problem.h"

/* As long as the thread's error message, which it copies. */
static _Thread_local char reason_buffer[1024];

/* Formats a reason into this thread's buffer and returns it. */
static const char *because(const char *fmt, ...)
        __attribute__((format(printf, 1, 2)));

static const char *because(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(reason_buffer, sizeof reason_buffer, fmt, args);
    va_end(args);
    return reason_buffer;
}

/* Not dgrad_op_kind_from_name: an unknown name is a normal answer for the
 * plugin's callers and must not leave an error message.
 * dgrad_op_kind_name names every kind and gives "undef" past the last. */
dgrad_op_kind_t plugin_kind_named(const char *name) {
    for (int k = 1; strcmp(dgrad_op_kind_name((dgrad_op_kind_t)k), "undef");
            k++)
        if (!strcmp(name, dgrad_op_kind_name((dgrad_op_kind_t)k)))
            return (dgrad_op_kind_t)k;
    return dgrad_op_kind_undef;
}

/* The reason dgrad cannot run the op, or NULL when it can: the dialect
 * layer's own type and rank rules and message. The tensors were checked
 * (struct sizes); they are copied because the plugin's struct may be
 * larger than an older host's. The message becomes the reason, not the
 * thread's error: an unsupported op is a normal answer. */
static const char *judge(const dgrad_plugin_support_args_t *args,
        size_t stride) {
    dgrad_op_kind_t kind = plugin_kind_named(args->op_kind);
    if (kind == dgrad_op_kind_undef)
        return because("op kind '%.64s' is not implemented by dgrad",
                args->op_kind);
    /* More inputs than that are refused by the count rule unread. */
    dgrad_logical_tensor_t in[PLUGIN_MAX_INPUTS];
    for (size_t i = 0; i < args->n_inputs && i < PLUGIN_MAX_INPUTS; i++)
        plugin_tensor_copy_in(&in[i], plugin_element(args->inputs, stride, i));
    if (dgrad_problem_check_operands(kind, args->n_inputs, in)
            == dgrad_success)
        return NULL;
    because("%s", dgrad_last_error_message());
    dgrad_error_clear();
    return reason_buffer;
}

dgrad_status_t plugin_query_support(dgrad_plugin_support_args_t *args) {
    dgrad_error_clear();
    size_t stride = 0;
    dgrad_status_t st = plugin_check_struct(args,
            PLUGIN_SIZE_THROUGH(dgrad_plugin_support_args_t, reason),
            "query_support args");
    if (st == dgrad_success && !args->op_kind)
        st = dgrad_error(dgrad_invalid_arguments,
                "plugin: query_support op_kind (NULL): a kind name is "
                "required");
    if (st == dgrad_success)
        st = plugin_check_tensors(args->inputs, args->n_inputs,
                "query_support inputs", &stride);
    if (st == dgrad_success) {
        const char *reason = judge(args, stride);
        args->support = reason ? dgrad_plugin_unsupported
                               : dgrad_plugin_supported;
        args->reason = reason ? reason : "";
    }
    return st;
}
