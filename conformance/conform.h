/*
 * `dgrad conform`: the pieces shared by the readers, the sweep generator,
 * the runner and the report. Nothing here knows oneDNN: ops run through a
 * backend (the plugin table, or the core API in tests), results are checked
 * against the reference of the oracle library.
 *
 * Data flow:  reader / sweep --cf_case_t--> sink --> runner --> report
 *
 * A case is one op as a file (or the generator) describes it: a dialect,
 * attributes as text (what dgrad_op_set_attr_by_name takes), the operands'
 * dims and strides, optionally their values and the expected output, or the
 * status it must be rejected with.
 */
#ifndef DGRAD_CONFORM_H
#define DGRAD_CONFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dgrad/dgrad.h"

#define CF_MAX_ATTRS 16
#define CF_ATTR_NAME 32
#define CF_ATTR_VALUE 192
#define CF_NAME 256
#define CF_WHERE 512
#define CF_MESSAGE 1024
#define CF_MAX_SPATIAL 3
/* Longest integer-list attribute a file may give: oneDNN writes an unset
 * dst_shape or output_padding as DNNL_MAX_NDIMS (12) zeros. */
#define CF_MAX_LIST 12

/* ------------------------------------------------------------------ cases */

typedef struct cf_attr {
    char name[CF_ATTR_NAME];
    char value[CF_ATTR_VALUE]; /* text, as dgrad_op_set_attr_by_name takes */
} cf_attr_t;

/* One operand. Values, when a file gives them, are row-major over dims. */
typedef struct cf_tensor {
    int32_t ndims; /* DGRAD_UNKNOWN_NDIMS: output dims left to dgrad */
    int64_t dims[DGRAD_MAX_NDIMS];
    int has_strides; /* else dense row-major over dims */
    int64_t strides[DGRAD_MAX_NDIMS];
    int layout_any;  /* output only: let dgrad choose */
    double *data;    /* NULL: the runner generates small integers */
    size_t count;
} cf_tensor_t;

/* Longest post-op chain a case may state: one more than dgrad takes, so
 * that a chain too long can be a case that must be rejected. */
#define CF_MAX_POST (DGRAD_MAX_POST_OPS + 1)
#define CF_POST_ATTRS 4
#define CF_KIND 64

/* One post-op of a case's chain (dgrad_op_append_post_op): a oneDNN Graph
 * op kind, its attributes as text, and its other operand when the case
 * gives one. Whether the kind takes an operand is the model's rule, not
 * the case's: a case may give an operand to ReLU (an invalid case). */
typedef struct cf_post {
    char kind[CF_KIND];
    int n_attrs;
    cf_attr_t attrs[CF_POST_ATTRS];
    int has_operand;
    cf_tensor_t operand; /* dims, strides, values (NULL: generated) */
    dgrad_data_type_t operand_dt; /* undef: the run's type */
    /* Graph files: the post-op's op id, its operand's tensor id and which
     * of its inputs the chain enters (1: the commutative ops may take the
     * chain second). */
    size_t graph_id, operand_id;
    int chain_input;
} cf_post_t;

/* A whole oneDNN Graph file's graph, as a graph compiler hands it to
 * graph_partition (graph files only): every op with its kind, attributes
 * as text and logical tensors (types as the file has them; undef for the
 * quantized ones dgrad does not know). */
typedef struct cf_graph_lt {
    size_t id;
    dgrad_data_type_t dt;
    cf_tensor_t t; /* dims, strides, layout any; no values */
    int constant;
} cf_graph_lt_t;

typedef struct cf_graph_op {
    size_t id;
    char kind[CF_KIND];
    int n_attrs;
    cf_attr_t *attrs;
    int n_inputs, n_outputs;
    cf_graph_lt_t *inputs, *outputs;
} cf_graph_op_t;

typedef struct cf_graph {
    int n_ops;
    cf_graph_op_t *ops;
} cf_graph_t;

void cf_graph_free(cf_graph_t *g);

typedef enum cf_third {
    cf_third_none = 0,
    cf_third_shape = 1, /* dst_shape (full) / output_shape (spatial) input */
    cf_third_bias = 2,  /* ONNX B */
} cf_third_t;

typedef struct cf_case {
    char name[CF_NAME];   /* "<file>#<case>", shown in the report */
    char suite[CF_NAME];  /* file (or sweep) the case belongs to */
    char where[CF_WHERE]; /* position for messages ("f.xml:12") */
    dgrad_op_kind_t kind;
    int n_attrs;
    cf_attr_t attrs[CF_MAX_ATTRS];
    cf_tensor_t data, weights, bias;
    cf_tensor_t output;   /* requested output (dims may be unknown) */
    cf_tensor_t expected; /* expected output dims (and values), if known */
    int has_expected;
    /* The type the file's values are meant for (its expected data were
     * computed from the values rounded to it); undef: exact values. */
    dgrad_data_type_t values_dt;
    cf_third_t third;
    dgrad_data_type_t shape_dt; /* type of the shape input */
    int n_shape;                /* its length */
    int64_t shape_values[DGRAD_MAX_NDIMS];
    int constant_weights;
    int mixed_types; /* weights in another type than data (invalid case) */
    dgrad_data_type_t data_dt; /* data type forced (invalid case), or undef */
    char expect_error[32]; /* status name the case must fail with, or "" */
    unsigned seed;
    /* The one type the case runs in (a batch line's --dt), or undef: each
     * --dtypes type. */
    dgrad_data_type_t run_dt;
    /* The post-op chain, in order; their operands are the op's inputs
     * after its own, in chain order. */
    int n_post;
    cf_post_t post[CF_MAX_POST];
    /* Graph files: the file's graph and the id of the case's op in it.
     * The runner hands the graph to graph_partition with
     * DGRAD_PLUGIN_PARTITION_FUSE and runs the partition of the op, which
     * must hold exactly the chain above (the reader's reading of the
     * fusion rules). NULL otherwise; valid during on_case only. */
    const cf_graph_t *graph;
    size_t graph_op_id;
    size_t graph_output_id; /* the chain's output tensor */
} cf_case_t;

/* Zeroes @p c (no data owned). */
void cf_case_init(cf_case_t *c);
/* Frees the values of @p c's tensors. */
void cf_case_free(cf_case_t *c);
/* Adds an attribute; 0 when there is no room or the text is too long. */
int cf_case_add_attr(cf_case_t *c, const char *name, const char *value);
/* Value of an attribute, or NULL. */
const char *cf_case_attr(const cf_case_t *c, const char *name);
/* "a,b,c" of @p n integers into @p buf. */
const char *cf_format_ints(char *buf, size_t size, const int64_t *v, int n);
/* The data type dgrad_data_type_name calls @p name ("f32" ... "s64"), or
 * dgrad_data_type_undef. */
dgrad_data_type_t cf_data_type_named(const char *name);
/* 1 for the types ops compute in (f32, bf16, f16); the others are shape
 * input types. */
int cf_is_compute_type(dgrad_data_type_t dt);
/* Parses an integer list "1,2" / "[1, 2]" / "1 2" / "1"; 0 on bad text. */
int cf_parse_ints(const char *text, int64_t *values, int max, int *count);
/* Element count of dims; -1 when it overflows or a dim is negative. */
int64_t cf_dims_count(const int64_t *dims, int ndims);
/* The kind among @p known (n of them) that @p kind most likely misspells:
 * within two edits (Levenshtein distance, ignoring case) and not equal to
 * it; NULL when there is none. An op kind that close to one dgrad runs is
 * an error, not a silent skip. */
const char *cf_near_kind(const char *kind, const char *const *known, int n);

/* The operands of a run of a case: logical tensors, and the shape values
 * (as the shape input's type stores them). */
typedef struct run_inputs {
    size_t n, n_own; /* all inputs; the op's own (then the operands) */
    dgrad_logical_tensor_t lts[3 + CF_MAX_POST];
    int64_t shape_buf[DGRAD_MAX_NDIMS];
} run_inputs_t;

/* Dense row-major strides over @p dims (saturating at INT64_MAX: huge dims
 * of invalid cases). */
void cf_dense_strides(const int64_t *dims, int nd, int64_t *strides);
/* A rank and no unknown dim. */
int cf_dims_known(const dgrad_logical_tensor_t *lt);
/* The logical tensor of a case operand (strided dense unless told). */
void cf_lt_fill(dgrad_logical_tensor_t *lt, size_t id, dgrad_data_type_t dt,
        const cf_tensor_t *t, dgrad_property_type_t prop);
/* The operands of case @p c in @p dt (the case's forced types win). */
void cf_build_inputs(const cf_case_t *c, dgrad_data_type_t dt,
        run_inputs_t *ri);

/* ---------------------------------------------------------------- sinks */

/* Where readers and the generator deliver what they find. A case is only
 * valid during the call. Reader errors follow one pattern:
 *   "<file>:<line>:<col>: <what>: <rule>"
 * (JSON values have no line once parsed: their position is the JSON path,
 * "<file>:$.cases[3].attrs.strides: ..."). */
typedef struct cf_sink cf_sink_t;
struct cf_sink {
    void (*on_case)(cf_sink_t *sink, const cf_case_t *c);
    /* An op that is not run (other kind, or skipped by the file itself). */
    void (*on_skip)(cf_sink_t *sink, const char *suite, const char *name,
            const char *reason);
    /* A file or case that cannot be read; counts as one failure. */
    void (*on_error)(cf_sink_t *sink, const char *suite, const char *message);
};

/* Reports "<where>: <what>: <rule...>" through @p sink. */
void cf_sink_errorf(cf_sink_t *sink, const char *suite, const char *where,
        const char *what, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

/* Largest element count the readers accept for one tensor: larger dims are
 * reported as too large (the runner generates data in memory). */
#define CF_READER_MAX_ELEMENTS ((int64_t)1 << 40)

/* ------------------------------------------------------------- readers */

/* Each reads one file (or an in-memory buffer, for the fuzzers) and
 * returns the number of errors reported through the sink. */
int cf_read_vectors_file(const char *path, cf_sink_t *sink);
int cf_read_vectors_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink);
int cf_read_graph_file(const char *path, cf_sink_t *sink);
int cf_read_graph_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink);
int cf_read_ir_file(const char *path, cf_sink_t *sink);
int cf_read_ir_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink);
/* A JSON file of either kind: vectors (top-level "cases") or a oneDNN
 * Graph file (top-level "graph"). */
int cf_read_json_file(const char *path, cf_sink_t *sink);
/* A benchdnn graph batch file (reader_batch.c): its --case= files, with
 * its --in-shapes, --op-attrs, --dt and --mb rewrites. Relative paths are
 * looked up next to the batch file naming them, then in @p inputs_dir
 * (may be NULL). */
int cf_read_batch_file(const char *path, const char *inputs_dir,
        cf_sink_t *sink);
/* The benchdnn options batch files may hold that dgrad conform ignores,
 * as a list for messages and help. */
const char *cf_batch_ignored_options(void);
/* A file (by extension, else by its content: '{' JSON, '<' XML, '-' or
 * '#' a benchdnn batch file) or a directory, recursively (.json and .xml
 * files, in name order; batch files are named, not found). */
int cf_read_path(const char *path, const char *inputs_dir, cf_sink_t *sink);

/* ------------------------------------------------------------- sweeps */

typedef enum cf_sweep { cf_sweep_none = 0, cf_sweep_quick, cf_sweep_full } cf_sweep_t;

/* Generates the sweep's cases (valid ones and invalid ones with their
 * expected status) into @p sink; returns the number of cases. */
int cf_sweep_generate(cf_sweep_t sweep, cf_sink_t *sink);

/* ------------------------------------------------------------- model */

/* The conformance model: DESIGN.md section 1 written a second time,
 * independently of src/problem.c, so that the dialect layer is checked
 * rather than trusted. It resolves a valid case's canonical geometry and
 * maps user layouts to canonical strides. */
/* A post-op as the model reads it (model_post.c): the canonical algorithm
 * and parameters (canonical.h's dgrad_post_alg_t, what the reference
 * computes), and for an operand its broadcast view of the output. */
typedef struct cf_post_view {
    int32_t alg;
    double alpha, beta;
    int operand; /* the kind takes one */
    int rank;    /* the operand's */
    /* Operand axis of each canonical output axis [N, C, Y...], -1 where
     * the operand has none (it broadcasts); the view's dims (1 or the
     * output's). */
    int pos[2 + CF_MAX_SPATIAL];
    int64_t dims[2 + CF_MAX_SPATIAL];
    int bias_axis; /* BiasAdd: the canonical axis of its channels; else -1 */
} cf_post_view_t;

typedef struct cf_geom {
    dgrad_op_kind_t kind;
    int nsp;
    int nxc, xio; /* oneDNN Graph layouts (0 for the other dialects) */
    int64_t N, G, Cin, Cout;
    int64_t X[CF_MAX_SPATIAL], K[CF_MAX_SPATIAL], S[CF_MAX_SPATIAL];
    int64_t D[CF_MAX_SPATIAL], PB[CF_MAX_SPATIAL], Y[CF_MAX_SPATIAL];
    int64_t F[CF_MAX_SPATIAL];
    int has_bias;
    int n_post;
    cf_post_view_t post[CF_MAX_POST];
} cf_geom_t;

/* Resolves @p c; 0 with a reason when the case is invalid or unreadable. */
int cf_model_resolve(const cf_case_t *c, cf_geom_t *g, char *why, size_t size);

/* Output dims in the dialect's order. */
void cf_model_output_dims(const cf_geom_t *g, int64_t *dims);
/* Position in the user's data/output dims of canonical dim d ([N, C, X..]). */
int cf_model_act_pos(const cf_geom_t *g, int d);
/* Canonical strides [N, C, X...] of a data or output tensor given the
 * user's strides. */
void cf_model_act_strides(const cf_geom_t *g, const int64_t *user,
        int64_t *canon);
/* Canonical strides [G, Cin/G, Cout/G, K...] of the weights. */
void cf_model_wei_strides(const cf_geom_t *g, const int64_t *user,
        int64_t *canon);

/* The post-op chain of @p c against @p g's output (model_post.c, from
 * oneDNN Graph's op specifications, independently of src/post_ops.c):
 * fills g->post; 0 with a reason when the chain is invalid.
 * cf_model_resolve calls it last. */
int cf_model_post_ops(const cf_case_t *c, cf_geom_t *g, char *why,
        size_t size);
/* Canonical strides [N, C, Y...] of post-op @p i's operand given its
 * strides (0 where it broadcasts). */
void cf_model_post_strides(const cf_geom_t *g, int i, const int64_t *user,
        int64_t *canon);
/* The chain of @p c (geometry @p g) written for the output of @p t, a
 * translation of it, into @p out: the same kinds and attributes, each
 * operand as the full-rank view in @p t's dims order, a BiasAdd whose
 * channels are not @p t's channel or last axis as an Add. */
void cf_model_translate_post(const cf_case_t *c, const cf_geom_t *g,
        const cf_geom_t *t, cf_case_t *out);
/* The kind's operand count under the model's table (0 or 1), or -1 for a
 * kind that is not a post-op. */
int cf_model_post_kind_operands(const char *kind);
/* Whether two resolutions of one problem agree on their chains (the
 * same algorithms, parameters and views). */
int cf_model_same_post(const cf_geom_t *a, const cf_geom_t *b);

/* The case in oneDNN Graph's dialect with the given layouts (dense
 * tensors, dst_shape attribute, explicit pads) producing the same canonical
 * problem; 0 with a reason when the dialect cannot express it. */
int cf_model_translate(const cf_case_t *c, const cf_geom_t *g, int nxc,
        int xio, cf_case_t *out, char *why, size_t size);

/* ------------------------------------------------------------ backends */

/* How the runner executes ops: a small table of its own, implemented over
 * the plugin table (backend_plugin.c), either loaded (`dgrad conform`) or
 * linked in over the core library (tests). */
struct dgrad_plugin_graph_op;
struct cf_partition;
typedef struct cf_backend {
    const char *name;
    void *ctx;
    dgrad_status_t (*op_create)(void *ctx, dgrad_op_kind_t kind,
            const char *name, void **op);
    dgrad_status_t (*op_set_attr)(void *ctx, void *op, const char *name,
            const char *value);
    void (*op_destroy)(void *ctx, void *op);
    /* @p output: in the requested output, out the compiled one. */
    dgrad_status_t (*compile)(void *ctx, void *op, size_t n_inputs,
            const dgrad_logical_tensor_t *inputs,
            dgrad_logical_tensor_t *output, void **compiled);
    /* @p capacity: bytes at @p output; @p output_lt receives the output
     * produced (its dims are resolved at execution when deferred). */
    dgrad_status_t (*execute)(void *ctx, void *compiled, size_t n_inputs,
            const void *const *inputs, void *output, size_t capacity,
            dgrad_logical_tensor_t *output_lt);
    void (*compiled_destroy)(void *ctx, void *compiled);
    const char *(*impl_name)(void *ctx, void *compiled);
    const char *(*last_error)(void *ctx);
    const char *(*status_name)(void *ctx, dgrad_status_t status);
    /* ABI 1.2; NULL with an older plugin (cases with post-ops are then
     * skipped). */
    dgrad_status_t (*op_append_post_op)(void *ctx, void *op,
            const char *kind, size_t n_attrs, const char *const *names,
            const char *const *values);
    /* graph_partition with DGRAD_PLUGIN_PARTITION_FUSE over @p ops, and
     * the partition whose first op is @p op_id described in @p part;
     * *@p handle keeps part->op alive until partitions_destroy. */
    dgrad_status_t (*partition_fused)(void *ctx, size_t n_ops,
            const struct dgrad_plugin_graph_op *ops, size_t op_id,
            struct cf_partition *part, void **handle);
    void (*partitions_destroy)(void *ctx, void *handle);
    /* ABI 1.3 (NULL before): the input that may share the output's
     * buffer, -1 for none (dgrad_compiled_op_query_in_place_input). */
    dgrad_status_t (*in_place_input)(void *ctx, void *compiled,
            int64_t *index);
} cf_backend_t;

/* A partition as graph_partition gives it (backend partition_fused). */
typedef struct cf_partition {
    int found;   /* a partition starts with the op */
    int claimed;
    const void *op;     /* claimed: the op with its post-ops */
    char reason[CF_MESSAGE / 2]; /* unclaimed: why */
    size_t n_op_ids, op_ids[1 + CF_MAX_POST];
    size_t n_inputs, input_ids[3 + CF_MAX_POST];
    size_t output_id;
} cf_partition_t;

struct dgrad_plugin_api;
/* Over a plugin table (from the loader). */
void cf_backend_plugin_init(cf_backend_t *b,
        const struct dgrad_plugin_api *api);
/* Over the plugin's table linked in with the whole library (tests and
 * development: dgrad_plugin_table). */
void cf_backend_core_init(cf_backend_t *b);

/* -------------------------------------------------------------- report */

typedef enum cf_verdict { cf_pass = 0, cf_fail = 1, cf_skip = 2 } cf_verdict_t;

/* One line of the report: one case in one data type and one layout. */
typedef struct cf_result {
    cf_verdict_t verdict;
    char suite[CF_NAME];
    char name[CF_NAME];
    char dtype[8];       /* "f32", or "-" */
    char layout[16];     /* "native", "NXC/XIO", ..., or "-" */
    char status[32];     /* "ok", "mismatch", a dgrad status name ... */
    double max_abs, max_rel; /* < 0: not measured */
    char first[96];      /* first mismatching index, or "-" */
    char detail[CF_MESSAGE];
} cf_result_t;

typedef struct cf_report cf_report_t;

cf_report_t *cf_report_create(FILE *out, int verbose, int keep_for_junit);
void cf_report_destroy(cf_report_t *r);
void cf_report_add(cf_report_t *r, const cf_result_t *res);
/* Prints the final line "N passed, N failed, N skipped". */
void cf_report_summary(cf_report_t *r);
long cf_report_count(const cf_report_t *r, cf_verdict_t verdict);
/* Writes JUnit XML; 0 with a message on failure. */
int cf_report_write_junit(const cf_report_t *r, const char *path, char *err,
        size_t size);

/* What a run's output is judged against: the oracle library's reference
 * (and the file's expected data), or oneDNN Graph's own op on the same
 * data (builds on oneDNN 3; --oracle onednn-graph). */
typedef enum cf_oracle {
    cf_oracle_reference = 0,
    cf_oracle_onednn_graph = 1,
} cf_oracle_t;

/* -------------------------------------------------------------- runner */

#define CF_LAYOUT_NATIVE 1u
#define CF_LAYOUT_NCX_OIX 2u
#define CF_LAYOUT_NCX_XIO 4u
#define CF_LAYOUT_NXC_OIX 8u
#define CF_LAYOUT_NXC_XIO 16u
#define CF_LAYOUT_ALL 31u

typedef struct cf_options {
    dgrad_data_type_t dtypes[3];
    int n_dtypes;
    unsigned layouts; /* CF_LAYOUT_* */
    int verbose;
    int64_t max_elements; /* larger tensors are compiled, not executed */
    const char *filter;   /* run only cases whose name contains it */
    cf_oracle_t oracle;   /* what outputs are judged against */
} cf_options_t;

void cf_options_default(cf_options_t *o);

/* A sink that runs every case it receives and reports into @p report. */
typedef struct cf_runner cf_runner_t;
cf_runner_t *cf_runner_create(const cf_options_t *o, const cf_backend_t *b,
        cf_report_t *report);
cf_sink_t *cf_runner_sink(cf_runner_t *r);
void cf_runner_destroy(cf_runner_t *r);

/* ------------------------------------------------------------------ cli */

typedef struct cf_cli {
    cf_options_t options;
    cf_sweep_t sweep;
    const char *junit;
    const char *inputs_dir; /* where batch files' relative paths also look */
    int n_paths;
    char **paths;
} cf_cli_t;

/* Parses `conform [options] PATH...` (argv[0] is the subcommand). Returns
 * -1 to go on, or the exit status (0 after --help, 2 on a usage error,
 * with the message on @p err). */
int cf_cli_parse(int argc, char **argv, cf_cli_t *cli, FILE *out, FILE *err);
/* Runs what @p cli asks with @p backend; returns the exit status (0 only
 * when nothing failed). */
int cf_cli_run(const cf_cli_t *cli, const cf_backend_t *backend, FILE *out,
        FILE *err);
void cf_cli_free(cf_cli_t *cli);

#endif
