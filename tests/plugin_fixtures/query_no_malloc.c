/*
 * query_support allocates nothing: this program replaces the allocation
 * functions of the process (the dynamic linker binds the plugin's malloc
 * calls to the executable's definitions, exported with ENABLE_EXPORTS),
 * counts the calls while it asks the plugin many questions, and fails if
 * any allocation happened.
 *
 * One warm-up round runs before counting: the first use of the module's
 * thread-locals on a thread makes glibc allocate the module's TLS block
 * (once per thread, not per call), and lazy binding resolves symbols.
 *
 * Not built with sanitizers: they replace malloc themselves.
 * Usage: dgrad_test_query_no_malloc path/to/libdgrad_plugin.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad_loader.h"

#include "../no_malloc/counting_malloc.h"

typedef struct question {
    const char *kind;
    dgrad_data_type_t data_type;
    int32_t data_rank;
    dgrad_status_t status;
    dgrad_plugin_support_t support;
} question_t;

/* Asks one question; returns 0 when the answer is the expected one. */
static int ask(const dgrad_plugin_api_t *api, const question_t *q) {
    static const int64_t dims[] = {1, 4, 5, 5, 5, 5};
    dgrad_logical_tensor_t in[2];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 2; i++) {
        in[i].struct_size = sizeof in[i];
        in[i].data_type = q->data_type;
        in[i].ndims = q->data_rank;
        memcpy(in[i].dims, dims, sizeof dims);
        in[i].layout_type = dgrad_layout_type_strided;
    }
    dgrad_plugin_support_args_t args = {sizeof args, q->kind, 2, in,
            dgrad_plugin_unsupported, NULL};
    dgrad_status_t st = api->query_support(&args);
    if (st != q->status) return 1;
    return st == dgrad_success && args.support != q->support;
}

int main(int argc, char **argv) {
    char error[512];
    dgrad_loader_plugin_t *plugin = NULL;
    if (argc != 2 || dgrad_loader_open(argv[1], &plugin, error, sizeof error)
                    != dgrad_success) {
        fprintf(stderr, "%s\n", argc != 2 ? "usage: query_no_malloc PLUGIN"
                                          : error);
        return 2;
    }
    const dgrad_plugin_api_t *api = dgrad_loader_api(plugin);
    /* Every kind of answer: supported, the reason paths, and the error
     * path (a NULL kind name sets the thread's error message). */
    static const question_t questions[] = {
            {"ConvTranspose", dgrad_f32, 4, dgrad_success,
                    dgrad_plugin_supported},
            {"ConvolutionBackwardData", dgrad_bf16, 5, dgrad_success,
                    dgrad_plugin_supported},
            {"ReLU", dgrad_f32, 4, dgrad_success, dgrad_plugin_unsupported},
            {"ConvTranspose", dgrad_s32, 4, dgrad_success,
                    dgrad_plugin_unsupported},
            {"ConvolutionBackpropData", dgrad_f16, 6, dgrad_success,
                    dgrad_plugin_unsupported},
            {NULL, dgrad_f32, 4, dgrad_invalid_arguments,
                    dgrad_plugin_unsupported},
    };
    const size_t n_questions = sizeof questions / sizeof questions[0];
    const int rounds = 1000;
    int wrong = 0;

    /* The counter must see the plugin's own allocations, or a zero below
     * would prove nothing: creating an op allocates. */
    __atomic_store_n(&allocations, 0, __ATOMIC_RELAXED);
    dgrad_op_t *op = NULL;
    if (api->op_create(&op, 0, dgrad_op_conv_transpose, NULL)
            != dgrad_success)
        return 2;
    size_t seen = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
    api->op_destroy(op);
    if (seen == 0) {
        fprintf(stderr, "the plugin's malloc calls are not counted\n");
        return 2;
    }

    __atomic_store_n(&allocations, 0, __ATOMIC_RELAXED);
    for (size_t q = 0; q < n_questions; q++) wrong += ask(api, &questions[q]);
    size_t warm_up = __atomic_load_n(&allocations, __ATOMIC_RELAXED);

    __atomic_store_n(&allocations, 0, __ATOMIC_RELAXED);
    for (int r = 0; r < rounds; r++)
        for (size_t q = 0; q < n_questions; q++)
            wrong += ask(api, &questions[q]);
    size_t counted = __atomic_load_n(&allocations, __ATOMIC_RELAXED);

    printf("query_support: %zu calls, %zu allocations (warm-up round: %zu), "
           "%d wrong answers\n", rounds * n_questions, counted, warm_up,
            wrong);
    dgrad_loader_close(plugin);
    return counted != 0 || wrong != 0;
}
