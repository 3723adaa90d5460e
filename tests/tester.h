/*
 * API-level tester: a builder over every knob of the op family, run through
 * the public API and checked against the reference (src/reference.c).
 *
 * The tester derives the canonical problem for the reference on its own
 * (layouts -> canonical strides, PB per dialect), not through the dialect
 * layer under test, so a mapping bug in src/problem.c shows up as a
 * mismatch.
 */
#ifndef DGRAD_TESTER_H
#define DGRAD_TESTER_H

#include <stddef.h>

#include "dgrad/dgrad.h"

typedef enum tester_shape_mode {
    tester_shape_none = 0,  /* output shape inferred from pads */
    tester_shape_attr = 1,  /* dst_shape (oneDNN Graph) / output_shape (ONNX) attribute */
    tester_shape_input = 2, /* dst_shape / output_shape input tensor, dims known at compile */
    tester_shape_input_deferred = 3, /* same, output dims unknown at compile */
} tester_shape_mode_t;

typedef struct tester {
    dgrad_op_kind_t kind;
    int nsp;
    long N, G, Cin, Cout; /* channels over all groups */
    long X[3], K[3], S[3], D[3], pb[3], pe[3], op[3];
    int channels_last;    /* NXC (oneDNN Graph) or channels-last strides */
    int weights_xio;      /* oneDNN Graph only */
    dgrad_data_type_t dt;
    tester_shape_mode_t shape_mode;
    int constant_weights;
    int bias;             /* ONNX only */
    int output_any;       /* request layout any for the output */
    int executions;       /* execute this many times (constant weights reuse) */
    unsigned seed;
} tester_t;

/* Defaults: 2D, N=1, G=1, Cin=Cout=3, X=5, K=3, S=1, D=1, no pads, f32. */
void tester_init(tester_t *t, dgrad_op_kind_t kind, int nsp);

/* Compiles, executes and compares with the reference. Returns 1 on pass;
 * on failure returns 0 with a description in @p why. */
int tester_run(const tester_t *t, char *why, size_t why_size);

/* One-line description of a configuration, for messages. */
const char *tester_describe(const tester_t *t, char *buf, size_t size);

#endif
