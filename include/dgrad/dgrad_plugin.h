/*
 * dgrad plugin ABI: what a host (a graph compiler) sees of
 * libdgrad_plugin.so.
 *
 * Entry point
 *   The module exports exactly one symbol, DGRAD_PLUGIN_ENTRY_SYMBOL
 *   ("dgrad_plugin_get_api", declared below; a host finds it with dlsym as
 *   a dgrad_plugin_get_api_fn). The host passes the ABI major version it
 *   was built for; the plugin returns its function table for that major
 *   version, or NULL when it does not implement it.
 *
 * Versioning rules
 *   - The major version changes only when something is removed or changes
 *     meaning. Within one major version everything is append-only: new
 *     table entries and new struct fields are added at the end, and the
 *     minor version grows.
 *   - The table starts with struct_size, the ABI major and minor version:
 *     a host built against a newer minor must check struct_size (or
 *     DGRAD_PLUGIN_API_HAS) before calling an entry the plugin may lack.
 *   - Every struct the host passes in starts with struct_size, set by the
 *     host to sizeof the struct as its header defines it (the args,
 *     attribute, graph-op and partition-info structs: set it by hand, e.g.
 *     `args.struct_size = sizeof args;`; logical tensors: the init
 *     functions do it). The plugin accepts a larger struct from a newer
 *     host (it reads only the fields it knows) and rejects a smaller one
 *     than it needs (up to the last field it reads or writes) with
 *     dgrad_abi_mismatch and a message naming both sizes. Out-fields of
 *     those structs (compile's `compiled`, query_support's answer,
 *     partitions_get's info) are written only within the host's
 *     struct_size, which the plugin never changes.
 *   - Arrays of structs are strided by the first element's struct_size;
 *     every element must carry that same struct_size (and it must be a
 *     multiple of the struct's alignment), else dgrad_abi_mismatch. A host
 *     whose dgrad_logical_tensor_t is larger than the plugin's and that
 *     initialises tensors through the table must set struct_size back to
 *     its own sizeof before passing them in an array (see below).
 *   - Logical tensors by direction:
 *       in (inputs, get_span, graph ops): struct_size must be at least
 *         DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0; the plugin copies what it
 *         knows and never writes.
 *       in/out (compile's output): the same check; the plugin writes back
 *         at most min(host struct_size, its own) bytes and keeps the
 *         host's struct_size.
 *       out only (logical_tensor_init*, compiled_op_query_output,
 *         execute's output_lt): the plugin cannot know the size of a struct
 *         it fills from nothing, so it writes exactly the ABI 1.0 struct
 *         (DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0 bytes, which every major-1
 *         host has) and sets struct_size to that; bytes beyond are not
 *         touched.
 *   - The loader (dgrad_loader.h) refuses a table smaller than the ABI 1.0
 *     table (DGRAD_PLUGIN_API_SIZE_1_0), so a host may call every 1.0
 *     entry unchecked; entries added by later minors are checked with
 *     DGRAD_PLUGIN_API_HAS.
 *
 * ABI history (major 1)
 *   1.0  the table up to partitions_destroy.
 *   1.1  op_kind_name, data_type_size (the rest of dgrad.h's API).
 *   1.2  op_append_post_op; fused partitions: graph_partition's flags
 *        (DGRAD_PLUGIN_PARTITION_FUSE) and the partition info's inputs
 *        and output; compile takes the post-ops' operands.
 *   1.3  compiled_op_query_in_place_input; execute refuses inputs that
 *        overlap the output except the in-place one.
 *
 * Lifetimes
 *   - The table and the strings in it belong to the plugin and live until
 *     the module is unloaded.
 *   - Ops and compiled ops are created and destroyed through the table;
 *     destroy functions accept NULL. A compiled op does not refer to the
 *     op it was compiled from.
 *   - Strings returned by queries live as long as the object they
 *     describe: implementation names as long as the compiled op, partition
 *     reasons as long as the partitions handle. query_support's reason is
 *     a string constant or a per-thread buffer of the plugin, valid until
 *     the calling thread's next query_support call. last_error_message()
 *     lives until the calling thread's next call into the plugin (a call
 *     that succeeds may leave it unchanged; read it only after a failure).
 *   - Partition results (infos, op ids, ops, reasons) belong to the
 *     dgrad_plugin_partitions_t handle and live until partitions_destroy().
 *     An op returned in a partition info may be compiled any number of
 *     times; it is destroyed with the handle, never by the host.
 *   - Buffers are always the host's; the plugin never keeps a pointer to
 *     one after a call returns (constant weights are copied when converted).
 *
 * Statuses
 *   Entries that forward to dgrad.h's function of the same name (minus
 *   the dgrad_ prefix) return that function's statuses (its @returns).
 *   Entries that take host structs return in addition
 *   dgrad_invalid_arguments for a NULL struct (or a NULL array of a
 *   non-zero count) and dgrad_abi_mismatch for a struct_size smaller than
 *   the plugin needs, an array whose elements differ in struct_size, or
 *   one that is not a multiple of the struct's alignment; each entry below
 *   lists what it adds.
 *
 * Threads
 *   Every entry may be called from any thread. compiled_op_execute may run
 *   concurrently on one compiled op with different output buffers; other
 *   objects must not be used from two threads at once.
 */
#ifndef DGRAD_DGRAD_PLUGIN_H
#define DGRAD_DGRAD_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "dgrad/dgrad.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DGRAD_PLUGIN_ABI_MAJOR 1
#define DGRAD_PLUGIN_ABI_MINOR 3
#define DGRAD_PLUGIN_ENTRY_SYMBOL "dgrad_plugin_get_api"

/** Bytes of the ABI 1.0 dgrad_logical_tensor_t (through strides): the least
 * struct_size the plugin accepts for a logical tensor, and what it writes
 * into an out-only one. */
#define DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0                                 \
    (offsetof(dgrad_logical_tensor_t, strides)                              \
            + sizeof(((dgrad_logical_tensor_t *)0)->strides))

/* ------------------------------------------------------------ args structs */

/** Arguments of compiled_op_create. */
typedef struct dgrad_plugin_compile_args {
    size_t struct_size; /**< sizeof(dgrad_plugin_compile_args_t) */
    const dgrad_op_t *op;
    size_t n_inputs;
    const dgrad_logical_tensor_t *inputs;
    /** In: requested output. Out: inferred output (see dgrad.h). */
    dgrad_logical_tensor_t *output;
    /** Out: the compiled op. */
    dgrad_compiled_op_t *compiled;
} dgrad_plugin_compile_args_t;

/** Arguments of compiled_op_execute. */
typedef struct dgrad_plugin_execute_args {
    size_t struct_size; /**< sizeof(dgrad_plugin_execute_args_t) */
    const dgrad_compiled_op_t *compiled;
    size_t n_inputs;
    const void *const *inputs;
    void *output;
    /** Bytes available at output; 0 means "as compiled, unchecked" (the
     * host vouches that the buffer holds the compiled output). Non-zero:
     * an output that does not fit is dgrad_invalid_arguments and nothing
     * is written (what ops with output dims unknown at compile time
     * need). */
    size_t output_capacity;
    /** Optional out (may be NULL): the output actually produced (dims
     * resolved at execution for ops whose output dims were unknown at
     * compile time), written as an out-only tensor (see the rules). */
    dgrad_logical_tensor_t *output_lt;
} dgrad_plugin_execute_args_t;

/** Support answers. */
typedef enum dgrad_plugin_support {
    dgrad_plugin_supported = 0,
    dgrad_plugin_unsupported = 1,
} dgrad_plugin_support_t;

/** Arguments of query_support: may dgrad run this op on these tensors? */
typedef struct dgrad_plugin_support_args {
    size_t struct_size; /**< sizeof(dgrad_plugin_support_args_t) */
    /** Op kind by dialect name; unknown names are answered unsupported. */
    const char *op_kind;
    size_t n_inputs;
    const dgrad_logical_tensor_t *inputs;
    /** Out. */
    dgrad_plugin_support_t support;
    /** Out: why unsupported, or "" (plugin-owned: a constant or a
     * per-thread buffer valid until this thread's next query_support). */
    const char *reason;
} dgrad_plugin_support_args_t;

/** One attribute of a graph op, as text (name and value as in
 * dgrad_op_set_attr_by_name). */
typedef struct dgrad_plugin_attr {
    size_t struct_size; /**< sizeof(dgrad_plugin_attr_t) */
    const char *name;
    const char *value;
} dgrad_plugin_attr_t;

/** One op of a host graph, oneDNN-Graph style: ops are connected through
 * the ids of their logical tensors. */
typedef struct dgrad_plugin_graph_op {
    size_t struct_size; /**< sizeof(dgrad_plugin_graph_op_t) */
    size_t id;
    /** Kind name; may be one dgrad does not implement ("ReLU"). */
    const char *kind;
    size_t n_attrs;
    const dgrad_plugin_attr_t *attrs;
    size_t n_inputs;
    const dgrad_logical_tensor_t *inputs;
    size_t n_outputs;
    const dgrad_logical_tensor_t *outputs;
} dgrad_plugin_graph_op_t;

/** graph_partition flags (ABI 1.2). */
enum {
    /** Fuse each claimed op with the chain of post-ops that follows it
     * (see dgrad_plugin_partition_args_t). */
    DGRAD_PLUGIN_PARTITION_FUSE = 1u,
};

/** Arguments of graph_partition.
 *
 * Every op becomes one partition, in the order of @p ops. dgrad claims an
 * op when its kind is one of dgrad's five, every attribute is accepted
 * and its inputs and single output resolve (dgrad_op_set_attr_by_name and
 * the checks of compile, without building a oneDNN primitive); any other
 * op is left unclaimed with the reason (unknown kind, the rejected
 * attribute, the shape rule). Claimed means the op passed every check of
 * dgrad's own; compile may still answer dgrad_unimplemented for a problem
 * oneDNN cannot run, and the host falls back then. A graph that is
 * malformed as a whole (NULL pointers, struct sizes, an op without a kind
 * name, an attribute without name or value, two ops with one id) is an
 * error and no handle is returned.
 *
 * Kind names are dgrad_op_kind_from_name's. "ConvTranspose" is ONNX's op
 * unless the graph op carries both pads_begin and pads_end, which oneDNN
 * Graph's ConvTranspose requires and ONNX's lacks: then it is oneDNN
 * Graph's ("onednn:ConvTranspose" names it either way).
 *
 * Fused partitions (flags has DGRAD_PLUGIN_PARTITION_FUSE, ABI 1.2): a
 * claimed op takes along the ops that follow it as post-ops
 * (dgrad_op_append_post_op's kinds, with their attributes), as long as
 * each one is the only consumer of the chain's output so far, has one
 * output, takes the chain as its first input (either input for the
 * commutative Add, Multiply, Maximum and Minimum), its other input (if
 * any) from outside the chain, and the chain still resolves with it (the
 * operand broadcasts to the output; the output keeps its shape); at most
 * DGRAD_MAX_POST_OPS of them. As in oneDNN Graph, a tensor consumed by one
 * op is internal to the graph: a chain's intermediate results are not
 * written anywhere. The fused ops get no partition of their own; the
 * partition lists them all (op_ids), its inputs in compile order (the
 * op's own, then one per binary post-op) and its output. A post-op kind
 * where a chain stops keeps its own (unclaimed) partition whose reason
 * says why: "not fused after op <id> (<kind>): <rule>". */
typedef struct dgrad_plugin_partition_args {
    size_t struct_size; /**< sizeof(dgrad_plugin_partition_args_t) */
    size_t n_ops;
    const dgrad_plugin_graph_op_t *ops;
    /** Out: the result; destroy with partitions_destroy(). */
    struct dgrad_plugin_partitions *partitions;
    /* ---- ABI 1.2 (a smaller struct means 0) */
    /** DGRAD_PLUGIN_PARTITION_* bits. */
    uint32_t flags;
} dgrad_plugin_partition_args_t;

/** Opaque result of a partitioning. */
typedef struct dgrad_plugin_partitions dgrad_plugin_partitions_t;

/** One partition as reported by partitions_get. The host sets struct_size
 * before the call; the plugin fills the other fields. */
typedef struct dgrad_plugin_partition_info {
    size_t struct_size; /**< sizeof(dgrad_plugin_partition_info_t) */
    /** Out: 1 when dgrad claims the partition's ops. */
    int claimed;
    /** Out: ids of the partition's ops: one, or (fused partitions) the
     * op and its post-ops in chain order. */
    size_t n_op_ids;
    const size_t *op_ids;
    /** Out: for claimed partitions, the op built from the graph ops (with
     * its post-ops), ready to compile with compiled_op_create (owned by
     * the partitions handle); NULL otherwise. */
    const dgrad_op_t *op;
    /** Out: why dgrad leaves the op, or "" for claimed partitions. */
    const char *reason;
    /* ---- ABI 1.2: written when the host's struct_size holds them */
    /** Out: ids of the logical tensors to compile and execute a claimed
     * partition with, in order: the first op's inputs, then each binary
     * post-op's other input (0 of them for unclaimed partitions). */
    size_t n_inputs;
    const size_t *input_ids;
    /** Out: id of the partition's output (its last op's). */
    size_t output_id;
} dgrad_plugin_partition_info_t;

/* ------------------------------------------------------------- the table */

typedef struct dgrad_plugin_api {
    size_t struct_size; /**< sizeof(dgrad_plugin_api_t) in the plugin */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *plugin_name;
    const char *plugin_version;

    /* Errors and names: as in dgrad.h; they cannot fail. */
    const char *(*last_error_message)(void);
    const char *(*status_name)(dgrad_status_t status);
    const char *(*data_type_name)(dgrad_data_type_t data_type);

    /* Logical tensors: as in dgrad.h. The init functions write an
     * out-only tensor (the ABI 1.0 struct, see the rules). get_span also
     * returns dgrad_abi_mismatch for an lt whose struct_size is below
     * DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0. */
    dgrad_status_t (*logical_tensor_init)(dgrad_logical_tensor_t *lt,
            size_t id, dgrad_data_type_t data_type, int32_t ndims,
            const int64_t *dims, dgrad_layout_type_t layout_type,
            dgrad_property_type_t property);
    dgrad_status_t (*logical_tensor_init_with_strides)(
            dgrad_logical_tensor_t *lt, size_t id,
            dgrad_data_type_t data_type, int32_t ndims, const int64_t *dims,
            const int64_t *strides, dgrad_property_type_t property);
    dgrad_status_t (*logical_tensor_get_span)(
            const dgrad_logical_tensor_t *lt, int64_t *n_elements);

    /* Ops and attributes: as in dgrad.h. */
    dgrad_status_t (*op_kind_from_name)(const char *name,
            dgrad_op_kind_t *kind);
    dgrad_status_t (*op_create)(dgrad_op_t **op, size_t id,
            dgrad_op_kind_t kind, const char *name);
    dgrad_status_t (*op_destroy)(dgrad_op_t *op);
    dgrad_status_t (*op_set_attr_s64)(dgrad_op_t *op, dgrad_op_attr_t attr,
            int64_t value);
    dgrad_status_t (*op_set_attr_s64s)(dgrad_op_t *op, dgrad_op_attr_t attr,
            const int64_t *values, size_t count);
    dgrad_status_t (*op_set_attr_str)(dgrad_op_t *op, dgrad_op_attr_t attr,
            const char *value);
    dgrad_status_t (*op_set_attr_by_name)(dgrad_op_t *op, const char *name,
            const char *value);

    /* Compile, query, execute, destroy: as in dgrad.h
     * (dgrad_compiled_op_create, dgrad_compiled_op_execute_dynamic when
     * output_capacity or output_lt is set, else dgrad_compiled_op_execute).
     * compiled_op_create also returns dgrad_invalid_arguments for NULL
     * args, NULL inputs with n_inputs > 0, n_inputs above 3 +
     * DGRAD_MAX_POST_OPS or a NULL output, and dgrad_abi_mismatch for the
     * struct sizes of args, inputs and output; args->compiled and args->output are written only on
     * success. compiled_op_execute also returns dgrad_invalid_arguments
     * for NULL args and dgrad_abi_mismatch for args' struct_size.
     * compiled_op_query_output writes an out-only tensor. */
    dgrad_status_t (*compiled_op_create)(dgrad_plugin_compile_args_t *args);
    dgrad_status_t (*compiled_op_destroy)(dgrad_compiled_op_t *compiled);
    dgrad_status_t (*compiled_op_query_output)(
            const dgrad_compiled_op_t *compiled,
            dgrad_logical_tensor_t *output);
    const char *(*compiled_op_impl_name)(const dgrad_compiled_op_t *compiled);
    dgrad_status_t (*compiled_op_execute)(dgrad_plugin_execute_args_t *args);

    /* Capability query: allocates nothing and builds nothing. It judges
     * what it is given: the kind name, the input count, the data types
     * (f32/bf16/f16 data and weights of one type; s32/s64 shape inputs)
     * and known ranks; attributes, shapes and layouts are judged by
     * compile (or by graph_partition, which takes attributes).
     * Unsupported is a normal answer (dgrad_success with support =
     * unsupported and a reason); invalid input is an error:
     * dgrad_invalid_arguments for NULL args, a NULL op_kind or NULL inputs
     * with n_inputs > 0; dgrad_abi_mismatch for the struct sizes of args
     * and inputs. support and reason are written only on success. */
    dgrad_status_t (*query_support)(dgrad_plugin_support_args_t *args);

    /* Partition flow (see dgrad_plugin_partition_args_t).
     * graph_partition returns dgrad_success (args->partitions set),
     * dgrad_invalid_arguments for a malformed graph (NULL args, NULL
     * arrays of non-zero counts, an op without a kind name, an attribute
     * without name or value, two ops with one id), dgrad_abi_mismatch for
     * the struct sizes of args, ops, attributes and tensors, or
     * dgrad_out_of_memory. An op dgrad leaves is not an error.
     * partitions_count returns dgrad_success or dgrad_invalid_arguments (a
     * NULL argument). partitions_get returns dgrad_success,
     * dgrad_invalid_arguments (NULL partitions or info, index not below
     * the count) or dgrad_abi_mismatch (info's struct_size).
     * partitions_destroy accepts NULL and returns dgrad_success. */
    dgrad_status_t (*graph_partition)(dgrad_plugin_partition_args_t *args);
    dgrad_status_t (*partitions_count)(
            const dgrad_plugin_partitions_t *partitions, size_t *count);
    dgrad_status_t (*partitions_get)(
            const dgrad_plugin_partitions_t *partitions, size_t index,
            dgrad_plugin_partition_info_t *info);
    dgrad_status_t (*partitions_destroy)(dgrad_plugin_partitions_t *partitions);

    /* ---- ABI 1.1: check with DGRAD_PLUGIN_API_HAS before calling. */
    const char *(*op_kind_name)(dgrad_op_kind_t kind);
    size_t (*data_type_size)(dgrad_data_type_t data_type);

    /* ---- ABI 1.2 */
    /* As in dgrad.h. */
    dgrad_status_t (*op_append_post_op)(dgrad_op_t *op, const char *kind,
            size_t n_attrs, const char *const *attr_names,
            const char *const *attr_values);

    /* ---- ABI 1.3 */
    /* As in dgrad.h: which input may share the output's buffer (the
     * operand of an Add laid out as the output, accumulated onto in
     * place, like oneDNN Graph's in-place ports); compiled_op_execute
     * refuses any other overlap of an input with the output. */
    dgrad_status_t (*compiled_op_query_in_place_input)(
            const dgrad_compiled_op_t *compiled, int64_t *input_index);
} dgrad_plugin_api_t;

/** Bytes of the ABI 1.0 table (through partitions_destroy): every major-1
 * plugin's table is at least this large (the loader checks it). */
#define DGRAD_PLUGIN_API_SIZE_1_0                                           \
    (offsetof(dgrad_plugin_api_t, partitions_destroy)                       \
            + sizeof(((dgrad_plugin_api_t *)0)->partitions_destroy))

/** True when a plugin table of @p api is large enough to hold @p member. */
#define DGRAD_PLUGIN_API_HAS(api, member)                                   \
    ((api)->struct_size >= offsetof(dgrad_plugin_api_t, member)            \
                    + sizeof(((dgrad_plugin_api_t *)0)->member))

/** Type of the exported entry symbol, for hosts that find it with dlsym. */
typedef const dgrad_plugin_api_t *(*dgrad_plugin_get_api_fn)(
        uint32_t host_abi_major);

/**
 * The entry point, exported by libdgrad_plugin.so as
 * DGRAD_PLUGIN_ENTRY_SYMBOL. Declared so that the plugin's definition is
 * checked against it; hosts need not link it (dgrad_loader.h finds it
 * with dlsym).
 * @param host_abi_major The ABI major version the host was built for
 *     (DGRAD_PLUGIN_ABI_MAJOR of its header).
 * @returns the plugin's table for that major version, or NULL when the
 *     plugin does not implement it. Sets no error message.
 */
const dgrad_plugin_api_t *dgrad_plugin_get_api(uint32_t host_abi_major);

#ifdef __cplusplus
}
#endif

#endif /* DGRAD_DGRAD_PLUGIN_H */
