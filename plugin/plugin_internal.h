/*
 * Shared by the plugin's sources (plugin.c, support.c, partition.c): the
 * checks of structs a host passes across the ABI, and the copies of
 * logical tensors in and out (rules in include/dgrad/dgrad_plugin.h).
 * Messages follow "plugin: <what> (<values>): <rule>".
 */
#ifndef DGRAD_PLUGIN_INTERNAL_H
#define DGRAD_PLUGIN_INTERNAL_H

#include <stddef.h>

#include "dgrad/dgrad_plugin.h"

/* Bytes of @p type through @p member: what the plugin needs of a host
 * struct whose last field it reads or writes is @p member. */
#define PLUGIN_SIZE_THROUGH(type, member)                                   \
    (offsetof(type, member) + sizeof(((type *)0)->member))

/* dgrad ops take 2 or 3 inputs of their own, and one more per binary
 * post-op; larger counts are refused before copying the host's tensors
 * into fixed local arrays. */
#define PLUGIN_MAX_INPUTS 3
#define PLUGIN_MAX_COMPILE_INPUTS (PLUGIN_MAX_INPUTS + DGRAD_MAX_POST_OPS)

/* Checks one host struct: not NULL (invalid_arguments) and struct_size at
 * least @p needed bytes (abi_mismatch). @p what names it in messages. */
dgrad_status_t plugin_check_struct(const void *host_struct, size_t needed,
        const char *what);

/* Checks a host array of @p count structs of at least @p needed bytes and
 * the given alignment, strided by the first element's struct_size (every
 * element must carry it). On success *stride is that size. An empty array
 * may be NULL. */
dgrad_status_t plugin_check_array(const void *host_array, size_t count,
        size_t needed, size_t alignment, const char *what, size_t *stride);

/* Element @p index of a host array checked by plugin_check_array. */
static inline const void *plugin_element(const void *host_array,
        size_t stride, size_t index) {
    return (const char *)host_array + stride * index;
}

/* plugin_check_array for logical tensors. */
dgrad_status_t plugin_check_tensors(const dgrad_logical_tensor_t *host,
        size_t count, const char *what, size_t *stride);

/* The plugin's own copy of a checked host tensor: the fields both sides
 * know; fields the host lacks (an older host) are zero. */
void plugin_tensor_copy_in(dgrad_logical_tensor_t *local,
        const dgrad_logical_tensor_t *host);

/* Writes an in/out tensor back: at most min(host struct_size, the
 * plugin's) bytes; the host's struct_size is kept. */
void plugin_tensor_write_back(dgrad_logical_tensor_t *host,
        const dgrad_logical_tensor_t *local);

/* Writes an out-only tensor: exactly the ABI 1.0 struct, struct_size set
 * to its size (the plugin cannot know the host's size). */
void plugin_tensor_write_new(dgrad_logical_tensor_t *host,
        const dgrad_logical_tensor_t *local);

/* The dgrad op kind whose dialect name is @p name, or
 * dgrad_op_kind_undef; sets no error message. */
dgrad_op_kind_t plugin_kind_named(const char *name);

/* Entries implemented outside plugin.c. */
dgrad_status_t plugin_query_support(dgrad_plugin_support_args_t *args);
dgrad_status_t plugin_graph_partition(dgrad_plugin_partition_args_t *args);
dgrad_status_t plugin_partitions_count(
        const dgrad_plugin_partitions_t *partitions, size_t *count);
dgrad_status_t plugin_partitions_get(
        const dgrad_plugin_partitions_t *partitions, size_t index,
        dgrad_plugin_partition_info_t *info);
dgrad_status_t plugin_partitions_destroy(dgrad_plugin_partitions_t *partitions);

#endif
