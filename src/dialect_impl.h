/*
 * The dialect layer's own header, shared by its files: the tables of op
 * kinds and attributes (op_desc.c) and the context of one resolution
 * (resolve.c, output_shape.c). No oneDNN here.
 */
#ifndef DGRAD_DIALECT_IMPL_H
#define DGRAD_DIALECT_IMPL_H

#include <stdint.h>

#include "error.h"
#include "problem.h"

/* A string value a dialect accepts and what it means. */
typedef struct choice {
    const char *text;
    int value;
} choice_t;

#define N_CHOICES(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Tensor roles, to index kind_info_t.tensor (names used in messages). */
enum { T_DATA, T_WEI, T_THIRD, T_OUT };

typedef struct kind_info {
    const char *name;
    const char *tensor[4];  /* data, weights, third input, output */
    unsigned attrs;         /* bit (1u << attr) for every attribute it has */
    const choice_t *auto_pads;
    int n_auto_pads;
    dgrad_third_input_t third;
    /* oneDNN Graph's ops: NXC data and kernel-first weights by default,
     * lists of zeros for unset dst_shape / output_padding. */
    int onednn_graph;
    const choice_t *weights_formats; /* value 1: kernel first */
    int n_weights_formats;
} kind_info_t;

typedef enum { ATTR_LIST, ATTR_SCALAR, ATTR_STRING } attr_type_t;

typedef struct attr_info {
    const char *name;
    attr_type_t type;
} attr_info_t;

/* Name and value type of every attribute, by dgrad_op_attr_t. */
extern const attr_info_t attr_infos[dgrad_op_attr_count];

/* The table entry of an op kind, or NULL. */
const kind_info_t *kind_info(dgrad_op_kind_t kind);
int kind_has_attr(const kind_info_t *ki, dgrad_op_attr_t attr);

/* Records "<op>: <message>" and returns @p status. */
dgrad_status_t op_error(const char *op, dgrad_status_t status,
        const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The accepted values of a string attribute, a lookup, and their list as
 * text for messages. */
const choice_t *string_choices(const kind_info_t *ki, dgrad_op_attr_t attr,
        int *n, int *ignore_case);
int find_choice(const choice_t *c, int n, const char *text, int ignore_case);
const char *join_choices(char *buf, size_t size, const choice_t *c, int n);

/* ------------------------------------------------- one resolution */

/* Everything dgrad_problem_resolve works with; r is the result. */
typedef struct ctx {
    const dgrad_op_desc_t *desc;
    const kind_info_t *ki;
    const char *op;
    dgrad_op_kind_t kind;
    size_t n_inputs;
    const dgrad_logical_tensor_t *data, *wei, *third, *req;
    const dgrad_logical_tensor_t *operands; /* of the post-ops, in order */
    const int64_t *shape_values;
    const int *any_order; /* canonical axes of an any output, outermost first */
    size_t n_shape_values;
    int nsp;
    int nxc; /* data and output are [N, X..., C] (oneDNN Graph NXC) */
    int xio; /* weights are [K..., Cout/G, Cin] (oneDNN Graph XIO) */
    dgrad_auto_pad_t auto_pad;
    int64_t F[DGRAD_MAX_SPATIAL];
    dgrad_resolved_t r;
} ctx_t;

typedef dgrad_status_t step_fn(ctx_t *c);

static inline const char *tname(const ctx_t *c, int role) {
    return c->ki->tensor[role];
}

static inline int has_shape_input(const ctx_t *c) {
    return c->third && c->ki->third != dgrad_third_input_bias;
}

static inline const dgrad_attr_value_t *attr_of(const ctx_t *c,
        dgrad_op_attr_t a) {
    return &c->desc->attrs[a];
}

/* Value @p i of a list attribute, or @p dflt when it is not set. */
static inline int64_t attr_at(const ctx_t *c, dgrad_op_attr_t a, int i,
        int64_t dflt) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    return v->is_set && i < v->count ? v->values[i] : dflt;
}

static inline int64_t stride_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_strides, i, 1);
}
static inline int64_t dilation_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_dilations, i, 1);
}
static inline int64_t out_pad_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_output_padding, i, 0);
}
static inline int64_t pad_begin_at(const ctx_t *c, int i) {
    if (c->kind == dgrad_op_conv_transpose)
        return attr_at(c, dgrad_op_attr_pads, i, 0);
    return attr_at(c, dgrad_op_attr_pads_begin, i, 0);
}
static inline int64_t pad_end_at(const ctx_t *c, int i) {
    if (c->kind == dgrad_op_conv_transpose)
        return attr_at(c, dgrad_op_attr_pads, c->nsp + i, 0);
    return attr_at(c, dgrad_op_attr_pads_end, i, 0);
}

/* Position of canonical data/output dim d ([N, C, X...]) in dialect order. */
static inline int act_pos(const ctx_t *c, int d) {
    if (!c->nxc || d == 0) return d;
    return d == 1 ? c->nsp + 1 : d - 1;
}

/* Positions of Cin (or Cin/G), Cout/G and the first kernel dim in the
 * user's weights. */
static inline void wei_pos(const ctx_t *c, int *ci, int *co, int *k0) {
    if (c->kind == dgrad_op_group_convolution_backprop_data) {
        *ci = 1, *co = 2, *k0 = 3; /* [G, Cin/G, Cout/G, K...] */
    } else if (c->xio) {
        *ci = c->nsp + 1, *co = c->nsp, *k0 = 0; /* [K..., Cout/G, Cin] */
    } else {
        *ci = 0, *co = 1, *k0 = 2; /* [Cin, Cout/G, K...] */
    }
}

static inline int all_dims_known(const dgrad_logical_tensor_t *t) {
    if (t->ndims == DGRAD_UNKNOWN_NDIMS) return 0;
    for (int d = 0; d < t->ndims; d++)
        if (t->dims[d] == DGRAD_UNKNOWN_DIM) return 0;
    return 1;
}

/* Formats a list of values into a local char array (for messages). */
#define DIMS(buf, v, n) dgrad_format_dims(buf, sizeof buf, v, n)

/* oneDNN Graph writes an unset dst_shape or output_padding as a list of
 * zeros (DNNL_MAX_NDIMS of them): all-zero or empty, of any length, means
 * "not given" for these two attributes of its ops. */
static inline int list_given(const ctx_t *c, dgrad_op_attr_t a) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    if (!v->is_set) return 0;
    if (!c->ki->onednn_graph
            || (a != dgrad_op_attr_dst_shape
                    && a != dgrad_op_attr_output_padding))
        return 1;
    for (int i = 0; i < v->count; i++)
        if (v->values[i] != 0) return 1;
    return 0;
}

/* The output-shape rules (output_shape.c): natural sizes, then PB and Y
 * per axis in each dialect. */
dgrad_status_t compute_natural_sizes(ctx_t *c);
dgrad_status_t resolve_output_shape(ctx_t *c);

/* The post-ops and their operands (post_ops.c), once the output is
 * resolved. */
dgrad_status_t resolve_post_ops(ctx_t *c);

#endif
