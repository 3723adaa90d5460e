/*
 * Public API: logical tensors, ops, compile, execute (include/dgrad/dgrad.h).
 *
 * A compiled op holds one or more variants: a resolved problem with its plan
 * (and, for constant weights, the weights converted once into the plan's
 * layout). An op whose output shape is known at compile time has exactly one
 * variant. An op whose shape input's values are only known at execution is
 * "deferred": each distinct value gets its own variant, built at the first
 * execution that uses it and kept for later ones.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "api_internal.h"
#include "dgrad/dgrad.h"
#include "error.h"
#include "onednn.h"
#include "problem.h"

struct dgrad_op {
    size_t id;
    char name[DGRAD_MAX_OP_NAME_LENGTH + 1]; /* "" when the caller gave none */
    dgrad_op_desc_t desc;
};

/* Returns @p status; a failure is named after the op in the message
 * ("ConvTranspose 'upsample': ..."), so a graph compiler learns which of
 * its ops failed. */
static dgrad_status_t named(dgrad_status_t status, dgrad_op_kind_t kind,
        const char *name) {
    if (status != dgrad_success)
        dgrad_error_name_op(dgrad_op_kind_name(kind), name);
    return status;
}

/* Deferred ops keep at most this many variants (distinct shape values);
 * beyond it a value is planned for its execution only, so a stream of
 * ever-new shapes costs time, not unbounded memory. */
#define DGRAD_VARIANTS_KEPT 64

typedef struct variant {
    int64_t shape_values[DGRAD_MAX_NDIMS];
    size_t n_shape_values;
    dgrad_resolved_t resolved;
    dgrad_plan_t *plan;
    void *prepared_weights; /* constant weights in the plan's layout */
    int transient;          /* not kept: freed after its execution */
    struct variant *next;
} variant_t;

struct dgrad_compiled_op {
    char name[DGRAD_MAX_OP_NAME_LENGTH + 1]; /* the op's, for messages */
    dgrad_op_desc_t desc;
    dgrad_plan_policy_t policy; /* every variant is planned by it */
    size_t n_inputs;     /* the op's own, then the post-ops' operands */
    size_t n_own_inputs; /* the op's own: 2 or 3 */
    dgrad_logical_tensor_t inputs[3 + DGRAD_MAX_POST_OPS];
    dgrad_logical_tensor_t output; /* as returned by compile */
    int deferred;
    int constant_weights;
    pthread_mutex_t lock; /* guards the variant list and weight preparation */
    variant_t *variants;
    size_t n_variants;
};

/* ---------------------------------------------------------------- tensors */

dgrad_status_t dgrad_logical_tensor_init(dgrad_logical_tensor_t *lt,
        size_t id, dgrad_data_type_t data_type, int32_t ndims,
        const int64_t *dims, dgrad_layout_type_t layout_type,
        dgrad_property_type_t property) {
    dgrad_error_clear();
    if (!lt) return dgrad_error(dgrad_invalid_arguments,
            "dgrad_logical_tensor_init: lt is NULL");
    if (ndims != DGRAD_UNKNOWN_NDIMS && (ndims < 1 || ndims > DGRAD_MAX_NDIMS))
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_init: ndims (%d) must be 1..%d or "
                "DGRAD_UNKNOWN_NDIMS", (int)ndims, DGRAD_MAX_NDIMS);
    if (ndims > 0 && !dims)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_init: dims is NULL for ndims %d",
                (int)ndims);
    if (layout_type != dgrad_layout_type_strided
            && layout_type != dgrad_layout_type_any)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_init: layout_type (%d) must be strided "
                "or any", (int)layout_type);
    dgrad_logical_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.id = id;
    t.ndims = ndims;
    t.data_type = data_type;
    t.layout_type = layout_type;
    t.property = property;
    int known = ndims > 0;
    for (int i = 0; i < ndims; i++) {
        t.dims[i] = dims[i];
        if (dims[i] < 0) known = 0;
    }
    if (layout_type == dgrad_layout_type_strided && known) {
        int64_t stride = 1;
        for (int i = ndims - 1; i >= 0; i--) {
            t.strides[i] = stride;
            if (__builtin_mul_overflow(stride, dims[i] ? dims[i] : 1, &stride))
                return dgrad_error(dgrad_invalid_shape,
                        "dgrad_logical_tensor_init: dims product overflows "
                        "64 bits");
        }
    }
    *lt = t;
    return dgrad_success;
}

dgrad_status_t dgrad_logical_tensor_init_with_strides(
        dgrad_logical_tensor_t *lt, size_t id, dgrad_data_type_t data_type,
        int32_t ndims, const int64_t *dims, const int64_t *strides,
        dgrad_property_type_t property) {
    dgrad_logical_tensor_t t;
    dgrad_status_t st = dgrad_logical_tensor_init(&t, id, data_type, ndims,
            dims, dgrad_layout_type_strided, property);
    if (st != dgrad_success) return st;
    if (ndims > 0 && !strides)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_init_with_strides: strides is NULL");
    for (int i = 0; i < ndims; i++) {
        if (strides[i] < 0)
            return dgrad_error(dgrad_invalid_arguments,
                    "dgrad_logical_tensor_init_with_strides: stride %d (%lld) "
                    "is negative", i, (long long)strides[i]);
        t.strides[i] = strides[i];
    }
    *lt = t;
    return dgrad_success;
}

dgrad_status_t dgrad_logical_tensor_get_span(
        const dgrad_logical_tensor_t *lt, int64_t *n_elements) {
    dgrad_error_clear();
    if (!lt || !n_elements)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_get_span: NULL argument");
    if (lt->layout_type != dgrad_layout_type_strided || lt->ndims < 1
            || lt->ndims > DGRAD_MAX_NDIMS)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_logical_tensor_get_span: tensor %zu has no strided "
                "layout of known rank", lt->id);
    /* Every dim is checked before a zero dim makes the span 0. */
    for (int i = 0; i < lt->ndims; i++)
        if (lt->dims[i] < 0)
            return dgrad_error(dgrad_invalid_shape,
                    "dgrad_logical_tensor_get_span: tensor %zu dim %d is "
                    "unknown", lt->id, i);
    int64_t last = 0;
    for (int i = 0; i < lt->ndims; i++) {
        int64_t term;
        if (lt->dims[i] == 0) {
            *n_elements = 0;
            return dgrad_success;
        }
        if (__builtin_mul_overflow(lt->dims[i] - 1, lt->strides[i], &term)
                || __builtin_add_overflow(last, term, &last))
            return dgrad_error(dgrad_invalid_shape,
                    "dgrad_logical_tensor_get_span: tensor %zu span overflows "
                    "64 bits", lt->id);
    }
    *n_elements = last + 1;
    return dgrad_success;
}

/* -------------------------------------------------------------------- ops */

dgrad_status_t dgrad_op_create(dgrad_op_t **op, size_t id,
        dgrad_op_kind_t kind, const char *name) {
    dgrad_error_clear();
    if (!op) return dgrad_error(dgrad_invalid_arguments,
            "dgrad_op_create: op is NULL");
    dgrad_op_t *o = dgrad_calloc(1, sizeof *o);
    if (!o) return dgrad_error(dgrad_out_of_memory,
            "dgrad_op_create: out of memory");
    dgrad_status_t st = dgrad_op_desc_init(&o->desc, kind);
    if (st != dgrad_success) {
        free(o);
        return st;
    }
    o->id = id;
    if (name) snprintf(o->name, sizeof o->name, "%s", name); /* may cut */
    *op = o;
    return dgrad_success;
}

const dgrad_op_desc_t *dgrad_op_get_desc(const dgrad_op_t *op) {
    return &op->desc;
}

dgrad_status_t dgrad_op_destroy(dgrad_op_t *op) {
    free(op);
    return dgrad_success;
}

static dgrad_status_t check_op(const dgrad_op_t *op, const char *fn) {
    dgrad_error_clear();
    return op ? dgrad_success
              : dgrad_error(dgrad_invalid_arguments, "%s: op is NULL", fn);
}

dgrad_status_t dgrad_op_set_attr_s64(
        dgrad_op_t *op, dgrad_op_attr_t attr, int64_t value) {
    dgrad_status_t st = check_op(op, "dgrad_op_set_attr_s64");
    return st ? st : named(dgrad_op_desc_set_s64(&op->desc, attr, value),
            op->desc.kind, op->name);
}

dgrad_status_t dgrad_op_set_attr_s64s(dgrad_op_t *op, dgrad_op_attr_t attr,
        const int64_t *values, size_t count) {
    dgrad_status_t st = check_op(op, "dgrad_op_set_attr_s64s");
    return st ? st : named(dgrad_op_desc_set_s64s(&op->desc, attr, values,
            count), op->desc.kind, op->name);
}

dgrad_status_t dgrad_op_set_attr_str(
        dgrad_op_t *op, dgrad_op_attr_t attr, const char *value) {
    dgrad_status_t st = check_op(op, "dgrad_op_set_attr_str");
    return st ? st : named(dgrad_op_desc_set_str(&op->desc, attr, value),
            op->desc.kind, op->name);
}

dgrad_status_t dgrad_op_set_attr_by_name(
        dgrad_op_t *op, const char *name, const char *value) {
    dgrad_status_t st = check_op(op, "dgrad_op_set_attr_by_name");
    return st ? st : named(dgrad_op_desc_set_by_name(&op->desc, name, value),
            op->desc.kind, op->name);
}

dgrad_status_t dgrad_op_append_post_op(dgrad_op_t *op, const char *kind,
        size_t n_attrs, const char *const *attr_names,
        const char *const *attr_values) {
    dgrad_status_t st = check_op(op, "dgrad_op_append_post_op");
    return st ? st : named(dgrad_op_desc_append_post_op(&op->desc, kind,
            n_attrs, attr_names, attr_values), op->desc.kind, op->name);
}

/* ---------------------------------------------------------------- compile */

static void variant_free(variant_t *v) {
    if (!v) return;
    dgrad_plan_release(v->plan);
    free(v->prepared_weights);
    free(v);
}

/* The policy compiled ops are planned by: the defaults, unless a test
 * set another (it is part of the plan-cache key, so plans made by one
 * policy are never handed out for another). */
static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static int policy_overridden;
static dgrad_plan_policy_t policy_override;

void dgrad_api_set_policy_for_testing(const dgrad_plan_policy_t *policy) {
    pthread_mutex_lock(&policy_lock);
    policy_overridden = policy != NULL;
    if (policy) policy_override = *policy;
    pthread_mutex_unlock(&policy_lock);
}

static dgrad_plan_policy_t current_policy(void) {
    pthread_mutex_lock(&policy_lock);
    dgrad_plan_policy_t p = policy_overridden ? policy_override
                                              : dgrad_plan_policy_default();
    pthread_mutex_unlock(&policy_lock);
    return p;
}

/* The dialect layer's resolution, with an output of layout any laid out
 * as the oneDNN layer prefers (the rank comes from the data input; a bad
 * one is the dialect layer's to report). */
static dgrad_status_t resolve(const dgrad_op_desc_t *desc, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *values,
        size_t n_values, dgrad_resolved_t *resolved) {
    int order[2 + DGRAD_MAX_SPATIAL], nsp = inputs[0].ndims - 2;
    int known = nsp >= 1 && nsp <= DGRAD_MAX_SPATIAL;
    if (known) dgrad_plan_output_order(nsp, order);
    return dgrad_problem_resolve_with_layout(desc, n_inputs, inputs, output,
            values, n_values, known ? order : NULL, resolved);
}

/* Plans a resolved problem into a new variant. */
static dgrad_status_t variant_create(const dgrad_resolved_t *resolved,
        const dgrad_plan_policy_t *policy, int constant_weights,
        const int64_t *shape_values, size_t n_shape_values, variant_t **out) {
    variant_t *v = dgrad_calloc(1, sizeof *v);
    if (!v) return dgrad_error(dgrad_out_of_memory,
            "dgrad: out of memory creating a compiled op");
    v->resolved = *resolved;
    v->n_shape_values = n_shape_values;
    if (n_shape_values)
        memcpy(v->shape_values, shape_values,
                n_shape_values * sizeof *shape_values);
    dgrad_status_t st = dgrad_plan_get(&v->resolved.problem,
            constant_weights ? dgrad_weights_constant : dgrad_weights_variable,
            policy, &v->plan);
    if (st != dgrad_success) {
        free(v);
        return st;
    }
    *out = v;
    return dgrad_success;
}

static dgrad_status_t compile(dgrad_compiled_op_t **compiled,
        const dgrad_op_t *op, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs, dgrad_logical_tensor_t *output) {
    if (!compiled || !op || !inputs || !output)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_compiled_op_create: %s is NULL",
                !compiled ? "compiled" : !op ? "op" : !inputs ? "inputs"
                                                            : "output");
    size_t operands = (size_t)dgrad_op_desc_post_operands(&op->desc);
    if (n_inputs < 2 + operands || n_inputs > 3 + operands)
        return dgrad_error(dgrad_invalid_arguments,
                "%s: %zu inputs given, the op takes 2 or 3%s",
                dgrad_op_kind_name(op->desc.kind), n_inputs,
                operands ? " and one per post-op with an operand" : "");

    dgrad_resolved_t resolved;
    dgrad_status_t st = resolve(&op->desc, n_inputs, inputs, output, NULL, 0,
            &resolved);
    if (st != dgrad_success) return st;

    dgrad_compiled_op_t *c = dgrad_calloc(1, sizeof *c);
    if (!c) return dgrad_error(dgrad_out_of_memory,
            "dgrad_compiled_op_create: out of memory");
    memcpy(c->name, op->name, sizeof c->name);
    c->desc = op->desc;
    c->policy = current_policy();
    c->n_inputs = n_inputs;
    c->n_own_inputs = n_inputs - operands;
    memcpy(c->inputs, inputs, n_inputs * sizeof *inputs);
    c->output = resolved.output;
    c->deferred = resolved.deferred;
    c->constant_weights = inputs[1].property == dgrad_property_type_constant;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return dgrad_error(dgrad_runtime_error,
                "dgrad_compiled_op_create: cannot create a mutex");
    }
    if (!c->deferred) {
        c->n_variants = 1;
        st = variant_create(&resolved, &c->policy, c->constant_weights, NULL,
                0, &c->variants);
        if (st != dgrad_success) {
            pthread_mutex_destroy(&c->lock);
            free(c);
            return st;
        }
    }
    *output = c->output;
    *compiled = c;
    return dgrad_success;
}

dgrad_status_t dgrad_compiled_op_create(dgrad_compiled_op_t **compiled,
        const dgrad_op_t *op, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs, dgrad_logical_tensor_t *output) {
    dgrad_error_clear();
    dgrad_status_t st = compile(compiled, op, n_inputs, inputs, output);
    return op ? named(st, op->desc.kind, op->name) : st;
}

dgrad_status_t dgrad_compiled_op_destroy(dgrad_compiled_op_t *compiled) {
    if (!compiled) return dgrad_success;
    variant_t *v = compiled->variants;
    while (v) {
        variant_t *next = v->next;
        variant_free(v);
        v = next;
    }
    pthread_mutex_destroy(&compiled->lock);
    free(compiled);
    return dgrad_success;
}

dgrad_status_t dgrad_compiled_op_query_output(
        const dgrad_compiled_op_t *compiled, dgrad_logical_tensor_t *output) {
    dgrad_error_clear();
    if (!compiled || !output)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_compiled_op_query_output: NULL argument");
    *output = compiled->output;
    return dgrad_success;
}

/* The input that may share the output's buffer in variant @p v (see
 * dgrad_compiled_op_query_in_place_input), or -1: the operand of the
 * in-place Add, counted past the op's own inputs and a chain's first
 * operand taken as the bias. */
static int64_t in_place_input(const dgrad_compiled_op_t *c,
        const variant_t *v) {
    const dgrad_problem_t *p = &v->resolved.problem;
    int i = dgrad_problem_in_place_post_op(p);
    if (i < 0) return -1;
    return (int64_t)c->n_own_inputs + v->resolved.bias_from_post_op
            + dgrad_problem_operands_before(p, i);
}

dgrad_status_t dgrad_compiled_op_query_in_place_input(
        const dgrad_compiled_op_t *compiled, int64_t *input_index) {
    dgrad_error_clear();
    if (!compiled || !input_index)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_compiled_op_query_in_place_input: NULL argument");
    *input_index = compiled->deferred ? -1
            : in_place_input(compiled, compiled->variants);
    return dgrad_success;
}

const char *dgrad_compiled_op_in_place_mode(const dgrad_compiled_op_t *c) {
    return !c || c->deferred ? "none" : dgrad_plan_in_place_mode(c->variants->plan);
}

const char *dgrad_compiled_op_chain_carrier(const dgrad_compiled_op_t *c) {
    return !c || c->deferred ? "none"
                             : dgrad_plan_chain_carrier(c->variants->plan);
}

const char *dgrad_compiled_op_weights_step(const dgrad_compiled_op_t *c) {
    return !c || c->deferred ? "none"
                             : dgrad_plan_weights_step(c->variants->plan);
}

const char *dgrad_compiled_op_impl_name(const dgrad_compiled_op_t *compiled) {
    if (!compiled) return "none";
    if (compiled->deferred) return "deferred";
    return dgrad_plan_impl_name(compiled->variants->plan);
}

/* ---------------------------------------------------------------- execute */

/* Name of the shape input in messages. */
static const char *shape_input_name(dgrad_op_kind_t kind) {
    return dgrad_op_kind_third_input(kind) == dgrad_third_input_full_shape
            ? "dst_shape" : "output_shape";
}

static int has_shape_input(const dgrad_compiled_op_t *c) {
    dgrad_third_input_t t = dgrad_op_kind_third_input(c->desc.kind);
    return c->n_own_inputs == 3 && (t == dgrad_third_input_full_shape
            || t == dgrad_third_input_spatial_shape);
}

/* Reads the s32/s64 values of the shape input (its dims were validated at
 * compile time: 1-D, at most DGRAD_MAX_NDIMS values). */
static size_t read_shape_values(const dgrad_logical_tensor_t *lt,
        const void *data, int64_t *values) {
    size_t n = (size_t)lt->dims[0];
    for (size_t i = 0; i < n; i++) {
        int64_t off = (int64_t)i * lt->strides[0];
        values[i] = lt->data_type == dgrad_s32
                ? ((const int32_t *)data)[off]
                : ((const int64_t *)data)[off];
    }
    return n;
}

static int same_dims(const dgrad_logical_tensor_t *a,
        const dgrad_logical_tensor_t *b) {
    if (a->ndims != b->ndims) return 0;
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* Resolves the problem for shape values read at execution. */
static dgrad_status_t resolve_for_values(const dgrad_compiled_op_t *c,
        const int64_t *values, size_t n, dgrad_resolved_t *resolved) {
    dgrad_logical_tensor_t out = c->output;
    if (!c->deferred) {
        /* Let the values decide the dims; the layout is compared after. */
        for (int i = 0; i < out.ndims; i++) out.dims[i] = DGRAD_UNKNOWN_DIM;
    }
    return resolve(&c->desc, c->n_inputs, c->inputs, &out, values, n,
            resolved);
}

/* Finds or builds the variant for this execution's shape values. */
static dgrad_status_t find_variant(dgrad_compiled_op_t *c,
        const void *const *inputs, variant_t **out) {
    if (!has_shape_input(c)) {
        *out = c->variants;
        return dgrad_success;
    }
    int64_t values[DGRAD_MAX_NDIMS];
    size_t n = read_shape_values(&c->inputs[2], inputs[2], values);
    if (!c->deferred) {
        dgrad_resolved_t r;
        dgrad_status_t st = resolve_for_values(c, values, n, &r);
        if (st != dgrad_success) return st;
        if (!same_dims(&r.output, &c->output)) {
            char got[160], want[160];
            return dgrad_error(dgrad_invalid_shape,
                    "%s: %s input (%s) does not match the compiled output "
                    "shape (%s)", dgrad_op_kind_name(c->desc.kind),
                    shape_input_name(c->desc.kind),
                    dgrad_format_dims(got, sizeof got, values, (int)n),
                    dgrad_format_dims(want, sizeof want, c->output.dims,
                            c->output.ndims));
        }
        *out = c->variants;
        return dgrad_success;
    }
    for (variant_t *v = c->variants; v; v = v->next)
        if (v->n_shape_values == n
                && !memcmp(v->shape_values, values, n * sizeof *values)) {
            *out = v;
            return dgrad_success;
        }
    dgrad_resolved_t r;
    dgrad_status_t st = resolve_for_values(c, values, n, &r);
    if (st != dgrad_success) return st;
    variant_t *v = NULL;
    st = variant_create(&r, &c->policy, c->constant_weights, values, n, &v);
    if (st != dgrad_success) return st;
    if (c->n_variants >= DGRAD_VARIANTS_KEPT) {
        v->transient = 1;
    } else {
        v->next = c->variants;
        c->variants = v;
        c->n_variants++;
    }
    *out = v;
    return dgrad_success;
}

/* Converts constant weights once per variant. */
static dgrad_status_t prepare_weights(variant_t *v, const void *weights) {
    size_t size = dgrad_plan_prepared_weights_size(v->plan);
    if (v->prepared_weights || size == 0) return dgrad_success;
    void *buf = dgrad_aligned_alloc(64, size);
    if (!buf) return dgrad_error(dgrad_out_of_memory,
            "dgrad: out of memory preparing constant weights (%zu bytes)",
            size);
    dgrad_status_t st = dgrad_plan_prepare_weights(v->plan, weights, buf);
    if (st != dgrad_success) {
        free(buf);
        return st;
    }
    v->prepared_weights = buf;
    return dgrad_success;
}

/* Bytes from a tensor's first element to past its last (0: empty; -1:
 * dims unknown). */
static int64_t span_bytes(const dgrad_logical_tensor_t *lt) {
    int64_t n = 0;
    if (dgrad_logical_tensor_get_span(lt, &n) != dgrad_success) return -1;
    return n * (int64_t)dgrad_data_type_size(lt->data_type);
}

/* Refuses an input whose buffer overlaps the output's, but for the
 * in-place input at the output's own address: dgrad writes the output
 * while it still reads its inputs. */
static dgrad_status_t check_overlaps(const dgrad_compiled_op_t *c,
        const variant_t *v, const void *const *inputs, const void *output) {
    uintptr_t out = (uintptr_t)output;
    int64_t out_bytes = span_bytes(&v->resolved.output);
    int64_t allowed = in_place_input(c, v);
    for (size_t i = 0; i < c->n_inputs && out_bytes > 0; i++) {
        uintptr_t in = (uintptr_t)inputs[i];
        int64_t bytes = span_bytes(&c->inputs[i]);
        if (bytes <= 0 || in >= out + (uintptr_t)out_bytes
                || out >= in + (uintptr_t)bytes)
            continue;
        if ((int64_t)i == allowed && in == out) continue;
        char rule[96];
        if (allowed < 0)
            snprintf(rule, sizeof rule, "no input may share it here");
        else
            snprintf(rule, sizeof rule,
                    "only input %lld may, at the output's own address",
                    (long long)allowed);
        return dgrad_error(dgrad_invalid_arguments,
                "%s: input %zu's buffer (%lld bytes, starting %lld bytes "
                "from the output's) overlaps the output's buffer (%lld "
                "bytes): an input may share the output's buffer only as the "
                "operand of an Add laid out as the output, which the output "
                "accumulates onto in place; %s",
                dgrad_op_kind_name(c->desc.kind), i, (long long)bytes,
                (long long)(int64_t)(in - out), (long long)out_bytes, rule);
    }
    return dgrad_success;
}

/* Runs one variant: output capacity check, then the plan. */
static dgrad_status_t execute_variant(const dgrad_compiled_op_t *c,
        const variant_t *v, const void *const *inputs, void *output,
        int64_t capacity, dgrad_logical_tensor_t *output_lt) {
    const char *kind = dgrad_op_kind_name(c->desc.kind);
    const dgrad_logical_tensor_t *out_lt = &v->resolved.output;
    if (capacity >= 0 && span_bytes(out_lt) > capacity) {
        char dims[160];
        return dgrad_error(dgrad_invalid_arguments,
                "%s: output (%s) needs %lld bytes, the buffer has %lld", kind,
                dgrad_format_dims(dims, sizeof dims, out_lt->dims,
                        out_lt->ndims),
                (long long)span_bytes(out_lt), (long long)capacity);
    }
    int prepared = v->prepared_weights != NULL;
    /* The bias: the op's third input, or the chain's first operand
     * (dgrad_resolved_t.bias_from_post_op); the chain's operands follow. */
    int from_chain = v->resolved.bias_from_post_op;
    const void *bias = !v->resolved.problem.has_bias ? NULL
            : from_chain ? inputs[c->n_own_inputs] : inputs[2];
    dgrad_status_t st = dgrad_plan_execute_fused(v->plan, inputs[0],
            prepared ? v->prepared_weights : inputs[1], prepared, bias,
            inputs + c->n_own_inputs + from_chain, output);
    if (st == dgrad_success && output_lt) *output_lt = *out_lt;
    return st;
}

static dgrad_status_t run(const dgrad_compiled_op_t *compiled,
        size_t n_inputs, const void *const *inputs, void *output,
        int64_t capacity, dgrad_logical_tensor_t *output_lt) {
    if (!compiled || !inputs || !output)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_compiled_op_execute: %s is NULL",
                !compiled ? "compiled" : !inputs ? "inputs" : "output");
    /* The variant list and lazily prepared weights are the only mutable
     * state; everything is reached through the lock. */
    dgrad_compiled_op_t *c = (dgrad_compiled_op_t *)compiled;
    const char *kind = dgrad_op_kind_name(c->desc.kind);
    if (n_inputs != c->n_inputs)
        return dgrad_error(dgrad_invalid_arguments,
                "%s: execute got %zu inputs, the op was compiled with %zu",
                kind, n_inputs, c->n_inputs);
    for (size_t i = 0; i < n_inputs; i++)
        if (!inputs[i])
            return dgrad_error(dgrad_invalid_arguments,
                    "%s: input %zu buffer is NULL", kind, i);

    pthread_mutex_lock(&c->lock);
    variant_t *v = NULL;
    dgrad_status_t st = find_variant(c, inputs, &v);
    if (st == dgrad_success && c->constant_weights && !v->transient)
        st = prepare_weights(v, inputs[1]);
    pthread_mutex_unlock(&c->lock);
    if (st == dgrad_success) st = check_overlaps(c, v, inputs, output);
    if (st != dgrad_success) {
        if (v && v->transient) variant_free(v);
        return st;
    }
    st = execute_variant(c, v, inputs, output, capacity, output_lt);
    if (v->transient) variant_free(v);
    return st;
}

static dgrad_status_t execute(const dgrad_compiled_op_t *compiled,
        size_t n_inputs, const void *const *inputs, void *output,
        int64_t capacity, dgrad_logical_tensor_t *output_lt) {
    dgrad_error_clear();
    dgrad_status_t st = run(compiled, n_inputs, inputs, output, capacity,
            output_lt);
    return compiled ? named(st, compiled->desc.kind, compiled->name) : st;
}

dgrad_status_t dgrad_compiled_op_execute(const dgrad_compiled_op_t *compiled,
        size_t n_inputs, const void *const *inputs, void *output) {
    return execute(compiled, n_inputs, inputs, output, -1, NULL);
}

dgrad_status_t dgrad_compiled_op_execute_dynamic(
        const dgrad_compiled_op_t *compiled, size_t n_inputs,
        const void *const *inputs, void *output, size_t output_capacity,
        dgrad_logical_tensor_t *output_lt) {
    if (output_capacity > (size_t)INT64_MAX) output_capacity = INT64_MAX;
    return execute(compiled, n_inputs, inputs, output,
            (int64_t)output_capacity, output_lt);
}
