/*
 * oneDNN against the reference over the whole op matrix, through
 * the public API: rank x groups {1, 2, depthwise} x stride {1,2,3} x
 * dilation {1,2}, each in f32/bf16/f16; the remaining knobs (dialect,
 * NCX/NXC/channels-last strides, OIX/XIO (IOX/XOI), asymmetric pads, output_padding,
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
    dgrad_op_onednn_conv_transpose,
};
#define N_KINDS (int)(sizeof kinds / sizeof kinds[0])
static const dgrad_data_type_t dtypes[] = {dgrad_f32, dgrad_bf16, dgrad_f16};

static long min_l(long a, long b) { return a < b ? a : b; }

/* Value of a knob for case j: scrambled per knob (salt) so that knobs do
 * not move in lockstep; expect_coverage checks every value is reached. */
static int knob(int j, unsigned salt, int n) {
    return (int)((((unsigned)j + salt * 7919u) * 2654435761u >> 16) % (unsigned)n);
}

/* Case j of rank nsp with groups mode gm, stride s, dilation d, type dt. */
static void make_case(tester_t *t, int nsp, int gm, long s, long d, int dti,
        int j) {
    dgrad_op_kind_t kind = kinds[j % N_KINDS];
    if (kind == dgrad_op_convolution_backprop_data && gm != 0)
        kind = dgrad_op_group_convolution_backprop_data;
    tester_init(t, kind, nsp);
    t->dt = dtypes[dti];
    t->seed = 1000u + (unsigned)j;
    static const long chans[][2] = {{17, 5}, {4, 17}, {3, 3}};
    const long *cc = chans[knob(j, 1, 3)];
    if (gm == 0) {
        t->G = 1, t->Cin = cc[0], t->Cout = cc[1];
    } else if (gm == 1) {
        t->G = 2, t->Cin = 2 * cc[0], t->Cout = 2 * cc[1];
    } else {
        t->G = t->Cin = t->Cout = cc[0]; /* depthwise */
    }
    t->N = knob(j, 2, 3) == 0 ? 3 : 1;
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
    t->channels_last = knob(j, 3, 3);
    if (kind == dgrad_op_convolution_backward_data) {
        t->weights_xio = knob(j, 4, 2);
        static const tester_shape_mode_t m[] = {tester_shape_attr,
            tester_shape_input, tester_shape_input_deferred};
        t->shape_mode = m[knob(j, 5, 3)];
    } else if (kind == dgrad_op_conv_transpose) {
        t->shape_mode = knob(j, 5, 2) ? tester_shape_attr : tester_shape_none;
        t->bias = knob(j, 6, 2);
    } else if (kind == dgrad_op_onednn_conv_transpose) {
        t->weights_xio = knob(j, 4, 2); /* XOI or IOX */
        t->bias = knob(j, 6, 2);
    } else {
        static const tester_shape_mode_t m[] = {tester_shape_none,
            tester_shape_input, tester_shape_input_deferred};
        t->shape_mode = m[knob(j, 5, 3)];
    }
    t->constant_weights = knob(j, 7, 4) == 1;
    t->executions = t->constant_weights ? 2 : 1;
    t->output_any = knob(j, 8, 5) == 0 && t->shape_mode != tester_shape_input_deferred;
}

/* What the cases of one rank cover, so the rotation above cannot silently
 * stop reaching a knob value. */
typedef struct coverage {
    int kind[6], shape[4], layout[3], xio, bias, constant, any, batch,
        big_kernel, out_pad, asym_pads, tail;
} coverage_t;

static void count(coverage_t *cv, const tester_t *t) {
    cv->kind[t->kind]++;
    cv->shape[t->shape_mode]++;
    cv->layout[t->channels_last]++;
    cv->xio += t->weights_xio;
    cv->bias += t->bias;
    cv->constant += t->constant_weights;
    cv->any += t->output_any;
    cv->batch += t->N > 1;
    cv->tail += t->Cin % 16 != 0 && t->Cin > 16;
    for (int i = 0; i < t->nsp; i++) {
        cv->big_kernel += t->K[i] > t->X[i];
        cv->out_pad += t->op[i] > 0;
        cv->asym_pads += t->pb[i] != t->pe[i];
    }
}

static void expect_coverage(const coverage_t *cv, int nsp) {
    for (int k = 1; k <= 5; k++)
        cr_expect_gt(cv->kind[k], 0, "%dD: no case of op kind %d", nsp, k);
    for (int m = 0; m < 4; m++)
        cr_expect_gt(cv->shape[m], 0, "%dD: no case of shape mode %d", nsp, m);
    for (int l = 0; l < 3; l++)
        cr_expect_gt(cv->layout[l], 0, "%dD: no case of layout %d", nsp, l);
    cr_expect(cv->xio && cv->bias && cv->constant && cv->any && cv->batch
                    && cv->big_kernel && cv->out_pad && cv->asym_pads
                    && cv->tail,
            "%dD: a knob is never exercised (xio %d bias %d const %d any %d "
            "batch %d big kernel %d output_padding %d asymmetric pads %d "
            "channel tail %d)", nsp, cv->xio, cv->bias, cv->constant, cv->any,
            cv->batch, cv->big_kernel, cv->out_pad, cv->asym_pads, cv->tail);
}

static void run_rank(int nsp) {
    static const long strides[] = {1, 2, 3}, dils[] = {1, 2};
    int j = nsp * 7, runs = 0, failures = 0;
    coverage_t cv = {0};
    for (int gm = 0; gm < 3; gm++)
        for (int si = 0; si < 3; si++)
            for (int di = 0; di < 2; di++)
                for (int dti = 0; dti < 3; dti++, j++) {
                    tester_t t;
                    make_case(&t, nsp, gm, strides[si], dils[di], dti, j);
                    count(&cv, &t);
                    char why[512], desc[512];
                    runs++;
                    if (!tester_run(&t, why, sizeof why)) {
                        failures++;
                        cr_log_error("%s: %s",
                                tester_describe(&t, desc, sizeof desc), why);
                    }
                }
    expect_coverage(&cv, nsp);
    cr_expect_eq(failures, 0, "%d of %d %dD cases failed", failures, runs,
            nsp);
}

Test(matrix, rank_1d) { run_rank(1); }
Test(matrix, rank_2d) { run_rank(2); }
Test(matrix, rank_3d) { run_rank(3); }

/* Cases the conformance sweep found wrong once (bias handling). */
Test(matrix, bias_regressions) {
    char why[512], desc[512];
    tester_t t;
    /* One output channel: oneDNN's in-place blocked add ignored the bias. */
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        tester_init(&t, dgrad_op_conv_transpose, 2);
        t.Cin = 1;
        t.Cout = 1;
        t.bias = 1;
        t.dt = dts[i];
        cr_expect(tester_run(&t, why, sizeof why), "%s: %s",
                tester_describe(&t, desc, sizeof desc), why);
    }
    /* bf16 with a bias: the result must be rounded once, after the add. */
    tester_init(&t, dgrad_op_conv_transpose, 1);
    t.Cin = 5;
    t.Cout = 17;
    t.X[0] = 1;
    t.K[0] = 1;
    t.S[0] = 3;
    t.D[0] = 2;
    t.op[0] = 2;
    t.bias = 1;
    t.dt = dgrad_bf16;
    for (unsigned seed = 1; seed <= 8; seed++) {
        t.seed = seed;
        cr_expect(tester_run(&t, why, sizeof why), "%s: %s",
                tester_describe(&t, desc, sizeof desc), why);
    }
}
