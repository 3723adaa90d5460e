/* libFuzzer target: attribute/shape resolution. The bytes choose an op
 * kind, operand dims (small, zero or huge), attributes by name with values
 * as text (lists, strings, empty, junk) and a third input; the case then
 * goes through the dialect layer and the conformance model, which must
 * agree whenever both accept it (fuzz_common.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

typedef struct bytes {
    const uint8_t *p;
    size_t n;
} bytes_t;

static unsigned next(bytes_t *b) {
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static int64_t dim(bytes_t *b) {
    unsigned v = next(b);
    if (v == 255) return (int64_t)1 << 40; /* huge */
    if (v == 254) return 0;
    return 1 + v % 6;
}

static const char *const names[] = {"strides", "pads_begin", "pads_end",
        "pads", "dilations", "output_padding", "auto_pad", "groups", "group",
        "data_format", "weights_format", "dst_shape", "output_shape",
        "kernel_shape", "bogus"};
static const char *const words[] = {"NXC", "NCX", "XIO", "OIX", "XOI", "IOX", "None",
        "explicit", "notset", "NOTSET", "same_upper", "SAME_UPPER",
        "Same_Lower", "valid", "VALID", "", "[", "1,,2", "-", " 2 3 "};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes_t b = {data, size};
    cf_case_t c;
    cf_case_init(&c);
    snprintf(c.name, sizeof c.name, "fuzz-resolve");
    c.kind = (dgrad_op_kind_t)(1 + next(&b) % 5); /* the five dialects */
    int nsp = 1 + (int)(next(&b) % 3);
    int grouped = c.kind == dgrad_op_group_convolution_backprop_data;
    c.data.ndims = 2 + nsp;
    for (int d = 0; d < c.data.ndims; d++) c.data.dims[d] = dim(&b);
    c.weights.ndims = 2 + nsp + grouped;
    if (next(&b) == 7) c.weights.ndims--; /* a wrong rank now and then */
    for (int d = 0; d < c.weights.ndims; d++) c.weights.dims[d] = dim(&b);
    unsigned n_attrs = next(&b) % 8;
    for (unsigned a = 0; a < n_attrs; a++) {
        const char *name = names[next(&b) % (sizeof names / sizeof *names)];
        char value[64] = "";
        unsigned how = next(&b);
        if (how % 3 == 0) {
            snprintf(value, sizeof value, "%s", words[next(&b) % (sizeof words / sizeof *words)]);
        } else {
            int64_t v[8];
            int n = (int)(next(&b) % 7);
            for (int i = 0; i < n; i++) v[i] = (int64_t)(next(&b) % 9) - 2;
            cf_format_ints(value, sizeof value, v, n);
        }
        cf_case_add_attr(&c, name, value);
    }
    switch (next(&b) % 3) {
        case 1:
            c.third = cf_third_shape;
            c.shape_dt = next(&b) % 2 ? dgrad_s64 : dgrad_s32;
            c.n_shape = (int)(next(&b) % 6);
            for (int i = 0; i < c.n_shape; i++) c.shape_values[i] = next(&b) % 12;
            break;
        case 2:
            c.third = cf_third_bias;
            c.bias.ndims = 1;
            c.bias.dims[0] = dim(&b);
            break;
        default: break;
    }
    unsigned out = next(&b) % 3;
    if (out == 1) {
        c.output.ndims = 2 + nsp;
        for (int d = 0; d < c.output.ndims; d++) c.output.dims[d] = dim(&b);
    } else if (out == 2) {
        c.output.layout_any = 1;
    }
    fuzz_check_case(&c);
    return 0;
}
