/*
 * Dialect layer: op descriptions in the five dialects -> one canonical
 * problem (canonical.h; DESIGN.md section 1). Op descriptions are
 * op_desc.c's; validation and shape inference resolve.c's and
 * output_shape.c's. This layer knows no oneDNN.
 */
#ifndef DGRAD_PROBLEM_H
#define DGRAD_PROBLEM_H

#include <stdint.h>

#include "canonical.h"
#include "dgrad/dgrad.h"

/* Longest list attribute: oneDNN Graph writes an unset dst_shape or
 * output_padding as DNNL_MAX_NDIMS (12) zeros; a meaningful list is at most
 * 2 values per spatial axis (ONNX pads) or N, C and the spatial dims. */
#define DGRAD_ATTR_MAX_VALUES 12
#define DGRAD_ATTR_MAX_TEXT 24

typedef enum dgrad_auto_pad {
    dgrad_auto_pad_explicit = 0, /* oneDNN None/explicit, OpenVINO explicit/notset, ONNX NOTSET */
    dgrad_auto_pad_same_upper = 1,
    dgrad_auto_pad_same_lower = 2,
    dgrad_auto_pad_valid = 3,
} dgrad_auto_pad_t;

typedef struct dgrad_attr_value {
    int is_set;
    int count;                              /* list length (1 for scalars) */
    int64_t values[DGRAD_ATTR_MAX_VALUES];  /* integer / list attributes */
    char text[DGRAD_ATTR_MAX_TEXT];         /* string attributes, as given */
} dgrad_attr_value_t;

/* A post-op as the user described it (oneDNN Graph's op names and
 * attributes), already checked and mapped to its canonical algorithm. */
typedef struct dgrad_post_op_desc {
    char kind[24];          /* the op name, for messages */
    int32_t alg;            /* dgrad_post_alg_t */
    double alpha, beta;
    int32_t has_operand;    /* binary ops and BiasAdd take one more input */
    int32_t bias_add;       /* BiasAdd: the operand is [C] */
    int32_t channels_last;  /* BiasAdd: data_format NXC (C is the last axis) */
    int32_t numpy;          /* binary: auto_broadcast numpy (else none) */
} dgrad_post_op_desc_t;

/* An op as the user described it: kind plus raw attributes, and the
 * post-ops that follow it in one partition. */
typedef struct dgrad_op_desc {
    dgrad_op_kind_t kind;
    dgrad_attr_value_t attrs[dgrad_op_attr_count];
    int32_t n_post_ops;
    dgrad_post_op_desc_t post_ops[DGRAD_MAX_POST_OPS];
} dgrad_op_desc_t;

/* Appends a post-op to @p desc: @p kind is a oneDNN Graph op name (the
 * unary ops Abs, Clamp, Elu, Exp, GELU, HardSigmoid, HardSwish,
 * LeakyReLU, Log, Mish, ReLU, Round, Sigmoid, SoftPlus, Sqrt, Square,
 * Tanh; the binary ops Add, Multiply, Maximum, Minimum, Divide, Subtract;
 * BiasAdd), with its attributes as text (Clamp min/max, Elu and LeakyReLU
 * alpha, HardSigmoid alpha/beta, SoftPlus beta, GELU mode, the binary
 * ops' auto_broadcast, BiasAdd's data_format). Fails, leaving @p desc
 * unchanged, for an unknown op or attribute, a missing required
 * attribute, a bad value, or a full chain. */
dgrad_status_t dgrad_op_desc_append_post_op(dgrad_op_desc_t *desc,
        const char *kind, size_t n_attrs, const char *const *names,
        const char *const *values);

/* Whether @p kind names a post-op dgrad fuses (a oneDNN Graph op name). */
int dgrad_post_op_kind_known(const char *kind);

/* Number of inputs the post-ops of @p desc take (one per binary op). */
int dgrad_op_desc_post_operands(const dgrad_op_desc_t *desc);


/* Role of the optional third input of an op kind. */
typedef enum dgrad_third_input {
    dgrad_third_input_none = 0,
    dgrad_third_input_full_shape = 1,    /* oneDNN Graph dst_shape */
    dgrad_third_input_spatial_shape = 2, /* OpenVINO output_shape */
    dgrad_third_input_bias = 3,          /* ONNX B */
} dgrad_third_input_t;

dgrad_third_input_t dgrad_op_kind_third_input(dgrad_op_kind_t kind);

/* Initialises @p desc with no attribute set. Fails for an unknown kind. */
dgrad_status_t dgrad_op_desc_init(dgrad_op_desc_t *desc, dgrad_op_kind_t kind);

/* Attribute setters. They check that the kind has the attribute, its value
 * type, its length bound and (for strings) that the value is one the dialect
 * accepts (auto_pad case-insensitive where the dialect allows). Range checks
 * that need the tensors (length == spatial rank, stride >= 1 ...) happen in
 * dgrad_problem_resolve so that they name the tensors. */
dgrad_status_t dgrad_op_desc_set_s64(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, int64_t value);
dgrad_status_t dgrad_op_desc_set_s64s(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, const int64_t *values, size_t count);
dgrad_status_t dgrad_op_desc_set_str(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, const char *value);
/* Text front ends: attribute by dialect name, value as text. */
dgrad_status_t dgrad_op_desc_set_by_name(dgrad_op_desc_t *desc,
        const char *name, const char *value);

/* Attribute name <-> enum (names are the dialects' own). */
const char *dgrad_op_attr_name(dgrad_op_attr_t attr);
dgrad_op_attr_t dgrad_op_attr_from_name(const char *name);

/* Result of dgrad_problem_resolve. */
typedef struct dgrad_resolved {
    dgrad_problem_t problem;
    /* The output logical tensor in the dialect's order (e.g. NXC), with
     * dims and strides filled in. */
    dgrad_logical_tensor_t output;
    /* 1 when a shape input's values are needed and were not given (and the
     * output dims were unknown): problem's Y/PB and output spatial dims are
     * not resolved yet (DGRAD_UNKNOWN_DIM). */
    int deferred;
    /* 1 when the chain's first post-op became the problem's bias (see
     * resolve_post_ops): its operand, the first after the op's own
     * inputs, is the bias, and problem.post_ops holds the rest. */
    int bias_from_post_op;
} dgrad_resolved_t;

/*
 * Validates an op against its operands and resolves the canonical problem.
 *
 * @param desc      The op.
 * @param n_inputs  2 or 3.
 * @param inputs    Input logical tensors in dialect order (all strided,
 *                  dims known).
 * @param output    Requested output: ndims/dims may be unknown, layout
 *                  strided or any. Known dims must agree with the inferred
 *                  ones. Layout any gets dense row-major strides in the
 *                  dialect's order here; the library resolves with
 *                  dgrad_problem_resolve_with_layout, where the layer
 *                  below chooses.
 * @param shape_values  Values of the dst_shape/output_shape input, or NULL
 *                  when unknown (compile time). When NULL and the output dims
 *                  are known, the output dims stand for the values.
 * @param n_shape_values  Number of values.
 * @param out       Result. Written only on success.
 *
 * Errors name the op kind, the values and the rule, e.g.
 * "ConvolutionBackwardData: groups (3) does not divide diff_dst channels (16)".
 */
/* dgrad_problem_resolve where an output of layout any is laid out
 * densely with its canonical axes ([N, C, Y...], numbered 0..nsp+1) in
 * @p any_order, outermost first: a choice of the backend (the oneDNN
 * layer's dgrad_plan_output_order), not of the dialect layer. */
dgrad_status_t dgrad_problem_resolve_with_layout(const dgrad_op_desc_t *desc,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, const int *any_order, dgrad_resolved_t *out);

dgrad_status_t dgrad_problem_resolve(const dgrad_op_desc_t *desc,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, dgrad_resolved_t *out);


/*
 * The rules of dgrad_problem_resolve that need only the op kind and the
 * inputs (its type and rank steps: check_types, check_ranks), for a caller
 * that asks before it builds an op (the plugin's query_support). No
 * attribute is set; layouts and extents are not judged. A rank not known
 * yet (DGRAD_UNKNOWN_NDIMS) leaves the rank rules to resolve; an unknown
 * dim is not judged. @p inputs holds @p n_inputs tensors (at most 3 are
 * read). Allocates nothing; messages are recorded as resolve records them.
 */
dgrad_status_t dgrad_problem_check_operands(dgrad_op_kind_t kind,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs);

#endif
