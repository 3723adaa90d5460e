/* A graph compiler's view of fused partitions: DCGAN's generator without
 * batch norm (four ConvTranspose -> ReLU stages and a ConvTranspose ->
 * Tanh, oneDNN Graph ops in NCX/IOX) handed to graph_partition with
 * DGRAD_PLUGIN_PARTITION_FUSE, each partition compiled and run through the
 * plugin, and the image checked against the same network computed by plain
 * loops here. Usage: dgrad_example_decoder path/to/libdgrad_plugin.so */
#include <dgrad/dgrad_loader.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call) do { if ((call) != dgrad_success) { \
    fprintf(stderr, "%s: %s\n", #call, api->last_error_message()); return 1; } } while (0)

enum { STAGES = 5 };
/* channels from the latent vector to the image; spatial 1 -> 4 -> 8 ... 64 */
static const int64_t channels[STAGES + 1] = {16, 64, 32, 16, 8, 3};
static const int64_t sizes[STAGES + 1] = {1, 4, 8, 16, 32, 64};

/* Tensor ids: activation k is 2k, the weights of stage k are 2k + 1
 * (k = 0..4), the pre-activation of stage k is 100 + k. */
static int64_t elements(int k) { return channels[k] * sizes[k] * sizes[k]; }

/* y[co][oy][ox] += x[ci][iy][ix] * w[ci][co][ky][kx] at oy = iy*s - p + ky:
 * the transposed convolution, plainly. */
static void reference_stage(const float *x, const float *w, float *y, int k,
        int last) {
    int64_t ci_n = channels[k], co_n = channels[k + 1], xs = sizes[k],
            ys = sizes[k + 1], s = k ? 2 : 1, p = k ? 1 : 0;
    double *acc = calloc((size_t)(co_n * ys * ys), sizeof *acc);
    for (int64_t ci = 0; ci < ci_n; ci++)
        for (int64_t co = 0; co < co_n; co++)
            for (int64_t iy = 0; iy < xs; iy++)
                for (int64_t ix = 0; ix < xs; ix++)
                    for (int64_t ky = 0; ky < 4; ky++)
                        for (int64_t kx = 0; kx < 4; kx++) {
                            int64_t oy = iy * s - p + ky, ox = ix * s - p + kx;
                            if (oy < 0 || oy >= ys || ox < 0 || ox >= ys) continue;
                            acc[(co * ys + oy) * ys + ox] += (double)x[(ci * xs + iy) * xs + ix]
                                    * w[((ci * co_n + co) * 4 + ky) * 4 + kx];
                        }
    for (int64_t i = 0; i < co_n * ys * ys; i++)
        y[i] = (float)(last ? tanh(acc[i]) : acc[i] > 0 ? acc[i] : 0);
    free(acc);
}

int main(int argc, char **argv) {
    char error[512];
    dgrad_loader_plugin_t *plugin = NULL;
    if (argc != 2 || dgrad_loader_open(argv[1], &plugin, error, sizeof error) != dgrad_success) {
        fprintf(stderr, "%s\n", argc != 2 ? "usage: dgrad_example_decoder PLUGIN" : error);
        return 1;
    }
    const dgrad_plugin_api_t *api = dgrad_loader_api(plugin);
    if (!DGRAD_PLUGIN_API_HAS(api, op_append_post_op)) {
        fprintf(stderr, "the plugin predates fused partitions (ABI 1.2)\n");
        return 1;
    }

    /* The graph: tensors 0..10 and 100..104, ten ops. */
    dgrad_logical_tensor_t act[STAGES + 1], wei[STAGES], pre[STAGES];
    dgrad_logical_tensor_t op_in[2 * STAGES][2], op_out[2 * STAGES];
    static const dgrad_plugin_attr_t ct_attrs[2][5] = {
            {{sizeof(dgrad_plugin_attr_t), "strides", "1,1"},
                    {sizeof(dgrad_plugin_attr_t), "pads_begin", "0,0"},
                    {sizeof(dgrad_plugin_attr_t), "pads_end", "0,0"},
                    {sizeof(dgrad_plugin_attr_t), "data_format", "NCX"},
                    {sizeof(dgrad_plugin_attr_t), "weights_format", "IOX"}},
            {{sizeof(dgrad_plugin_attr_t), "strides", "2,2"},
                    {sizeof(dgrad_plugin_attr_t), "pads_begin", "1,1"},
                    {sizeof(dgrad_plugin_attr_t), "pads_end", "1,1"},
                    {sizeof(dgrad_plugin_attr_t), "data_format", "NCX"},
                    {sizeof(dgrad_plugin_attr_t), "weights_format", "IOX"}}};
    dgrad_plugin_graph_op_t ops[2 * STAGES];
    for (int k = 0; k <= STAGES; k++) {
        const int64_t d[4] = {1, channels[k], sizes[k], sizes[k]};
        CHECK(api->logical_tensor_init(&act[k], (size_t)(2 * k), dgrad_f32, 4, d,
                dgrad_layout_type_strided, dgrad_property_type_variable));
        if (k == STAGES) break;
        const int64_t wd[4] = {channels[k], channels[k + 1], 4, 4},
                      pd[4] = {1, channels[k + 1], sizes[k + 1], sizes[k + 1]};
        CHECK(api->logical_tensor_init(&wei[k], (size_t)(2 * k + 1), dgrad_f32, 4, wd,
                dgrad_layout_type_strided, dgrad_property_type_constant));
        CHECK(api->logical_tensor_init(&pre[k], (size_t)(100 + k), dgrad_f32, 4, pd,
                dgrad_layout_type_strided, dgrad_property_type_variable));
    }
    for (int k = 0; k < STAGES; k++) {
        op_in[2 * k][0] = act[k];
        op_in[2 * k][1] = wei[k];
        op_out[2 * k] = pre[k];
        ops[2 * k] = (dgrad_plugin_graph_op_t){sizeof ops[0], (size_t)(10 * k), "ConvTranspose",
                5, ct_attrs[k > 0], 2, op_in[2 * k], 1, &op_out[2 * k]};
        op_in[2 * k + 1][0] = pre[k];
        op_out[2 * k + 1] = act[k + 1];
        ops[2 * k + 1] = (dgrad_plugin_graph_op_t){sizeof ops[0], (size_t)(10 * k + 1),
                k == STAGES - 1 ? "Tanh" : "ReLU", 0, NULL, 1, op_in[2 * k + 1], 1,
                &op_out[2 * k + 1]};
    }
    dgrad_plugin_partition_args_t part = {sizeof part, 2 * STAGES, ops, NULL,
            DGRAD_PLUGIN_PARTITION_FUSE};
    CHECK(api->graph_partition(&part));
    size_t n_parts = 0;
    CHECK(api->partitions_count(part.partitions, &n_parts));

    /* Data: small values, so that activations stay moderate. */
    float *data[STAGES + 1], *weights[STAGES], *expect[STAGES + 1];
    unsigned seed = 1;
    for (int k = 0; k <= STAGES; k++) {
        data[k] = calloc((size_t)elements(k), sizeof(float));
        expect[k] = calloc((size_t)elements(k), sizeof(float));
        if (k == STAGES) break;
        int64_t n = channels[k] * channels[k + 1] * 16;
        weights[k] = malloc((size_t)n * sizeof(float));
        for (int64_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            weights[k][i] = (float)((int)(seed >> 16) % 9 - 4) / 24;
        }
    }
    for (int64_t i = 0; i < elements(0); i++) data[0][i] = expect[0][i] = (float)(i % 5) - 2;

    /* Each partition: compiled with the tensors it names, run in order. */
    int fused = 0;
    for (size_t i = 0; i < n_parts; i++) {
        dgrad_plugin_partition_info_t info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK(api->partitions_get(part.partitions, i, &info));
        if (!info.claimed || info.n_inputs != 2) {
            fprintf(stderr, "partition %zu: %s\n", i, info.claimed ? "inputs" : info.reason);
            return 1;
        }
        int k = (int)info.input_ids[0] / 2; /* the stage of its input */
        fused += info.n_op_ids == 2;
        dgrad_logical_tensor_t in[2] = {act[k], wei[k]}, out = act[k + 1];
        dgrad_plugin_compile_args_t compile = {sizeof compile, info.op, 2, in, &out, NULL};
        CHECK(api->compiled_op_create(&compile));
        const void *inputs[2] = {data[k], weights[k]};
        dgrad_plugin_execute_args_t run = {sizeof run, compile.compiled, 2, inputs,
                data[k + 1], (size_t)elements(k + 1) * sizeof(float), NULL};
        CHECK(api->compiled_op_execute(&run));
        printf("stage %d: %zu ops in one partition, %s\n", k, info.n_op_ids,
                api->compiled_op_impl_name(compile.compiled));
        api->compiled_op_destroy(compile.compiled);
    }

    double worst = 0, largest = 0;
    for (int k = 0; k < STAGES; k++) reference_stage(expect[k], weights[k], expect[k + 1], k, k == STAGES - 1);
    for (int64_t i = 0; i < elements(STAGES); i++) {
        double e = fabs((double)data[STAGES][i] - expect[STAGES][i]);
        if (e > worst) worst = e;
        if (fabs(expect[STAGES][i]) > largest) largest = fabs(expect[STAGES][i]);
    }
    printf("image 1x3x64x64 (values up to %.2f): %d of %d partitions fused, largest "
            "difference from the loops %.2g\n", largest, fused, STAGES, worst);
    for (int k = 0; k <= STAGES; k++) {
        free(data[k]);
        free(expect[k]);
        if (k < STAGES) free(weights[k]);
    }
    api->partitions_destroy(part.partitions);
    dgrad_loader_close(plugin);
    /* an image of zeros would prove nothing */
    return n_parts != STAGES || fused != STAGES || !(worst < 1e-4) || !(largest > 0.1);
}
