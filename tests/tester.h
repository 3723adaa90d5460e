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
    tester_shape_none = 0,  /* output shape inferred from pads (the only
                               mode of oneDNN Graph's ConvTranspose) */
    tester_shape_attr = 1,  /* dst_shape (oneDNN Graph) / output_shape (ONNX) attribute */
    tester_shape_input = 2, /* dst_shape / output_shape input tensor, dims known at compile */
    tester_shape_input_deferred = 3, /* same, output dims unknown at compile */
} tester_shape_mode_t;

/* A post-op of the chain (dgrad_op_append_post_op): oneDNN Graph name,
 * up to two attributes; the binary ops and BiasAdd take an operand. */
typedef struct tester_post_op {
    const char *kind;
    const char *attr[2][2]; /* {name, value}, NULL name: none */
    /* Binary ops: the operand's rank (right-aligned against the output's;
     * 0: the output's) and which of the output's axes (bit d, dialect
     * order) it broadcasts over (dim 1). BiasAdd: one value per output
     * channel (its data_format follows the output's). */
    int rank;
    unsigned broadcast;
    dgrad_data_type_t dt; /* the operand's type; undef: the op's */
} tester_post_op_t;

#define TESTER_MAX_POST 4

typedef struct tester {
    dgrad_op_kind_t kind;
    int nsp;
    long N, G, Cin, Cout; /* channels over all groups */
    long X[3], K[3], S[3], D[3], pb[3], pe[3], op[3];
    int channels_last;    /* NXC (oneDNN Graph) or channels-last strides */
    int weights_xio;      /* oneDNN Graph only: XIO / XOI, else OIX / IOX */
    dgrad_data_type_t dt;
    tester_shape_mode_t shape_mode;
    int constant_weights;
    int bias;             /* the ConvTranspose ops only */
    int output_any;       /* request layout any for the output */
    int executions;       /* execute this many times (constant weights reuse) */
    unsigned seed;
    int in_place;         /* pass the output buffer as the operand of the
                             first Add laid out as the output, holding the
                             operand's values (the in-place sum) */
    int n_post;           /* the post-op chain */
    tester_post_op_t post[TESTER_MAX_POST];
} tester_t;

/* Defaults: 2D, N=1, G=1, Cin=Cout=3, X=5, K=3, S=1, D=1, no pads, f32. */
void tester_init(tester_t *t, dgrad_op_kind_t kind, int nsp);

/* ONNX ConvTranspose 1D with a bias whose one output element no term
 * reaches (X 1, K 1, stride 2, pad 1, output_padding 1: Y = 1): the
 * output is the border alone. */
void tester_init_unreached(tester_t *t);

/* Compiles, executes and compares with the reference. Returns 1 on pass;
 * on failure returns 0 with a description in @p why. */
int tester_run(const tester_t *t, char *why, size_t why_size);

/*
 * One configuration compiled once with its input data, for tests that run
 * it themselves (several threads, several output shapes of a shape input
 * unknown at compile time) and check each result against the reference.
 * Every field is read-only after tester_case_create: threads may share it.
 */
typedef struct tester_case {
    tester_t t;
    dgrad_op_t *op;
    dgrad_compiled_op_t *compiled;
    size_t n_inputs;               /* own inputs, then the operands */
    size_t n_own_inputs;
    dgrad_logical_tensor_t inputs[3 + TESTER_MAX_POST];
    dgrad_logical_tensor_t output; /* as compiled: dims may be unknown */
    void *in, *wei, *bias;         /* the data inputs; bias NULL without */
    void *operands[TESTER_MAX_POST]; /* of the binary post-ops, in order */
    int n_operands;
    int64_t Y[3];                  /* the configuration's output sizes */
} tester_case_t;

/* Builds the op and data of @p t and compiles them. Returns 1 on success;
 * on failure returns 0 with a description in @p why and nothing to free. */
int tester_case_create(tester_case_t *c, const tester_t *t, char *why,
        size_t why_size);

void tester_case_destroy(tester_case_t *c);

/* Values of the dst_shape / output_shape input that ask for output spatial
 * sizes @p Y (oneDNN Graph: the full shape in data_format order; OpenVINO:
 * the spatial sizes). Returns their count. */
size_t tester_case_shape_values(const tester_case_t *c, const int64_t *Y,
        int64_t *values);

/* Elements of a dense output of spatial sizes @p Y (any layout dgrad may
 * choose is dense). */
int64_t tester_case_output_count(const tester_case_t *c, const int64_t *Y);

/* Checks an output that dgrad reported as @p out_lt for spatial sizes @p Y:
 * its dims, its density, and every element against the reference computed
 * from the case's own inputs. Returns 1 on pass, else 0 with @p why.
 * Thread-safe. */
int tester_case_check(const tester_case_t *c, const int64_t *Y,
        const dgrad_logical_tensor_t *out_lt, const void *out, char *why,
        size_t why_size);

/* One-line description of a configuration, for messages. */
const char *tester_describe(const tester_t *t, char *buf, size_t size);

#endif
