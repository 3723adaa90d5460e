/* Links against an installed dgrad and compiles one op for shape only. */
#include <dgrad/dgrad.h>
#include <stdio.h>

int main(void) {
    dgrad_op_t *op;
    if (dgrad_op_create(&op, 0, dgrad_op_convolution_backprop_data, NULL)) return 1;
    const int64_t s[] = {2, 2}, p[] = {1, 1};
    dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, s, 2);
    dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_begin, p, 2);
    dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_end, p, 2);
    const int64_t d[] = {1, 20, 224, 224}, w[] = {20, 10, 3, 3};
    dgrad_logical_tensor_t in[2], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 4, d, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 4, w, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 2, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_compiled_op_t *c;
    dgrad_status_t st = dgrad_compiled_op_create(&c, op, 2, in, &out);
    printf("%s %lldx%lldx%lldx%lld\n", dgrad_status_name(st), (long long)out.dims[0],
            (long long)out.dims[1], (long long)out.dims[2], (long long)out.dims[3]);
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(op);
    return st == dgrad_success && out.dims[2] == 447 ? 0 : 1;
}
