/* Case helpers shared by the readers, the generator and the runner. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "dtype.h"
#include "error.h"

void cf_case_init(cf_case_t *c) {
    memset(c, 0, sizeof *c);
    c->output.ndims = DGRAD_UNKNOWN_NDIMS;
    c->shape_dt = dgrad_s64;
}

void cf_case_free(cf_case_t *c) {
    cf_tensor_t *t[] = {&c->data, &c->weights, &c->bias, &c->output,
            &c->expected};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        free(t[i]->data);
        t[i]->data = NULL;
        t[i]->count = 0;
    }
    for (int i = 0; i < c->n_post; i++) {
        free(c->post[i].operand.data);
        c->post[i].operand.data = NULL;
        c->post[i].operand.count = 0;
    }
}

int cf_case_add_attr(cf_case_t *c, const char *name, const char *value) {
    if (c->n_attrs == CF_MAX_ATTRS || strlen(name) >= CF_ATTR_NAME
            || strlen(value) >= CF_ATTR_VALUE)
        return 0;
    cf_attr_t *a = &c->attrs[c->n_attrs++];
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->value, sizeof a->value, "%s", value);
    return 1;
}

const char *cf_case_attr(const cf_case_t *c, const char *name) {
    /* The last one wins, as repeated setter calls would. */
    for (int i = c->n_attrs - 1; i >= 0; i--)
        if (!strcmp(c->attrs[i].name, name)) return c->attrs[i].value;
    return NULL;
}

const char *cf_format_ints(char *buf, size_t size, const int64_t *v, int n) {
    return dgrad_format_dims(buf, size, v, n);
}

dgrad_data_type_t cf_data_type_named(const char *name) {
    /* dgrad_data_type_name names every type and gives "undef" past the
     * last (and for undef itself). */
    for (int t = 1; strcmp(dgrad_data_type_name((dgrad_data_type_t)t),
                    "undef"); t++)
        if (!strcmp(name, dgrad_data_type_name((dgrad_data_type_t)t)))
            return (dgrad_data_type_t)t;
    return dgrad_data_type_undef;
}

int cf_is_compute_type(dgrad_data_type_t dt) {
    return dt == dgrad_f32 || dt == dgrad_bf16 || dt == dgrad_f16;
}

int cf_parse_ints(const char *text, int64_t *values, int max, int *count) {
    const char *p = text;
    int n = 0;
    while (*p == ' ' || *p == '[') p++;
    while (*p && *p != ']') {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno == ERANGE || n == max) return 0;
        values[n++] = (int64_t)v;
        p = end;
        while (*p == ' ' || *p == ',') p++;
    }
    if (*p == ']') p++;
    while (*p == ' ') p++;
    *count = n;
    return *p == '\0';
}

static int fold(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch; }

/* Levenshtein distance ignoring case, capped: names are short. */
static int edit_distance(const char *a, const char *b) {
    enum { MAX = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAX || m >= MAX) return MAX;
    int row[MAX + 1];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int sub = diag + (fold((unsigned char)a[i - 1])
                                     != fold((unsigned char)b[j - 1]));
            int del = up + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            diag = up;
        }
    }
    return row[m];
}

const char *cf_near_kind(const char *kind, const char *const *known, int n) {
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < n; i++) {
        if (!strcmp(kind, known[i])) return NULL;
        int d = edit_distance(kind, known[i]);
        if (d < best_d) best = known[i], best_d = d;
    }
    return best;
}

int64_t cf_dims_count(const int64_t *dims, int ndims) {
    int64_t n = 1;
    for (int i = 0; i < ndims; i++)
        if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n)) return -1;
    return n;
}

void cf_sink_errorf(cf_sink_t *sink, const char *suite, const char *where,
        const char *what, const char *fmt, ...) {
    char rule[CF_MESSAGE / 2], msg[CF_MESSAGE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(rule, sizeof rule, fmt, args);
    va_end(args);
    snprintf(msg, sizeof msg, "%s: %s: %s", where, what, rule);
    sink->on_error(sink, suite, msg);
}

/* ------------------------------------------------ operands of a run */

/* Dense row-major strides (saturating: huge dims of invalid cases). */
void cf_dense_strides(const int64_t *dims, int nd, int64_t *s) {
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        s[d] = acc;
        if (__builtin_mul_overflow(acc, dims[d] > 0 ? dims[d] : 1, &acc))
            acc = INT64_MAX;
    }
}

int cf_dims_known(const dgrad_logical_tensor_t *lt) {
    if (lt->ndims < 1) return 0;
    for (int d = 0; d < lt->ndims; d++)
        if (lt->dims[d] < 0) return 0;
    return 1;
}

/* The logical tensor of a case operand (strided dense unless told). */
void cf_lt_fill(dgrad_logical_tensor_t *lt, size_t id,
        dgrad_data_type_t dt, const cf_tensor_t *t,
        dgrad_property_type_t prop) {
    memset(lt, 0, sizeof *lt);
    lt->struct_size = sizeof *lt;
    lt->id = id;
    lt->data_type = dt;
    lt->property = prop;
    lt->ndims = t->ndims;
    lt->layout_type = t->layout_any ? dgrad_layout_type_any
                                    : dgrad_layout_type_strided;
    if (t->ndims < 1 || t->ndims > DGRAD_MAX_NDIMS) return;
    memcpy(lt->dims, t->dims, (size_t)t->ndims * sizeof(int64_t));
    if (t->layout_any || !cf_dims_known(lt)) return;
    if (t->has_strides)
        memcpy(lt->strides, t->strides, (size_t)t->ndims * sizeof(int64_t));
    else
        cf_dense_strides(t->dims, t->ndims, lt->strides);
}

static dgrad_data_type_t other_type(dgrad_data_type_t dt) {
    return dt == dgrad_f32 ? dgrad_bf16 : dgrad_f32;
}


void cf_build_inputs(const cf_case_t *c, dgrad_data_type_t dt,
        run_inputs_t *ri) {
    memset(ri, 0, sizeof *ri);
    cf_lt_fill(&ri->lts[0], 0, c->data_dt ? c->data_dt : dt, &c->data,
            dgrad_property_type_variable);
    cf_lt_fill(&ri->lts[1], 1, c->mixed_types ? other_type(dt) : dt, &c->weights,
            c->constant_weights ? dgrad_property_type_constant
                                : dgrad_property_type_variable);
    ri->n = 2;
    if (c->third == cf_third_shape) {
        cf_tensor_t t;
        memset(&t, 0, sizeof t);
        t.ndims = 1;
        t.dims[0] = c->n_shape;
        cf_lt_fill(&ri->lts[2], 2, c->shape_dt, &t, dgrad_property_type_variable);
        for (int i = 0; i < c->n_shape; i++) {
            if (c->shape_dt == dgrad_s32) ((int32_t *)ri->shape_buf)[i] = (int32_t)c->shape_values[i];
            else if (c->shape_dt == dgrad_s64) ri->shape_buf[i] = c->shape_values[i];
            else dgrad_store(ri->shape_buf, c->shape_dt, i, (double)c->shape_values[i]);
        }
        ri->n = 3;
    } else if (c->third == cf_third_bias) {
        cf_lt_fill(&ri->lts[2], 2, dt, &c->bias, dgrad_property_type_variable);
        ri->n = 3;
    }
    /* The post-ops' operands follow, in chain order (ids from 4: 3 is the
     * output's). */
    ri->n_own = ri->n;
    for (int i = 0; i < c->n_post; i++) {
        const cf_post_t *po = &c->post[i];
        if (!po->has_operand) continue;
        cf_lt_fill(&ri->lts[ri->n], 4 + ri->n, po->operand_dt ? po->operand_dt : dt,
                &po->operand, dgrad_property_type_variable);
        ri->n++;
    }
}
