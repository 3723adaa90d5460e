/*
 * The benchdnn batch-file reader's rooms and what they share:
 *   reader_batch.c   the file: words, options and settings, nested
 *                    --batch= files, paths
 *   batch_case.c     one --case= line: its alternatives, each run handed
 *                    to the graph reader
 *   batch_rewrite.c  the graph document and the --in-shapes, --op-attrs
 *                    and --mb rewrites
 *   batch_outputs.c  the outputs of the ops dgrad runs inferred again
 * Errors follow "<file>:<line>: <what>: <rule>" (batch_err).
 */
#ifndef DGRAD_CONFORM_READER_BATCH_H
#define DGRAD_CONFORM_READER_BATCH_H

#include "json_common.h"

/* Nesting bound (a batch file that names itself would never end). */
#define BATCH_MAX_DEPTH 16
/* Longest option value, and largest batch file read. */
#define BATCH_VALUE 4096
#define BATCH_MAX_BYTES (16L << 20)
/* The oneDNN Graph op kinds dgrad runs (ConvTranspose is dgrad's
 * "onednn:ConvTranspose"). */
#define CBD "ConvolutionBackwardData"
#define CT "ConvTranspose"

typedef struct settings {
    char dt[BATCH_VALUE], in_shapes[BATCH_VALUE], op_attrs[BATCH_VALUE],
            mb[BATCH_VALUE];
} settings_t;

typedef struct batch {
    cf_sink_t *sink;
    const char *inputs_dir;
    settings_t s;
    int errors;
    int depth;
} batch_t;

/* Where a message points: a batch file and line. */
typedef struct at {
    const char *file;
    int line;
} at_t;

/* Reports "<file>:<line>: <what>: <rule>" through the sink; returns 0. */
int batch_err(batch_t *b, at_t at, const char *what, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* ------------------------------------ text and paths (reader_batch.c) */

/* Splits @p text at @p delim into at most @p max parts (in place); -1
 * when there are more. */
int batch_split(char *text, char delim, char **parts, int max);
/* "2x28x28" -> values; 0 on bad text. */
int batch_parse_dims_x(const char *text, int64_t *v, int max, int *n);
/* A whole decimal integer; 0 on bad text. */
int batch_parse_long(const char *text, long long *v);
/* The file @p name that option @p option names at @p at (see the
 * reader's paths rule); 0 with an error when there is none. */
int batch_resolve_path(batch_t *b, at_t at, const char *option,
        const char *name, char *out, size_t size);

/* ------------------------------------- one case line (batch_case.c) */

/* Runs --case=@p name with the current settings, once per combination of
 * their alternatives. */
void batch_run_case(batch_t *b, at_t at, const char *name);

/* ------------------------------- the graph document (batch_rewrite.c) */

/* Per tensor id (as it appears in the graph): its tag, whether a rewrite
 * changed it, whether an op produces it. */
#define MAX_TENSORS 256
typedef struct tensor_info {
    int64_t id;
    char tag[DGRAD_MAX_NDIMS + 1];
    int produced, rewritten;
    int inferred; /* an op's output whose dims were inferred again */
} tensor_info_t;

typedef struct doc {
    json_t *root, *ops;
    tensor_info_t t[MAX_TENSORS];
    int n;
    int change_stride; /* a rank or a layout changed (benchdnn's flag) */
} doc_t;

tensor_info_t *batch_tensor(doc_t *d, int64_t id);
/* Indexes every logical tensor of the graph: 1, or 0 when the graph has
 * more tensors than the index holds. (What is malformed is left to the
 * graph reader, which reports it with its JSON path.) */
int batch_index_tensors(doc_t *d);
/* The dims of a logical tensor object (-1 when they are not a list). */
int batch_lt_dims(json_t *lt, int64_t *dims);
json_t *batch_ints_json(const int64_t *v, int n);
/* Sets dims and strides (those of @p tag) of every occurrence of tensor
 * @p id. */
void batch_set_tensor(doc_t *d, int64_t id, const int64_t *dims, int nd,
        const char *tag);
int batch_is_cbd(json_t *op);
int batch_is_ct(json_t *op);
/* An op dgrad runs: ConvolutionBackwardData or ConvTranspose. */
int batch_is_run(json_t *op);
/* The rewrites of one alternative (text split in place); 0 after an
 * error. @p dst_shape_given: per op position (< 256), whether the line
 * set a non-zero dst_shape. */
int batch_rewrite_in_shapes(batch_t *b, at_t at, doc_t *d, char *alt);
int batch_rewrite_op_attrs(batch_t *b, at_t at, doc_t *d, char *alt,
        unsigned char *dst_shape_given);
void batch_rewrite_mb(doc_t *d, long long mb);

/* ------------------------------------------ outputs (batch_outputs.c) */

/* The outputs of the ops of @p d that dgrad runs, and of the
 * element-wise ops around them, inferred again after the rewrites;
 * @p orig_ops are the ops as the file wrote them. */
void batch_reinfer_outputs(doc_t *d, json_t *orig_ops,
        const unsigned char *dst_shape_given);

#endif
