/*
 * `dgrad bench` internals, one file a concern:
 *   bench_main.c  the command: options, backend, machine, problems, output
 *   options.c     the command line and the layouts' names
 *   problems.c    problems from arguments and batch files, sized and
 *                 checked to fit in memory
 *   list.c        --list-problems: each problem as a line of JSON
 *   desc.c        benchdnn deconvolution descriptors, sizes and FLOPs
 *   backend.c     the plugin table dgrad is timed through
 *   dgrad_op.c    the ConvolutionBackwardData op built through it
 *   post_ops.c    --post-ops: the chain, its operands, and the unfused
 *                 passes (one oneDNN primitive per post-op)
 *   raw.c         the raw oneDNN baseline (a deconvolution with the
 *                 chain as its attribute under --post-ops)
 *   graph.c       the anchor: oneDNN Graph's own partition (oneDNN 3)
 *   measure.c     one problem: buffers, compiles, peak memory, interleaved
 *                 timing, the output check
 *   machine.c     peaks (sgemm, bf16 matmul, triad), load, clock
 *   report.c      the table, the summary, the CSV file and the plot
 * Only public headers of dgrad are used (and src/dtype.h's conversions):
 * dgrad is reached through the plugin table (or, while developing, the
 * core library loaded with dlopen), never through its internal layers.
 */
#ifndef DGRAD_BENCH_H
#define DGRAD_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dgrad/dgrad.h"
#include "dgrad/dgrad_loader.h"

#define BENCH_MAX_SP 3
#define BENCH_NAME_MAX 96
#define BENCH_DESC_MAX 256

/* ------------------------------------------------------------ descriptors */

/*
 * A benchdnn deconvolution descriptor, e.g. g4mb1ic20ih224oc8oh447kh3sh2ph1.
 * ic/i* describe the op's data input (diff_dst), oc/o* its output
 * (diff_src); d* is the dilation in oneDNN's 0-based form. Spatial arrays
 * hold the op's axes outermost first (d, h, w for 3D; h, w for 2D; w for 1D).
 */
typedef struct bench_desc {
    int nsp;         /* 1, 2 or 3 spatial axes */
    int has_groups;  /* g given (printed back) */
    int64_t g, mb, ic, oc;
    int64_t i[BENCH_MAX_SP], o[BENCH_MAX_SP], k[BENCH_MAX_SP];
    int64_t s[BENCH_MAX_SP], p[BENCH_MAX_SP], d[BENCH_MAX_SP];
    char name[BENCH_NAME_MAX];
} bench_desc_t;

/* Parses @p text; on failure writes a message to @p err and returns -1. */
int bench_desc_parse(const char *text, bench_desc_t *desc, char *err,
        size_t err_size);

/* Canonical text of @p desc without the name (benchdnn order). */
void bench_desc_format(const bench_desc_t *desc, char *buf, size_t size);

/* Natural output size and end pad (may be negative: output padding) per
 * axis; bench_desc_parse checked that both fit in 64 bits. */
int64_t bench_desc_natural(const bench_desc_t *d, int axis);
int64_t bench_desc_pad_end(const bench_desc_t *d, int axis);

/* The number of (x, k) pairs of an axis that land inside the output
 * (0 <= s*x + (d+1)*k - p < o), counted in closed form: the time does not
 * depend on the sizes. Exact up to 2^53. */
double bench_desc_axis_terms(const bench_desc_t *d, int axis);

/* Multiply-adds times two over the terms that reach the output:
 * 2 * mb * ic * oc/g * the product of the axes' terms. */
double bench_desc_flops(const bench_desc_t *d);

/* Depthwise: one input and one output channel per group. */
int bench_desc_is_depthwise(const bench_desc_t *d);

/* --------------------------------------------------------------- post-ops */

#define BENCH_MAX_POST_OPS 8

/* Which elements of the output a binary post-op's operand covers. */
typedef enum bench_operand {
    bench_operand_none = 0,    /* a unary post-op */
    bench_operand_scalar,      /* one value (benchdnn's common) */
    bench_operand_channel,     /* one per output channel (per_oc) */
    bench_operand_position,    /* one per spatial position, shared by
                                  channels and images */
    bench_operand_full,        /* the output's shape (per_tensor) */
} bench_operand_t;

/* One post-op of --post-ops, as dgrad is given it (a oneDNN Graph op with
 * attributes) and in canonical form (canonical.h's algorithm with alpha
 * and beta), which the raw baseline, the unfused passes and the arbiter
 * use: derived here from the spelling, not through dgrad's dialect
 * layer. */
typedef struct bench_post_op {
    char kind[16];              /* "ReLU", "Add", "BiasAdd" ... */
    int n_attrs;
    char names[2][16], values[2][32];
    int32_t alg;                /* dgrad_post_alg_t */
    double alpha, beta;
    bench_operand_t operand;
    dgrad_data_type_t operand_dt; /* dgrad_data_type_undef: the run's */
} bench_post_op_t;

typedef struct bench_chain {
    int n;
    bench_post_op_t ops[BENCH_MAX_POST_OPS];
    char text[256];             /* as given */
} bench_chain_t;

/* Parses a chain: post-ops joined by '+', each NAME[:ARG...], in oneDNN
 * Graph's names or benchdnn's --attr-post-ops spelling (bench/README.md).
 * Returns 0, or -1 with a message in @p err. */
int bench_chain_parse(const char *text, bench_chain_t *c, char *err,
        size_t err_size);

/* The elements of @p op's operand for problem @p d (0 for a unary one), in
 * floating point as the sizes are checked (bench_problem_fits). */
double bench_operand_elems(const bench_post_op_t *op, const bench_desc_t *d);
/* Its data type in a run of type @p dt. */
dgrad_data_type_t bench_operand_dt(const bench_post_op_t *op,
        dgrad_data_type_t dt);

/* The operand of @p op as a tensor of the output's rank in canonical order
 * [N, C, Y...]: dims (1 where it broadcasts) and dense strides in elements
 * over the user's @p nxc or NCX order. Returns the rank. */
int bench_operand_canonical(const bench_post_op_t *op, const bench_desc_t *d,
        int nxc, int64_t *dims, int64_t *strides);

/* oneDNN's values for a canonical binary algorithm (dnnl_alg_kind_t) and
 * for a dgrad type (dnnl_data_type_t), for raw.c and post_ops.c: this
 * header names no oneDNN type. */
int bench_dnnl_binary_alg(int32_t alg);
int bench_dnnl_dt(dgrad_data_type_t dt);

/* The unfused chain: one in-place oneDNN pass over the output per post-op,
 * after dgrad's bare op (bench/README.md). */
typedef struct bench_passes bench_passes_t;
bench_passes_t *bench_passes_create(const bench_chain_t *c,
        const bench_desc_t *d, dgrad_data_type_t dt, int nxc, void *out,
        void *const *operands, char *err, size_t err_size);
int bench_passes_execute(bench_passes_t *p);
void bench_passes_destroy(bench_passes_t *p);

/* --------------------------------------------------------------- backends */

/*
 * What `dgrad bench` times dgrad through: a plugin table, used the way a
 * graph compiler uses it to build, compile and run one op. Two sources:
 * the plugin itself (the real thing), or for development while the plugin
 * is not served, a table filled from the core C API of libdgrad.so
 * (loaded with dlopen), so that the rest of the bench has one way to call.
 */
typedef struct bench_backend {
    const char *name;     /* "plugin" or "core" */
    const char *detail;   /* plugin name/version or library path */
    const dgrad_plugin_api_t *api;
    /* Private. */
    dgrad_loader_plugin_t *plugin;
    void *dl;
    dgrad_plugin_api_t core_table; /* api of the core backend: not to copy */
    char detail_buf[512];
} bench_backend_t;

typedef enum bench_backend_kind {
    bench_backend_auto = 0, /* plugin, else core with a note */
    bench_backend_plugin = 1,
    bench_backend_core = 2,
} bench_backend_kind_t;

/* Opens a backend; prints the reason to stderr and returns -1 on failure.
 * @p core_path: libdgrad.so to load for the core backend (NULL: next to
 * the program, then the loader's search path). */
int bench_backend_open(bench_backend_t *be, bench_backend_kind_t kind,
        const char *core_path);
void bench_backend_close(bench_backend_t *be);

/* ----------------------------------------------------------- user layouts */

typedef enum bench_layout { bench_ncx = 0, bench_nxc = 1 } bench_layout_t;
typedef enum bench_wlayout { bench_oix = 0, bench_xio = 1 } bench_wlayout_t;

/* "NXC"/"NCX" and "XIO"/"OIX": the op's format attributes, and how the
 * options, the table, the CSV file and the plot name them. */
const char *bench_layout_name(bench_layout_t layout);
const char *bench_wlayout_name(bench_wlayout_t wlayout);

/* ------------------------------------------------------------ raw oneDNN */

/* Which layouts the raw baseline's primitive runs on. */
typedef enum bench_raw_layout {
    /* The user's own memory, as a direct oneDNN user would create it. */
    bench_raw_user = 0,
    /* oneDNN's preferred layouts (format_tag_any for diff_dst, weights and
     * diff_src): the primitive oneDNN itself picks, on data reordered once
     * untimed. A lower bound for any caller holding user layouts. */
    bench_raw_preferred = 1,
} bench_raw_layout_t;

/* One convolution backward-data primitive, on the user's memory or on
 * oneDNN's preferred layouts (bench_raw_layout_t). */
typedef struct bench_raw bench_raw_t;

/* Creates the baseline for @p d in data type @p dt (dgrad_f32 or
 * dgrad_bf16) on the user's buffers (which stay the caller's). With
 * bench_raw_user, the primitive reads the user's data and writes @p out;
 * its weights are the user's, or with @p prepacked reordered once here
 * into the primitive's preferred layout (format_tag_any), as a user with
 * constant weights would have them. With bench_raw_preferred, every tensor
 * is in the primitive's preferred layout, in buffers of its own: the data
 * and weights reordered once here, the output reordered into @p out only
 * by bench_raw_copy_out. Returns NULL and a message in @p err when oneDNN
 * refuses. */
bench_raw_t *bench_raw_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout,
        bench_raw_layout_t raw_layout, int prepacked, void *in, void *wei,
        void *out, const bench_chain_t *chain, void *const *operands,
        char *err, size_t err_size);
/* With a chain (--post-ops), the baseline is instead what a oneDNN user
 * writes for a transposed convolution with post-ops: one deconvolution
 * forward primitive (inference) on the same layouts, a leading BiasAdd as
 * its bias and the rest as its post-ops attribute, @p operands holding
 * each binary post-op's buffer (in bench_raw_operand_dt) at its position
 * in the chain. The type of an operand the baseline reads: f16 ones as
 * f32 copies, as the baseline runs f16 problems in f32. */
dgrad_data_type_t bench_raw_operand_dt(const bench_post_op_t *op,
        dgrad_data_type_t raw_dt);
/* Executes once and waits. Returns 0 on success. */
int bench_raw_execute(bench_raw_t *raw);
/* Puts the last execution's output into the caller's @p out buffer in the
 * user's layout (a reorder, untimed, for the check; nothing to do on the
 * user's layouts). Returns 0 on success. */
int bench_raw_copy_out(bench_raw_t *raw);
const char *bench_raw_impl(const bench_raw_t *raw);
void bench_raw_destroy(bench_raw_t *raw);
/* What the baseline runs on, for the preamble, the CSV and the plot:
 * "user", "prepacked_weights" or "preferred". */
const char *bench_raw_baseline_name(bench_raw_layout_t raw_layout,
        int prepacked);

/* --------------------------------------------------------------- options */

/* ---------------------------------------------------------- oneDNN Graph */

/* oneDNN Graph's own ConvolutionBackwardData partition for the problem, on
 * the user's buffers (@p in, @p wei read, @p out written) in the user's
 * type and layouts, weights marked constant when dgrad's are. Only in
 * builds against oneDNN 3 with its graph API (bench_graph_available);
 * otherwise, or when oneDNN Graph refuses the op, returns NULL with the
 * reason in @p err. */
typedef struct bench_graph bench_graph_t;
bench_graph_t *bench_graph_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout, int constant_weights,
        void *in, void *wei, void *out, char *err, size_t err_size);
int bench_graph_execute(bench_graph_t *g);
void bench_graph_destroy(bench_graph_t *g);
int bench_graph_available(void);

typedef struct bench_options {
    dgrad_data_type_t dt;
    bench_layout_t layout;
    bench_wlayout_t wlayout;
    int constant_weights;
    /* --changing-weights: dgrad's executions alternate between two
     * weight buffers of different values, so that each prepares them */
    int changing_weights;
    int reps, warmup, cached_reps;
    double min_sample_ms, max_problem_s;
    double peak_gflops, peak_gbs; /* 0: measured */
    const char *csv, *plot;
    bench_backend_kind_t backend;
    const char *core_lib;
    int check, quiet, no_raw, raw_prepacked;
    int no_graph; /* no oneDNN Graph anchor (it runs where available) */
    bench_raw_layout_t raw_layout;
    int list_problems; /* print the problems as JSON lines, run nothing */
    bench_chain_t chain; /* --post-ops (n = 0: none) */
    /* --in-place: dgrad's fused op takes the output buffer as its Add's
     * operand (dgrad_compiled_op_query_in_place_input) */
    int in_place;
} bench_options_t;

/* ------------------------------------------------------------- problems */

#define BENCH_MAX_PROBLEMS 4096

#define BENCH_PATH_MAX 512

typedef struct bench_problem {
    bench_desc_t d;
    char text[BENCH_DESC_MAX]; /* canonical descriptor (+ n name) */
    /* Where it was read: the batch file as given (through --batch=
     * includes, relative to the including file) and its line; "" and 0
     * for a problem on the command line. */
    char file[BENCH_PATH_MAX];
    int line;
} bench_problem_t;

typedef struct bench_problem_list {
    bench_problem_t *v; /* BENCH_MAX_PROBLEMS entries */
    int n;
} bench_problem_list_t;

/* Parses @p text into the next problem; on failure prints the message,
 * after @p where (a file and line, or ""), and returns -1. */
int bench_problem_add(bench_problem_list_t *l, const char *text,
        const char *where);
/* Adds the problems of a batch file. Returns 0, or the exit status: 1
 * when a file cannot be read, 2 when one is malformed. */
int bench_batch_read(bench_problem_list_t *l, const char *path);

/* Elements of the data input, weights, output and post-op operands, and
 * the bytes of every buffer a problem's measurement allocates for them in
 * @p dt with @p chain (NULL: none), in floating point so that no size
 * overflows before it is checked. */
typedef struct bench_problem_size {
    double n_in, n_wei, n_out, n_operands, bytes;
} bench_problem_size_t;

bench_problem_size_t bench_problem_size(const bench_desc_t *d,
        dgrad_data_type_t dt, const bench_chain_t *chain);
/* 0 when @p p's buffers fit in physical memory; else prints its sizes and
 * the rule and returns -1. */
int bench_problem_fits(const bench_problem_t *p, dgrad_data_type_t dt,
        const bench_chain_t *chain);

/* The problem's name, else its descriptor. */
const char *bench_problem_label(const bench_problem_t *p);

/* --list-problems: @p p as one line of JSON (every size of the problem, as
 * other programs need it to run the same problem; bench/README.md lists
 * the keys). */
void bench_print_problem_json(FILE *f, const bench_problem_t *p);

/* Reads the command line: options, problems and batch files, each problem
 * checked to fit in memory. Returns BENCH_RUN when the problems are to be
 * run, else the exit status (0 after --help, 1 when a batch file cannot be
 * read, 2 on a usage error), the message printed. */
#define BENCH_RUN (-1)
int bench_options_parse(int argc, char **argv, bench_options_t *o,
        bench_problem_list_t *problems);

/* ---------------------------------------------------------- measurement */

typedef struct bench_stats {
    double med, min, max;
} bench_stats_t;

/* The machine's peaks, measured unless given, and where they come from. */
typedef struct bench_machine {
    double gflops, gbs;
    const char *gflops_source, *gbs_source; /* "given", "dnnl_sgemm", ... */
} bench_machine_t;

/* arbiter.c: where dgrad's output (@p out, type @p dt) and a baseline's
 * (@p base_out, @p base_dt) differ by more than @p tolerance (absolute),
 * the reference computes the elements of the largest differences (up to
 * 32) from the same inputs, in the user's layouts, followed by @p chain
 * (NULL: none; @p operands: dgrad's operand buffers at their positions in
 * the chain); the counts say who is wrong there. */
typedef struct bench_verdict {
    int checked, dgrad_wrong, baseline_wrong;
} bench_verdict_t;
bench_verdict_t bench_arbiter_decide(const bench_desc_t *d,
        dgrad_data_type_t dt, bench_layout_t layout, bench_wlayout_t wl,
        const void *in, const void *wei, const void *out,
        const void *base_out, dgrad_data_type_t base_dt, size_t n,
        double tolerance, const bench_chain_t *chain,
        const void *const *operands);

typedef struct bench_result {
    int ran;        /* dgrad ran */
    int reps;       /* samples taken */
    int raw_ok;     /* the baseline ran */
    int graph_ok;   /* oneDNN Graph's partition ran */
    int check;      /* 1 ok, 0 failed, -1 not checked */
    /* The baseline's output is wrong where dgrad's is right (arbiter.c):
     * its time is no comparison and stays out of the summary's ratios. */
    int raw_wrong, graph_wrong;
    /* --post-ops: dg is the fused op; bare the op without the chain;
     * unfused the bare op and one oneDNN pass per post-op (unfused_ok:
     * oneDNN built the passes). memory_bound: the bare op's bytes at the
     * measured bandwidth take longer than its FLOPs at the peak. */
    int unfused_ok, unfused_wrong, memory_bound;
    double max_err;
    bench_stats_t dg, raw, f32, graph, bare, unfused;
    int has_f32;
    double flops, bytes, gflops, raw_gflops, roof_gflops, roof_pct;
    double roof_ms; /* the roofline time: what the hardware allows */
    double compile_ms, cached_us, raw_compile_ms;
    double mem_mb, raw_mem_mb;
    char impl[96], raw_impl[96];
    char error[512];
} bench_result_t;

/* dgrad's op for one problem, built through the backend the way a graph
 * compiler builds it: a ConvolutionBackwardData op with the user's
 * formats, dense logical tensors, and the user's buffers; with a chain,
 * its post-ops appended (op_append_post_op) and one more input per
 * operand, in the user's axis order. */
typedef struct bench_op {
    const bench_backend_t *be;
    dgrad_op_t *op;
    size_t n_inputs;
    dgrad_logical_tensor_t lts[2 + BENCH_MAX_POST_OPS], out_lt;
    dgrad_compiled_op_t *compiled;
    const void *inputs[2 + BENCH_MAX_POST_OPS];
    void *out;
    /* NULL, or other weights that take turns with inputs[1] at each
     * execution (--changing-weights); turned: they are in inputs[1] */
    const void *other_weights;
    int turned;
} bench_op_t;

/* Return 0, or -1 with a message in @p err. @p chain: NULL or empty for
 * the bare op; the operands' buffers go into r->inputs[2...]. */
int bench_op_build(bench_op_t *r, const bench_backend_t *be,
        const bench_desc_t *d, dgrad_data_type_t dt, const bench_options_t *o,
        const bench_chain_t *chain, char *err, size_t err_size);
int bench_op_compile(const bench_op_t *r, dgrad_compiled_op_t **compiled,
        char *err, size_t err_size);
/* Executes r->compiled once (@p r: a bench_op_t); 0 on success. */
int bench_op_execute(void *r);
/* Ends the weights' turns: the op's own weights in inputs[1] again. */
void bench_op_own_weights(bench_op_t *r);
void bench_op_destroy(bench_op_t *r);

/* Compiles, times and checks one problem (see README: What is measured). */
void bench_run_problem(const bench_problem_t *p, const bench_backend_t *be,
        const bench_options_t *o, const bench_machine_t *m,
        bench_result_t *res);

/* ------------------------------------------------------------- machine */

/* The peaks of @p o, or measured: peak f32 GFLOP/s with dnnl_sgemm (peak
 * bf16 GFLOP/s with a oneDNN bf16 matmul for bf16), streaming bandwidth in
 * GB/s (triad, all cores). Returns -1 when a measurement fails. */
int bench_machine_measure(const bench_options_t *o, bench_machine_t *m);
double bench_calibrate_sgemm(void);
double bench_calibrate_bf16(void);
double bench_calibrate_stream(void);

/* How many CPUs other processes keep busy, sampled over @p ms while this
 * one sleeps; -1 when unknown. */
double bench_other_load(int ms);

double bench_now_ms(void);
void *bench_alloc(size_t bytes); /* 64-byte aligned, free() */

/* --------------------------------------------------------------- output */

/* The run's first lines: what is timed, on which machine. */
void bench_print_preamble(FILE *f, int n_problems, const bench_options_t *o,
        const bench_backend_t *be, const bench_machine_t *m,
        double load_start);
void bench_print_header(FILE *f, const bench_options_t *o);
void bench_print_row(FILE *f, const bench_problem_t *p,
        const bench_result_t *r, const bench_options_t *o);
/* Geomeans of the ratios, roofline fractions and the largest cached
 * compile (@p o: the type the f16/f32 or bf16/f32 ratio names); returns
 * the number of problems that failed, -1 when out of memory. */
int bench_print_summary(FILE *f, const bench_problem_t *p,
        const bench_result_t *r, int n, double seconds,
        const bench_options_t *o);
/* Return 0, or -1 with the message printed. */
int bench_write_csv(const char *path, const bench_problem_t *p,
        const bench_result_t *r, int n, const bench_options_t *o);
int bench_write_plot(const char *png, const bench_problem_t *p,
        const bench_result_t *r, int n, const bench_options_t *o,
        const bench_backend_t *be);

#endif
