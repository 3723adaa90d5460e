/*
 * dgrad — the transposed-convolution family on oneDNN.
 *
 * Public C API, in the style of oneDNN Graph: logical tensors describe
 * operands, an op carries a kind and attributes, compiling an op for concrete
 * input/output logical tensors yields a compiled op that executes on raw
 * buffers.
 *
 * Conventions
 * - Every function returns a dgrad_status_t, except six queries that
 *   cannot fail and set no message: dgrad_last_error_message,
 *   dgrad_status_name, dgrad_data_type_name, dgrad_data_type_size,
 *   dgrad_op_kind_name and dgrad_compiled_op_impl_name. Each function
 *   lists the statuses it returns under @returns.
 * - On failure a message naming the op, the offending values and the rule
 *   is available from dgrad_last_error_message() on the calling thread,
 *   and nothing is written to the caller's output arguments or buffers.
 *   One exception: when oneDNN itself fails while executing
 *   (dgrad_runtime_error or dgrad_out_of_memory from an execute function),
 *   the output buffer may be partly written.
 * - Messages about an op that was given a name at dgrad_op_create() carry
 *   it: "ConvTranspose 'upsample': ..." (attribute setters, compile,
 *   execute).
 * - create/destroy pairs: destroy functions accept NULL and always return
 *   dgrad_success.
 * - Dims and strides are counted in elements; strides may be any
 *   non-negative values (dense NCX, NXC, channels-last strides under NCX
 *   dims, padded rows ...). An input's elements may share addresses (a
 *   stride-0 broadcast, overlapping rows): they are read as given. An
 *   output's may not: a layout that puts two output elements at one
 *   address is dgrad_invalid_arguments at compile time. An input's
 *   buffer may not overlap the output's, except the in-place Add operand
 *   at the output's address (dgrad_compiled_op_query_in_place_input).
 * - Ops, logical tensors and compiled ops are plain values or handles that
 *   dgrad does not share between threads except as documented:
 *   dgrad_compiled_op_execute() may be called from several threads at once on
 *   the same compiled op with different buffers.
 */
#ifndef DGRAD_DGRAD_H
#define DGRAD_DGRAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DGRAD_BUILDING_LIBRARY)
#define DGRAD_API __attribute__((visibility("default")))
#else
#define DGRAD_API
#endif

#define DGRAD_VERSION_MAJOR 0
#define DGRAD_VERSION_MINOR 1
#define DGRAD_VERSION_PATCH 0

/** Largest rank of any tensor dgrad accepts (weights of a 3D grouped op have 6). */
#define DGRAD_MAX_NDIMS 8
/** Bytes of an op's name that dgrad keeps (see dgrad_op_create). */
#define DGRAD_MAX_OP_NAME_LENGTH 63
/** Longest post-op chain of an op (dgrad_op_append_post_op). */
#define DGRAD_MAX_POST_OPS 8
/** ndims of a logical tensor whose rank is not known yet. */
#define DGRAD_UNKNOWN_NDIMS (-1)
/** A dimension that is not known yet (only for outputs at compile time). */
#define DGRAD_UNKNOWN_DIM (-1)

/** Status codes, in the style of dnnl_status_t. */
typedef enum dgrad_status {
    dgrad_success = 0,
    /** An allocation failed. */
    dgrad_out_of_memory = 1,
    /** The caller broke a rule: bad attribute, NULL pointer, wrong count. */
    dgrad_invalid_arguments = 2,
    /** Valid, but not supported here: a graph compiler may fall back. */
    dgrad_unimplemented = 3,
    /** Shapes are inconsistent or cannot be produced. */
    dgrad_invalid_shape = 4,
    /** A data type is unsupported for its role or the types are mixed. */
    dgrad_invalid_data_type = 5,
    /** oneDNN or the system failed at run time. */
    dgrad_runtime_error = 6,
    /** A struct or table crossing the plugin boundary has the wrong version. */
    dgrad_abi_mismatch = 7,
} dgrad_status_t;

typedef enum dgrad_data_type {
    dgrad_data_type_undef = 0,
    dgrad_f32 = 1,
    dgrad_bf16 = 2,
    dgrad_f16 = 3,
    /** Only for shape tensors (dst_shape / output_shape inputs). */
    dgrad_s32 = 4,
    dgrad_s64 = 5,
} dgrad_data_type_t;

typedef enum dgrad_layout_type {
    dgrad_layout_type_undef = 0,
    /** dims plus explicit strides (in elements). */
    dgrad_layout_type_strided = 1,
    /** Output only: dgrad chooses a strided layout at compile time. */
    dgrad_layout_type_any = 2,
} dgrad_layout_type_t;

typedef enum dgrad_property_type {
    dgrad_property_type_undef = 0,
    /** Contents may change between executions. */
    dgrad_property_type_variable = 1,
    /** Contents never change (e.g. trained weights): dgrad may convert them
     * once at the first execution and reuse the result. */
    dgrad_property_type_constant = 2,
} dgrad_property_type_t;

/** Description of one operand, oneDNN-Graph style. A plain value. */
typedef struct dgrad_logical_tensor {
    /** sizeof(dgrad_logical_tensor_t) as the caller's header defines it; set
     * by the init functions. Only the plugin ABI reads it (to accept tensors
     * from hosts built against another minor version). */
    size_t struct_size;
    /** Caller's id, only echoed back. */
    size_t id;
    /** Rank, or DGRAD_UNKNOWN_NDIMS. */
    int32_t ndims;
    /** Sizes; DGRAD_UNKNOWN_DIM where unknown (outputs only). */
    int64_t dims[DGRAD_MAX_NDIMS];
    dgrad_data_type_t data_type;
    dgrad_property_type_t property;
    dgrad_layout_type_t layout_type;
    /** Element strides, meaningful when layout_type is strided. */
    int64_t strides[DGRAD_MAX_NDIMS];
} dgrad_logical_tensor_t;

/** The op kinds (dialects) dgrad implements. */
typedef enum dgrad_op_kind {
    dgrad_op_kind_undef = 0,
    /** oneDNN Graph ConvolutionBackwardData: inputs diff_dst, weights,
     * optional dst_shape (1-D s32/s64, the full output shape). */
    dgrad_op_convolution_backward_data = 1,
    /** OpenVINO ConvolutionBackpropData-1: inputs data, weights, optional
     * output_shape (1-D s32/s64, spatial only). */
    dgrad_op_convolution_backprop_data = 2,
    /** OpenVINO GroupConvolutionBackpropData-1: as above, grouped weights. */
    dgrad_op_group_convolution_backprop_data = 3,
    /** ONNX ConvTranspose: inputs X, W, optional bias B [Cout]. */
    dgrad_op_conv_transpose = 4,
    /** oneDNN Graph ConvTranspose (inference): inputs src, weights,
     * optional bias [Cout]; named "onednn:ConvTranspose", since
     * "ConvTranspose" names the ONNX op. */
    dgrad_op_onednn_conv_transpose = 5,
} dgrad_op_kind_t;

/** Attribute names. Each op kind accepts the attributes its dialect defines
 * (see README); setting another is dgrad_invalid_arguments. */
typedef enum dgrad_op_attr {
    dgrad_op_attr_undef = 0,
    dgrad_op_attr_strides = 1,        /**< s64 list, one per spatial axis */
    dgrad_op_attr_pads_begin = 2,     /**< s64 list (oneDNN Graph, OpenVINO) */
    dgrad_op_attr_pads_end = 3,       /**< s64 list (oneDNN Graph, OpenVINO) */
    dgrad_op_attr_pads = 4,           /**< s64 list [b1..bn, e1..en] (ONNX) */
    dgrad_op_attr_dilations = 5,      /**< s64 list */
    dgrad_op_attr_output_padding = 6, /**< s64 list */
    dgrad_op_attr_auto_pad = 7,       /**< string, values per dialect */
    dgrad_op_attr_groups = 8,         /**< s64 (oneDNN Graph) */
    dgrad_op_attr_group = 9,          /**< s64 (ONNX) */
    dgrad_op_attr_data_format = 10,   /**< string NXC|NCX (oneDNN Graph) */
    /** string (oneDNN Graph): XIO|OIX for ConvolutionBackwardData, XOI|IOX
     * for ConvTranspose (the same two layouts under the forward op's
     * names and the transposed op's) */
    dgrad_op_attr_weights_format = 11,
    dgrad_op_attr_dst_shape = 12,     /**< s64 list, full shape (oneDNN Graph) */
    dgrad_op_attr_output_shape = 13,  /**< s64 list, spatial (ONNX) */
    dgrad_op_attr_kernel_shape = 14,  /**< s64 list, checked against W (ONNX) */
    dgrad_op_attr_count = 15,
} dgrad_op_attr_t;

/** An op under construction: kind plus attributes. */
typedef struct dgrad_op dgrad_op_t;
/** An op compiled for concrete logical tensors. */
typedef struct dgrad_compiled_op dgrad_compiled_op_t;

/** Message of the calling thread's last failure. Functions that can fail
 * clear it when they start, so it is "" after most successful calls; read
 * it right after a call that failed. The pointer stays valid until the
 * next dgrad call on this thread. Never NULL. */
DGRAD_API const char *dgrad_last_error_message(void);

/** Name of a status code, e.g. "invalid_shape"; "unknown_status" for a
 * value that is not a dgrad_status_t. Never NULL. */
DGRAD_API const char *dgrad_status_name(dgrad_status_t status);

/** Name of a data type ("f32", "bf16", "f16", "s32", "s64"); "undef" for
 * dgrad_data_type_undef and unknown values. Never NULL. */
DGRAD_API const char *dgrad_data_type_name(dgrad_data_type_t data_type);

/** Size of one element of @p data_type in bytes; 0 for
 * dgrad_data_type_undef and unknown values. */
DGRAD_API size_t dgrad_data_type_size(dgrad_data_type_t data_type);

/**
 * Initializes a logical tensor with dense row-major strides (or layout any).
 * @param lt Output.
 * @param id Caller's id.
 * @param data_type Element type (not checked here: compile judges it).
 * @param ndims Rank (1..DGRAD_MAX_NDIMS) or DGRAD_UNKNOWN_NDIMS.
 * @param dims Sizes (may contain DGRAD_UNKNOWN_DIM; compile checks the
 *     values); may be NULL only when ndims is DGRAD_UNKNOWN_NDIMS.
 * @param layout_type strided (dense row-major strides are filled in when all
 *     dims are known, else the strides are 0) or any.
 * @param property variable or constant (any other value counts as
 *     variable).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p lt is NULL, @p ndims is out of range,
 *     @p dims is NULL for a known rank, or @p layout_type is neither
 *     strided nor any;
 *     dgrad_invalid_shape: the product of the dims overflows 64 bits.
 */
DGRAD_API dgrad_status_t dgrad_logical_tensor_init(dgrad_logical_tensor_t *lt,
        size_t id, dgrad_data_type_t data_type, int32_t ndims,
        const int64_t *dims, dgrad_layout_type_t layout_type,
        dgrad_property_type_t property);

/**
 * Initializes a strided logical tensor with explicit element strides.
 * @param lt, id, data_type, ndims, dims, property As for
 *     dgrad_logical_tensor_init().
 * @param strides One non-negative stride per dimension; may be NULL only
 *     when ndims is DGRAD_UNKNOWN_NDIMS.
 * @returns dgrad_success; the statuses of dgrad_logical_tensor_init()
 *     (with layout strided);
 *     dgrad_invalid_arguments: @p strides is NULL for a known rank or a
 *     stride is negative.
 */
DGRAD_API dgrad_status_t dgrad_logical_tensor_init_with_strides(
        dgrad_logical_tensor_t *lt, size_t id, dgrad_data_type_t data_type,
        int32_t ndims, const int64_t *dims, const int64_t *strides,
        dgrad_property_type_t property);

/**
 * Number of elements a buffer for @p lt must span: its largest element
 * offset + 1, or 0 when a dim is 0.
 * @param lt A strided logical tensor of known rank and dims.
 * @param n_elements Output.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: an argument is NULL, or @p lt is not strided
 *     or its rank is unknown or out of range;
 *     dgrad_invalid_shape: a dim is unknown (also when another dim is 0),
 *     or the span overflows 64 bits.
 */
DGRAD_API dgrad_status_t dgrad_logical_tensor_get_span(
        const dgrad_logical_tensor_t *lt, int64_t *n_elements);

/**
 * Op kind from its dialect name.
 * @param name "ConvolutionBackwardData", "ConvolutionBackpropData",
 *     "GroupConvolutionBackpropData", "ConvTranspose" (ONNX) or
 *     "onednn:ConvTranspose" (oneDNN Graph), case-sensitive.
 * @param kind Output.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: an argument is NULL or @p name is not one
 *     of the five (the message lists them).
 */
DGRAD_API dgrad_status_t dgrad_op_kind_from_name(
        const char *name, dgrad_op_kind_t *kind);

/** Dialect name of an op kind; "undef" for dgrad_op_kind_undef and unknown
 * values. Never NULL. */
DGRAD_API const char *dgrad_op_kind_name(dgrad_op_kind_t kind);

/**
 * Creates an op with default attributes.
 * @param op Output handle; destroy with dgrad_op_destroy().
 * @param id Caller's id.
 * @param kind The dialect.
 * @param name Caller's name for the op (may be NULL or ""): failures of
 *     the op's attribute setters, of compiling it and of executing what
 *     was compiled from it name it ("ConvTranspose 'upsample': ...").
 *     dgrad keeps a copy of its first DGRAD_MAX_OP_NAME_LENGTH bytes.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p op is NULL or @p kind is not an op kind;
 *     dgrad_out_of_memory.
 */
DGRAD_API dgrad_status_t dgrad_op_create(dgrad_op_t **op, size_t id,
        dgrad_op_kind_t kind, const char *name);

/** Destroys an op; NULL is accepted. Compiled ops made from it stay
 * valid.
 * @returns dgrad_success. */
DGRAD_API dgrad_status_t dgrad_op_destroy(dgrad_op_t *op);

/**
 * Sets an integer attribute (groups, group). Values are range-checked by
 * compile, not here.
 * @param op The op.
 * @param attr An integer attribute of the op's dialect.
 * @param value The value.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p op is NULL, the op's dialect has no
 *     attribute @p attr (the message lists those it has), or @p attr is
 *     not an integer.
 */
DGRAD_API dgrad_status_t dgrad_op_set_attr_s64(
        dgrad_op_t *op, dgrad_op_attr_t attr, int64_t value);

/**
 * Sets an integer-list attribute (strides, pads, ...). Values are
 * range-checked by compile, not here; an integer attribute may be set
 * with exactly one value.
 * @param op The op.
 * @param attr A list (or integer) attribute of the op's dialect.
 * @param values @p count values; may be NULL when @p count is 0 (an empty
 *     list).
 * @param count Number of values, at most 12 (oneDNN Graph's attribute
 *     length).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p op is NULL, the op's dialect has no
 *     attribute @p attr, @p attr is a string, an integer attribute gets
 *     other than one value, @p count is too large, or @p values is NULL
 *     with a non-zero @p count.
 */
DGRAD_API dgrad_status_t dgrad_op_set_attr_s64s(dgrad_op_t *op,
        dgrad_op_attr_t attr, const int64_t *values, size_t count);

/**
 * Sets a string attribute (auto_pad, data_format, weights_format).
 * @param op The op.
 * @param attr A string attribute of the op's dialect.
 * @param value One of the values the dialect defines for @p attr (auto_pad
 *     ignores case, the formats do not).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p op or @p value is NULL, the op's dialect
 *     has no attribute @p attr, @p attr is not a string, or @p value is not
 *     one the dialect accepts (the message lists them).
 */
DGRAD_API dgrad_status_t dgrad_op_set_attr_str(
        dgrad_op_t *op, dgrad_op_attr_t attr, const char *value);

/**
 * Sets an attribute from text, for text front ends.
 * @param op The op.
 * @param name The dialect's attribute name ("strides", "pads",
 *     "auto_pad", ...).
 * @param value The text of the value: an integer ("2"), a list ("2,2",
 *     "[2, 2]", "2 2", "[]") or a string ("SAME_UPPER").
 * @returns dgrad_success; the statuses of dgrad_op_set_attr_s64s() and
 *     dgrad_op_set_attr_str();
 *     dgrad_invalid_arguments also when @p name or @p value is NULL, the
 *     dialect has no attribute @p name, or @p value is not an integer list
 *     (or overflows 64 bits) for a list or integer attribute.
 */
DGRAD_API dgrad_status_t dgrad_op_set_attr_by_name(
        dgrad_op_t *op, const char *name, const char *value);

/**
 * Appends a post-op to an op: the op then computes post(op(...)), fused
 * where the lowering can (one partition of a graph compiler: the
 * transposed convolution followed by a chain of element-wise ops). Post-ops
 * apply in the order appended, to each output element after the op's own
 * bias, computed in f32 at least.
 * @param op The op (any dialect).
 * @param kind A oneDNN Graph op name: Abs, Clamp (min, max), Elu (alpha),
 *     Exp, GELU (mode gelu_erf or gelu_tanh; gelu_erf by default),
 *     HardSigmoid (alpha, beta), HardSwish, LeakyReLU (alpha), Log, Mish,
 *     ReLU, Round (ties to even), Sigmoid, SoftPlus (beta, 1 by default),
 *     Sqrt, Square, Tanh; Add, Multiply, Maximum, Minimum, Divide,
 *     Subtract (auto_broadcast numpy, the default, or none); BiasAdd
 *     (data_format NXC, the default, or NCX). The attributes in
 *     parentheses are the op's (required unless a default is named).
 * @param n_attrs Number of attributes.
 * @param attr_names, attr_values @p n_attrs names and values as text
 *     (numbers as "0.5"); may be NULL when @p n_attrs is 0.
 * Each binary op and BiasAdd takes one more input at compile and
 * execution, after the op's own inputs, in the order appended: f32, bf16
 * or f16, strided, broadcasting to the output (numpy rules from the last
 * axis; BiasAdd: one value per channel of its data_format's channel
 * axis).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p op or @p kind is NULL, names or values
 *     are NULL with a non-zero @p n_attrs, @p kind is not one of those
 *     above, an attribute is unknown to it, missing while required, or
 *     not a finite number (or an accepted string), SoftPlus's beta is 0,
 *     or the op already has DGRAD_MAX_POST_OPS (8) post-ops. The op is
 *     unchanged on failure.
 */
DGRAD_API dgrad_status_t dgrad_op_append_post_op(dgrad_op_t *op,
        const char *kind, size_t n_attrs, const char *const *attr_names,
        const char *const *attr_values);

/**
 * Compiles an op for concrete operands.
 * @param compiled Output handle; destroy with dgrad_compiled_op_destroy().
 * @param op The op (may be destroyed afterwards).
 * @param n_inputs 2, or 3 with the dialect's optional third input; plus
 *     one per post-op with an operand (dgrad_op_append_post_op).
 * @param inputs The input logical tensors, in dialect order, then the
 *     post-ops' operands in chain order.
 * @param output In: the requested output (dims may be unknown, layout may be
 *     any). Out: the output with its inferred dims and chosen strides. When
 *     a dst_shape/output_shape input is given and the output dims are not
 *     known, the spatial dims stay DGRAD_UNKNOWN_DIM and are resolved at
 *     execution from the input's values.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: a pointer is NULL, @p n_inputs is not 2 or
 *     3 (plus the post-op operands), an attribute value or its length
 *     breaks its dialect's rule
 *     (groups that do not divide the channels too), a layout is not
 *     strided (inputs) or has a negative stride, an output layout puts two
 *     elements at one address, or no output shape can be found;
 *     dgrad_invalid_shape: ranks or dims are unknown where they must be
 *     known, out of range or inconsistent with each other and the
 *     attributes, or a post-op operand does not broadcast to the output;
 *     dgrad_invalid_data_type: a data type is not one of f32, bf16, f16
 *     (s32, s64 for a shape input) or the types are mixed (a post-op
 *     operand may be any of the three);
 *     dgrad_unimplemented: valid, but not run by dgrad (more than 3 spatial
 *     axes for ConvTranspose, sizes beyond what oneDNN 2.6 handles, an
 *     output layout too interleaved to check, a problem oneDNN has no
 *     implementation for);
 *     dgrad_out_of_memory;
 *     dgrad_runtime_error: oneDNN or the system failed while planning.
 */
DGRAD_API dgrad_status_t dgrad_compiled_op_create(
        dgrad_compiled_op_t **compiled, const dgrad_op_t *op,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        dgrad_logical_tensor_t *output);

/** Destroys a compiled op; NULL is accepted. No execution of it may be
 * running.
 * @returns dgrad_success. */
DGRAD_API dgrad_status_t dgrad_compiled_op_destroy(
        dgrad_compiled_op_t *compiled);

/**
 * The output logical tensor as compiled (dims may be unknown).
 * @param compiled The compiled op.
 * @param output Output.
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: an argument is NULL.
 */
DGRAD_API dgrad_status_t dgrad_compiled_op_query_output(
        const dgrad_compiled_op_t *compiled, dgrad_logical_tensor_t *output);

/**
 * Which input may share the output's buffer. A chain whose post-op is an
 * Add of an operand laid out exactly as the output (the output's dims,
 * strides and type) accumulates onto that operand in place, as oneDNN
 * Graph's in-place sum does: the host may pass the output buffer as that
 * input (the same address), and the result is as if the operand had
 * been read from a buffer of its own. The first such Add counts. Any
 * other overlap of an input's buffer with the output's is refused at
 * execution (dgrad_invalid_arguments).
 * @param compiled The compiled op.
 * @param input_index Output: the input's index in the execute order, or
 *     -1 when no input may share the output's buffer. For an op whose
 *     output dims are unknown at compile time it is -1; each execution
 *     then decides for its own output (an Add operand laid out as that
 *     output may share it).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: an argument is NULL.
 */
DGRAD_API dgrad_status_t dgrad_compiled_op_query_in_place_input(
        const dgrad_compiled_op_t *compiled, int64_t *input_index);

/**
 * Name of the oneDNN implementation chosen (e.g. "jit:avx512_core"),
 * "deferred" when the plan is built at execution, "none" for a NULL
 * @p compiled. Never NULL; the pointer lives as long as the compiled op.
 */
DGRAD_API const char *dgrad_compiled_op_impl_name(
        const dgrad_compiled_op_t *compiled);

/**
 * Executes a compiled op. Safe to call from several threads at once on
 * different output buffers.
 * @param compiled The compiled op.
 * @param n_inputs Must equal the count given at compile time.
 * @param inputs Input buffers in the layout of their logical tensors; a
 *     dst_shape/output_shape input holds its s32/s64 values.
 * @param output Output buffer in the compiled output layout; the caller
 *     vouches that it holds the output (for an output whose dims were
 *     unknown at compile time, dgrad_compiled_op_execute_dynamic() checks
 *     its size).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: a pointer or input buffer is NULL,
 *     @p n_inputs differs from the compiled count, or an input's buffer
 *     overlaps the output's other than as the in-place input at the
 *     output's address (dgrad_compiled_op_query_in_place_input);
 *     dgrad_invalid_shape: the shape input's values do not match the
 *     compiled output dims, or (dims unknown at compile time) break the
 *     output-shape rules;
 *     dgrad_unimplemented: (dims unknown at compile time) oneDNN cannot run
 *     the problem those values make;
 *     dgrad_out_of_memory;
 *     dgrad_runtime_error: oneDNN or the system failed.
 */
DGRAD_API dgrad_status_t dgrad_compiled_op_execute(
        const dgrad_compiled_op_t *compiled, size_t n_inputs,
        const void *const *inputs, void *output);

/**
 * Executes a compiled op whose output dims were unknown at compile time and
 * reports the output actually produced (any compiled op may be executed
 * this way).
 * @param compiled, n_inputs, inputs As for dgrad_compiled_op_execute().
 * @param output Output buffer.
 * @param output_capacity Size of @p output in bytes.
 * @param output_lt Optional (may be NULL): receives the resolved output
 *     logical tensor (dims and strides used).
 * @returns the statuses of dgrad_compiled_op_execute();
 *     dgrad_invalid_arguments also when the resolved output does not fit
 *     in @p output_capacity bytes (nothing is written then).
 */
DGRAD_API dgrad_status_t dgrad_compiled_op_execute_dynamic(
        const dgrad_compiled_op_t *compiled, size_t n_inputs,
        const void *const *inputs, void *output, size_t output_capacity,
        dgrad_logical_tensor_t *output_lt);

#ifdef __cplusplus
}
#endif

#endif /* DGRAD_DGRAD_H */
