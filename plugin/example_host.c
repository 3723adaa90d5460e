/* A graph compiler's view of dgrad: load the plugin, compile an ONNX
 * ConvTranspose and run it. Usage: dgrad_example_host path/to/libdgrad_plugin.so */
#include <dgrad/dgrad_loader.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { if ((call) != dgrad_success) { \
    fprintf(stderr, "%s: %s\n", #call, api->last_error_message()); return 1; } } while (0)

int main(int argc, char **argv) {
    char error[512];
    dgrad_loader_plugin_t *plugin = NULL;
    if (argc != 2 || dgrad_loader_open(argv[1], &plugin, error, sizeof error) != dgrad_success) {
        fprintf(stderr, "%s\n", argc != 2 ? "usage: dgrad_example_host PLUGIN" : error);
        return 1;
    }
    const dgrad_plugin_api_t *api = dgrad_loader_api(plugin);
    dgrad_op_t *op = NULL;
    CHECK(api->op_create(&op, 0, dgrad_op_conv_transpose, "upsample"));
    CHECK(api->op_set_attr_by_name(op, "strides", "1,1"));
    const int64_t x_dims[] = {1, 1, 2, 2}, w_dims[] = {1, 1, 2, 2};
    dgrad_logical_tensor_t in[2], out;
    CHECK(api->logical_tensor_init(&in[0], 1, dgrad_f32, 4, x_dims, dgrad_layout_type_strided, dgrad_property_type_variable));
    CHECK(api->logical_tensor_init(&in[1], 2, dgrad_f32, 4, w_dims, dgrad_layout_type_strided, dgrad_property_type_constant));
    CHECK(api->logical_tensor_init(&out, 3, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable));
    dgrad_plugin_compile_args_t compile = {sizeof compile, op, 2, in, &out, NULL};
    CHECK(api->compiled_op_create(&compile)); /* out now has dims 1x1x3x3 */
    float x[] = {1, 2, 3, 4}, w[] = {1, 1, 1, 1}, y[9];
    const float want[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    const void *inputs[] = {x, w};
    dgrad_plugin_execute_args_t run = {sizeof run, compile.compiled, 2, inputs, y, sizeof y, NULL};
    CHECK(api->compiled_op_execute(&run));
    printf("%s %s, %s: y = [%g %g %g; %g %g %g; %g %g %g]\n", api->plugin_name, api->plugin_version,
            api->compiled_op_impl_name(compile.compiled), y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7], y[8]);
    api->compiled_op_destroy(compile.compiled);
    api->op_destroy(op);
    dgrad_loader_close(plugin);
    return memcmp(y, want, sizeof y) != 0;
}
