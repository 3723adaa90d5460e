/*
 * `dgrad bench` internals: problem descriptors, the backend
 * interface dgrad is timed through, the raw oneDNN baseline and the
 * machine calibration. Only public headers are used: dgrad is reached
 * through the plugin table (or, while developing, the core library loaded
 * with dlopen), never through its internal layers.
 */
#ifndef DGRAD_BENCH_H
#define DGRAD_BENCH_H

#include <stddef.h>
#include <stdint.h>

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

/* --------------------------------------------------------------- backends */

/*
 * What `dgrad bench` times dgrad through: the subset of the plugin table a
 * graph compiler uses to build, compile and run one op. Two
 * implementations: the plugin table (the real thing) and the core C API
 * (libdgrad.so, loaded with dlopen) for development while the plugin is
 * not served.
 */
typedef struct bench_backend {
    const char *name;     /* "plugin" or "core" */
    const char *detail;   /* plugin name/version or library path */
    const char *(*last_error)(void);
    dgrad_status_t (*lt_init_with_strides)(dgrad_logical_tensor_t *lt,
            size_t id, dgrad_data_type_t dt, int32_t ndims,
            const int64_t *dims, const int64_t *strides,
            dgrad_property_type_t property);
    dgrad_status_t (*op_create)(dgrad_op_t **op, size_t id,
            dgrad_op_kind_t kind, const char *name);
    dgrad_status_t (*op_destroy)(dgrad_op_t *op);
    dgrad_status_t (*op_set_s64)(dgrad_op_t *op, dgrad_op_attr_t attr,
            int64_t value);
    dgrad_status_t (*op_set_s64s)(dgrad_op_t *op, dgrad_op_attr_t attr,
            const int64_t *values, size_t count);
    dgrad_status_t (*op_set_str)(dgrad_op_t *op, dgrad_op_attr_t attr,
            const char *value);
    dgrad_status_t (*compile)(const struct bench_backend *be,
            const dgrad_op_t *op, size_t n_inputs,
            const dgrad_logical_tensor_t *inputs,
            dgrad_logical_tensor_t *output, dgrad_compiled_op_t **compiled);
    dgrad_status_t (*execute)(const struct bench_backend *be,
            const dgrad_compiled_op_t *compiled, size_t n_inputs,
            const void *const *inputs, void *output);
    dgrad_status_t (*compiled_destroy)(dgrad_compiled_op_t *compiled);
    const char *(*impl_name)(const dgrad_compiled_op_t *compiled);
    /* Private. */
    const dgrad_plugin_api_t *api;
    dgrad_loader_plugin_t *plugin;
    void *dl;
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

/* ------------------------------------------------------------ raw oneDNN */

typedef enum bench_layout { bench_ncx = 0, bench_nxc = 1 } bench_layout_t;
typedef enum bench_wlayout { bench_oix = 0, bench_xio = 1 } bench_wlayout_t;

/* One convolution backward-data primitive on the user's own memory layout,
 * as a direct oneDNN user would create it. */
typedef struct bench_raw bench_raw_t;

/* Creates the baseline for @p d in data type @p dt (dgrad_f32 or
 * dgrad_bf16) on the user's buffers (which stay the caller's). With
 * @p prepacked, the weights are in the primitive's preferred layout
 * (format_tag_any), reordered once here from the user's buffer, as a user
 * with constant weights would; otherwise the primitive reads the user's
 * weights. Returns NULL and a message in @p err when oneDNN refuses. */
bench_raw_t *bench_raw_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout, int prepacked,
        void *in, void *wei, void *out, char *err, size_t err_size);
/* Executes once and waits. Returns 0 on success. */
int bench_raw_execute(bench_raw_t *raw);
const char *bench_raw_impl(const bench_raw_t *raw);
void bench_raw_destroy(bench_raw_t *raw);

/* Peak f32 GFLOP/s measured with dnnl_sgemm, peak bf16 GFLOP/s with a
 * oneDNN bf16 matmul, streaming bandwidth in GB/s (triad, all cores). */
double bench_calibrate_sgemm(void);
double bench_calibrate_bf16(void);
double bench_calibrate_stream(void);

/* ------------------------------------------------------------------ misc */

double bench_now_ms(void);
void *bench_alloc(size_t bytes); /* 64-byte aligned, free() */

#endif
