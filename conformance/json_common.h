/*
 * What the two JSON readers (vector files, oneDNN Graph files) share:
 * loading with jansson (which gives line and column for syntax errors),
 * and typed access to values that reports errors at the value's JSON path
 * (jansson keeps no positions once a document is parsed).
 */
#ifndef DGRAD_CONFORM_JSON_COMMON_H
#define DGRAD_CONFORM_JSON_COMMON_H

#include <jansson.h>

#include "conform.h"

/* The reading of one file. */
typedef struct jctx {
    cf_sink_t *sink;
    const char *file;
    int errors;
} jctx_t;

#define JPATH 256

/* "<file>:<path>: <what>: <rule>" through the sink; returns 0. */
int jerr(jctx_t *j, const char *path, const char *what, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* "a string", "an integer", ... for messages. */
const char *jtype(const json_t *v);

/* Child paths. */
const char *jpath_key(char *buf, const char *parent, const char *key);
const char *jpath_index(char *buf, const char *parent, size_t index);

/* Parses a file or a buffer; reports and returns NULL on failure. */
json_t *jload_file(jctx_t *j);
json_t *jload_buffer(jctx_t *j, const char *buf, size_t size);

/* Typed getters: 1 on success, else 0 with the error reported. A missing
 * field is an error when @p required, else the getter returns 1 and leaves
 * the output alone (*present = 0 where it has one). */
int jget_string(jctx_t *j, json_t *obj, const char *path, const char *key,
        int required, const char **out);
int jget_int(jctx_t *j, json_t *obj, const char *path, const char *key,
        int required, int64_t *out, int *present);
/* An array field: *out is the array, or NULL when it is absent and
 * optional (@p missing_rule NULL; else the message when it is absent).
 * @p expected names the array in "expected ..., got ..." messages. */
int jget_array(jctx_t *j, json_t *obj, const char *path, const char *key,
        const char *missing_rule, const char *expected, json_t **out);
/* An array of at most @p max integers, each >= @p min. */
int jget_ints(jctx_t *j, json_t *v, const char *path, int64_t min,
        int64_t *out, int max, int *count);
/* An object is required at @p path. */
int jexpect_object(jctx_t *j, json_t *v, const char *path);

/* Dims (1..DGRAD_MAX_NDIMS values, each >= @p min) with a bounded element
 * count (DGRAD_UNKNOWN_DIM entries, allowed when min < 0, count as 1). */
int jget_dims(jctx_t *j, json_t *v, const char *path, int64_t min,
        int64_t *dims, int *ndims);

/* A reader of a parsed document; returns the number of errors. */
typedef int jreader_t(jctx_t *j, json_t *root);

/* The two readers on a parsed document (cf_read_json_file dispatches on
 * the top-level keys). */
jreader_t cf_vectors_from_json;
jreader_t cf_graph_from_json;

/* The entry points of both readers (cf_read_vectors_file ... in conform.h)
 * are json_common.c's: load, run the reader, count the errors. */

#endif
