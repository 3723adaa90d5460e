/*
 * libdgrad_plugin.so: the plugin ABI (include/dgrad/dgrad_plugin.h) over
 * the core library, which is compiled into this module with hidden
 * visibility. The only exported symbol is dgrad_plugin_get_api.
 *
 * Entries that take no struct forward straight to the core function of
 * the same contract. Entries that take host structs check struct_size
 * first and work on the plugin's own copies, so that a host built against
 * another minor version never makes the core read or write past the
 * host's struct.
 */
#include <stdint.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_version.h>

#if defined(DGRAD_ONEDNN_MAJOR) && DGRAD_ONEDNN_MAJOR != DNNL_VERSION_MAJOR
#error "oneDNN headers of another major than the oneDNN CMake found"
#endif

#include "dgrad/dgrad.h"
#include "dgrad/dgrad_plugin.h"
#include "error.h"
#include "plugin_internal.h"

/* The ABI 1.0 tensor is the core's whole struct; if the core's
 * struct grows, the out-only writes stay at the 1.0 size (see
 * plugin_tensor_write_new) and this check reminds to bump the ABI minor. */
_Static_assert(sizeof(dgrad_logical_tensor_t)
                == DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0,
        "dgrad_logical_tensor_t changed: append-only, bump the ABI minor");

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* ------------------------------------------------------- struct checks */

/* The struct_size of host struct @p what@p index must reach @p needed. */
static dgrad_status_t check_size(size_t size, size_t needed,
        const char *what, const char *index) {
    if (size >= needed) return dgrad_success;
    return dgrad_error(dgrad_abi_mismatch,
            "plugin: %s%s struct_size (%zu bytes; the plugin reads %zu): a "
            "struct smaller than the plugin needs is from an older ABI or "
            "has struct_size unset", what, index, size, needed);
}

dgrad_status_t plugin_check_struct(const void *host_struct, size_t needed,
        const char *what) {
    if (!host_struct)
        return dgrad_error(dgrad_invalid_arguments,
                "plugin: %s (NULL): the struct is required", what);
    return check_size(*(const size_t *)host_struct, needed, what, "");
}

dgrad_status_t plugin_check_array(const void *host_array, size_t count,
        size_t needed, size_t alignment, const char *what, size_t *stride) {
    *stride = 0;
    if (count == 0) return dgrad_success;
    if (!host_array)
        return dgrad_error(dgrad_invalid_arguments,
                "plugin: %s (NULL, %zu elements): an array of that many "
                "structs is required", what, count);
    size_t first = *(const size_t *)host_array;
    dgrad_status_t st = check_size(first, needed, what, "[0]");
    if (st != dgrad_success) return st;
    /* The elements are read in place: a stride that is not a multiple of
     * the alignment cannot be sizeof of the host's struct. */
    if (first % alignment)
        return dgrad_error(dgrad_abi_mismatch,
                "plugin: %s[0] struct_size (%zu): must be a multiple of %zu "
                "(the sizeof of a struct is)", what, first, alignment);
    for (size_t i = 1; i < count; i++) {
        size_t size = *(const size_t *)plugin_element(host_array, first, i);
        if (size != first)
            return dgrad_error(dgrad_abi_mismatch,
                    "plugin: %s[%zu] struct_size (%zu) differs from %s[0]'s "
                    "(%zu): an array is strided by its first element's "
                    "struct_size", what, i, size, what, first);
    }
    *stride = first;
    return dgrad_success;
}

dgrad_status_t plugin_check_tensors(const dgrad_logical_tensor_t *host,
        size_t count, const char *what, size_t *stride) {
    return plugin_check_array(host, count,
            DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0,
            _Alignof(dgrad_logical_tensor_t), what, stride);
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

void plugin_tensor_copy_in(dgrad_logical_tensor_t *local,
        const dgrad_logical_tensor_t *host) {
    memset(local, 0, sizeof *local);
    memcpy(local, host, min_size(host->struct_size, sizeof *local));
    local->struct_size = sizeof *local;
}

void plugin_tensor_write_back(dgrad_logical_tensor_t *host,
        const dgrad_logical_tensor_t *local) {
    size_t host_size = host->struct_size;
    memcpy(host, local, min_size(host_size, sizeof *local));
    host->struct_size = host_size;
}

void plugin_tensor_write_new(dgrad_logical_tensor_t *host,
        const dgrad_logical_tensor_t *local) {
    memcpy(host, local, DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    host->struct_size = DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0;
}

/* Checks a host input array of at most PLUGIN_MAX_COMPILE_INPUTS tensors
 * and copies it into @p local. */
static dgrad_status_t copy_inputs(const dgrad_logical_tensor_t *host,
        size_t count, dgrad_logical_tensor_t *local, const char *what) {
    if (count > PLUGIN_MAX_COMPILE_INPUTS)
        return dgrad_error(dgrad_invalid_arguments,
                "plugin: %s (%zu given): dgrad ops take 2 or 3 inputs and "
                "one per post-op operand, at most %d", what, count,
                PLUGIN_MAX_COMPILE_INPUTS);
    size_t stride;
    dgrad_status_t st = plugin_check_tensors(host, count, what, &stride);
    for (size_t i = 0; st == dgrad_success && i < count; i++)
        plugin_tensor_copy_in(&local[i], plugin_element(host, stride, i));
    return st;
}

/* ------------------------------------------------------ logical tensors */

static dgrad_status_t plugin_logical_tensor_init(dgrad_logical_tensor_t *lt,
        size_t id, dgrad_data_type_t data_type, int32_t ndims,
        const int64_t *dims, dgrad_layout_type_t layout_type,
        dgrad_property_type_t property) {
    dgrad_logical_tensor_t local;
    /* A NULL lt goes to the core, which names it in its message. */
    dgrad_status_t st = dgrad_logical_tensor_init(lt ? &local : NULL, id,
            data_type, ndims, dims, layout_type, property);
    if (st == dgrad_success) plugin_tensor_write_new(lt, &local);
    return st;
}

static dgrad_status_t plugin_logical_tensor_init_with_strides(
        dgrad_logical_tensor_t *lt, size_t id, dgrad_data_type_t data_type,
        int32_t ndims, const int64_t *dims, const int64_t *strides,
        dgrad_property_type_t property) {
    dgrad_logical_tensor_t local;
    dgrad_status_t st = dgrad_logical_tensor_init_with_strides(
            lt ? &local : NULL, id, data_type, ndims, dims, strides,
            property);
    if (st == dgrad_success) plugin_tensor_write_new(lt, &local);
    return st;
}

static dgrad_status_t plugin_logical_tensor_get_span(
        const dgrad_logical_tensor_t *lt, int64_t *n_elements) {
    dgrad_error_clear();
    dgrad_logical_tensor_t local;
    dgrad_status_t st = plugin_check_struct(lt,
            DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0, "logical_tensor_get_span lt");
    if (st == dgrad_success) {
        plugin_tensor_copy_in(&local, lt);
        st = dgrad_logical_tensor_get_span(&local, n_elements);
    }
    return st;
}

/* --------------------------------------------------- compile and execute */

static dgrad_status_t plugin_compiled_op_create(
        dgrad_plugin_compile_args_t *args) {
    dgrad_error_clear();
    dgrad_logical_tensor_t inputs[PLUGIN_MAX_COMPILE_INPUTS], output;
    dgrad_compiled_op_t *compiled = NULL;
    dgrad_status_t st = plugin_check_struct(args,
            PLUGIN_SIZE_THROUGH(dgrad_plugin_compile_args_t, compiled),
            "compiled_op_create args");
    if (st == dgrad_success)
        st = copy_inputs(args->inputs, args->n_inputs, inputs,
                "compiled_op_create inputs");
    if (st == dgrad_success)
        st = plugin_check_struct(args->output,
                DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0,
                "compiled_op_create output");
    if (st == dgrad_success) {
        plugin_tensor_copy_in(&output, args->output);
        st = dgrad_compiled_op_create(&compiled, args->op, args->n_inputs,
                inputs, &output);
    }
    if (st == dgrad_success) {
        plugin_tensor_write_back(args->output, &output);
        args->compiled = compiled;
    }
    return st;
}

static dgrad_status_t plugin_compiled_op_query_output(
        const dgrad_compiled_op_t *compiled, dgrad_logical_tensor_t *output) {
    dgrad_logical_tensor_t local;
    dgrad_status_t st = dgrad_compiled_op_query_output(compiled,
            output ? &local : NULL);
    if (st == dgrad_success) plugin_tensor_write_new(output, &local);
    return st;
}

static dgrad_status_t plugin_compiled_op_execute(
        dgrad_plugin_execute_args_t *args) {
    dgrad_error_clear();
    dgrad_logical_tensor_t produced;
    dgrad_status_t st = plugin_check_struct(args,
            PLUGIN_SIZE_THROUGH(dgrad_plugin_execute_args_t, output_lt),
            "compiled_op_execute args");
    if (st != dgrad_success) return st;
    if (args->output_capacity == 0 && !args->output_lt)
        return dgrad_compiled_op_execute(args->compiled, args->n_inputs,
                args->inputs, args->output);
    /* Capacity 0 means unchecked also when the host wants output_lt, which
     * only the dynamic entry reports. */
    size_t capacity = args->output_capacity ? args->output_capacity : SIZE_MAX;
    st = dgrad_compiled_op_execute_dynamic(args->compiled, args->n_inputs,
            args->inputs, args->output, capacity, &produced);
    if (st == dgrad_success && args->output_lt)
        plugin_tensor_write_new(args->output_lt, &produced);
    return st;
}

/* ------------------------------------------------------------- the table */

static const dgrad_plugin_api_t api_v1 = {
        .struct_size = sizeof(dgrad_plugin_api_t),
        .abi_major = DGRAD_PLUGIN_ABI_MAJOR,
        .abi_minor = DGRAD_PLUGIN_ABI_MINOR,
        .plugin_name = "dgrad",
        /* Semantic-version build metadata names the oneDNN it was built
         * against, e.g. "0.1.0+onednn.2.6.3". */
        .plugin_version = STRINGIFY(DGRAD_VERSION_MAJOR) "." STRINGIFY(
                DGRAD_VERSION_MINOR) "." STRINGIFY(DGRAD_VERSION_PATCH)
                "+onednn." STRINGIFY(DNNL_VERSION_MAJOR) "." STRINGIFY(
                        DNNL_VERSION_MINOR) "." STRINGIFY(DNNL_VERSION_PATCH),

        .last_error_message = dgrad_last_error_message,
        .status_name = dgrad_status_name,
        .data_type_name = dgrad_data_type_name,

        .logical_tensor_init = plugin_logical_tensor_init,
        .logical_tensor_init_with_strides =
                plugin_logical_tensor_init_with_strides,
        .logical_tensor_get_span = plugin_logical_tensor_get_span,

        .op_kind_from_name = dgrad_op_kind_from_name,
        .op_create = dgrad_op_create,
        .op_destroy = dgrad_op_destroy,
        .op_set_attr_s64 = dgrad_op_set_attr_s64,
        .op_set_attr_s64s = dgrad_op_set_attr_s64s,
        .op_set_attr_str = dgrad_op_set_attr_str,
        .op_set_attr_by_name = dgrad_op_set_attr_by_name,

        .compiled_op_create = plugin_compiled_op_create,
        .compiled_op_destroy = dgrad_compiled_op_destroy,
        .compiled_op_query_output = plugin_compiled_op_query_output,
        .compiled_op_impl_name = dgrad_compiled_op_impl_name,
        .compiled_op_execute = plugin_compiled_op_execute,

        .query_support = plugin_query_support,

        .graph_partition = plugin_graph_partition,
        .partitions_count = plugin_partitions_count,
        .partitions_get = plugin_partitions_get,
        .partitions_destroy = plugin_partitions_destroy,

        .op_kind_name = dgrad_op_kind_name,
        .data_type_size = dgrad_data_type_size,
        .op_append_post_op = dgrad_op_append_post_op,
        .compiled_op_query_in_place_input =
                dgrad_compiled_op_query_in_place_input,
};

/* The prototype in dgrad_plugin.h checks this definition; this checks that
 * hosts calling through the dlsym type call the same function type. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&dgrad_plugin_get_api),
                       dgrad_plugin_get_api_fn),
        "dgrad_plugin_get_api_fn must match dgrad_plugin_get_api");

__attribute__((visibility("default"))) const dgrad_plugin_api_t *
dgrad_plugin_get_api(uint32_t host_abi_major) {
    return host_abi_major == DGRAD_PLUGIN_ABI_MAJOR ? &api_v1 : NULL;
}
