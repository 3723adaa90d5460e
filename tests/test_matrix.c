/*
 * oneDNN against the reference over the matrix of the core issue, through
 * the public API: rank x groups {1, 2, depthwise} x stride {1,2,3} x
 * dilation {1,2}, each in f32/bf16/f16; the remaining knobs (dialect,
 * NCX/NXC/channels-last strides, OIX/XIO, asymmetric pads, output_padding,
 * output shape none/attribute/input/deferred input, batch, channel tails,
 * kernel larger than input, constant weights, bias, layout any) rotate
 * across the cases so that every value of each appears with every rank and
 * data type.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "tester.h"

static const dgrad_op_kind_t kinds[] = {
    dgrad_op_convolution_backward_data,
    dgrad_op_convolution_backprop_data,
    dgrad_op_conv_transpose,
    dgrad_op_group_convolution_backprop_data,
};
static const dgrad_data_type_t dtypes[] = {dgrad_f32, dgrad_bf16, dgrad_f16};

static long min_l(long a, long b) { return a < b ? a : b; }

/* Case j of rank nsp with groups mode gm, stride s, dilation d, type dt. */
static void make_case(tester_t *t, int nsp, int gm, long s, long d, int dti,
        int j) {
    dgrad_op_kind_t kind = kinds[j % 4];
    if (kind == dgrad_op_convolution_backprop_data && gm != 0)
        kind = dgrad_op_group_convolution_backprop_data;
    tester_init(t, kind, nsp);
    t->dt = dtypes[dti];
    t->seed = 1000u + (unsigned)j;
    static const long chans[][2] = {{17, 5}, {4, 17}, {3, 3}};
    const long *cc = chans[(j / 4) % 3];
    if (gm == 0) {
        t->G = 1, t->Cin = cc[0], t->Cout = cc[1];
    } else if (gm == 1) {
        t->G = 2, t->Cin = 2 * cc[0], t->Cout = 2 * cc[1];
    } else {
        t->G = t->Cin = t->Cout = cc[0]; /* depthwise */
    }
    t->N = j % 3 == 0 ? 3 : 1;
    static const long xs[3][3] = {{7, 0, 0}, {5, 4, 0}, {3, 4, 3}};
    for (int i = 0; i < nsp; i++) {
        t->X[i] = xs[nsp - 1][i];
        t->K[i] = (j % 5 == 2 && i == 0) ? t->X[i] + 2 : 2 + (i + j) % 2;
        t->S[i] = i == 0 ? s : 1 + (s + i) % 3;
        t->D[i] = i == nsp - 1 ? d : 1 + (d + i) % 2;
        long reach = (t->K[i] - 1) * t->D[i];
        t->pb[i] = min_l((j + i) % 3, reach);
        t->pe[i] = min_l((j / 2 + i) % 2 + (i == 0), reach);
        t->op[i] = t->S[i] > 1 && (j + i) % 2 ? t->S[i] - 1 : 0;
    }
    t->channels_last = (j / 4) % 3;
    if (kind == dgrad_op_convolution_backward_data) {
        t->weights_xio = (j / 2) % 2;
        static const tester_shape_mode_t m[] = {tester_shape_attr,
            tester_shape_input, tester_shape_input_deferred};
        t->shape_mode = m[(j / 4) % 3];
    } else if (kind == dgrad_op_conv_transpose) {
        t->shape_mode = (j / 4) % 2 ? tester_shape_attr : tester_shape_none;
        t->bias = (j / 8) % 2;
    } else {
        static const tester_shape_mode_t m[] = {tester_shape_none,
            tester_shape_input, tester_shape_input_deferred};
        t->shape_mode = m[(j / 4) % 3];
    }
    t->constant_weights = j % 4 == 1;
    t->executions = t->constant_weights ? 2 : 1;
    t->output_any = j % 5 == 0 && t->shape_mode != tester_shape_input_deferred;
}

static void run_rank(int nsp) {
    static const long strides[] = {1, 2, 3}, dils[] = {1, 2};
    int j = nsp * 7, runs = 0, failures = 0;
    for (int gm = 0; gm < 3; gm++)
        for (int si = 0; si < 3; si++)
            for (int di = 0; di < 2; di++)
                for (int dti = 0; dti < 3; dti++, j++) {
                    tester_t t;
                    make_case(&t, nsp, gm, strides[si], dils[di], dti, j);
                    char why[512], desc[512];
                    runs++;
                    if (!tester_run(&t, why, sizeof why)) {
                        failures++;
                        cr_log_error("%s: %s",
                                tester_describe(&t, desc, sizeof desc), why);
                    }
                }
    cr_expect_eq(failures, 0, "%d of %d %dD cases failed", failures, runs,
            nsp);
}

Test(matrix, rank_1d) { run_rank(1); }
Test(matrix, rank_2d) { run_rank(2); }
Test(matrix, rank_3d) { run_rank(3); }
