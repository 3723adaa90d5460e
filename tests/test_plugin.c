/*
 * The plugin (libdgrad_plugin.so) as a host sees it: only through the
 * loader and the table of include/dgrad/dgrad_plugin.h. Covers the
 * exported symbols, the loader's failures, the ABI rules for structs of
 * other sizes, the capability query and the partition flow; executions
 * are checked against the reference (src/reference.c) computed in this
 * process from the same op text and tensors.
 */
#include <criterion/criterion.h>
#include <oneapi/dnnl/dnnl_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad_loader.h"
#include "dgrad/dgrad_plugin.h"
#include "problem.h"
#include "reference.h"

#if !defined(DGRAD_PLUGIN_PATH) || !defined(DGRAD_TEST_PLUGIN_NO_ENTRY) \
        || !defined(DGRAD_TEST_PLUGIN_MAJOR2_ONLY)                       \
        || !defined(DGRAD_TEST_PLUGIN_SHORT_TABLE)
#error "tests/CMakeLists.txt passes the module paths"
#endif

static dgrad_loader_plugin_t *plugin;
static const dgrad_plugin_api_t *api;

static void load_plugin(void) {
    char error[512];
    dgrad_status_t st = dgrad_loader_open(DGRAD_PLUGIN_PATH, &plugin, error,
            sizeof error);
    cr_assert_eq(st, dgrad_success, "loading the plugin: %s", error);
    api = dgrad_loader_api(plugin);
}

static void unload_plugin(void) {
    dgrad_loader_close(plugin);
    plugin = NULL;
    api = NULL;
}

#define ASSERT_OK(call)                                                      \
    do {                                                                     \
        dgrad_status_t s_ = (call);                                          \
        cr_assert_eq(s_, dgrad_success, "%s returned %s (%s)", #call,        \
                api->status_name(s_), api->last_error_message());            \
    } while (0)

/* The call fails with @p status and the plugin's message has every
 * fragment given. */
#define ASSERT_FAILS(call, status, ...)                                      \
    do {                                                                     \
        dgrad_status_t s_ = (call);                                          \
        cr_assert_eq(s_, status, "%s returned %s (%s)", #call,               \
                api->status_name(s_), api->last_error_message());            \
        const char *fragments_[] = {__VA_ARGS__};                            \
        for (size_t f_ = 0; f_ < sizeof fragments_ / sizeof *fragments_;    \
                f_++)                                                        \
            cr_assert(strstr(api->last_error_message(), fragments_[f_]),     \
                    "message '%s' lacks '%s'", api->last_error_message(),    \
                    fragments_[f_]);                                         \
    } while (0)

/* ------------------------------------------------------------- builders */

static dgrad_logical_tensor_t tensor(size_t id, dgrad_data_type_t dt,
        int32_t ndims, const int64_t *dims) {
    dgrad_logical_tensor_t lt;
    ASSERT_OK(api->logical_tensor_init(&lt, id, dt, ndims, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable));
    return lt;
}

/* An op as a host describes it: kind name and text attributes. */
typedef struct op_text {
    const char *kind;
    size_t n_attrs;
    dgrad_plugin_attr_t attrs[8];
} op_text_t;

static dgrad_op_t *build_op(const op_text_t *t) {
    dgrad_op_kind_t kind;
    dgrad_op_t *op = NULL;
    ASSERT_OK(api->op_kind_from_name(t->kind, &kind));
    ASSERT_OK(api->op_create(&op, 0, kind, t->kind));
    for (size_t a = 0; a < t->n_attrs; a++)
        ASSERT_OK(api->op_set_attr_by_name(op, t->attrs[a].name,
                t->attrs[a].value));
    return op;
}

#define ATTR(n, v) {sizeof(dgrad_plugin_attr_t), (n), (v)}

/* ONNX ConvTranspose X 1x3x5x5, W 3x2x3x3, B 2, strides 2, pads 1 ->
 * Y 1x2x9x9. */
static const op_text_t conv_transpose_text = {"ConvTranspose", 2,
        {ATTR("strides", "2,2"), ATTR("pads", "1,1,1,1")}};
static const int64_t ct_x[] = {1, 3, 5, 5}, ct_w[] = {3, 2, 3, 3},
                     ct_b[] = {2}, ct_y[] = {1, 2, 9, 9};

/* -------------------------------------------- execution vs. reference */

static void fill_small_integers(float *v, int64_t n, unsigned *seed) {
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)((int)(rand_r(seed) % 7) - 3);
}

static int64_t span_of(const dgrad_logical_tensor_t *lt) {
    int64_t n = 0;
    ASSERT_OK(api->logical_tensor_get_span(lt, &n));
    return n;
}

/*
 * Executes @p compiled (f32, inputs and output as compiled) on random
 * small integers and compares every element with the reference, which
 * resolves the same op text and tensors in this process. Small integers
 * make every partial sum exact, so the comparison is exact.
 * @p shape_values: values of a dst_shape/output_shape input, or NULL.
 */
static void check_fused_against_reference(const op_text_t *text,
        const op_text_t *const *posts, size_t n_posts,
        const dgrad_compiled_op_t *compiled, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, unsigned seed) {
    dgrad_op_desc_t desc;
    dgrad_op_kind_t kind = dgrad_op_kind_undef;
    ASSERT_OK(api->op_kind_from_name(text->kind, &kind));
    cr_assert_eq(dgrad_op_desc_init(&desc, kind), dgrad_success);
    for (size_t a = 0; a < text->n_attrs; a++)
        cr_assert_eq(dgrad_op_desc_set_by_name(&desc, text->attrs[a].name,
                text->attrs[a].value), dgrad_success);
    for (size_t k = 0; k < n_posts; k++) {
        const char *names[8], *values[8];
        for (size_t a = 0; a < posts[k]->n_attrs; a++) {
            names[a] = posts[k]->attrs[a].name;
            values[a] = posts[k]->attrs[a].value;
        }
        cr_assert_eq(dgrad_op_desc_append_post_op(&desc, posts[k]->kind,
                posts[k]->n_attrs, names, values), dgrad_success, "%s",
                dgrad_last_error_message());
    }
    dgrad_resolved_t resolved;
    cr_assert_eq(dgrad_problem_resolve(&desc, n_inputs, inputs, output,
            shape_values, n_shape_values, &resolved), dgrad_success,
            "reference resolve: %s", dgrad_last_error_message());

    void *buffers[3 + DGRAD_MAX_POST_OPS] = {NULL};
    for (size_t i = 0; i < n_inputs; i++) {
        int64_t n = span_of(&inputs[i]);
        buffers[i] = calloc((size_t)n, 8);
        if (inputs[i].data_type == dgrad_f32)
            fill_small_integers(buffers[i], n, &seed);
        else
            memcpy(buffers[i], shape_values, n_shape_values * sizeof(int64_t));
    }
    int64_t n_out = span_of(&resolved.output);
    float *got = calloc((size_t)n_out, sizeof *got);
    float *want = calloc((size_t)n_out, sizeof *want);
    dgrad_plugin_execute_args_t run = {sizeof run, compiled, n_inputs,
            (const void *const *)buffers, got, (size_t)n_out * sizeof *got,
            NULL};
    ASSERT_OK(api->compiled_op_execute(&run));
    /* A leading per-channel addition may have become the problem's bias
     * (resolve_post_ops): then it is the first operand. */
    size_t own = n_inputs - (size_t)dgrad_op_desc_post_operands(&desc);
    int from_chain = resolved.bias_from_post_op;
    const void *bias = !resolved.problem.has_bias ? NULL
            : from_chain ? buffers[own] : buffers[2];
    dgrad_reference_compute_fused(&resolved.problem, buffers[0], buffers[1],
            bias, (const void *const *)buffers + own + from_chain, want,
            NULL);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n_out; i++) {
        cr_assert_eq(got[i], want[i], "%s element %lld: plugin %g, "
                "reference %g", text->kind, (long long)i, got[i], want[i]);
        nonzero += want[i] != 0;
    }
    cr_assert_gt(nonzero, n_out / 4, "%s: mostly zeros, a vacuous check",
            text->kind);
    for (size_t i = 0; i < n_inputs; i++) free(buffers[i]);
    free(got);
    free(want);
}

static void check_against_reference(const op_text_t *text,
        const dgrad_compiled_op_t *compiled, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, unsigned seed) {
    check_fused_against_reference(text, NULL, 0, compiled, n_inputs, inputs,
            output, shape_values, n_shape_values, seed);
}

/* ================================================================ loader */

TestSuite(plugin_loader);

Test(plugin_loader, module_exports_only_the_entry_symbol) {
    FILE *nm = popen("nm -D --defined-only '" DGRAD_PLUGIN_PATH "'", "r");
    cr_assert(nm, "cannot run nm");
    char line[512], names[4096] = "";
    int n_symbols = 0, has_entry = 0;
    while (fgets(line, sizeof line, nm)) {
        /* "<address> <type> <name>[@version]" */
        char address[64], type[8], name[400];
        if (sscanf(line, "%63s %7s %399s", address, type, name) != 3)
            continue;
        char *at = strchr(name, '@');
        if (at) *at = '\0';
        n_symbols++;
        has_entry |= !strcmp(name, DGRAD_PLUGIN_ENTRY_SYMBOL);
        strncat(names, name, sizeof names - strlen(names) - 2);
        strcat(names, " ");
    }
    cr_assert_eq(pclose(nm), 0, "nm failed");
    cr_assert(has_entry, "entry symbol missing; exported: %s", names);
    cr_assert_eq(n_symbols, 1, "exported: %s", names);
}

Test(plugin_loader, loads_the_plugin_and_negotiates_abi_1) {
    load_plugin();
    cr_assert_eq(api->abi_major, DGRAD_PLUGIN_ABI_MAJOR);
    cr_assert_eq(api->abi_minor, DGRAD_PLUGIN_ABI_MINOR);
    cr_assert_eq(api->struct_size, sizeof(dgrad_plugin_api_t));
    cr_assert_str_eq(api->plugin_name, "dgrad");
    /* The version names the oneDNN the plugin was built against. */
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d+onednn.%d.%d.%d",
            DGRAD_VERSION_MAJOR, DGRAD_VERSION_MINOR, DGRAD_VERSION_PATCH,
            DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH);
    cr_assert_str_eq(api->plugin_version, expected);
    unload_plugin();
}

Test(plugin_loader, missing_file_says_no_such_file) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open("/nonexistent/libdgrad_plugin.so", &p,
            error, sizeof error), dgrad_invalid_arguments);
    cr_assert_null(p);
    cr_assert(strstr(error, "no such file"), "%s", error);
    cr_assert(strstr(error, "/nonexistent/libdgrad_plugin.so"), "%s", error);
}

Test(plugin_loader, library_without_entry_symbol_is_not_a_plugin) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open(DGRAD_TEST_PLUGIN_NO_ENTRY, &p, error,
            sizeof error), dgrad_unimplemented);
    cr_assert_null(p);
    cr_assert(strstr(error, "not a dgrad plugin"), "%s", error);
    cr_assert(strstr(error, DGRAD_PLUGIN_ENTRY_SYMBOL), "%s", error);
}

Test(plugin_loader, host_asking_for_major_2_gets_abi_mismatch_naming_both) {
    char error[512] = "", plugin_version[64];
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open_version(DGRAD_PLUGIN_PATH, 2, &p, error,
            sizeof error), dgrad_abi_mismatch);
    cr_assert_null(p);
    snprintf(plugin_version, sizeof plugin_version, "plugin ABI %d.%d",
            DGRAD_PLUGIN_ABI_MAJOR, DGRAD_PLUGIN_ABI_MINOR);
    cr_assert(strstr(error, "host ABI major 2"), "%s", error);
    cr_assert(strstr(error, plugin_version), "%s", error);
}

Test(plugin_loader, plugin_serving_only_major_2_is_refused_naming_both) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open(DGRAD_TEST_PLUGIN_MAJOR2_ONLY, &p, error,
            sizeof error), dgrad_abi_mismatch);
    cr_assert_null(p);
    cr_assert(strstr(error, "host ABI major 1, plugin ABI 2.0"), "%s", error);
}

Test(plugin_loader, table_smaller_than_abi_1_0_is_refused) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open(DGRAD_TEST_PLUGIN_SHORT_TABLE, &p, error,
            sizeof error), dgrad_abi_mismatch);
    cr_assert_null(p);
    cr_assert(strstr(error, "lacks ABI 1.0 entries"), "%s", error);
}

Test(plugin_loader, null_arguments_are_invalid) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    cr_assert_eq(dgrad_loader_open(NULL, &p, error, sizeof error),
            dgrad_invalid_arguments);
    cr_assert_eq(dgrad_loader_open(DGRAD_PLUGIN_PATH, NULL, error,
            sizeof error), dgrad_invalid_arguments);
    cr_assert(strstr(error, "must not be NULL"), "%s", error);
    cr_assert_null(dgrad_loader_api(NULL));
    dgrad_loader_close(NULL);
}

/* ================================================================== ABI */

TestSuite(plugin_abi, .init = load_plugin, .fini = unload_plugin);

/* The table as a host built against an older header declares it: a
 * prefix of today's table (append-only within a major). */
typedef struct older_host_api {
    size_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *plugin_name;
    const char *plugin_version;
    const char *(*last_error_message)(void);
    const char *(*status_name)(dgrad_status_t status);
    const char *(*data_type_name)(dgrad_data_type_t data_type);
    dgrad_status_t (*logical_tensor_init)(dgrad_logical_tensor_t *lt,
            size_t id, dgrad_data_type_t data_type, int32_t ndims,
            const int64_t *dims, dgrad_layout_type_t layout_type,
            dgrad_property_type_t property);
    void *logical_tensor_init_with_strides;
    void *logical_tensor_get_span;
    dgrad_status_t (*op_kind_from_name)(const char *name,
            dgrad_op_kind_t *kind);
    dgrad_status_t (*op_create)(dgrad_op_t **op, size_t id,
            dgrad_op_kind_t kind, const char *name);
    dgrad_status_t (*op_destroy)(dgrad_op_t *op);
    void *op_set_attr_s64, *op_set_attr_s64s, *op_set_attr_str;
    dgrad_status_t (*op_set_attr_by_name)(dgrad_op_t *op, const char *name,
            const char *value);
    dgrad_status_t (*compiled_op_create)(dgrad_plugin_compile_args_t *args);
    dgrad_status_t (*compiled_op_destroy)(dgrad_compiled_op_t *compiled);
    void *compiled_op_query_output, *compiled_op_impl_name;
    dgrad_status_t (*compiled_op_execute)(dgrad_plugin_execute_args_t *args);
} older_host_api_t;

_Static_assert(offsetof(older_host_api_t, compiled_op_execute)
                == offsetof(dgrad_plugin_api_t, compiled_op_execute),
        "the older host's table must be a prefix of today's");

Test(plugin_abi, host_built_against_a_smaller_table_still_works) {
    const older_host_api_t *old = (const older_host_api_t *)api;
    cr_assert_geq(old->struct_size, sizeof *old);
    cr_assert_eq(old->abi_major, 1);
    dgrad_op_t *op = NULL;
    cr_assert_eq(old->op_create(&op, 0, dgrad_op_conv_transpose, NULL), 0);
    for (size_t a = 0; a < conv_transpose_text.n_attrs; a++)
        cr_assert_eq(old->op_set_attr_by_name(op,
                conv_transpose_text.attrs[a].name,
                conv_transpose_text.attrs[a].value), 0);
    dgrad_logical_tensor_t in[3], out;
    cr_assert_eq(old->logical_tensor_init(&in[0], 0, dgrad_f32, 4, ct_x,
            dgrad_layout_type_strided, dgrad_property_type_variable), 0);
    cr_assert_eq(old->logical_tensor_init(&in[1], 1, dgrad_f32, 4, ct_w,
            dgrad_layout_type_strided, dgrad_property_type_constant), 0);
    cr_assert_eq(old->logical_tensor_init(&in[2], 2, dgrad_f32, 1, ct_b,
            dgrad_layout_type_strided, dgrad_property_type_variable), 0);
    cr_assert_eq(old->logical_tensor_init(&out, 3, dgrad_f32,
            DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_any,
            dgrad_property_type_variable), 0);
    dgrad_plugin_compile_args_t compile = {sizeof compile, op, 3, in, &out,
            NULL};
    cr_assert_eq(old->compiled_op_create(&compile), 0, "%s",
            old->last_error_message());
    cr_assert_arr_eq(out.dims, ct_y, sizeof ct_y);
    check_against_reference(&conv_transpose_text, compile.compiled, 3, in,
            &out, NULL, 0, 11);
    old->compiled_op_destroy(compile.compiled);
    old->op_destroy(op);
}

Test(plugin_abi, newer_host_checks_entries_a_smaller_table_lacks) {
    /* What a plugin of ABI 1.0 would return to a host built against 1.1. */
    dgrad_plugin_api_t table_1_0 = *api;
    table_1_0.struct_size = DGRAD_PLUGIN_API_SIZE_1_0;
    cr_assert(DGRAD_PLUGIN_API_HAS(&table_1_0, partitions_destroy));
    cr_assert_not(DGRAD_PLUGIN_API_HAS(&table_1_0, op_kind_name));
    cr_assert_not(DGRAD_PLUGIN_API_HAS(&table_1_0, data_type_size));
    /* This plugin has the 1.1 entries. */
    cr_assert(DGRAD_PLUGIN_API_HAS(api, op_kind_name));
    cr_assert(DGRAD_PLUGIN_API_HAS(api, data_type_size));
    cr_assert_str_eq(api->op_kind_name(dgrad_op_conv_transpose),
            "ConvTranspose");
    cr_assert_eq(api->data_type_size(dgrad_bf16), 2);
}

/* Args structs as a newer host declares them: extra trailing fields. */
typedef struct newer_compile_args {
    dgrad_plugin_compile_args_t base;
    uint64_t future[3];
} newer_compile_args_t;

typedef struct newer_execute_args {
    dgrad_plugin_execute_args_t base;
    uint64_t future[3];
} newer_execute_args_t;

Test(plugin_abi, larger_args_structs_from_a_newer_host_are_accepted) {
    dgrad_op_t *op = build_op(&conv_transpose_text);
    dgrad_logical_tensor_t in[3] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w), tensor(2, dgrad_f32, 1, ct_b)};
    dgrad_logical_tensor_t out = tensor(3, dgrad_f32, 4, ct_y);
    newer_compile_args_t compile;
    memset(&compile, 0x5a, sizeof compile);
    compile.base = (dgrad_plugin_compile_args_t){sizeof compile, op, 3, in,
            &out, NULL};
    ASSERT_OK(api->compiled_op_create(&compile.base));
    cr_assert_not_null(compile.base.compiled);
    cr_assert_eq(compile.future[2], 0x5a5a5a5a5a5a5a5aull,
            "the plugin wrote past the fields it knows");

    float x[75], w[54], b[2], y[162];
    unsigned seed = 3;
    fill_small_integers(x, 75, &seed);
    fill_small_integers(w, 54, &seed);
    fill_small_integers(b, 2, &seed);
    const void *buffers[] = {x, w, b};
    newer_execute_args_t run;
    memset(&run, 0x5a, sizeof run);
    run.base = (dgrad_plugin_execute_args_t){sizeof run,
            compile.base.compiled, 3, buffers, y, sizeof y, NULL};
    ASSERT_OK(api->compiled_op_execute(&run.base));
    cr_assert_eq(run.future[0], 0x5a5a5a5a5a5a5a5aull);
    check_against_reference(&conv_transpose_text, compile.base.compiled, 3,
            in, &out, NULL, 0, 5);
    api->compiled_op_destroy(compile.base.compiled);
    api->op_destroy(op);
}

Test(plugin_abi, too_small_args_structs_are_abi_mismatch_naming_both_sizes) {
    dgrad_op_t *op = build_op(&conv_transpose_text);
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w)};
    dgrad_logical_tensor_t out = tensor(3, dgrad_f32, 4, ct_y);
    char small[32], full[32];

    /* A compile args struct without its last field. */
    size_t short_size = offsetof(dgrad_plugin_compile_args_t, compiled);
    dgrad_plugin_compile_args_t compile = {short_size, op, 2, in, &out, NULL};
    snprintf(small, sizeof small, "(%zu bytes", short_size);
    snprintf(full, sizeof full, "reads %zu)", sizeof compile);
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_abi_mismatch,
            "plugin: compiled_op_create args struct_size", small, full);
    cr_assert_null(compile.compiled);

    compile.struct_size = sizeof compile;
    ASSERT_OK(api->compiled_op_create(&compile));

    short_size = offsetof(dgrad_plugin_execute_args_t, output_lt);
    dgrad_plugin_execute_args_t run = {short_size, compile.compiled, 2,
            NULL, NULL, 0, NULL};
    snprintf(small, sizeof small, "(%zu bytes", short_size);
    snprintf(full, sizeof full, "reads %zu)", sizeof run);
    ASSERT_FAILS(api->compiled_op_execute(&run), dgrad_abi_mismatch,
            "plugin: compiled_op_execute args struct_size", small, full);

    /* struct_size left 0 (the host forgot it). */
    dgrad_plugin_support_args_t query = {0, "ConvTranspose", 2, in,
            dgrad_plugin_supported, NULL};
    ASSERT_FAILS(api->query_support(&query), dgrad_abi_mismatch,
            "query_support args struct_size (0 bytes");
    dgrad_plugin_partition_args_t partition = {8, 0, NULL, NULL, 0};
    ASSERT_FAILS(api->graph_partition(&partition), dgrad_abi_mismatch,
            "graph_partition args struct_size (8 bytes");
    cr_assert_null(partition.partitions);

    api->compiled_op_destroy(compile.compiled);
    api->op_destroy(op);
}

Test(plugin_abi, null_args_are_invalid_arguments) {
    ASSERT_FAILS(api->compiled_op_create(NULL), dgrad_invalid_arguments,
            "compiled_op_create args (NULL)");
    ASSERT_FAILS(api->compiled_op_execute(NULL), dgrad_invalid_arguments,
            "compiled_op_execute args (NULL)");
    ASSERT_FAILS(api->query_support(NULL), dgrad_invalid_arguments,
            "query_support args (NULL)");
    ASSERT_FAILS(api->graph_partition(NULL), dgrad_invalid_arguments,
            "graph_partition args (NULL)");
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w)};
    dgrad_plugin_compile_args_t compile = {sizeof compile, NULL, 2, in, NULL,
            NULL};
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_invalid_arguments,
            "compiled_op_create output (NULL)");
    compile.inputs = NULL;
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_invalid_arguments,
            "compiled_op_create inputs (NULL, 2 elements)");
    int64_t n;
    ASSERT_FAILS(api->logical_tensor_get_span(NULL, &n),
            dgrad_invalid_arguments, "logical_tensor_get_span lt (NULL)");
    ASSERT_FAILS(api->logical_tensor_init(NULL, 0, dgrad_f32, 1, ct_b,
            dgrad_layout_type_strided, dgrad_property_type_variable),
            dgrad_invalid_arguments, "lt is NULL");
}

/* A logical tensor as a newer host declares it. */
typedef struct newer_tensor {
    dgrad_logical_tensor_t base;
    int64_t future[3];
} newer_tensor_t;

static newer_tensor_t newer_tensor(size_t id, int32_t ndims,
        const int64_t *dims) {
    newer_tensor_t t;
    memset(&t, 0x5a, sizeof t);
    t.base = tensor(id, dgrad_f32, ndims, dims);
    /* The table's init writes the 1.0 struct; a host with a larger struct
     * sets its own size before passing arrays (dgrad_plugin.h). */
    t.base.struct_size = sizeof t;
    return t;
}

Test(plugin_abi, tensor_arrays_from_a_newer_host_are_strided_by_struct_size) {
    dgrad_op_t *op = build_op(&conv_transpose_text);
    newer_tensor_t in[3] = {newer_tensor(0, 4, ct_x), newer_tensor(1, 4, ct_w),
            newer_tensor(2, 1, ct_b)};
    newer_tensor_t out = newer_tensor(3, DGRAD_UNKNOWN_NDIMS, NULL);
    out.base.layout_type = dgrad_layout_type_any;
    dgrad_plugin_compile_args_t compile = {sizeof compile, op, 3,
            &in[0].base, &out.base, NULL};
    ASSERT_OK(api->compiled_op_create(&compile));
    /* The in/out output: written within the host's struct, whose
     * struct_size is kept. */
    cr_assert_eq(out.base.struct_size, sizeof out);
    cr_assert_arr_eq(out.base.dims, ct_y, sizeof ct_y);
    cr_assert_eq(out.base.layout_type, dgrad_layout_type_strided);
    cr_assert_eq(out.future[0], 0x5a5a5a5a5a5a5a5all);

    dgrad_logical_tensor_t plain_in[3] = {in[0].base, in[1].base, in[2].base};
    dgrad_logical_tensor_t plain_out = out.base;
    check_against_reference(&conv_transpose_text, compile.compiled, 3,
            plain_in, &plain_out, NULL, 0, 7);
    api->compiled_op_destroy(compile.compiled);

    /* Every element must carry the first one's struct_size... */
    in[1].base.struct_size = sizeof(dgrad_logical_tensor_t);
    compile.compiled = NULL;
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_abi_mismatch,
            "compiled_op_create inputs[1] struct_size",
            "strided by its first element's struct_size");
    /* ...which must be a possible sizeof... */
    in[1].base.struct_size = sizeof in[1];
    in[0].base.struct_size = sizeof in[0] - 4;
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_abi_mismatch,
            "must be a multiple of 8");
    /* ...and at least the ABI 1.0 tensor. */
    char needed[32];
    snprintf(needed, sizeof needed, "reads %zu",
            (size_t)DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    in[0].base.struct_size = 64;
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_abi_mismatch,
            "compiled_op_create inputs[0] struct_size (64 bytes", needed);
    in[0].base.struct_size = sizeof in[0];
    out.base.struct_size = 16;
    ASSERT_FAILS(api->compiled_op_create(&compile), dgrad_abi_mismatch,
            "compiled_op_create output struct_size (16 bytes", needed);
    cr_assert_null(compile.compiled);
    api->op_destroy(op);
}

Test(plugin_abi, out_only_tensors_are_written_as_the_abi_1_0_struct) {
    newer_tensor_t t;
    memset(&t, 0x5a, sizeof t);
    ASSERT_OK(api->logical_tensor_init(&t.base, 9, dgrad_f32, 4, ct_x,
            dgrad_layout_type_strided, dgrad_property_type_variable));
    cr_assert_eq(t.base.struct_size, DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    cr_assert_eq(t.base.strides[0], 75);
    cr_assert_eq(t.future[0], 0x5a5a5a5a5a5a5a5all);

    const int64_t strides[] = {75, 1, 15, 3}; /* channels-last strides */
    memset(&t, 0x5a, sizeof t);
    ASSERT_OK(api->logical_tensor_init_with_strides(&t.base, 9, dgrad_f32, 4,
            ct_x, strides, dgrad_property_type_variable));
    cr_assert_eq(t.base.struct_size, DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    cr_assert_eq(t.base.strides[1], 1);
    cr_assert_eq(t.future[2], 0x5a5a5a5a5a5a5a5all);

    /* query_output and execute's output_lt. */
    dgrad_op_t *op = build_op(&conv_transpose_text);
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w)};
    dgrad_logical_tensor_t out = tensor(3, dgrad_f32, 4, ct_y);
    dgrad_plugin_compile_args_t compile = {sizeof compile, op, 2, in, &out,
            NULL};
    ASSERT_OK(api->compiled_op_create(&compile));
    memset(&t, 0x5a, sizeof t);
    ASSERT_OK(api->compiled_op_query_output(compile.compiled, &t.base));
    cr_assert_eq(t.base.struct_size, DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    cr_assert_arr_eq(t.base.dims, ct_y, sizeof ct_y);
    cr_assert_eq(t.future[0], 0x5a5a5a5a5a5a5a5all);

    float x[75] = {0}, w[54] = {0}, y[162];
    const void *buffers[] = {x, w};
    memset(&t, 0x5a, sizeof t);
    dgrad_plugin_execute_args_t run = {sizeof run, compile.compiled, 2,
            buffers, y, 0, &t.base};
    ASSERT_OK(api->compiled_op_execute(&run));
    cr_assert_eq(t.base.struct_size, DGRAD_PLUGIN_LOGICAL_TENSOR_SIZE_1_0);
    cr_assert_arr_eq(t.base.dims, ct_y, sizeof ct_y);
    cr_assert_eq(t.future[1], 0x5a5a5a5a5a5a5a5all);

    int64_t n = 0;
    ASSERT_OK(api->logical_tensor_get_span(&t.base, &n));
    cr_assert_eq(n, 162);
    api->compiled_op_destroy(compile.compiled);
    api->op_destroy(op);
}

/* ============================================================== execute */

TestSuite(plugin_execute, .init = load_plugin, .fini = unload_plugin);

/* oneDNN Graph ConvolutionBackwardData NCX/OIX, diff_dst 1x4x5x5, weights
 * 4x3x3x3, strides 2, pads 1, with a dst_shape input (1x3x9x9). */
static const op_text_t backward_data_text = {"ConvolutionBackwardData", 5,
        {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1"),
                ATTR("pads_end", "1,1"), ATTR("data_format", "NCX"),
                ATTR("weights_format", "OIX")}};

Test(plugin_execute, output_resolved_at_execution_is_reported) {
    dgrad_op_t *op = build_op(&backward_data_text);
    const int64_t dy[] = {1, 4, 5, 5}, w[] = {4, 3, 3, 3}, shape_len[] = {4};
    dgrad_logical_tensor_t in[3] = {tensor(0, dgrad_f32, 4, dy),
            tensor(1, dgrad_f32, 4, w), tensor(2, dgrad_s64, 1, shape_len)};
    dgrad_logical_tensor_t out = tensor(3, dgrad_f32, DGRAD_UNKNOWN_NDIMS,
            NULL);
    dgrad_plugin_compile_args_t compile = {sizeof compile, op, 3, in, &out,
            NULL};
    ASSERT_OK(api->compiled_op_create(&compile));
    cr_assert_str_eq(api->compiled_op_impl_name(compile.compiled),
            "deferred");

    float dy_buf[100] = {0}, w_buf[108] = {0}, dx[243];
    const int64_t shape[] = {1, 3, 9, 9};
    const void *buffers[] = {dy_buf, w_buf, shape};
    dgrad_logical_tensor_t produced;
    dgrad_plugin_execute_args_t run = {sizeof run, compile.compiled, 3,
            buffers, dx, 100 * sizeof(float), &produced};
    memset(&produced, 0x5a, sizeof produced);
    ASSERT_FAILS(api->compiled_op_execute(&run), dgrad_invalid_arguments,
            "needs 972 bytes, the buffer has 400");
    cr_assert_eq(produced.struct_size, 0x5a5a5a5a5a5a5a5aull,
            "a failed call wrote output_lt");
    run.output_capacity = sizeof dx;
    ASSERT_OK(api->compiled_op_execute(&run));
    cr_assert_arr_eq(produced.dims, shape, sizeof shape);

    dgrad_logical_tensor_t resolved_out = produced;
    check_against_reference(&backward_data_text, compile.compiled, 3, in,
            &resolved_out, shape, 4, 13);
    api->compiled_op_destroy(compile.compiled);
    api->op_destroy(op);
}

/* ================================================================ query */

TestSuite(plugin_query, .init = load_plugin, .fini = unload_plugin);

static dgrad_plugin_support_args_t ask(const char *kind, size_t n_inputs,
        const dgrad_logical_tensor_t *inputs) {
    dgrad_plugin_support_args_t q = {sizeof q, kind, n_inputs, inputs,
            dgrad_plugin_supported, NULL};
    ASSERT_OK(api->query_support(&q));
    cr_assert_not_null(q.reason);
    return q;
}

#define ASSERT_UNSUPPORTED(q, fragment)                                      \
    do {                                                                     \
        cr_assert_eq((q).support, dgrad_plugin_unsupported);                 \
        cr_assert(strstr((q).reason, fragment), "reason '%s' lacks '%s'",   \
                (q).reason, fragment);                                       \
    } while (0)

Test(plugin_query, every_kind_with_float_types_is_supported) {
    const int64_t x3[] = {1, 4, 5, 5, 5}, g[] = {2, 2, 3, 3, 3, 3}, n[] = {3},
                  full[] = {5};
    dgrad_data_type_t types[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int t = 0; t < 3; t++) {
        dgrad_logical_tensor_t in[3] = {tensor(0, types[t], 5, x3),
                tensor(1, types[t], 5, x3), tensor(2, dgrad_s32, 1, full)};
        dgrad_plugin_support_args_t q = ask("ConvolutionBackwardData", 3, in);
        cr_assert_eq(q.support, dgrad_plugin_supported, "%s", q.reason);
        cr_assert_str_eq(q.reason, "");
        cr_assert_eq(ask("ConvolutionBackpropData", 2, in).support,
                dgrad_plugin_supported);
        in[1] = tensor(1, types[t], 6, g);
        in[2] = tensor(2, dgrad_s64, 1, n);
        cr_assert_eq(ask("GroupConvolutionBackpropData", 3, in).support,
                dgrad_plugin_supported);
        in[1] = tensor(1, types[t], 5, x3);
        in[2] = tensor(2, types[t], 1, n);
        cr_assert_eq(ask("ConvTranspose", 3, in).support,
                dgrad_plugin_supported);
    }
}

Test(plugin_query, unknown_kind_is_unsupported_naming_it) {
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w)};
    ASSERT_UNSUPPORTED(ask("ReLU", 2, in),
            "op kind 'ReLU' is not implemented by dgrad");
    /* Names are case-sensitive, as the dialects spell them. */
    ASSERT_UNSUPPORTED(ask("convtranspose", 2, in), "'convtranspose'");
    /* An unknown kind is answered without looking at its inputs. */
    ASSERT_UNSUPPORTED(ask("Concat", 0, NULL), "'Concat'");
}

Test(plugin_query, data_types_dgrad_cannot_run_are_unsupported) {
    dgrad_logical_tensor_t in[3] = {tensor(0, dgrad_s32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w), tensor(2, dgrad_f32, 1, ct_b)};
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 2, in), "X data type (s32)");
    in[0] = tensor(0, dgrad_bf16, 4, ct_x);
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 2, in),
            "X data type (bf16) and W data type (f32)");
    in[0] = tensor(0, dgrad_f32, 4, ct_x);
    in[1] = tensor(1, dgrad_s64, 4, ct_w);
    ASSERT_UNSUPPORTED(ask("ConvolutionBackpropData", 2, in),
            "weights data type (s64)");
    in[1] = tensor(1, dgrad_f32, 4, ct_w);
    in[2] = tensor(2, dgrad_bf16, 1, ct_b);
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 3, in), "B data type (bf16)");
    ASSERT_UNSUPPORTED(ask("ConvolutionBackwardData", 3, in),
            "ConvolutionBackwardData: dst_shape data type (bf16) is not s32 "
            "or s64");
}

/* The reasons are the dialect layer's messages (dgrad_problem_check_operands
 * applies dgrad_problem_resolve's type and rank rules). */
Test(plugin_query, wrong_ranks_and_counts_are_unsupported_with_the_reason) {
    const int64_t r2[] = {4, 5}, r6[] = {1, 2, 3, 4, 5, 6}, n2[] = {2, 2};
    dgrad_logical_tensor_t in[3] = {tensor(0, dgrad_f32, 2, r2),
            tensor(1, dgrad_f32, 4, ct_w), tensor(2, dgrad_f32, 2, n2)};
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 2, in),
            "ConvTranspose: X rank (2) must be 3, 4 or 5 (1 to 3 spatial "
            "axes)");
    in[0] = tensor(0, dgrad_f32, 6, r6);
    ASSERT_UNSUPPORTED(ask("ConvolutionBackpropData", 2, in),
            "ConvolutionBackpropData: data rank (6) must be 3, 4 or 5");
    /* ONNX allows more spatial axes: unimplemented rather than invalid. */
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 2, in),
            "ConvTranspose: X rank (6): more than 3 spatial axes are not "
            "supported");
    in[0] = tensor(0, dgrad_f32, 4, ct_x);
    ASSERT_UNSUPPORTED(ask("GroupConvolutionBackpropData", 2, in),
            "GroupConvolutionBackpropData: weights rank (4) must be 5 for "
            "data rank 4");
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 3, in),
            "ConvTranspose: B rank (2) must be 1");
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 1, in),
            "ConvTranspose: 1 inputs given, the op takes X, W and optionally B");
    dgrad_logical_tensor_t four[4] = {in[0], in[1], in[2], in[2]};
    ASSERT_UNSUPPORTED(ask("ConvTranspose", 4, four), "4 inputs given");
}

/* Known dims are judged as compile judges them; unknown ones are not. */
Test(plugin_query, shape_input_length_and_dims_follow_the_dialect_rules) {
    const int64_t n3[] = {3}, n2[] = {2}, zero_x[] = {1, 3, 0, 5};
    dgrad_logical_tensor_t in[3] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w), tensor(2, dgrad_s32, 1, n3)};
    ASSERT_UNSUPPORTED(ask("ConvolutionBackwardData", 3, in),
            "ConvolutionBackwardData: dst_shape length (3) must equal the "
            "diff_src rank (4)");
    ASSERT_UNSUPPORTED(ask("ConvolutionBackpropData", 3, in),
            "ConvolutionBackpropData: output_shape length (3) must equal the "
            "spatial rank (2)");
    in[2] = tensor(2, dgrad_s32, 1, n2);
    cr_assert_eq(ask("ConvolutionBackpropData", 3, in).support,
            dgrad_plugin_supported);
    in[0] = tensor(0, dgrad_f32, 4, zero_x);
    ASSERT_UNSUPPORTED(ask("ConvolutionBackpropData", 3, in),
            "data dims (1,3,0,5) must all be at least 1");
    /* A shape input whose length is not known yet is left to compile. */
    const int64_t unknown[] = {DGRAD_UNKNOWN_DIM},
                  x_unknown[] = {1, 3, DGRAD_UNKNOWN_DIM, 5};
    in[0] = tensor(0, dgrad_f32, 4, x_unknown);
    in[2] = tensor(2, dgrad_s32, 1, unknown);
    dgrad_plugin_support_args_t q = ask("ConvolutionBackwardData", 3, in);
    cr_assert_eq(q.support, dgrad_plugin_supported, "%s", q.reason);
    /* An unsupported answer is not an error: no message is left. */
    in[2] = tensor(2, dgrad_s32, 1, n3);
    ASSERT_UNSUPPORTED(ask("ConvolutionBackwardData", 3, in), "dst_shape");
    cr_assert_str_eq(api->last_error_message(), "");
}

/* The rank rules relate the ranks to each other: with one of them not
 * known yet, compile judges them. The types are judged all the same. */
Test(plugin_query, ranks_not_known_yet_are_left_to_compile) {
    const int64_t r6[] = {1, 2, 3, 4, 5, 6};
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, DGRAD_UNKNOWN_NDIMS,
            NULL), tensor(1, dgrad_f32, 4, ct_w)};
    cr_assert_eq(ask("ConvTranspose", 2, in).support, dgrad_plugin_supported);
    in[0] = tensor(0, dgrad_f32, 6, r6);
    in[1] = tensor(1, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL);
    cr_assert_eq(ask("ConvolutionBackpropData", 2, in).support,
            dgrad_plugin_supported);
    in[1] = tensor(1, dgrad_s32, DGRAD_UNKNOWN_NDIMS, NULL);
    ASSERT_UNSUPPORTED(ask("ConvolutionBackpropData", 2, in),
            "weights data type (s32) is not one of f32, bf16, f16");
}

Test(plugin_query, invalid_arguments_are_errors) {
    dgrad_logical_tensor_t in[2] = {tensor(0, dgrad_f32, 4, ct_x),
            tensor(1, dgrad_f32, 4, ct_w)};
    dgrad_plugin_support_args_t q = {sizeof q, NULL, 2, in,
            dgrad_plugin_supported, NULL};
    ASSERT_FAILS(api->query_support(&q), dgrad_invalid_arguments,
            "query_support op_kind (NULL)");
    q.op_kind = "ConvTranspose";
    q.inputs = NULL;
    ASSERT_FAILS(api->query_support(&q), dgrad_invalid_arguments,
            "query_support inputs (NULL, 2 elements)");
    q.inputs = in;
    in[0].struct_size = 8;
    ASSERT_FAILS(api->query_support(&q), dgrad_abi_mismatch,
            "query_support inputs[0] struct_size (8 bytes");
    cr_assert_null(q.reason, "a failed query wrote its answer");
    q.struct_size = offsetof(dgrad_plugin_support_args_t, reason);
    ASSERT_FAILS(api->query_support(&q), dgrad_abi_mismatch,
            "query_support args struct_size");
}

/* ============================================================ partition */

TestSuite(plugin_partition, .init = load_plugin, .fini = unload_plugin);

/* A small graph with tensors connected by id. */
typedef struct graph {
    dgrad_logical_tensor_t t[16];
    dgrad_plugin_graph_op_t ops[8];
    dgrad_logical_tensor_t op_inputs[8][3], op_outputs[8][1];
    size_t n_ops;
} graph_t;

static void add_op(graph_t *g, size_t id, const op_text_t *text,
        size_t n_inputs, const size_t *inputs, size_t output) {
    size_t k = g->n_ops++;
    for (size_t i = 0; i < n_inputs; i++)
        g->op_inputs[k][i] = g->t[inputs[i]];
    g->op_outputs[k][0] = g->t[output];
    g->ops[k] = (dgrad_plugin_graph_op_t){sizeof g->ops[k], id, text->kind,
            text->n_attrs, text->attrs, n_inputs, g->op_inputs[k], 1,
            g->op_outputs[k]};
}

static dgrad_plugin_partitions_t *partition(const graph_t *g) {
    dgrad_plugin_partition_args_t args = {sizeof args, g->n_ops, g->ops,
            NULL, 0};
    ASSERT_OK(api->graph_partition(&args));
    cr_assert_not_null(args.partitions);
    return args.partitions;
}

static dgrad_plugin_partition_info_t info_of(
        const dgrad_plugin_partitions_t *p, size_t index) {
    dgrad_plugin_partition_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_OK(api->partitions_get(p, index, &info));
    cr_assert_eq(info.n_op_ids, 1);
    cr_assert_not_null(info.reason);
    return info;
}

/* Convolution -> ReLU -> ConvolutionBackwardData -> ConvTranspose -> Add,
 * the shapes chained as a training graph would have them. */
static const op_text_t convolution_text = {"Convolution", 2,
        {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1")}};
static const op_text_t relu_text = {"ReLU", 0, {ATTR("", "")}};
static const op_text_t backward_data_attr_text = {"ConvolutionBackwardData",
        6, {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1"),
                   ATTR("pads_end", "1,1"), ATTR("data_format", "NCX"),
                   ATTR("weights_format", "OIX"),
                   ATTR("dst_shape", "1,3,9,9")}};
static const op_text_t conv_transpose_same_text = {"ConvTranspose", 1,
        {ATTR("pads", "1,1,1,1")}};
static const op_text_t add_text = {"Add", 1, {ATTR("auto_broadcast",
        "numpy")}};

static void mixed_graph(graph_t *g) {
    memset(g, 0, sizeof *g);
    const int64_t x[] = {1, 3, 9, 9}, w[] = {4, 3, 3, 3}, y[] = {1, 4, 5, 5},
                  w2[] = {3, 2, 3, 3}, b[] = {2}, z[] = {1, 2, 9, 9};
    g->t[0] = tensor(0, dgrad_f32, 4, x);  /* conv src */
    g->t[1] = tensor(1, dgrad_f32, 4, w);  /* conv / backward weights */
    g->t[2] = tensor(2, dgrad_f32, 4, y);  /* conv dst */
    g->t[3] = tensor(3, dgrad_f32, 4, y);  /* relu dst = diff_dst */
    g->t[4] = tensor(4, dgrad_f32, 4, x);  /* diff_src */
    g->t[5] = tensor(5, dgrad_f32, 4, w2); /* ConvTranspose W */
    g->t[6] = tensor(6, dgrad_f32, 1, b);  /* ConvTranspose B */
    g->t[7] = tensor(7, dgrad_f32, 4, z);  /* ConvTranspose Y */
    g->t[8] = tensor(8, dgrad_f32, 4, z);  /* Add's other input */
    g->t[9] = tensor(9, dgrad_f32, 4, z);  /* Add dst */
    add_op(g, 10, &convolution_text, 2, (size_t[]){0, 1}, 2);
    add_op(g, 11, &relu_text, 1, (size_t[]){2}, 3);
    add_op(g, 12, &backward_data_attr_text, 2, (size_t[]){3, 1}, 4);
    add_op(g, 13, &conv_transpose_same_text, 3, (size_t[]){4, 5, 6}, 7);
    add_op(g, 14, &add_text, 2, (size_t[]){7, 8}, 9);
}

Test(plugin_partition, mixed_graph_claims_only_dgrad_ops_which_match_the_reference) {
    graph_t g;
    mixed_graph(&g);
    dgrad_plugin_partitions_t *parts = partition(&g);
    size_t count = 0;
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 5);

    const op_text_t *texts[] = {&convolution_text, &relu_text,
            &backward_data_attr_text, &conv_transpose_same_text, &add_text};
    const int claimed[] = {0, 0, 1, 1, 0};
    for (size_t i = 0; i < count; i++) {
        dgrad_plugin_partition_info_t info = info_of(parts, i);
        cr_assert_eq(info.op_ids[0], g.ops[i].id);
        cr_assert_eq(info.claimed, claimed[i], "%s: %s", texts[i]->kind,
                info.reason);
        if (!info.claimed) {
            char want[128];
            snprintf(want, sizeof want,
                    "op kind '%s' is not implemented by dgrad",
                    texts[i]->kind);
            cr_assert_str_eq(info.reason, want);
            cr_assert_null(info.op);
            continue;
        }
        cr_assert_str_eq(info.reason, "");
        cr_assert_not_null(info.op);
        /* Compile the claimed op for the graph's own tensors, as a host
         * does, and run it. */
        dgrad_logical_tensor_t out = g.op_outputs[i][0];
        dgrad_plugin_compile_args_t compile = {sizeof compile, info.op,
                g.ops[i].n_inputs, g.op_inputs[i], &out, NULL};
        ASSERT_OK(api->compiled_op_create(&compile));
        check_against_reference(texts[i], compile.compiled,
                g.ops[i].n_inputs, g.op_inputs[i], &out, NULL, 0,
                (unsigned)i + 1);
        api->compiled_op_destroy(compile.compiled);
    }
    ASSERT_OK(api->partitions_destroy(parts));
}

/* oneDNN Graph's ConvTranspose under its own name (pads_begin and
 * pads_end, which ONNX's lacks): NCX src 1x4x5x5, IOX weights 4x3x3x3 in
 * 2 groups, bias 6, stride 2, pads 1 -> dst 1x6x9x9; and the same op
 * named explicitly. */
static const op_text_t graph_conv_transpose_text = {"ConvTranspose", 6,
        {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1"),
                ATTR("pads_end", "1,1"), ATTR("groups", "2"),
                ATTR("data_format", "NCX"), ATTR("weights_format", "IOX")}};

Test(plugin_partition, conv_transpose_with_pads_begin_and_end_is_onednn_graphs) {
    const int64_t x[] = {1, 4, 5, 5}, w[] = {4, 3, 3, 3}, b[] = {6},
                  y[] = {1, 6, 9, 9};
    for (int named = 0; named < 2; named++) {
        graph_t g;
        memset(&g, 0, sizeof g);
        g.t[0] = tensor(0, dgrad_f32, 4, x);
        g.t[1] = tensor(1, dgrad_f32, 4, w);
        g.t[2] = tensor(2, dgrad_f32, 1, b);
        g.t[3] = tensor(3, dgrad_f32, 4, y);
        op_text_t text = graph_conv_transpose_text;
        if (named) text.kind = "onednn:ConvTranspose";
        add_op(&g, 7, &text, 3, (size_t[]){0, 1, 2}, 3);
        dgrad_plugin_partitions_t *parts = partition(&g);
        dgrad_plugin_partition_info_t info = info_of(parts, 0);
        cr_assert(info.claimed, "%s", info.reason);
        dgrad_logical_tensor_t out = g.op_outputs[0][0];
        dgrad_plugin_compile_args_t compile = {sizeof compile, info.op, 3,
                g.op_inputs[0], &out, NULL};
        ASSERT_OK(api->compiled_op_create(&compile));
        op_text_t as_resolved = text;
        as_resolved.kind = "onednn:ConvTranspose";
        check_against_reference(&as_resolved, compile.compiled, 3,
                g.op_inputs[0], &out, NULL, 0, 5);
        api->compiled_op_destroy(compile.compiled);
        ASSERT_OK(api->partitions_destroy(parts));
    }
}

Test(plugin_partition, ops_dgrad_cannot_build_are_left_with_the_reason) {
    graph_t g;
    mixed_graph(&g);
    /* ONNX spells it "group": "groups" is oneDNN Graph's. */
    static const op_text_t wrong_attr = {"ConvTranspose", 1,
            {ATTR("groups", "1")}};
    /* No dst_shape: the output's dims (9x9) are the output shape, and
     * stride 1 without pads cannot produce them. */
    static const op_text_t no_shape = {"ConvolutionBackwardData", 2,
            {ATTR("data_format", "NCX"), ATTR("weights_format", "OIX")}};
    g.ops[3].kind = wrong_attr.kind;
    g.ops[3].n_attrs = wrong_attr.n_attrs;
    g.ops[3].attrs = wrong_attr.attrs;
    g.ops[2].kind = no_shape.kind;
    g.ops[2].n_attrs = no_shape.n_attrs;
    g.ops[2].attrs = no_shape.attrs;
    dgrad_plugin_partitions_t *parts = partition(&g);
    dgrad_plugin_partition_info_t ct = info_of(parts, 3),
                                  bd = info_of(parts, 2);
    cr_assert_not(ct.claimed);
    /* one oneDNN Graph attribute does not make it oneDNN Graph's op */
    cr_assert(strstr(ct.reason, "ConvTranspose: unknown attribute 'groups' "
            "(this op has: strides, pads, dilations, output_padding, "
            "auto_pad, group, output_shape, kernel_shape) (oneDNN Graph's "
            "ConvTranspose is op kind onednn:ConvTranspose)"), "%s",
            ct.reason);
    cr_assert_not(bd.claimed);
    cr_assert(strstr(bd.reason, "ConvolutionBackwardData: diff_src size (9) "
            "on axis 0 cannot be produced"), "%s", bd.reason);
    cr_assert_null(bd.op);
    cr_assert_str_eq(api->last_error_message(), "",
            "a successful partitioning leaves no error message");
    ASSERT_OK(api->partitions_destroy(parts));

    /* Two outputs, and channels that do not match. */
    mixed_graph(&g);
    g.ops[3].n_outputs = 2;
    dgrad_logical_tensor_t two_outputs[2] = {g.t[7], g.t[9]};
    g.ops[3].outputs = two_outputs;
    g.op_inputs[2][1] = g.t[5]; /* 3x2x3x3 weights for 4 channels */
    parts = partition(&g);
    ct = info_of(parts, 3);
    bd = info_of(parts, 2);
    cr_assert(strstr(ct.reason, "outputs (2 given)"), "%s", ct.reason);
    cr_assert(strstr(bd.reason, "ConvolutionBackwardData: weights input "
            "channels (3) do not match diff_dst channels (4)"), "%s",
            bd.reason);
    ASSERT_OK(api->partitions_destroy(parts));
}

Test(plugin_partition, malformed_graphs_are_errors) {
    graph_t g;
    mixed_graph(&g);
    dgrad_plugin_partition_args_t args = {sizeof args, g.n_ops, g.ops, NULL, 0};

    g.ops[4].id = g.ops[1].id;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_invalid_arguments,
            "ops[1] and ops[4] id (11): op ids must be unique");
    cr_assert_null(args.partitions);
    g.ops[4].id = 14;

    g.ops[1].kind = NULL;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_invalid_arguments,
            "ops[1] (id 11) kind (NULL)");
    g.ops[1].kind = "ReLU";

    dgrad_plugin_attr_t attrs[2] = {ATTR("strides", "2,2"),
            ATTR("pads_begin", NULL)};
    g.ops[0].attrs = attrs;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_invalid_arguments,
            "graph_partition ops[0] attrs[1] value (NULL)");
    attrs[1].value = "1,1";
    attrs[1].struct_size = 8;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_abi_mismatch,
            "graph_partition ops[0] attrs[1] struct_size (8)");
    attrs[1].struct_size = sizeof attrs[1];

    g.op_outputs[2][0].struct_size = 32;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_abi_mismatch,
            "graph_partition ops[2] outputs[0] struct_size (32 bytes");
    g.op_outputs[2][0].struct_size = sizeof g.op_outputs[2][0];

    g.ops[0].struct_size = offsetof(dgrad_plugin_graph_op_t, outputs);
    ASSERT_FAILS(api->graph_partition(&args), dgrad_abi_mismatch,
            "graph_partition ops[0] struct_size");
    g.ops[0].struct_size = sizeof g.ops[0];

    args.ops = NULL;
    ASSERT_FAILS(api->graph_partition(&args), dgrad_invalid_arguments,
            "graph_partition ops (NULL, 5 elements)");
    args.ops = g.ops;
    ASSERT_OK(api->graph_partition(&args));

    /* The handle's queries. */
    dgrad_plugin_partition_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_FAILS(api->partitions_get(args.partitions, 5, &info),
            dgrad_invalid_arguments, "partitions_get index (5, 5 partitions)");
    info.struct_size = offsetof(dgrad_plugin_partition_info_t, reason);
    ASSERT_FAILS(api->partitions_get(args.partitions, 0, &info),
            dgrad_abi_mismatch, "partitions_get info struct_size");
    ASSERT_FAILS(api->partitions_get(NULL, 0, &info),
            dgrad_invalid_arguments, "partitions_get partitions (NULL)");
    size_t count;
    ASSERT_FAILS(api->partitions_count(NULL, &count),
            dgrad_invalid_arguments, "partitions_count partitions (NULL)");
    ASSERT_OK(api->partitions_destroy(args.partitions));
    ASSERT_OK(api->partitions_destroy(NULL));

    /* An empty graph is no error. */
    args.n_ops = 0;
    args.ops = NULL;
    ASSERT_OK(api->graph_partition(&args));
    ASSERT_OK(api->partitions_count(args.partitions, &count));
    cr_assert_eq(count, 0);
    ASSERT_OK(api->partitions_destroy(args.partitions));
}

/* ------------------------------------------------------- fused partitions */

TestSuite(plugin_fused, .init = load_plugin, .fini = unload_plugin);

static dgrad_plugin_partitions_t *partition_fused(const graph_t *g) {
    dgrad_plugin_partition_args_t args = {sizeof args, g->n_ops, g->ops,
            NULL, DGRAD_PLUGIN_PARTITION_FUSE};
    ASSERT_OK(api->graph_partition(&args));
    cr_assert_not_null(args.partitions);
    return args.partitions;
}

static dgrad_plugin_partition_info_t fused_info(
        const dgrad_plugin_partitions_t *p, size_t index) {
    dgrad_plugin_partition_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_OK(api->partitions_get(p, index, &info));
    return info;
}

/* The graph's tensor of id @p id (ids are indices into g->t here). */
static dgrad_logical_tensor_t graph_tensor(const graph_t *g, size_t id) {
    cr_assert_lt(id, 16);
    return g->t[id];
}

/* Compiles a claimed fused partition as a host does (inputs by the ids
 * the partition lists) and checks it against the reference. */
static void run_fused(const graph_t *g, const dgrad_plugin_partition_info_t *info,
        const op_text_t *text, const op_text_t *const *posts, size_t n_posts,
        unsigned seed) {
    dgrad_logical_tensor_t in[3 + DGRAD_MAX_POST_OPS];
    for (size_t i = 0; i < info->n_inputs; i++)
        in[i] = graph_tensor(g, info->input_ids[i]);
    dgrad_logical_tensor_t out = graph_tensor(g, info->output_id);
    dgrad_plugin_compile_args_t compile = {sizeof compile, info->op,
            info->n_inputs, in, &out, NULL};
    ASSERT_OK(api->compiled_op_create(&compile));
    check_fused_against_reference(text, posts, n_posts, compile.compiled,
            info->n_inputs, in, &out, NULL, 0, seed);
    api->compiled_op_destroy(compile.compiled);
}

static const op_text_t relu_post = {"ReLU", 0, {ATTR("", "")}};
static const op_text_t clamp_post = {"Clamp", 2, {ATTR("min", "-4"),
        ATTR("max", "6")}};
static const op_text_t bias_add_post = {"BiasAdd", 1,
        {ATTR("data_format", "NCX")}};
static const op_text_t multiply_post = {"Multiply", 0, {ATTR("", "")}};
static const op_text_t subtract_post = {"Subtract", 0, {ATTR("", "")}};

Test(plugin_fused, conv_transpose_takes_the_add_that_follows) {
    graph_t g;
    mixed_graph(&g);
    dgrad_plugin_partitions_t *parts = partition_fused(&g);
    size_t count = 0;
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 4, "the Add joins the ConvTranspose's partition");
    dgrad_plugin_partition_info_t info = fused_info(parts, 3);
    cr_assert(info.claimed, "%s", info.reason);
    cr_assert_eq(info.n_op_ids, 2);
    cr_assert(info.op_ids[0] == 13 && info.op_ids[1] == 14);
    cr_assert_eq(info.n_inputs, 4);
    const size_t want_inputs[] = {4, 5, 6, 8};
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(info.input_ids[i], want_inputs[i]);
    cr_assert_eq(info.output_id, 9);
    const op_text_t add_post = {"Add", 1, {ATTR("auto_broadcast", "numpy")}};
    const op_text_t *posts[] = {&add_post};
    run_fused(&g, &info, &conv_transpose_same_text, posts, 1, 3);
    /* ABI 1.3: the Add's other input, of the output's shape and layout,
     * may be the output's buffer (input 3, id 8) */
    cr_assert(DGRAD_PLUGIN_API_HAS(api, compiled_op_query_in_place_input));
    dgrad_logical_tensor_t in[4], out = graph_tensor(&g, info.output_id);
    for (size_t i = 0; i < 4; i++) in[i] = graph_tensor(&g, info.input_ids[i]);
    dgrad_plugin_compile_args_t compile = {sizeof compile, info.op, 4, in,
            &out, NULL};
    ASSERT_OK(api->compiled_op_create(&compile));
    int64_t index = -2;
    ASSERT_OK(api->compiled_op_query_in_place_input(compile.compiled, &index));
    cr_assert_eq(index, 3);
    cr_assert_eq(api->compiled_op_query_in_place_input(NULL, &index),
            dgrad_invalid_arguments);
    api->compiled_op_destroy(compile.compiled);
    /* the others as before: one op each */
    dgrad_plugin_partition_info_t bd = fused_info(parts, 2);
    cr_assert(bd.claimed && bd.n_op_ids == 1 && bd.op_ids[0] == 12);
    cr_assert(bd.n_inputs == 2 && bd.input_ids[0] == 3 && bd.output_id == 4);
    cr_assert_not(fused_info(parts, 1).claimed); /* ReLU after Convolution */
    ASSERT_OK(api->partitions_destroy(parts));
}

/* oneDNN Graph ConvTranspose -> BiasAdd -> ReLU -> Multiply (per channel)
 * -> Clamp: one partition of five ops. */
static void decoder_stage(graph_t *g) {
    memset(g, 0, sizeof *g);
    const int64_t x[] = {1, 4, 5, 5}, w[] = {4, 3, 3, 3}, b[] = {3},
                  y[] = {1, 3, 9, 9}, scale[] = {3, 1, 1};
    g->t[0] = tensor(0, dgrad_f32, 4, x);
    g->t[1] = tensor(1, dgrad_f32, 4, w);
    g->t[2] = tensor(2, dgrad_f32, 4, y);
    g->t[3] = tensor(3, dgrad_f32, 1, b);
    g->t[4] = tensor(4, dgrad_f32, 4, y);
    g->t[5] = tensor(5, dgrad_f32, 4, y);
    g->t[6] = tensor(6, dgrad_f32, 3, scale);
    g->t[7] = tensor(7, dgrad_f32, 4, y);
    g->t[8] = tensor(8, dgrad_f32, 4, y);
    static const op_text_t ct = {"ConvTranspose", 5,
            {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1"),
                    ATTR("pads_end", "1,1"), ATTR("data_format", "NCX"),
                    ATTR("weights_format", "IOX")}};
    add_op(g, 20, &ct, 2, (size_t[]){0, 1}, 2);
    add_op(g, 21, &bias_add_post, 2, (size_t[]){2, 3}, 4);
    add_op(g, 22, &relu_post, 1, (size_t[]){4}, 5);
    add_op(g, 23, &multiply_post, 2, (size_t[]){6, 5}, 7); /* chain second */
    add_op(g, 24, &clamp_post, 1, (size_t[]){7}, 8);
}

Test(plugin_fused, a_chain_of_four_post_ops_is_one_partition) {
    graph_t g;
    decoder_stage(&g);
    dgrad_plugin_partitions_t *parts = partition_fused(&g);
    size_t count = 0;
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 1);
    dgrad_plugin_partition_info_t info = fused_info(parts, 0);
    cr_assert(info.claimed, "%s", info.reason);
    cr_assert_eq(info.n_op_ids, 5);
    cr_assert(info.n_inputs == 4 && info.input_ids[2] == 3
            && info.input_ids[3] == 6 && info.output_id == 8);
    static const op_text_t ct = {"onednn:ConvTranspose", 5,
            {ATTR("strides", "2,2"), ATTR("pads_begin", "1,1"),
                    ATTR("pads_end", "1,1"), ATTR("data_format", "NCX"),
                    ATTR("weights_format", "IOX")}};
    const op_text_t *posts[] = {&bias_add_post, &relu_post, &multiply_post,
            &clamp_post};
    run_fused(&g, &info, &ct, posts, 4, 9);
    ASSERT_OK(api->partitions_destroy(parts));

    /* Without the flag (a host of ABI 1.1), one op per partition. */
    parts = partition(&g);
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 5);
    ASSERT_OK(api->partitions_destroy(parts));
}

Test(plugin_fused, chains_stop_where_fusing_would_change_the_graph) {
    graph_t g;
    size_t count = 0;
    /* the BiasAdd's output feeds the ReLU and the Multiply: a branch */
    decoder_stage(&g);
    g.op_inputs[3][1] = g.t[4];
    g.op_inputs[4][0] = g.t[5];
    dgrad_plugin_partitions_t *parts = partition_fused(&g);
    dgrad_plugin_partition_info_t info = fused_info(parts, 0);
    cr_assert_eq(info.n_op_ids, 2, "the BiasAdd's output has two readers");
    cr_assert_eq(info.output_id, 4);
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 4);
    ASSERT_OK(api->partitions_destroy(parts));

    /* Subtract takes the chain as its second input: b - x is not x - b */
    decoder_stage(&g);
    g.ops[3].kind = subtract_post.kind;
    parts = partition_fused(&g);
    info = fused_info(parts, 0);
    cr_assert_eq(info.n_op_ids, 3, "stops before the Subtract");
    cr_assert_eq(info.output_id, 5);
    ASSERT_OK(api->partitions_count(parts, &count));
    cr_assert_eq(count, 3);
    dgrad_plugin_partition_info_t sub = fused_info(parts, 1);
    cr_assert_not(sub.claimed);
    cr_assert_str_eq(sub.reason, "not fused after op 20 (ConvTranspose): it "
            "takes the chain as its second input (only Add, Multiply, "
            "Maximum and Minimum commute)");
    ASSERT_OK(api->partitions_destroy(parts));

    /* an operand that would grow the output (4 channels against 3) */
    decoder_stage(&g);
    const int64_t wide[] = {1, 4, 9, 9};
    g.op_inputs[3][0] = tensor(6, dgrad_f32, 4, wide);
    parts = partition_fused(&g);
    info = fused_info(parts, 0);
    cr_assert_eq(info.n_op_ids, 3, "stops before the Multiply");
    const char *why = fused_info(parts, 1).reason;
    cr_assert(strstr(why, "not fused after op 20 (ConvTranspose): "
            "onednn:ConvTranspose: post-op 3 (Multiply) operand (input 3) "
            "dims (1,4,9,9) do not broadcast to dst dims (1,3,9,9)"), "%s",
            why);
    ASSERT_OK(api->partitions_destroy(parts));

    /* an attribute the post-op does not have */
    decoder_stage(&g);
    static const op_text_t odd_relu = {"ReLU", 1, {ATTR("alpha", "0.1")}};
    g.ops[2].n_attrs = odd_relu.n_attrs;
    g.ops[2].attrs = odd_relu.attrs;
    parts = partition_fused(&g);
    info = fused_info(parts, 0);
    cr_assert_eq(info.n_op_ids, 2, "stops before the ReLU");
    cr_assert(strstr(fused_info(parts, 1).reason, "post-op 2 (ReLU): unknown "
            "attribute 'alpha' (it has: none)"), "%s",
            fused_info(parts, 1).reason);
    cr_assert_str_eq(api->last_error_message(), "",
            "a stopped chain leaves no error message");
    ASSERT_OK(api->partitions_destroy(parts));
}

/* A host of ABI 1.1 passes the smaller info struct: the 1.2 fields are
 * not written past its end. */
Test(plugin_fused, an_older_info_struct_gets_no_new_fields) {
    graph_t g;
    decoder_stage(&g);
    dgrad_plugin_partitions_t *parts = partition_fused(&g);
    unsigned char raw[sizeof(dgrad_plugin_partition_info_t)];
    memset(raw, 0xa5, sizeof raw);
    dgrad_plugin_partition_info_t *info = (dgrad_plugin_partition_info_t *)raw;
    size_t old_size = offsetof(dgrad_plugin_partition_info_t, reason)
            + sizeof info->reason;
    info->struct_size = old_size;
    ASSERT_OK(api->partitions_get(parts, 0, info));
    cr_assert_eq(info->n_op_ids, 5);
    for (size_t i = old_size; i < sizeof raw; i++)
        cr_assert_eq(raw[i], 0xa5, "byte %zu beyond the host's struct", i);
    ASSERT_OK(api->partitions_destroy(parts));
}
