/*
 * Eight threads on one compiled op, racing first executions. The weights
 * are constant (converted once per output shape, by whichever thread gets
 * there first) and the output shape comes from a dst_shape / output_shape
 * input unknown at compile time (each distinct value is planned at its
 * first execution). Each round the threads start together at a barrier:
 * every pair of threads asks for a shape no thread has asked for before,
 * then each runs shapes planned in earlier rounds. Every result is
 * checked against the reference, and the bytes around each thread's output
 * (guards before and after, and whatever the buffer holds beyond the
 * resolved output) must be untouched.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad.h"
#include "dtype.h"
#include "tester.h"

enum {
    THREADS = 8,
    ROUNDS = 4,
    PAIRS = THREADS / 2,     /* new shapes per round, two threads each */
    SHAPES = ROUNDS * PAIRS, /* distinct shapes, all kept by the op */
    PLANNED_PER_ROUND = 3,   /* shapes of earlier rounds run per round */
    GUARD = 64,              /* bytes checked on each side of an output */
};

static const unsigned char guard_byte = 0xa5;

/* Output sizes of shape @p k: on each axis the natural size plus 0..3
 * units of output padding (stride 4), valid for every dialect. */
static void shape_sizes(const tester_case_t *c, int k, int64_t *Y) {
    Y[0] = c->Y[0] + k % 4;
    Y[1] = c->Y[1] + k / 4 % 4;
}

typedef struct stress {
    const tester_case_t *c;
    pthread_barrier_t barrier;
    size_t capacity; /* bytes of the largest output */
} stress_t;

typedef struct worker {
    stress_t *s;
    int id;
    unsigned char *buf; /* GUARD + capacity + GUARD bytes */
    int executions;
    char failure[512];  /* the first one; empty when all passed */
} worker_t;

/* Executes shape @p k into the worker's buffer and checks everything;
 * returns 0 after recording a failure. */
static int run_shape(worker_t *w, int k) {
    const tester_case_t *c = w->s->c;
    size_t capacity = w->s->capacity;
    int64_t Y[3], values[8];
    shape_sizes(c, k, Y);
    tester_case_shape_values(c, Y, values);
    memset(w->buf, guard_byte, capacity + 2 * GUARD);
    void *out = w->buf + GUARD;
    const void *inputs[] = {c->in, c->wei, values};
    dgrad_logical_tensor_t lt;
    char why[256];
    dgrad_status_t st = dgrad_compiled_op_execute_dynamic(c->compiled,
            c->n_inputs, inputs, out, capacity, &lt);
    w->executions++;
    if (st != dgrad_success) {
        snprintf(w->failure, sizeof w->failure, "thread %d shape %d: %s: %s",
                w->id, k, dgrad_status_name(st), dgrad_last_error_message());
        return 0;
    }
    if (!tester_case_check(c, Y, &lt, out, why, sizeof why)) {
        snprintf(w->failure, sizeof w->failure, "thread %d shape %d (%lldx%lld): %s",
                w->id, k, (long long)Y[0], (long long)Y[1], why);
        return 0;
    }
    size_t used = (size_t)tester_case_output_count(c, Y)
            * dgrad_data_type_size(c->t.dt);
    for (size_t i = 0; i < capacity + 2 * GUARD; i++) {
        if (i == GUARD) i += used;
        if (w->buf[i] != guard_byte) {
            snprintf(w->failure, sizeof w->failure,
                    "thread %d shape %d: byte %lld from the output's start "
                    "(which spans %zu bytes) was written", w->id, k,
                    (long long)i - GUARD, used);
            return 0;
        }
    }
    return 1;
}

static void *worker_main(void *opaque) {
    worker_t *w = opaque;
    int ok = 1;
    for (int round = 0; round < ROUNDS; round++) {
        /* Every thread waits here, even after a failure, so the others
         * are never left at the barrier. */
        pthread_barrier_wait(&w->s->barrier);
        if (!ok) continue;
        int fresh = round * PAIRS + w->id / 2;
        ok = run_shape(w, fresh);
        for (int j = 0; ok && round > 0 && j < PLANNED_PER_ROUND; j++)
            ok = run_shape(w, (w->id + 3 * round + j) % (round * PAIRS));
    }
    return NULL;
}

/* f16 weights are always converted (oneDNN 2.6 has no f16 convolution on
 * CPU, DESIGN.md section 2), so after a shape's first execution its
 * converted copy is what runs: an execution handed other weights still
 * matches the reference computed with the first ones. Checked for every
 * shape, each converted by whichever thread won its race. */
static void check_weights_converted_once(const tester_case_t *c,
        size_t capacity) {
    const dgrad_logical_tensor_t *wlt = &c->inputs[1];
    int64_t n = 1;
    for (int i = 0; i < wlt->ndims; i++) n *= wlt->dims[i];
    void *other = malloc((size_t)n * dgrad_data_type_size(c->t.dt));
    void *out = malloc(capacity);
    cr_assert(other && out);
    for (int64_t i = 0; i < n; i++)
        dgrad_store(other, c->t.dt, i, dgrad_load(c->wei, c->t.dt, i) + 1.0);
    for (int k = 0; k < SHAPES; k++) {
        int64_t Y[3], values[8];
        shape_sizes(c, k, Y);
        tester_case_shape_values(c, Y, values);
        const void *inputs[] = {c->in, other, values};
        dgrad_logical_tensor_t lt;
        char why[256];
        cr_assert_eq(dgrad_compiled_op_execute_dynamic(c->compiled,
                c->n_inputs, inputs, out, capacity, &lt), dgrad_success,
                "%s", dgrad_last_error_message());
        cr_expect(tester_case_check(c, Y, &lt, out, why, sizeof why),
                "shape %d: the weights were converted again: %s", k, why);
    }
    free(other);
    free(out);
}

static void stress(const tester_t *t) {
    char desc[512], why[256];
    tester_describe(t, desc, sizeof desc);
    tester_case_t c;
    cr_assert(tester_case_create(&c, t, why, sizeof why), "%s: %s", desc, why);
    cr_assert_str_eq(dgrad_compiled_op_impl_name(c.compiled), "deferred",
            "%s", desc);
    stress_t s = {.c = &c};
    int64_t largest[3];
    shape_sizes(&c, SHAPES - 1, largest);
    s.capacity = (size_t)tester_case_output_count(&c, largest)
            * dgrad_data_type_size(t->dt);
    cr_assert_eq(pthread_barrier_init(&s.barrier, NULL, THREADS), 0);
    worker_t w[THREADS];
    pthread_t tid[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){.s = &s, .id = i,
                .buf = malloc(s.capacity + 2 * GUARD)};
        cr_assert(w[i].buf);
        cr_assert_eq(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
    }
    int executions = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        cr_expect(!w[i].failure[0], "%s: %s", desc, w[i].failure);
        executions += w[i].executions;
        free(w[i].buf);
    }
    pthread_barrier_destroy(&s.barrier);
    cr_expect_eq(executions, THREADS * (ROUNDS
            + (ROUNDS - 1) * PLANNED_PER_ROUND), "%s", desc);
    if (t->dt == dgrad_f16) check_weights_converted_once(&c, s.capacity);
    tester_case_destroy(&c);
}

/* 2D, N 2, Cin 8, Cout 6, X 4x3, K 3x2, stride 4, dilation 1x2, pads 1:
 * output sizes 13..16 x 9..12. */
static void stress_config(tester_t *t, dgrad_op_kind_t kind,
        dgrad_data_type_t dt) {
    tester_init(t, kind, 2);
    t->dt = dt;
    t->N = 2;
    t->Cin = 8;
    t->Cout = 6;
    t->X[0] = 4;
    t->X[1] = 3;
    t->K[0] = 3;
    t->K[1] = 2;
    t->S[0] = t->S[1] = 4;
    t->D[1] = 2;
    t->pb[0] = t->pb[1] = t->pe[0] = t->pe[1] = 1;
    t->shape_mode = tester_shape_input_deferred;
    t->constant_weights = 1;
    t->seed = 17u + (unsigned)dt;
}

static const dgrad_data_type_t stress_dtypes[] = {dgrad_f32, dgrad_bf16,
        dgrad_f16};

/* Each configuration is compiled and raced REPEATS times: the first time
 * every shape is planned afresh; later compiled ops find the plans in the
 * process-wide cache and race only on their own variants and weight
 * conversions. */
enum { REPEATS = 3 };

Test(stress, onednn_graph_dst_shape_constant_weights_8_threads) {
    for (size_t i = 0; i < 3; i++)
        for (int r = 0; r < REPEATS; r++) {
            tester_t t;
            stress_config(&t, dgrad_op_convolution_backward_data,
                    stress_dtypes[i]);
            t.channels_last = 1; /* NXC */
            t.weights_xio = 1;
            stress(&t);
        }
}

Test(stress, openvino_group_output_shape_constant_weights_8_threads) {
    for (size_t i = 0; i < 3; i++)
        for (int r = 0; r < REPEATS; r++) {
            tester_t t;
            stress_config(&t, dgrad_op_group_convolution_backprop_data,
                    stress_dtypes[i]);
            t.G = 2;
            stress(&t);
        }
}
