#include "json_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int jerr(jctx_t *j, const char *path, const char *what, const char *fmt, ...) {
    char rule[CF_MESSAGE / 2], where[CF_WHERE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(rule, sizeof rule, fmt, args);
    va_end(args);
    snprintf(where, sizeof where, "%s:%s", j->file, path);
    cf_sink_errorf(j->sink, j->file, where, what, "%s", rule);
    j->errors++;
    return 0;
}

const char *jtype(const json_t *v) {
    if (!v) return "nothing";
    switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a real number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        default: return "null";
    }
}

const char *jpath_key(char *buf, const char *parent, const char *key) {
    snprintf(buf, JPATH, "%s.%.64s", parent, key);
    return buf;
}

const char *jpath_index(char *buf, const char *parent, size_t index) {
    snprintf(buf, JPATH, "%s[%zu]", parent, index);
    return buf;
}

static json_t *loaded(jctx_t *j, json_t *root, const json_error_t *e) {
    if (root) return root;
    char where[CF_WHERE];
    /* jansson reports line -1 when the file cannot be opened at all. */
    if (e->line < 0) {
        cf_sink_errorf(j->sink, j->file, j->file, "unreadable", "%s", e->text);
    } else {
        snprintf(where, sizeof where, "%s:%d:%d", j->file, e->line, e->column);
        cf_sink_errorf(j->sink, j->file, where, "malformed JSON", "%s", e->text);
    }
    j->errors++;
    return NULL;
}

/* Duplicate keys are an error: a later value silently replacing an earlier
 * one would run something other than what the file's author read. */
json_t *jload_file(jctx_t *j) {
    json_error_t e;
    return loaded(j, json_load_file(j->file, JSON_REJECT_DUPLICATES, &e), &e);
}

json_t *jload_buffer(jctx_t *j, const char *buf, size_t size) {
    json_error_t e;
    return loaded(j, json_loadb(buf, size, JSON_REJECT_DUPLICATES, &e), &e);
}

/* Loads a file, or a buffer named @p name, and runs @p read on it;
 * returns the number of errors (loading counts). */
static int read_loaded(jctx_t *j, json_t *root, jreader_t *read) {
    if (root) read(j, root);
    json_decref(root);
    return j->errors;
}

static int jread_file(const char *path, cf_sink_t *sink, jreader_t *read) {
    jctx_t j = {sink, path, 0};
    return read_loaded(&j, jload_file(&j), read);
}

static int jread_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink, jreader_t *read) {
    jctx_t j = {sink, name, 0};
    return read_loaded(&j, jload_buffer(&j, buf, size), read);
}

int jexpect_object(jctx_t *j, json_t *v, const char *path) {
    if (json_is_object(v)) return 1;
    return jerr(j, path, "wrong type", "expected an object, got %s", jtype(v));
}

int jget_string(jctx_t *j, json_t *obj, const char *path, const char *key,
        int required, const char **out) {
    char p[JPATH];
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (!required) return 1;
        return jerr(j, path, "missing field", "'%s' (a string) is required",
                key);
    }
    if (!json_is_string(v))
        return jerr(j, jpath_key(p, path, key), "wrong type",
                "expected a string, got %s", jtype(v));
    *out = json_string_value(v);
    return 1;
}

int jget_int(jctx_t *j, json_t *obj, const char *path, const char *key,
        int required, int64_t *out, int *present) {
    char p[JPATH];
    json_t *v = json_object_get(obj, key);
    if (present) *present = v != NULL;
    if (!v) {
        if (!required) return 1;
        return jerr(j, path, "missing field", "'%s' (an integer) is required",
                key);
    }
    if (!json_is_integer(v))
        return jerr(j, jpath_key(p, path, key), "wrong type",
                "expected an integer, got %s", jtype(v));
    *out = (int64_t)json_integer_value(v);
    return 1;
}

int jget_array(jctx_t *j, json_t *obj, const char *path, const char *key,
        const char *missing_rule, const char *expected, json_t **out) {
    char p[JPATH];
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v)
        return missing_rule ? jerr(j, path, "missing field", "%s",
                                      missing_rule)
                            : 1;
    if (!json_is_array(v))
        return jerr(j, jpath_key(p, path, key), "wrong type",
                "expected %s, got %s", expected, jtype(v));
    *out = v;
    return 1;
}

int jget_ints(jctx_t *j, json_t *v, const char *path, int64_t min,
        int64_t *out, int max, int *count) {
    char p[JPATH];
    if (!json_is_array(v))
        return jerr(j, path, "wrong type", "expected a list of integers, got %s",
                jtype(v));
    size_t n = json_array_size(v);
    if (n > (size_t)max)
        return jerr(j, path, "too large", "%zu values, at most %d allowed", n,
                max);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e))
            return jerr(j, jpath_index(p, path, i), "wrong type",
                    "expected an integer, got %s", jtype(e));
        int64_t x = (int64_t)json_integer_value(e);
        if (x < min)
            return jerr(j, jpath_index(p, path, i), "bad value",
                    "%lld is below the smallest allowed (%lld)", (long long)x,
                    (long long)min);
        out[i] = x;
    }
    *count = (int)n;
    return 1;
}

int jget_dims(jctx_t *j, json_t *v, const char *path, int64_t min,
        int64_t *dims, int *ndims) {
    if (!jget_ints(j, v, path, min, dims, DGRAD_MAX_NDIMS, ndims)) return 0;
    if (*ndims < 1)
        return jerr(j, path, "bad value", "a shape needs 1 to %d dims",
                DGRAD_MAX_NDIMS);
    int64_t n = 1;
    for (int i = 0; i < *ndims; i++) {
        if (min < 0 && dims[i] < 0) {
            if (dims[i] != DGRAD_UNKNOWN_DIM)
                return jerr(j, path, "bad value", "dim %d is %lld: a dim is "
                        ">= 0 or -1 (unknown)", i, (long long)dims[i]);
            continue;
        }
        if (__builtin_mul_overflow(n, dims[i], &n) || n > CF_READER_MAX_ELEMENTS) {
            char buf[160];
            return jerr(j, path, "too large", "dims (%s) hold more than 2^40 "
                    "elements", cf_format_ints(buf, sizeof buf, dims, *ndims));
        }
    }
    return 1;
}

/* The JSON readers' entry points (conform.h), in one place. */

int cf_read_vectors_file(const char *path, cf_sink_t *sink) {
    return jread_file(path, sink, cf_vectors_from_json);
}

int cf_read_vectors_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink) {
    return jread_buffer(name, buf, size, sink, cf_vectors_from_json);
}

int cf_read_graph_file(const char *path, cf_sink_t *sink) {
    return jread_file(path, sink, cf_graph_from_json);
}

int cf_read_graph_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink) {
    return jread_buffer(name, buf, size, sink, cf_graph_from_json);
}

/* A JSON file of either kind, by its top-level keys. */
static int read_either(jctx_t *j, json_t *root) {
    if (json_is_object(root) && json_object_get(root, "cases"))
        return cf_vectors_from_json(j, root);
    if (json_is_object(root) && json_object_get(root, "graph"))
        return cf_graph_from_json(j, root);
    jerr(j, "$", "missing field", "neither a vector file ('cases') nor a "
            "oneDNN Graph file ('graph')");
    return j->errors;
}

int cf_read_json_file(const char *path, cf_sink_t *sink) {
    return jread_file(path, sink, read_either);
}
