/*
 * query_support: may dgrad run an op of this kind on these input tensors?
 *
 * It must allocate nothing, so that a graph compiler can ask about every
 * op of a graph cheaply. It therefore builds no op and compiles nothing:
 * it reads the kind name and the tensors' types and ranks, and writes the
 * reason into a per-thread static buffer with snprintf (which allocates
 * for none of the formats used here: no positional arguments, no wide
 * characters, no large widths). The one allocation a thread can see is
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

/* Names of the inputs per kind, as the dialects call them. */
typedef struct role_names {
    const char *data, *weights, *third;
} role_names_t;

static const role_names_t role_names[] = {
        [dgrad_op_convolution_backward_data] = {"diff_dst", "weights",
                "dst_shape"},
        [dgrad_op_convolution_backprop_data] = {"data", "weights",
                "output_shape"},
        [dgrad_op_group_convolution_backprop_data] = {"data", "weights",
                "output_shape"},
        [dgrad_op_conv_transpose] = {"X", "W", "B"},
};

#define N_KINDS ((int)(sizeof role_names / sizeof role_names[0]))

static _Thread_local char reason_buffer[256];

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
 * plugin's callers and must not leave an error message. */
dgrad_op_kind_t plugin_kind_named(const char *name) {
    for (int k = 1; k < N_KINDS; k++)
        if (!strcmp(name, dgrad_op_kind_name((dgrad_op_kind_t)k)))
            return (dgrad_op_kind_t)k;
    return dgrad_op_kind_undef;
}

static int is_float(dgrad_data_type_t t) {
    return t == dgrad_f32 || t == dgrad_bf16 || t == dgrad_f16;
}

static const char *judge_types(dgrad_op_kind_t kind, size_t n_inputs,
        const dgrad_logical_tensor_t *in) {
    const char *op = dgrad_op_kind_name(kind);
    const role_names_t *names = &role_names[kind];
    dgrad_data_type_t dt = in[0].data_type, wt = in[1].data_type;
    if (!is_float(dt) || !is_float(wt))
        return because("%s: %s data type (%s): dgrad runs f32, bf16 and f16",
                op, is_float(dt) ? names->weights : names->data,
                dgrad_data_type_name(is_float(dt) ? wt : dt));
    if (dt != wt)
        return because("%s: %s data type (%s) and %s data type (%s): dgrad "
                "runs data, weights and output in one type", op, names->data,
                dgrad_data_type_name(dt), names->weights,
                dgrad_data_type_name(wt));
    if (n_inputs < 3) return NULL;
    dgrad_data_type_t tt = in[2].data_type;
    if (dgrad_op_kind_third_input(kind) == dgrad_third_input_bias) {
        if (tt != dt)
            return because("%s: %s data type (%s) and %s data type (%s): "
                    "the bias has the data's type", op, names->third,
                    dgrad_data_type_name(tt), names->data,
                    dgrad_data_type_name(dt));
    } else if (tt != dgrad_s32 && tt != dgrad_s64) {
        return because("%s: %s data type (%s): a shape input is s32 or s64",
                op, names->third, dgrad_data_type_name(tt));
    }
    return NULL;
}

/* Ranks not known yet (DGRAD_UNKNOWN_NDIMS) are left to compile. */
static const char *judge_ranks(dgrad_op_kind_t kind, size_t n_inputs,
        const dgrad_logical_tensor_t *in) {
    const char *op = dgrad_op_kind_name(kind);
    const role_names_t *names = &role_names[kind];
    int grouped = kind == dgrad_op_group_convolution_backprop_data;
    int32_t rank = in[0].ndims, wrank = in[1].ndims;
    if (rank != DGRAD_UNKNOWN_NDIMS && (rank < 3 || rank > 5))
        return because("%s: %s rank (%d): dgrad runs 1 to 3 spatial axes "
                "(rank 3 to 5)", op, names->data, (int)rank);
    if (wrank != DGRAD_UNKNOWN_NDIMS && rank != DGRAD_UNKNOWN_NDIMS
            && wrank != rank + grouped)
        return because("%s: %s rank (%d) with %s rank %d: must be %d", op,
                names->weights, (int)wrank, names->data, (int)rank,
                (int)rank + grouped);
    if (wrank != DGRAD_UNKNOWN_NDIMS
            && (wrank < 3 + grouped || wrank > 5 + grouped))
        return because("%s: %s rank (%d): must be %d to %d (1 to 3 spatial "
                "axes)", op, names->weights, (int)wrank, 3 + grouped,
                5 + grouped);
    if (n_inputs == 3 && in[2].ndims != DGRAD_UNKNOWN_NDIMS
            && in[2].ndims != 1)
        return because("%s: %s rank (%d): must be 1", op, names->third,
                (int)in[2].ndims);
    return NULL;
}

/* The reason dgrad cannot run the op, or NULL when it can. The tensors
 * were checked (struct sizes); they are copied because the plugin's
 * struct may be larger than an older host's. */
static const char *judge(const dgrad_plugin_support_args_t *args,
        size_t stride) {
    dgrad_op_kind_t kind = plugin_kind_named(args->op_kind);
    if (kind == dgrad_op_kind_undef)
        return because("op kind '%.64s' is not implemented by dgrad",
                args->op_kind);
    const role_names_t *names = &role_names[kind];
    if (args->n_inputs < 2 || args->n_inputs > PLUGIN_MAX_INPUTS)
        return because("%s: inputs (%zu given): dgrad takes %s, %s and "
                "optionally %s", dgrad_op_kind_name(kind), args->n_inputs,
                names->data, names->weights, names->third);
    dgrad_logical_tensor_t in[PLUGIN_MAX_INPUTS];
    for (size_t i = 0; i < args->n_inputs; i++)
        plugin_tensor_copy_in(&in[i], plugin_element(args->inputs, stride, i));
    const char *reason = judge_types(kind, args->n_inputs, in);
    return reason ? reason : judge_ranks(kind, args->n_inputs, in);
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
