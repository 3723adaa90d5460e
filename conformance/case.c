/* Case helpers shared by the readers, the generator and the runner. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
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
