/*
 * The runner's rooms (runner.c: run modes; runner_data.c: case data;
 * runner_judge.c: judging), and what they share.
 */
#ifndef DGRAD_CONFORM_RUNNER_H
#define DGRAD_CONFORM_RUNNER_H

#include <string.h>

#include "canonical.h"
#include "conform.h"

struct cf_runner {
    cf_sink_t sink; /* first: the callbacks cast back */
    cf_options_t opt;
    cf_backend_t be;
    cf_report_t *report;
};

/* Odometer over dims. */
typedef struct odo {
    int nd;
    int64_t dims[DGRAD_MAX_NDIMS], idx[DGRAD_MAX_NDIMS];
} odo_t;

static inline void odo_init(odo_t *o, const int64_t *dims, int nd) {
    memset(o, 0, sizeof *o);
    o->nd = nd;
    memcpy(o->dims, dims, (size_t)nd * sizeof(int64_t));
}

static inline int odo_next(odo_t *o) {
    for (int i = o->nd - 1; i >= 0; i--) {
        if (++o->idx[i] < o->dims[i]) return 1;
        o->idx[i] = 0;
    }
    return 0;
}

static inline int64_t odo_offset(const odo_t *o, const int64_t *strides) {
    int64_t off = 0;
    for (int i = 0; i < o->nd; i++) off += o->idx[i] * strides[i];
    return off;
}

/* What every run mode starts with: the operands of a case in one type,
 * and the op, its attributes set and its chain appended in order (or the
 * fused partition's op), compiled. */
typedef struct cf_compiled {
    run_inputs_t ri;
    dgrad_logical_tensor_t olt; /* the requested output, then the compiled */
    void *op, *compiled;
    /* Fused partitions: graph_partition's result, which owns op. */
    void *partitions;
    /* The partition dgrad made is not the chain the reader found: the
     * status reported is "fusion_mismatch" (msg says both). */
    int fusion_differs;
} cf_compiled_t;

/* ------------------------------- fused partitions (runner_fused.c) */

/* Compiles case @p c (a graph file's op and its chain) in @p dt as a
 * graph compiler would: the file's graph to graph_partition with
 * DGRAD_PLUGIN_PARTITION_FUSE, the partition of the case's op checked
 * against the case's chain (ops, inputs, output) and its op compiled with
 * the inputs in the partition's order. On failure @p msg says which step
 * failed. */
dgrad_status_t cf_compile_fused(const cf_backend_t *be, const cf_case_t *c,
        dgrad_data_type_t dt, cf_compiled_t *cc, char *msg, size_t size);

/* ------------------------------------------ case data (runner_data.c) */

/* Elements a buffer of @p lt spans; INT64_MAX when that overflows (the
 * invalid cases have such dims). */
int64_t cf_span_of(const dgrad_logical_tensor_t *lt);
void cf_fill_nan(void *buf, dgrad_data_type_t dt, int64_t n);
/* Dims of canonical tensor @p role (0 data, 1 weights, 2 bias, 3 output). */
void cf_canon_dims(const cf_geom_t *g, int role, int64_t *dims, int *nd);

/* A case's data in one type, canonical dense, and its reference. */
typedef struct cdata {
    dgrad_data_type_t dt;
    int64_t n_in, n_wei, n_bias, n_out;
    void *in, *wei, *bias;         /* canonical dense, in dt */
    double *ref, *abs_sum;         /* canonical dense output */
    double *expected;              /* canonical dense, or NULL */
    /* --oracle onednn-graph: oneDNN Graph's output (canonical dense, in
     * double), what the run is judged against; NULL otherwise. */
    double *oracle;
    /* The inputs are the file's own: rounding the given values to dt gave
     * what rounding them to the file's type does, so its expected data
     * apply to this run. */
    int exact;
    /* No value changed in rounding to dt: the reference is the one of the
     * exact values, shared by every such type (ref/abs_sum/pre not
     * owned). */
    int lossless, shared_ref;
    /* Post-op chains: each operand's canonical view (dense over the
     * view's dims, cf_post_view_t) in its type, in chain order; the
     * problem whose chain the reference applies (the judge applies it
     * again to the candidates of the chain's input); ref is after the
     * chain, pre before it (NULL without a chain). */
    int n_operands;
    void *operand[CF_MAX_POST];
    int64_t n_operand[CF_MAX_POST];
    dgrad_problem_t prob;
    double *pre;
} cdata_t;

/* The reference of a case's exact values, once computed (all NULL
 * before): shared by the types that hold the values exactly. */
typedef struct cf_ref_cache {
    double *ref, *abs_sum, *pre;
} cf_ref_cache_t;

/* Canonical data and reference of case @p c (geometry @p g) in @p dt; a
 * lossless type fills or reuses @p cache. 0 when out of memory (free
 * @p d all the same). */
int cf_cdata_make(const cf_case_t *c, const cf_geom_t *g,
        dgrad_data_type_t dt, cdata_t *d, cf_ref_cache_t *cache);
void cf_cdata_free(cdata_t *d);
void cf_ref_cache_free(cf_ref_cache_t *cache);

/* Fills d->oracle from oneDNN Graph's own ConvolutionBackwardData (its
 * ConvTranspose for that dialect's cases) for case
 * @p c (geometry @p g) on @p d's data (oracle_graph.c). 1 on success; 0
 * when oneDNN Graph refuses the case or the oneDNN dialect cannot express
 * it, -1 out of memory, both with the reason in @p why. */
int cf_oracle_graph(const cf_case_t *c, const cf_geom_t *g, cdata_t *d,
        char *why, size_t size);

/* Scatters canonical tensor @p role into a new buffer of logical tensor
 * @p lt (whose canonical strides the model gives); gaps hold NaN. NULL
 * when it spans more than @p max_elements (*span_out says how many) or
 * memory runs out. */
void *cf_scatter(const cf_geom_t *g, int role,
        const dgrad_logical_tensor_t *lt, const void *canon_buf,
        int64_t max_elements, int64_t *span_out);
/* The same for the operand of post-op @p i (its canonical view). */
void *cf_scatter_operand(const cf_geom_t *g, int i,
        const dgrad_logical_tensor_t *lt, const void *canon_buf,
        int64_t max_elements, int64_t *span_out);

/* --------------------------------------------- judging (runner_judge.c) */

/* A passing result of case @p c in @p dt and @p layout, to be judged. */
void cf_result_init(cf_result_t *res, const cf_case_t *c,
        dgrad_data_type_t dt, const char *layout);
void cf_result_set(cf_result_t *res, cf_verdict_t v, const char *status,
        const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A result that names no run (a skipped op, an unreadable file): data
 * type and layout "-". */
void cf_result_plain(cf_result_t *res, cf_verdict_t v, const char *suite,
        const char *name, const char *status, const char *detail);
int cf_same_dims(const dgrad_logical_tensor_t *lt, const int64_t *dims,
        int nd);
/* Compares output @p out (@p cap elements, logical tensor @p olt) with
 * the reference of @p d (and the file's expected data when the inputs
 * were exact in this type) element by element; checks the gaps. */
void cf_compare(const cf_geom_t *g, const cdata_t *d,
        const dgrad_logical_tensor_t *olt, const void *out, int64_t cap,
        const char *impl, cf_result_t *res);

#endif
