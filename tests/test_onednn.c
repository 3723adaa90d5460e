/*
 * The oneDNN lowering (src/plan/) against the reference gather, on
 * hand-built canonical problems. Data are small integers so every dtype is
 * exact (f32 accumulation of small integer products is exact and both
 * sides round once); the random-float test uses a tolerance.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "dtype.h"
#include "onednn.h"
#include "plan/direct_blocks_impl.h"
#include "plan/onednn_compat.h"
#include "plan/plan_impl.h"
#include "reference.h"

/* The policy this file's plans are requested with (each test runs in a
 * process of its own, so a knob a test turns stays in that test). The
 * policy is part of the plan-cache key: a test that turns a knob gets
 * fresh plans without touching the cache or the problem. */
static dgrad_plan_policy_t knobs;
static int knobs_ready;

static dgrad_plan_policy_t *policy(void) {
    if (!knobs_ready) {
        knobs = dgrad_plan_policy_default();
        knobs_ready = 1;
    }
    return &knobs;
}

/* Layouts of the activations and of the weights. */
enum { NCX = 0, NXC = 1 };
enum { WEI_CANONICAL = 0, WEI_XIO = 1, WEI_KFIRST = 2 };

typedef struct shape {
    int nsp;
    dgrad_data_type_t dt;
    int64_t N, G, Cin, Cout;
    int64_t X[3], K[3], S[3], D[3], PB[3], Y[3];
    int act_layout, wei_layout, has_bias;
} shape_t;

/* Dense strides of a tensor with dims [N, C, sp...]. */
static void act_strides(int64_t *st, int64_t N, int64_t C, const int64_t *sp,
        int nsp, int layout) {
    (void)N;
    int64_t acc = 1;
    if (layout == NXC) {
        st[1] = acc;
        acc *= C;
    }
    for (int i = nsp - 1; i >= 0; i--) {
        st[2 + i] = acc;
        acc *= sp[i];
    }
    if (layout == NCX) {
        st[1] = acc;
        acc *= C;
    }
    st[0] = acc;
}

/* Weights W[g][ci][co][k...] stored as canonical [G][Cin/G][Cout/G][K...],
 * as oneDNN Graph XIO [K..., Cout/G, Cin] (Cin = g*Cin/G + ci), or as
 * [K...][G][Cout/G][Cin/G]. */
static void wei_strides(int64_t *st, const shape_t *s) {
    int64_t cig = s->Cin / s->G, cog = s->Cout / s->G, acc = 1;
    if (s->wei_layout == WEI_CANONICAL) {
        for (int i = s->nsp - 1; i >= 0; i--) {
            st[3 + i] = acc;
            acc *= s->K[i];
        }
        st[2] = acc;
        st[1] = acc * cog;
        st[0] = acc * cog * cig;
        return;
    }
    if (s->wei_layout == WEI_XIO) {
        st[1] = 1;
        st[0] = cig;
        st[2] = s->Cin;
        acc = s->Cin * cog;
    } else {
        st[1] = 1;
        st[2] = cig;
        st[0] = cig * cog;
        acc = cig * cog * s->G;
    }
    for (int i = s->nsp - 1; i >= 0; i--) {
        st[3 + i] = acc;
        acc *= s->K[i];
    }
}

static dgrad_problem_t make_problem(const shape_t *s) {
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    p.nsp = s->nsp;
    p.dt = s->dt;
    p.N = s->N;
    p.G = s->G;
    p.Cin = s->Cin;
    p.Cout = s->Cout;
    for (int i = 0; i < s->nsp; i++) {
        p.X[i] = s->X[i];
        p.K[i] = s->K[i];
        p.S[i] = s->S[i] ? s->S[i] : 1;
        p.D[i] = s->D[i] ? s->D[i] : 1;
        p.PB[i] = s->PB[i];
        p.Y[i] = s->Y[i];
    }
    act_strides(p.in_strides, p.N, p.Cin, p.X, p.nsp, s->act_layout);
    act_strides(p.out_strides, p.N, p.Cout, p.Y, p.nsp, s->act_layout);
    wei_strides(p.wei_strides, s);
    p.has_bias = s->has_bias;
    p.bias_stride = s->has_bias ? 1 : 0;
    return p;
}

static size_t elsize(dgrad_data_type_t dt) {
    return dt == dgrad_f32 ? 4 : 2;
}

/* Elements spanned by a tensor of @p n dims with these strides. */
static int64_t span(const int64_t *dims, const int64_t *strides, int n) {
    int64_t last = 0;
    for (int i = 0; i < n; i++) {
        if (dims[i] == 0) return 0;
        last += (dims[i] - 1) * strides[i];
    }
    return last + 1;
}

typedef struct buffers {
    int64_t n_in, n_wei, n_out, n_bias;
    void *in, *wei, *bias, *out, *ref;
    double *abs_sum;
} buffers_t;

static void fill_random(void *buf, dgrad_data_type_t dt, int64_t n,
        int integers, unsigned *seed) {
    for (int64_t i = 0; i < n; i++) {
        double v = integers ? (double)(rand_r(seed) % 7 - 3)
                            : (double)rand_r(seed) / RAND_MAX * 2.0 - 1.0;
        dgrad_store(buf, dt, i, v);
    }
}

static void *garbage(int64_t n, dgrad_data_type_t dt, int byte) {
    size_t bytes = (size_t)(n > 0 ? n : 1) * elsize(dt);
    void *b = malloc(bytes);
    cr_assert(b);
    memset(b, byte, bytes);
    return b;
}

static void buffers_init(buffers_t *b, const dgrad_problem_t *p,
        int integers, unsigned seed) {
    int64_t din[5] = {p->N, p->Cin}, dout[5] = {p->N, p->Cout};
    int64_t dwei[6] = {p->G, p->Cin / p->G, p->Cout / p->G};
    for (int i = 0; i < p->nsp; i++) {
        din[2 + i] = p->X[i];
        dout[2 + i] = p->Y[i];
        dwei[3 + i] = p->K[i];
    }
    b->n_in = span(din, p->in_strides, 2 + p->nsp);
    b->n_wei = span(dwei, p->wei_strides, 3 + p->nsp);
    b->n_out = span(dout, p->out_strides, 2 + p->nsp);
    b->n_bias = p->has_bias ? (p->Cout - 1) * p->bias_stride + 1 : 0;
    b->in = garbage(b->n_in, p->dt, 0);
    b->wei = garbage(b->n_wei, p->dt, 0);
    b->bias = garbage(b->n_bias, p->dt, 0);
    /* Different garbage on both sides: every element must be written. */
    b->out = garbage(b->n_out, p->dt, 0x7b);
    b->ref = garbage(b->n_out, p->dt, 0x3c);
    int64_t n_elems = p->N * p->Cout;
    for (int i = 0; i < p->nsp; i++) n_elems *= p->Y[i];
    b->abs_sum = calloc((size_t)(n_elems > 0 ? n_elems : 1), sizeof(double));
    cr_assert(b->abs_sum);
    fill_random(b->in, p->dt, b->n_in, integers, &seed);
    fill_random(b->wei, p->dt, b->n_wei, integers, &seed);
    fill_random(b->bias, p->dt, b->n_bias, integers, &seed);
}

static void buffers_free(buffers_t *b) {
    free(b->in);
    free(b->wei);
    free(b->bias);
    free(b->out);
    free(b->ref);
    free(b->abs_sum);
}

/* Counts the output elements (canonical order) that differ from the
 * reference: exactly, or beyond 4 * u * sum|terms| when @p tolerant;
 * logs the first few when @p log. Safe in any thread when @p log is 0. */
static int64_t mismatches(const dgrad_problem_t *p, const buffers_t *b,
        int tolerant, int log) {
    double u = dgrad_data_type_unit_roundoff(p->dt);
    int64_t idx = 0, bad = 0;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t c = 0; c < p->Cout; c++) {
            int64_t y[3] = {0, 0, 0};
            for (;;) {
                int64_t off = n * p->out_strides[0] + c * p->out_strides[1];
                for (int i = 0; i < p->nsp; i++)
                    off += y[i] * p->out_strides[2 + i];
                double got = dgrad_load(b->out, p->dt, off);
                double want = dgrad_load(b->ref, p->dt, off);
                double tol = tolerant ? 4 * u * b->abs_sum[idx] : 0.0;
                if (!(fabs(got - want) <= tol) && bad++ < 5 && log)
                    cr_log_error("n=%lld c=%lld y=%lld,%lld,%lld: got %g "
                            "want %g", (long long)n, (long long)c,
                            (long long)y[0], (long long)y[1],
                            (long long)y[2], got, want);
                idx++;
                int i = p->nsp - 1;
                while (i >= 0 && ++y[i] == p->Y[i]) y[i--] = 0;
                if (i < 0) break;
            }
        }
    return bad;
}

/* Compares every output element with the reference (see mismatches). */
static void compare(const dgrad_problem_t *p, const buffers_t *b,
        int tolerant) {
    int64_t bad = mismatches(p, b, tolerant, 1);
    cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* @p plan (of @p p) on the inputs of @p b against the reference:
 * executed on weights as the user gives them, or (@p prepared) prepared
 * first; compared exactly where @p exact; asserts. */
static void check_plan_on(const dgrad_problem_t *p, const dgrad_plan_t *plan,
        buffers_t *b, int exact, int prepared) {
    dgrad_reference_compute(p, b->in, b->wei, p->has_bias ? b->bias : NULL,
            b->ref, b->abs_sum);
    const void *wei = b->wei;
    void *prep = NULL;
    if (prepared && dgrad_plan_prepared_weights_size(plan) > 0) {
        size_t size = dgrad_plan_prepared_weights_size(plan);
        prep = aligned_alloc(64, (size + 63) / 64 * 64);
        cr_assert(prep);
        /* NaN in every type: preparing writes every byte the plan
         * reads, padding and zeros included. */
        memset(prep, 0xff, size);
        cr_assert_eq(dgrad_plan_prepare_weights(plan, b->wei, prep),
                dgrad_success, "%s", dgrad_last_error_message());
        wei = prep;
    }
    cr_assert_eq(dgrad_plan_execute(plan, b->in, wei, prepared,
                         p->has_bias ? b->bias : NULL, b->out),
            dgrad_success, "%s", dgrad_last_error_message());
    compare(p, b, !exact);
    cr_log_info("impl %s", dgrad_plan_impl_name(plan));
    free(prep);
}

/* @p plan (of @p p) against the reference on random inputs (small
 * integers, compared exactly, where @p integers); as check_plan_on. */
static void check_plan_ex(const dgrad_problem_t *p, const dgrad_plan_t *plan,
        int integers, int prepared) {
    buffers_t b;
    buffers_init(&b, p, integers, 1234u);
    check_plan_on(p, plan, &b, integers, prepared);
    buffers_free(&b);
}

/* Plans, executes and compares one problem; asserts. */
static void check_problem_ex(const dgrad_problem_t *p, int integers,
        int prepared) {
    dgrad_plan_t *plan = NULL;
    /* Prepared weights are what a constant-weights plan is chosen for. */
    cr_assert_eq(dgrad_plan_get(p, prepared ? dgrad_weights_constant
                                         : dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    check_plan_ex(p, plan, integers, prepared);
    dgrad_plan_release(plan);
}

/* @p p planned as @p impl (variable weights), then checked against the
 * reference with variable and prepared weights. */
static void check_problem_as(const dgrad_problem_t *p, const char *impl) {
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_eq(dgrad_plan_impl_name(plan), impl);
    dgrad_plan_release(plan);
    check_problem_ex(p, 1, 0);
    check_problem_ex(p, 1, 1);
}

static void check_shape(const shape_t *s) {
    dgrad_problem_t p = make_problem(s);
    check_problem_ex(&p, 1, 0);
}

/* Every layout combination of one shape. */
static void check_all_layouts(shape_t s) {
    for (int a = NCX; a <= NXC; a++)
        for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++) {
            s.act_layout = a;
            s.wei_layout = w;
            check_shape(&s);
        }
}

static int64_t natural(const shape_t *s, int i) {
    return s->S[i] * (s->X[i] - 1) + (s->K[i] - 1) * s->D[i] + 1;
}

/* Sets Y to the natural size minus PB and @p crop_end on every axis. */
static void set_natural_y(shape_t *s, int64_t crop_end) {
    for (int i = 0; i < s->nsp; i++)
        s->Y[i] = natural(s, i) - s->PB[i] - crop_end;
}

Test(onednn, conv1d_strides_dilations) {
    for (int64_t st = 1; st <= 3; st++)
        for (int64_t d = 1; d <= 2; d++) {
            shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 1,
                    .Cin = 3, .Cout = 5, .X = {7}, .K = {3}, .S = {st},
                    .D = {d}, .PB = {1}};
            set_natural_y(&s, 1);
            check_all_layouts(s);
        }
}

Test(onednn, conv2d_groups) {
    for (int64_t g = 1; g <= 2; g++) {
        shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = g,
                .Cin = 4, .Cout = 6, .X = {5, 4}, .K = {3, 2},
                .S = {2, 1}, .D = {1, 2}, .PB = {1, 0}};
        set_natural_y(&s, 0);
        check_all_layouts(s);
    }
}

Test(onednn, conv3d) {
    shape_t s = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 4,
            .Cout = 2, .X = {3, 4, 3}, .K = {2, 3, 2}, .S = {2, 1, 3},
            .D = {1, 2, 1}, .PB = {0, 1, 1}};
    set_natural_y(&s, 1);
    check_all_layouts(s);
}

Test(onednn, depthwise) {
    for (int nsp = 1; nsp <= 3; nsp++) {
        shape_t s = {.nsp = nsp, .dt = dgrad_f32, .N = 2, .G = 17,
                .Cin = 17, .Cout = 17, .X = {5, 4, 3}, .K = {3, 2, 2},
                .S = {2, 2, 1}, .D = {1, 1, 2}, .PB = {1, 0, 0}};
        set_natural_y(&s, 0);
        check_all_layouts(s);
    }
}

Test(onednn, channels_17_batch_3) {
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 3, .G = 1, .Cin = 17,
            .Cout = 17, .X = {4, 5}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}};
    set_natural_y(&s, 1);
    check_all_layouts(s);
}

Test(onednn, negative_pb) {
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 3,
            .Cout = 4, .X = {4, 3}, .K = {3, 2}, .S = {2, 3}, .D = {1, 2},
            .PB = {-3, -1}};
    set_natural_y(&s, 0);
    check_all_layouts(s);
}

Test(onednn, y_larger_than_natural) {
    /* More than a stride of extra tail, plus a negative PB head. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 3, .X = {3, 4}, .K = {2, 3}, .S = {2, 1}, .D = {1, 1},
            .PB = {0, -2}};
    set_natural_y(&s, -5);
    check_all_layouts(s);
}

Test(onednn, y_smaller_than_natural) {
    /* Large crop at the end: most of the natural output is dropped. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 2, .Cin = 4,
            .Cout = 4, .X = {6, 5}, .K = {3, 3}, .S = {2, 2}, .D = {1, 2},
            .PB = {2, 1}};
    set_natural_y(&s, 7);
    check_all_layouts(s);
}

Test(onednn, kernel_larger_than_input) {
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 3,
            .Cout = 2, .X = {2, 3}, .K = {5, 4}, .S = {3, 1}, .D = {2, 1},
            .PB = {2, 3}};
    set_natural_y(&s, 2);
    check_all_layouts(s);
}

/* The output receives no term: no primitive, and every element becomes
 * zero (or the bias) over a buffer pre-filled with garbage. */
static void check_empty(shape_t s) {
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_success);
    cr_assert_str_eq(dgrad_plan_impl_name(plan), "none");
    cr_assert_eq(dgrad_plan_prepared_weights_size(plan), 0);
    buffers_t b;
    buffers_init(&b, &p, 1, 99u);
    cr_assert_eq(dgrad_plan_execute(plan, b.in, b.wei, 0,
                         p.has_bias ? b.bias : NULL, b.out),
            dgrad_success);
    for (int64_t i = 0; i < b.n_out; i++) {
        int64_t c = (i / p.out_strides[1]) % p.Cout;
        double want = p.has_bias
                ? dgrad_load(b.bias, p.dt, c * p.bias_stride) : 0.0;
        cr_assert_eq(dgrad_load(b.out, p.dt, i), want, "element %lld",
                (long long)i);
    }
    buffers_free(&b);
    dgrad_plan_release(plan);
    check_problem_ex(&p, 1, 0);
}

Test(onednn, empty_region_writes_zeros) {
    /* Crop beyond the natural size. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 3,
            .Cout = 5, .X = {3, 3}, .K = {2, 2}, .S = {1, 1}, .D = {1, 1},
            .PB = {0, 9}, .Y = {4, 3}};
    check_empty(s);
    /* Negative PB larger than Y: only leading positions, none reached. */
    shape_t t = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 2,
            .Cout = 3, .X = {3}, .K = {2}, .S = {2}, .D = {1}, .PB = {-6},
            .Y = {5}, .act_layout = NXC};
    check_empty(t);
    /* With a bias the output is the bias everywhere. */
    shape_t u = s;
    u.has_bias = 1;
    u.dt = dgrad_f16;
    check_empty(u);
}

Test(onednn, strides_with_gaps) {
    /* Every stride doubled: the tensors have holes, which must stay as
     * they were in the output. */
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1, .Cin = 16,
                .Cout = 16, .X = {4, 5}, .K = {3, 3}, .S = {2, 1},
                .D = {1, 1}, .PB = {-1, 1}, .act_layout = NXC,
                .wei_layout = WEI_XIO, .has_bias = 1};
        set_natural_y(&s, 1);
        dgrad_problem_t p = make_problem(&s);
        for (int d = 0; d < 5; d++) {
            p.in_strides[d] *= 2;
            p.out_strides[d] *= 2;
            p.wei_strides[d] *= 2;
        }
        p.wei_strides[5] *= 2;
        p.bias_stride = 2;
        buffers_t b;
        buffers_init(&b, &p, 1, 5u);
        dgrad_reference_compute(&p, b.in, b.wei, b.bias, b.ref, NULL);
        dgrad_plan_t *plan = NULL;
        cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_success);
        cr_assert_eq(dgrad_plan_execute(plan, b.in, b.wei, 0, b.bias, b.out),
                dgrad_success);
        compare(&p, &b, 0);
        /* Odd elements are holes: still the garbage byte pattern. */
        const unsigned char *bytes = b.out;
        size_t es = elsize(p.dt);
        for (int64_t e = 1; e < b.n_out; e += 2)
            for (size_t k = 0; k < es; k++)
                cr_assert_eq(bytes[e * (int64_t)es + k], 0x7b,
                        "hole %lld written", (long long)e);
        dgrad_plan_release(plan);
        buffers_free(&b);
    }
}

Test(onednn, bf16_and_f16) {
    dgrad_data_type_t dts[] = {dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 2; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1, .Cin = 17,
                .Cout = 5, .X = {4, 5}, .K = {3, 3}, .S = {2, 1},
                .D = {1, 2}, .PB = {1, -1}};
        set_natural_y(&s, 2);
        check_all_layouts(s);
        shape_t d = {.nsp = 1, .dt = dts[i], .N = 3, .G = 8, .Cin = 8,
                .Cout = 8, .X = {6}, .K = {4}, .S = {2}, .D = {1},
                .PB = {1}};
        set_natural_y(&d, 1);
        check_all_layouts(d);
    }
}

/* f16 runs in f16 where oneDNN has f16 convolution kernels (3.x on a
 * CPU with AVX512-FP16: the plan reads and writes f16 through oneDNN
 * alone) and through f32 copies elsewhere (2.6, which has none on CPU,
 * and CPUs without AVX512-FP16), with candidates ranked, not timed, so
 * that oneDNN's kernels are the only choice; either way the result
 * matches the reference. With timing on, the faster of the two is kept
 * (choice.c, challenge_with_staged). */
Test(onednn, f16_runs_in_f16_where_onednn_has_kernels) {
    dgrad_plan_policy_t pol = *policy();
    pol.layout_search = 0;
    pol.phase_fold = 0;
    pol.own_loop = 0;
    shape_t s = {.nsp = 2, .dt = dgrad_f16, .N = 2, .G = 1, .Cin = 32,
            .Cout = 16, .X = {7, 9}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .act_layout = NXC,
            .wei_layout = WEI_XIO};
    set_natural_y(&s, 1);
#if defined(__x86_64__) && defined(__GNUC__)
    int fp16 = __builtin_cpu_supports("avx512fp16");
#else
    int fp16 = 0;
#endif
    int in_type = DNNL_VERSION_MAJOR >= 3 && fp16;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, &pol, &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_expect_eq(!plan->staged, in_type,
            "oneDNN %d, AVX512-FP16 %s: %s, impl %s", DNNL_VERSION_MAJOR,
            fp16 ? "yes" : "no", plan->staged ? "f32 copies" : "in f16",
            dgrad_plan_impl_name(plan));
    check_plan_ex(&p, plan, 1, 0);
    dgrad_plan_release(plan);
}

Test(onednn, bias_all_dtypes) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        /* Negative PB and a longer tail: border elements get the bias. */
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 2, .Cin = 4,
                .Cout = 6, .X = {3, 4}, .K = {2, 3}, .S = {2, 1},
                .D = {1, 1}, .PB = {-1, 1}, .has_bias = 1};
        set_natural_y(&s, -3);
        check_all_layouts(s);
    }
}

Test(onednn, random_floats_tolerance) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1, .Cin = 24,
                .Cout = 16, .X = {6, 6}, .K = {3, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .act_layout = NXC,
                .has_bias = 1};
        set_natural_y(&s, 1);
        dgrad_problem_t p = make_problem(&s);
        check_problem_ex(&p, 0, 0);
    }
}

Test(onednn, prepared_weights) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1, .Cin = 32,
                .Cout = 16, .X = {5, 5}, .K = {3, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .wei_layout = WEI_XIO};
        set_natural_y(&s, 1);
        dgrad_problem_t p = make_problem(&s);
        dgrad_plan_t *plan = NULL;
        cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_success);
        /* f16 always converts; others depend on the layout choice. */
        if (dts[i] == dgrad_f16)
            cr_assert_gt(dgrad_plan_prepared_weights_size(plan), 0);
        dgrad_plan_release(plan);
        check_problem_ex(&p, 1, 1);
    }
}

Test(onednn, cache_hits) {
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 8,
            .Cout = 8, .X = {4, 4}, .K = {3, 3}, .S = {1, 1}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NXC};
    set_natural_y(&s, 0);
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *a = NULL, *b = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &a), dgrad_success);
    size_t size = dgrad_plan_cache_size(), hits = dgrad_plan_cache_hits();
    dgrad_problem_t q = make_problem(&s);
    cr_assert_eq(dgrad_plan_get(&q, dgrad_weights_variable, policy(), &b), dgrad_success);
    cr_assert_str_eq(dgrad_plan_impl_name(a), dgrad_plan_impl_name(b));
    cr_assert_eq(a, b);
    cr_assert_eq(dgrad_plan_cache_size(), size);
    cr_assert_eq(dgrad_plan_cache_hits(), hits + 1);
    /* A different problem is a new entry. */
    dgrad_plan_t *c = NULL;
    q.PB[0] = 0;
    q.Y[0] += 1;
    cr_assert_eq(dgrad_plan_get(&q, dgrad_weights_variable, policy(), &c), dgrad_success);
    cr_assert_neq(c, a);
    cr_assert_eq(dgrad_plan_cache_size(), size + 1);
    /* The same problem for constant weights is an entry of its own (its
     * layout choice may differ), found again on the next request. */
    dgrad_plan_t *d = NULL, *e = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_constant, policy(), &d), dgrad_success);
    cr_assert_neq(d, a);
    cr_assert_eq(dgrad_plan_cache_size(), size + 2);
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_constant, policy(), &e), dgrad_success);
    cr_assert_eq(e, d);
    dgrad_plan_release(a);
    dgrad_plan_release(b);
    dgrad_plan_release(c);
    dgrad_plan_release(d);
    dgrad_plan_release(e);
}

/* The policy is part of the key: two policies, two plans for one problem
 * (found again for each), and the padding bytes of a problem take no
 * part. */
Test(onednn, policies_are_part_of_the_cache_key) {
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 8,
            .Cout = 8, .X = {4, 4}, .K = {3, 3}, .S = {1, 1}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NCX};
    set_natural_y(&s, 0);
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_policy_t ranked = *policy();
    ranked.layout_search = 0;
    dgrad_plan_t *a = NULL, *b = NULL, *a2 = NULL, *b2 = NULL;
    size_t size = dgrad_plan_cache_size();
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &a), 0);
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, &ranked, &b), 0);
    cr_assert_neq(a, b);
    cr_assert_eq(dgrad_plan_cache_size(), size + 2);
    cr_assert_str_eq(dgrad_plan_choice(b), "ranking");
    cr_assert_str_neq(dgrad_plan_choice(a), "ranking");
    /* Same problem, other padding bytes: the same entries. */
    dgrad_problem_t q;
    memset(&q, 0xa5, sizeof q);
    q.nsp = p.nsp;
    q.dt = p.dt;
    q.N = p.N; q.G = p.G; q.Cin = p.Cin; q.Cout = p.Cout;
    memcpy(q.X, p.X, sizeof q.X); memcpy(q.K, p.K, sizeof q.K);
    memcpy(q.S, p.S, sizeof q.S); memcpy(q.D, p.D, sizeof q.D);
    memcpy(q.PB, p.PB, sizeof q.PB); memcpy(q.Y, p.Y, sizeof q.Y);
    memcpy(q.in_strides, p.in_strides, sizeof q.in_strides);
    memcpy(q.wei_strides, p.wei_strides, sizeof q.wei_strides);
    memcpy(q.out_strides, p.out_strides, sizeof q.out_strides);
    q.has_bias = p.has_bias;
    q.bias_stride = p.bias_stride;
    q.n_post_ops = p.n_post_ops;
    cr_assert_eq(dgrad_plan_get(&q, dgrad_weights_variable, policy(), &a2), 0);
    cr_assert_eq(dgrad_plan_get(&q, dgrad_weights_variable, &ranked, &b2), 0);
    cr_assert_eq(a2, a);
    cr_assert_eq(b2, b);
    cr_assert_eq(dgrad_plan_cache_size(), size + 2);
    dgrad_plan_release(a);
    dgrad_plan_release(b);
    dgrad_plan_release(a2);
    dgrad_plan_release(b2);
}

Test(onednn, cache_eviction_keeps_held_plans) {
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 2, .X = {3}, .K = {2}, .S = {1}, .D = {1}};
    dgrad_problem_t p = make_problem(&s);
    p.Y[0] = 1;
    dgrad_plan_t *held = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &held), dgrad_success);
    /* Flood the cache with 300 cheap (empty-region) problems. */
    for (int i = 0; i < 300; i++) {
        dgrad_problem_t q = p;
        q.PB[0] = 100 + i;
        dgrad_plan_t *t = NULL;
        cr_assert_eq(dgrad_plan_get(&q, dgrad_weights_variable, policy(), &t), dgrad_success);
        dgrad_plan_release(t);
    }
    cr_assert_leq(dgrad_plan_cache_size(), 256);
    check_problem_ex(&p, 1, 0); /* re-planned after eviction */
    buffers_t b;
    buffers_init(&b, &p, 1, 7u);
    dgrad_reference_compute(&p, b.in, b.wei, NULL, b.ref, NULL);
    cr_assert_eq(dgrad_plan_execute(held, b.in, b.wei, 0, NULL, b.out),
            dgrad_success);
    compare(&p, &b, 0);
    buffers_free(&b);
    dgrad_plan_release(held);
}

typedef struct thread_arg {
    const dgrad_plan_t *plan;
    const dgrad_problem_t *p;
    buffers_t b;      /* the thread's own data, reference and output */
    int prepared;     /* prepare the weights first, then run on them */
    int64_t bad;      /* mismatches with the reference, summed */
    dgrad_status_t status;
} thread_arg_t;

static void *thread_main(void *opaque) {
    thread_arg_t *t = opaque;
    size_t bytes = (size_t)t->b.n_out * elsize(t->p->dt);
    const void *wei = t->b.wei;
    void *prep = NULL;
    if (t->prepared) {
        size_t size = dgrad_plan_prepared_weights_size(t->plan);
        prep = aligned_alloc(64, (size + 63) / 64 * 64);
        t->status = prep ? dgrad_plan_prepare_weights(t->plan, t->b.wei, prep)
                         : dgrad_out_of_memory;
        wei = prep;
    }
    for (int it = 0; it < 20 && t->status == dgrad_success && !t->bad;
            it++) {
        memset(t->b.out, it, bytes); /* each result is written afresh */
        t->status = dgrad_plan_execute(t->plan, t->b.in, wei, t->prepared,
                t->b.bias, t->b.out);
        if (t->status == dgrad_success) t->bad += mismatches(t->p, &t->b, 0, 0);
    }
    free(prep);
    return NULL;
}

/* Threads share one plan, each on its own data, every result checked
 * against the reference; with @p prepared, each converts its weights
 * (while the others run) and executes on the converted copy, as constant
 * weights are used. */
static void check_threads(shape_t s, int prepared) {
    enum { THREADS = 4 };
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, prepared ? dgrad_weights_constant
                                         : dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    if (prepared)
        cr_assert_gt(dgrad_plan_prepared_weights_size(plan), 0,
                "%s reads the user's weights: nothing to prepare",
                dgrad_plan_impl_name(plan));
    thread_arg_t args[THREADS];
    pthread_t tid[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (thread_arg_t){.plan = plan, .p = &p, .prepared = prepared};
        buffers_init(&args[i].b, &p, 1, 100u + (unsigned)i);
        dgrad_reference_compute(&p, args[i].b.in, args[i].b.wei,
                p.has_bias ? args[i].b.bias : NULL, args[i].b.ref, NULL);
    }
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&tid[i], NULL, thread_main, &args[i]),
                0);
    for (int i = 0; i < THREADS; i++) pthread_join(tid[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        cr_expect_eq(args[i].status, dgrad_success, "thread %d: %s", i,
                dgrad_status_name(args[i].status));
        cr_expect_eq(args[i].bad, 0, "thread %d (%s, %s): %lld elements "
                "differ from the reference", i, dgrad_plan_impl_name(plan),
                prepared ? "prepared weights" : "user weights",
                (long long)args[i].bad);
        buffers_free(&args[i].b);
    }
    dgrad_plan_release(plan);
}

Test(onednn, threads_share_a_plan) {
    /* NCX f32 (reorders and scratch buffers) and f16 (conversions), with
     * the user's weights and with constant (prepared) ones. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 32,
            .Cout = 16, .X = {6, 6}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {-1, 1}, .has_bias = 1};
    set_natural_y(&s, 0);
    check_threads(s, 0);
    s.dt = dgrad_f16; /* always converted: prepared weights exist */
    check_threads(s, 0);
    check_threads(s, 1);
    /* A microsecond problem (planned without timings, possibly for one
     * thread) whose reorders run in chunks. */
    policy()->chunk_bytes = 256;
    shape_t t = {.nsp = 2, .dt = dgrad_f32, .N = 3, .G = 2, .Cin = 16,
            .Cout = 6, .X = {5, 4}, .K = {3, 2}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 0}, .act_layout = NCX};
    set_natural_y(&t, 0);
    check_threads(t, 0);
    t.dt = dgrad_f16;
    check_threads(t, 1);
}

Test(onednn, onednn_failure_is_reported) {
    /* A dilation so large that oneDNN rejects the descriptor: a valid
     * problem oneDNN cannot build is unimplemented (a compiler may fall
     * back), the message names oneDNN's status and the problem, and
     * nothing leaks. */
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 3, .X = {4}, .K = {3}, .S = {1}, .D = {(int64_t)1 << 30},
            .Y = {5}};
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    dgrad_status_t st = dgrad_plan_get(&p, dgrad_weights_variable, policy(),
            &plan);
    if (st == dgrad_success && DNNL_VERSION_MAJOR >= 3) {
        /* oneDNN 3 builds it: then it must compute it. */
        dgrad_plan_release(plan);
        check_shape(&s);
        cr_skip_test("oneDNN 3 accepts this dilation (result checked)");
    }
    cr_assert_eq(st, dgrad_unimplemented);
    cr_assert_null(plan);
    cr_assert(strstr(dgrad_last_error_message(), "invalid_arguments"), "%s",
            dgrad_last_error_message());
    cr_assert(strstr(dgrad_last_error_message(), "Cin=2 Cout=3"));
    cr_assert_eq(dgrad_plan_cache_size(), 0);
}

Test(onednn, one_by_one_window_that_crashed_onednn_3_7) {
    /* U-Net's first up-convolution (K = S = 2) at 2x2: its folded
     * forward convolution has a 1x1 window, and creating that on oneDNN
     * 3.7.1 died with SIGFPE inside oneDNN (src/plan/onednn_defects.c;
     * also at 28x28, U-Net's size). Planned and computed on every
     * version. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 1024,
            .Cout = 512, .X = {2, 2}, .K = {2, 2}, .S = {2, 2},
            .D = {1, 1}, .act_layout = NXC};
    set_natural_y(&s, 0);
    check_shape(&s);
}

Test(onednn, null_arguments) {
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(NULL, dgrad_weights_variable, policy(), &plan), dgrad_invalid_arguments);
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_invalid_arguments);
    cr_assert_null(plan);
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 3, .X = {4}, .K = {3}, .S = {1}, .D = {1}, .Y = {6}};
    p = make_problem(&s);
    p.in_strides[2] = -1;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_invalid_arguments);
    p = make_problem(&s);
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan), dgrad_success);
    cr_assert_eq(dgrad_plan_execute(plan, NULL, NULL, 0, NULL, NULL),
            dgrad_invalid_arguments);
    dgrad_plan_release(plan);
    dgrad_plan_release(NULL);
}

Test(onednn, bias_on_chosen_layouts) {
    /* Blocked (f32) and channels-last (bf16) results with a cropped,
     * hence non-dense, user sub-box: bias added before the output
     * reorder. */
    shape_t s = {.nsp = 2, .dt = dgrad_bf16, .N = 2, .G = 1, .Cin = 32,
            .Cout = 32, .X = {5, 6}, .K = {3, 3}, .S = {1, 1}, .D = {1, 1},
            .PB = {-1, 1}, .act_layout = NXC, .has_bias = 1};
    set_natural_y(&s, -2);
    check_shape(&s);
    s.dt = dgrad_f32;
    check_shape(&s);
    s.nsp = 3;
    s.X[2] = 3;
    s.K[2] = 2;
    s.S[2] = 2;
    s.D[2] = 1;
    set_natural_y(&s, 1);
    check_shape(&s);
}

/* Reorders beyond oneDNN's 2^31-byte jit limit run in chunks; the limit
 * is lowered here so that small problems take that path. The plans come
 * from the ranking (no timing), on oneDNN's jit kernels, which need
 * reorders to channels-last or blocked layouts: a timed choice may keep
 * a plan on the user's layouts, with nothing to chunk (it did, one run
 * in three, with another test running beside it). */
Test(onednn, chunked_reorders) {
    static const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int64_t chunked = 0;
    policy()->layout_search = 0;
    for (int nsp = 1; nsp <= 3; nsp++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
            for (int64_t g = 2; g <= 16; g += 14) {
                shape_t s = {.nsp = nsp, .dt = dts[t], .N = 4, .G = g,
                        .Cin = 16, .Cout = g == 16 ? 16 : 6, .X = {5, 4, 3},
                        .K = {3, 2, 2}, .S = {2, 2, 1}, .D = {1, 1, 2},
                        .PB = {1, 0, 0}, .act_layout = NCX,
                        .wei_layout = WEI_CANONICAL};
                set_natural_y(&s, -1); /* output padding: a tail too */
                dgrad_problem_t p = make_problem(&s);
                /* Half of one image of the data input: every reorder of an
                 * activation is cut along the batch and more. */
                int64_t image = s.Cin * dgrad_data_type_size(s.dt);
                for (int i = 0; i < nsp; i++) image *= s.X[i];
                policy()->chunk_bytes = image / 2;
                check_problem_ex(&p, 1, 0);
                dgrad_plan_t *plan = NULL;
                cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
                        dgrad_success);
                int64_t n = dgrad_plan_reorder_chunks(plan);
                cr_log_info("nsp %d dt %d g %lld: %s, %lld reorder chunks",
                        nsp, (int)s.dt, (long long)g,
                        dgrad_plan_impl_name(plan), (long long)n);
                chunked += n > 3;
                dgrad_plan_release(plan);
            }
    cr_assert_gt(chunked, 0, "no plan ran a chunked reorder");
}

/* Problems of a few microseconds may be planned to run on one thread
 * (dgrad sets the calling thread's OpenMP count to 1 around creation and
 * execution): the caller's own setting must come back unchanged. */
Test(onednn, caller_thread_count_is_restored) {
#ifdef _OPENMP
    omp_set_num_threads(3);
    policy()->threading = 1; /* one thread whenever it builds */
    /* oneDNN's plans: dgrad's own loops (the blocks loop applies to this
     * k2 s2 channels-last shape) run work this small on the calling
     * thread without changing its count, and may win the timing */
    policy()->own_loop = 0;
    for (int prepared = 0; prepared <= 1; prepared++) {
        shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 16,
                .Cout = 16, .X = {8, 8}, .K = {2, 2}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 0}, .act_layout = NXC};
        set_natural_y(&s, 0);
        dgrad_problem_t p = make_problem(&s);
        check_problem_ex(&p, 1, prepared);
        cr_assert_eq(omp_get_max_threads(), 3);
        dgrad_plan_t *plan = NULL;
        cr_assert_eq(dgrad_plan_get(&p, prepared ? dgrad_weights_constant
                                             : dgrad_weights_variable, policy(), &plan),
                dgrad_success);
        cr_assert(dgrad_plan_single_thread(plan), "%s plan: %s",
                dgrad_plan_choice(plan), dgrad_plan_impl_name(plan));
        dgrad_plan_release(plan);
    }
#else
    cr_skip_test("built without OpenMP");
#endif
}

/* Problems beyond the search limits are timed on a reduced copy (batch 1,
 * spatial sizes halved) and its winner is built for the whole problem;
 * problems under the lower limit are not timed. The limits are lowered
 * here so that small problems take each path; results must not change. */
Test(onednn, layout_choice_paths) {
    static const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    static const double limits[3][5] = {
            {16384, 1e5, 4096, 2e4, 100}, /* reduced copies */
            {1e12, 1e12, 1e12, 1e12, 100}, /* every problem timed */
            {1e12, 1e12, 1e12, 1e12, 1e12}, /* nothing timed */
    };
    static const char *const expected[3] = {"reduced copy", "timed",
            "untimed"};
    for (int l = 0; l < 3; l++) {
        int taken = 0;
        dgrad_plan_policy_t *k = policy();
        k->max_bytes = limits[l][0];
        k->max_macs = limits[l][1];
        k->reduced_bytes = limits[l][2];
        k->reduced_macs = limits[l][3];
        k->min_macs = limits[l][4];
        for (int nsp = 1; nsp <= 3; nsp++)
            for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
                for (int variant = 0; variant < 3; variant++) {
                    /* grouped with output padding; negative begin pad with
                     * a bias; depthwise channels-last */
                    shape_t s = {.nsp = nsp, .dt = dts[t], .N = 2,
                            .G = variant == 0 ? 2 : variant == 1 ? 1 : 8,
                            .Cin = 8, .Cout = variant == 0 ? 6 : 8,
                            .X = {11, nsp == 3 ? 5 : 9, 4}, .K = {3, 2, 3},
                            .S = {2, 2, 1}, .D = {1, 1, 2},
                            .PB = {variant == 1 ? -1 : 1, 0, 1},
                            .act_layout = variant == 2 ? NXC : NCX,
                            .wei_layout = variant, .has_bias = variant == 1};
                    set_natural_y(&s, variant == 0 ? -1 : 0);
                    dgrad_problem_t p = make_problem(&s);
                    check_problem_ex(&p, 1, variant == 2);
                    dgrad_plan_t *plan = NULL;
                    cr_assert_eq(dgrad_plan_get(&p, variant == 2
                                                 ? dgrad_weights_constant
                                                 : dgrad_weights_variable,
                                         policy(), &plan),
                            dgrad_success);
                    taken += !strcmp(dgrad_plan_choice(plan), expected[l]);
                    dgrad_plan_release(plan);
                }
        cr_assert_gt(taken, 0, "no plan chosen by %s", expected[l]);
    }
}

/* A plan's own buffers respect a workspace budget when a leaner candidate
 * exists (problems too large to time as they are: here, with lowered
 * limits, small ones). The same problem is planned twice: without a
 * budget, and under a 1-byte budget (another policy, so another plan),
 * where the leanest candidate must win. Both ways of choosing are
 * checked: ranking, whose first choice is the same on every run (so some
 * problem must get leaner), and timing on a reduced copy, whose choice
 * depends on timings (so only "never fatter" can be asserted). Either
 * way, nothing fitting 1 byte, the plan taken is no fatter than dgrad's
 * own loop (which it must weigh whatever timing or ranking picked). */
Test(onednn, workspace_budget) {
    dgrad_plan_policy_t *k = policy();
    k->max_bytes = 4096;
    k->max_macs = 1e5;
    k->reduced_bytes = 2048;
    k->reduced_macs = 5e4;
    k->min_macs = 100;
    for (int search = 0; search <= 1; search++) {
        int leaner = 0;
        k->layout_search = search;
        for (int nsp = 1; nsp <= 3; nsp++)
            for (int layout = NCX; layout <= NXC; layout++) {
                shape_t s = {.nsp = nsp, .dt = dgrad_f32, .N = 2, .G = 1,
                        .Cin = 4, .Cout = 4,
                        .X = {nsp == 1 ? 100 : 24, nsp == 3 ? 4 : 10, 4},
                        .K = {3, 3, 2}, .S = {2, 2, 2}, .D = {1, 1, 1},
                        .PB = {1, 1, 0}, .act_layout = layout};
                set_natural_y(&s, 0);
                dgrad_problem_t p = make_problem(&s);
                dgrad_plan_t *free_plan = NULL, *lean = NULL;
                k->workspace_budget = 0;
                cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable,
                                     policy(), &free_plan), dgrad_success);
                k->workspace_budget = 1;
                check_problem_ex(&p, 1, 0);
                cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable,
                                     policy(), &lean), dgrad_success);
                k->workspace_budget = 0;
                k->own_loop = 2;
                dgrad_plan_t *own = NULL;
                cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable,
                                     policy(), &own), dgrad_success);
                k->own_loop = 1;
                size_t a = dgrad_plan_workspace_size(free_plan),
                       b = dgrad_plan_workspace_size(lean),
                       o = dgrad_plan_workspace_size(own);
                cr_assert(!strncmp(dgrad_plan_impl_name(own), "dgrad:", 6),
                        "search %d nsp %d layout %d: no own loop (%s)",
                        search, nsp, layout, dgrad_plan_impl_name(own));
                cr_assert_leq(b, o, "search %d nsp %d layout %d: %s takes "
                        "%zu bytes under a 1-byte budget, %s %zu", search,
                        nsp, layout, dgrad_plan_impl_name(lean), b,
                        dgrad_plan_impl_name(own), o);
                dgrad_plan_release(own);
                cr_assert_leq(b, a, "search %d nsp %d layout %d: %s takes %zu "
                        "bytes, %s (%s) without a budget %zu", search, nsp,
                        layout, dgrad_plan_impl_name(lean), b,
                        dgrad_plan_impl_name(free_plan),
                        dgrad_plan_choice(free_plan), a);
                leaner += b < a;
                dgrad_plan_release(free_plan);
                dgrad_plan_release(lean);
            }
        if (search == 0)
            cr_assert_gt(leaner, 0, "the budget changed no ranked choice");
    }
}

/* The folded forward convolution (src/plan/phase_fold.c) where the policy
 * makes it the only candidate: its plan must be the fold's, and its
 * output the reference's, in every layout and with prepared weights. */
static void check_folded(shape_t s) {
    policy()->phase_fold = 2;
    policy()->own_loop = 0;
    for (int a = NCX; a <= NXC; a++)
        for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++) {
            s.act_layout = a;
            s.wei_layout = w;
            dgrad_problem_t p = make_problem(&s);
            dgrad_plan_t *plan = NULL;
            cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(),
                                 &plan),
                    dgrad_success, "%s", dgrad_last_error_message());
            cr_assert(!strncmp(dgrad_plan_impl_name(plan), "fold:", 5),
                    "not folded: %s", dgrad_plan_impl_name(plan));
            dgrad_plan_release(plan);
            check_problem_ex(&p, 1, 0);
            check_problem_ex(&p, 1, 1);
        }
}

/* Every 1D geometry of the fold and the own loop tests: strides with one
 * and several phases, kernels shorter and longer than the stride,
 * dilations sharing a factor with it (phases without taps), pads that
 * start before the input and past it, output padding and a cropped end;
 * each checked against the reference with the policy as the caller set
 * it. */
static void check_1d_geometries(int64_t cout, int64_t x) {
    int64_t strides[] = {1, 2, 3, 8}, kernels[] = {1, 3, 5, 16},
            dilations[] = {1, 2, 3}, pads[] = {-2, 0, 1, 7},
            ends[] = {-1, 0, 2};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++)
                for (int d = 0; d < 4; d++)
                    for (int e = 0; e < 3; e++) {
                        shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 2,
                                .G = 2, .Cin = 4, .Cout = cout, .X = {x},
                                .K = {kernels[b]}, .S = {strides[a]},
                                .D = {dilations[c]}, .PB = {pads[d]}};
                        int64_t end = ends[e] < 0 && strides[a] == 1
                                ? 0 : ends[e];
                        set_natural_y(&s, end);
                        if (s.Y[0] < 1) continue;
                        dgrad_problem_t p = make_problem(&s);
                        check_problem_ex(&p, 1, 0);
                    }
}

Test(onednn, phase_fold_1d_every_phase_geometry) {
    policy()->phase_fold = 2;
    policy()->own_loop = 0;
    check_1d_geometries(6, 5);
    /* The last problem again in every layout, asserting the fold ran. */
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 2, .Cin = 4,
            .Cout = 6, .X = {5}, .K = {3}, .S = {3}, .D = {2}, .PB = {1}};
    set_natural_y(&s, -2);
    check_folded(s);
}

Test(onednn, phase_fold_2d_3d_groups_types_bias) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 2, .Cin = 4,
                .Cout = 6, .X = {4, 5}, .K = {3, 4}, .S = {2, 3},
                .D = {1, 2}, .PB = {1, -1}, .has_bias = i != 1};
        set_natural_y(&s, -1);
        check_folded(s);
    }
    /* The specification's grouped example at a smaller size, and 3D. */
    shape_t g = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 20,
            .Cout = 8, .X = {9, 9}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}};
    set_natural_y(&g, 1);
    check_folded(g);
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 5, .X = {3, 4, 3}, .K = {3, 2, 3}, .S = {2, 2, 1},
            .D = {1, 1, 2}, .PB = {1, 0, 2}, .has_bias = 1};
    set_natural_y(&v, 0);
    check_folded(v);
}

Test(onednn, phase_fold_only_where_it_applies) {
    /* 2^7 phases: more than the fold takes, so a backward-data plan. */
    shape_t s = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 2, .X = {2, 2, 2}, .K = {3, 3, 3}, .S = {4, 4, 8},
            .D = {1, 1, 1}, .PB = {0, 0, 0}};
    set_natural_y(&s, 0);
    policy()->phase_fold = 2;
    policy()->own_loop = 0;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert(strncmp(dgrad_plan_impl_name(plan), "fold:", 5), "%s",
            dgrad_plan_impl_name(plan));
    dgrad_plan_release(plan);
    check_problem_ex(&p, 1, 0);
}

/* One of dgrad's own loops where the policy takes it wherever it
 * applies: on activations in @p layout, its plan must be @p impl, its
 * output the reference's, with user and prepared weights in every weight
 * layout. */
static void check_own_loop_as(shape_t s, int layout, const char *impl) {
    policy()->own_loop = 2;
    policy()->phase_fold = 0;
    s.act_layout = layout;
    for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++) {
        s.wei_layout = w;
        dgrad_problem_t p = make_problem(&s);
        check_problem_as(&p, impl);
    }
}

/* The rows loop (src/plan/direct.c): f32 compute, NCX activations. */
static void check_own_loop(shape_t s) {
    check_own_loop_as(s, NCX, "dgrad:direct");
}

Test(onednn, own_loop_1d_every_phase_geometry) {
    /* 5 output channels per group make one full block of 4 and one of
     * 1; S = 2 takes the interleaving path. */
    policy()->own_loop = 2;
    check_1d_geometries(10, 37);
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 2, .Cin = 4,
            .Cout = 10, .X = {70}, .K = {3}, .S = {2}, .D = {1}, .PB = {1}};
    set_natural_y(&s, -1);
    check_own_loop(s);
}

Test(onednn, own_loop_2d_3d_types_bias) {
    /* f16 (staged through f32) and bf16 with a bias (staged: rounded
     * once) take the loop; the specification's grouped 2D example at a
     * smaller size; 3D with every outer-axis geometry. */
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 2, .Cin = 4,
                .Cout = 6, .X = {4, 35}, .K = {3, 4}, .S = {2, 3},
                .D = {1, 2}, .PB = {1, -1}, .has_bias = 1};
        set_natural_y(&s, -1);
        check_own_loop(s);
    }
    shape_t g = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 20,
            .Cout = 8, .X = {9, 40}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}};
    set_natural_y(&g, 1);
    check_own_loop(g);
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 5, .X = {3, 4, 21}, .K = {3, 2, 3}, .S = {2, 3, 2},
            .D = {1, 2, 1}, .PB = {1, 0, 2}, .has_bias = 1};
    set_natural_y(&v, 0);
    check_own_loop(v);
}

/* Rows long enough for the loop's widest steps (AVX2: up to 8 vectors
 * of 8 per channel for blocks of 1, 4 of 2 for blocks of 2, ...: rows
 * of at least 4 such steps per phase, direct.c), for every block width
 * (1-4 output channels per group, and 5: a block of 4 and one of 1), on
 * each path: stride 1 and 3 phase by phase, stride 2 both phases at once,
 * rows whose lengths are no multiple of a step, terms cut at both ends
 * (padding 1, and 0 on a right edge that stops short). */
Test(onednn, own_loop_long_rows) {
    for (int64_t cg = 1; cg <= 5; cg++)
        for (int64_t st = 1; st <= 3; st++) {
            shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 2,
                    .Cin = 6, .Cout = 2 * cg, .X = {2, 301}, .K = {2, 3},
                    .S = {2, st}, .D = {1, 1}, .PB = {0, 1},
                    .has_bias = cg % 2};
            set_natural_y(&s, st - 1);
            check_own_loop(s);
        }
    /* Phases of whole steps whose terms end in different places: with an
     * output padding of 1 the odd phase's last position has one tap, the
     * even phase's every tap (each phase's common span, direct.c) */
    shape_t e = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 2, .X = {3, 128}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}};
    set_natural_y(&e, -1);
    check_own_loop(e);
}

/* Blocks of 5 to 12 output channels (where the AVX2 kernels take both
 * phases of stride 2 at once, direct.c block_width; 13 and 25 make two and
 * three equal blocks), rows of one step, of several and with a partial
 * last step, 1D and 2D, with and without a bias. Elsewhere (AVX-512, or
 * DGRAD_MAX_CPU_ISA=baseline) the same problems run as blocks of 4. */
Test(onednn, own_loop_wide_blocks) {
    int64_t cgs[] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 25};
    for (int i = 0; i < 10; i++) {
        shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
                .Cout = cgs[i], .X = {3, 5 + 9 * i}, .K = {3, 3},
                .S = {2, 2}, .D = {1, 1}, .PB = {1, 1}, .has_bias = i % 2};
        set_natural_y(&s, i % 2);
        check_own_loop(s);
        shape_t r = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 2,
                .Cin = 4, .Cout = 2 * cgs[i], .X = {40}, .K = {4},
                .S = {2}, .D = {1}, .PB = {2}, .has_bias = 1 - i % 2};
        set_natural_y(&r, 0);
        check_own_loop(r);
    }
}

/* The rows loop on staged input rows (src/plan/direct_stage.c): f32
 * copies where more of an output row's rows share L1 sets (@p per_set,
 * on average over the output rows; planes of 4 KiB put them there) than
 * the cache has ways, where rows are 16-bit (widened once in the
 * copies), in 3D and up (rows kept for the output depths that read them
 * again) and where padding lets @p short_rows take the long kernels.
 * Where the plan stages, expected: zeros around the copies (@p padded),
 * the last outer axis's window over the whole axis (@p whole_axis) or
 * else tiles of it (@p tiled). Checked where the AVX2 kernels run (AVX2
 * without AVX-512, or capped by DGRAD_MAX_CPU_ISA=avx2: ctest
 * own_loop_units_avx2) and the rule decides; the results everywhere. */
static void check_own_loop_staged_as(shape_t s, double per_set,
        int short_rows, int padded, int whole_axis, int tiled) {
    policy()->own_loop = 2;
    policy()->phase_fold = 0;
    s.act_layout = NCX;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_eq(dgrad_plan_impl_name(plan), "dgrad:direct");
    const char *mode = getenv("DGRAD_STAGE_ROWS");
    int staged = s.dt != dgrad_f32 || per_set > cpu_l1d_ways() || short_rows
            || s.nsp >= 3;
    const direct_stage_t *st = &plan->direct_stage;
    if (cpu_has_avx2_fma() && !cpu_has_avx512f() && !mode) {
        cr_assert_eq(st->slots > 0, staged,
                "rows staged: %lld slots, expected %s (%.1f rows a set, "
                "%d ways)", (long long)st->slots,
                staged ? "some" : "none", per_set, cpu_l1d_ways());
        cr_assert(!staged || st->padded == padded,
                "padded copies: %d, expected %d (halos %lld, %lld)",
                st->padded, padded, (long long)st->halo[0],
                (long long)st->halo[1]);
        int l = s.nsp - 1;
        cr_assert(!staged || l < 2
                        || (st->window[l - 1] >= s.X[l - 1]) == whole_axis,
                "window of the last outer axis %lld for %lld positions",
                (long long)st->window[l - 1], (long long)s.X[l - 1]);
        cr_assert(!staged || l != 1 || st->window[0] >= 16
                        || st->window[0] >= s.X[0],
                "2D window %lld for %lld rows: wraps every few rows",
                (long long)st->window[0], (long long)s.X[0]);
        cr_assert_eq(st->tile > 0, tiled,
                "tiles of %lld output rows (window %lld)",
                (long long)st->tile, (long long)st->window[l - 1]);
    }
    /* One plan on one input, then another: no copy of the first input
     * survives into the second execution. */
    buffers_t b[2];
    for (int i = 0; i < 2; i++) {
        buffers_init(&b[i], &p, 1, 77u + (unsigned)i);
        dgrad_reference_compute(&p, b[i].in, b[i].wei,
                p.has_bias ? b[i].bias : NULL, b[i].ref, b[i].abs_sum);
        cr_assert_eq(dgrad_plan_execute(plan, b[i].in, b[i].wei, 0,
                             p.has_bias ? b[i].bias : NULL, b[i].out),
                dgrad_success, "%s", dgrad_last_error_message());
    }
    compare(&p, &b[1], 0);
    for (int i = 0; i < 2; i++) buffers_free(&b[i]);
    dgrad_plan_release(plan);
    check_problem_ex(&p, 1, 0);
    check_problem_ex(&p, 1, 1);
}

static void check_own_loop_staged(shape_t s, double per_set) {
    check_own_loop_staged_as(s, per_set, 0, 1, 0, 0);
}

Test(onednn, own_loop_staged_rows) {
    /* 24 input channels of 16 x 64 f32 (4 KiB planes): both phases of
     * stride 2, 2 images, a bias; 13 output channels are two blocks
     * reading the same copies. */
    shape_t a = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 24,
            .Cout = 13, .X = {16, 64}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&a, 1);
    check_own_loop_staged(a, 24);
    /* Phase by phase (strides 1 and 3 on the last axis), dilation and
     * negative padding on the outer one, two groups. */
    shape_t b = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 48,
            .Cout = 6, .X = {16, 64}, .K = {3, 4}, .S = {1, 3},
            .D = {2, 1}, .PB = {-1, 2}};
    set_natural_y(&b, 0);
    check_own_loop_staged(b, 24);
    /* bf16 and f16 rows widened into the copies (planes of 16 x 128). */
    dgrad_data_type_t dts[] = {dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 2; i++) {
        shape_t h = {.nsp = 2, .dt = dts[i], .N = 1, .G = 1, .Cin = 20,
                .Cout = 3, .X = {16, 128}, .K = {3, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&h, -1);
        check_own_loop_staged(h, 20);
    }
    /* 3D: 16 channels of 3 x 8 x 128 (12 KiB planes, 4 KiB depth
     * slices; 16 or 32 rows a set): slots over depth and the whole
     * height. */
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 16,
            .Cout = 2, .X = {3, 8, 128}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&v, 1);
    check_own_loop_staged_as(v, 24, 0, 1, 1, 0);
    /* Rows of 2 x 512: every input row stays in its slot to the end
     * (the next execution must not find them there). */
    shape_t all = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 24,
            .Cout = 2, .X = {2, 512}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}};
    set_natural_y(&all, 1);
    check_own_loop_staged(all, 24);
    /* 2D heights beyond the window of 16 rows: the slots wrap (term
     * lists moved one by one there); f32, and bf16 in 2 groups of 5 -> 2
     * channels (the grouped example's). */
    shape_t tall = a;
    tall.N = 1;
    tall.X[0] = 48; /* planes of 12 KiB: 24 rows a set */
    set_natural_y(&tall, 0);
    check_own_loop_staged(tall, 24);
    shape_t tall16 = {.nsp = 2, .dt = dgrad_bf16, .N = 1, .G = 2,
            .Cin = 10, .Cout = 4, .X = {37, 48}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&tall16, 1);
    check_own_loop_staged(tall16, 5);
    /* Dilation 2 at stride 1 on the height axis: along a run of output
     * rows the highest input row reached can step back (of 2 rows: row
     * 1 for output row 0, row 0 for output row 1), and of 9 rows the
     * rows reached skip every other one; each is staged all the same. */
    for (int64_t h = 2; h <= 9; h += 7) {
        shape_t dil = {.nsp = 2, .dt = dgrad_bf16, .N = 1, .G = 2,
                .Cin = 8, .Cout = 4, .X = {h, 40}, .K = {4, 3},
                .S = {1, 2}, .D = {2, 1}, .PB = {3, 1}, .has_bias = 1};
        set_natural_y(&dil, 0);
        check_own_loop_staged(dil, 4);
    }
    /* 5 rows to a set (fewer than the ways): f32 read in place, f16
     * copied to be widened once. */
    shape_t few = a;
    few.Cin = 5;
    check_own_loop_staged(few, 5);
    few.dt = dgrad_f16;
    check_own_loop_staged(few, 5);
}

/* Short rows (phases too short for the long kernels in place: 2
 * channels, fewer than 128 positions) are copied with zeros around them,
 * so that every step of the long kernels is whole; in 3D the window of
 * the height axis covers it where that fits, so that each row is copied
 * once. Large pads that would need wider zeros keep the terms' ranges. */
Test(onednn, own_loop_padded_rows) {
    /* the 3D example in small: 2 groups of 5 -> 2 channels, rows of 40 */
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 10,
            .Cout = 4, .X = {4, 6, 40}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&v, 1);
    check_own_loop_staged_as(v, 5, 1, 1, 1, 0);
    /* 600 rows of height: no budget of the copies (at most 1 MiB)
     * covers them; tiles of the height axis, slots wrapping within the
     * ring */
    shape_t wrap = v;
    wrap.X[0] = 3;
    wrap.X[1] = 600;
    set_natural_y(&wrap, 0);
    check_own_loop_staged_as(wrap, 5, 1, 1, 0, 1);
    /* 3D rows long enough for the long kernels in place, few rows a
     * set: copied, kept for the next depths, the whole height (5 rows)
     * and tiles of 600 */
    shape_t deep = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 2, .X = {4, 5, 130}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&deep, 0);
    check_own_loop_staged_as(deep, 3, 0, 1, 1, 0);
    deep.X[0] = 3;
    deep.X[1] = 600;
    set_natural_y(&deep, 1);
    check_own_loop_staged_as(deep, 3, 0, 1, 0, 1);
    /* 2D, a phase of 33 (one partial step), output padding */
    shape_t flat = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 3,
            .Cout = 2, .X = {5, 33}, .K = {3, 4}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 2}};
    set_natural_y(&flat, -1);
    check_own_loop_staged_as(flat, 3, 1, 1, 0, 0);
    /* f16 rows (always copied) under a pad of -300: zeros of 150 before
     * each row would be needed; not padded */
    shape_t far = {.nsp = 2, .dt = dgrad_f16, .N = 1, .G = 2, .Cin = 10,
            .Cout = 4, .X = {6, 40}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, -300}, .has_bias = 1};
    set_natural_y(&far, 1);
    check_own_loop_staged_as(far, 5, 0, 0, 0, 0);
}

/* A reduced copy (@p copy_x: its height and row length) of @p full
 * times dgrad's own loop copying its input rows exactly where the
 * problem's loop does (@p problem_copies), though the rule alone
 * decides the other way on the copy (build_direct_as_problem); with
 * no problem given, the rule's choice. A budget of 256 KiB, whatever
 * this CPU's L2. */
static void check_copy_timed_as_problem(shape_t full_shape,
        const int64_t copy_x[2], int problem_copies) {
    cr_assert_eq(setenv("DGRAD_STAGE_BYTES", "262144", 1), 0);
    set_natural_y(&full_shape, 1);
    shape_t r = full_shape;
    r.X[0] = copy_x[0];
    r.X[1] = copy_x[1];
    set_natural_y(&r, 1);
    dgrad_problem_t full = make_problem(&full_shape), copy = make_problem(&r);
    dgrad_plan_policy_t pol = *policy();
    pol.stage_rows = 0; /* the rule, whatever DGRAD_STAGE_ROWS says */
    int avx2 = 1;
    dgrad_plan_t *alone = build_direct(&copy, &pol, 0, avx2);
    if (!alone) alone = build_direct(&copy, &pol, 0, avx2 = 0);
    if (!alone || !cpu_has_avx2_fma()) {
        if (alone) plan_destroy(alone);
        cr_skip_test("no AVX2 kernels on this CPU: nothing is copied");
    }
    dgrad_plan_t *problems = build_direct(&full, &pol, 0, avx2),
                 *as = build_direct_as_problem(&copy, &full, &pol, 0, avx2),
                 *own_rule = build_direct_as_problem(&copy, NULL, &pol, 0,
                         avx2);
    cr_assert(problems && as && own_rule);
    cr_assert_eq(problems->direct_stage.slots > 0, problem_copies,
            "the problem's loop copies: %lld slots",
            (long long)problems->direct_stage.slots);
    cr_assert_eq(alone->direct_stage.slots > 0, !problem_copies,
            "the copy's rule alone decides the other way: %lld slots",
            (long long)alone->direct_stage.slots);
    cr_assert_eq(as->direct_stage.slots > 0, problem_copies,
            "timed as the problem: %lld slots of copies on the copy",
            (long long)as->direct_stage.slots);
    cr_assert_eq(own_rule->direct_stage.slots, alone->direct_stage.slots);
    plan_destroy(alone);
    plan_destroy(problems);
    plan_destroy(as);
    plan_destroy(own_rule);
}

Test(onednn, own_loop_copy_times_the_problems_rows) {
    /* 32 -> 3 channels, rows of 512, a 7 x 7 window at stride 2: the
     * problem's copies (32 x 4 rows of 544 floats) exceed the budget, so
     * it reads in place; the copy's rows of 256 fit, and 32 of them share
     * each L1 set: the rule alone would copy them */
    shape_t in_place = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1,
            .Cin = 32, .Cout = 3, .X = {64, 512}, .K = {7, 7}, .S = {2, 2},
            .D = {1, 1}, .PB = {0, 0}, .act_layout = NCX};
    check_copy_timed_as_problem(in_place, (const int64_t[]){32, 256}, 0);
    /* as many channels as L1 has ways (8 on Zen 4, 12 on Sapphire
     * Rapids; sets 4 KiB apart on both) -> 3, 3 x 3 at stride 2: rows of
     * 1024 floats, so 1.5 rows a channel share each set, past the ways:
     * copied; the copy's rows of 512 share half as many: read in place
     * by the rule */
    shape_t copied = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1,
            .Cin = cpu_l1d_ways(),
            .Cout = 3, .X = {16, 1024}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .act_layout = NCX};
    check_copy_timed_as_problem(copied, (const int64_t[]){8, 512}, 1);
}

/* The copies' budget (half the core's L2 within 256 KiB-1 MiB,
 * direct_stage.c; DGRAD_STAGE_BYTES sets it): 100 rows of height, 5
 * channels of 40 positions, take tiles of the height axis at 256 KiB
 * (the Zen 3 budget) and one window over it at 1 MiB (the budget of a 2
 * MiB L2), whatever this CPU's L2; the results right at both. Two
 * problems (with and without a bias), since the budget is read when a
 * plan is made and the plan cache does not key on it. */
Test(onednn, own_loop_copies_budget) {
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 10,
            .Cout = 4, .X = {3, 100, 40}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&v, 1);
    cr_assert_eq(setenv("DGRAD_STAGE_BYTES", "262144", 1), 0);
    check_own_loop_staged_as(v, 5, 1, 1, 0, 1);
    v.has_bias = 0;
    cr_assert_eq(setenv("DGRAD_STAGE_BYTES", "1048576", 1), 0);
    check_own_loop_staged_as(v, 5, 1, 1, 1, 0);
}

/* The channels-last depthwise loop (src/plan/direct_dw.c): channel
 * counts of whole and partial vectors of 16 (5: one masked vector; 37:
 * three, the last masked; 80: a block of 4 and one more; 64: whole
 * vectors only), every type with a bias, 1D/2D/3D, strides 1-3,
 * dilation, negative padding and pixels no tap reaches. */
Test(onednn, own_loop_depthwise_channels_last) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int64_t cs[] = {5, 37, 80, 64};
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = cs[i], .Cin = cs[i],
                .Cout = cs[i], .X = {5, 7}, .K = {4, 4}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&s, -1);
        check_own_loop_as(s, NXC, "dgrad:direct_dw");
    }
    shape_t one = {.nsp = 1, .dt = dgrad_f32, .N = 3, .G = 64, .Cin = 64,
            .Cout = 64, .X = {11}, .K = {3}, .S = {3}, .D = {2},
            .PB = {-1}};
    set_natural_y(&one, 1);
    check_own_loop_as(one, NXC, "dgrad:direct_dw");
    /* Rows longer than the loop's stretches of 16 pixels per phase. */
    shape_t longer = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 24, .Cin = 24,
            .Cout = 24, .X = {2, 45}, .K = {4, 5}, .S = {2, 3}, .D = {1, 1},
            .PB = {1, 2}, .has_bias = 1};
    set_natural_y(&longer, 1);
    check_own_loop_as(longer, NXC, "dgrad:direct_dw");
    /* Rows of one and two input positions: pixels of a phase whose tap
     * counts agree but whose taps differ (one run each). */
    for (int64_t x = 1; x <= 2; x++) {
        shape_t r = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 16, .Cin = 16,
                .Cout = 16, .X = {x}, .K = {4}, .S = {2}, .D = {1},
                .PB = {0}};
        set_natural_y(&r, 0);
        check_own_loop_as(r, NXC, "dgrad:direct_dw");
    }
    /* K < S on the outer axis: whole rows no tap reaches. */
    shape_t v = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 20, .Cin = 20,
            .Cout = 20, .X = {3, 4, 5}, .K = {1, 3, 2}, .S = {3, 1, 2},
            .D = {1, 2, 1}, .PB = {0, 1, 0}, .has_bias = 1};
    set_natural_y(&v, 0);
    check_own_loop_as(v, NXC, "dgrad:direct_dw");
}

/* The blocks loop on @p s (its output S times its input), both forms of
 * it for a 16-bit type: the one dgrad_plan_get builds widens and rounds
 * row by row itself; the other runs on f32 copies of whole tensors. */
static void check_blocks(shape_t s) {
    for (int i = 0; i < s.nsp; i++) s.Y[i] = s.X[i] * s.S[i];
    check_own_loop_as(s, NXC, "dgrad:direct_blocks");
    s.act_layout = NXC;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert(own && own->direct == DIRECT_BLOCKS_CL && !own->staged);
    plan_destroy(own);
    if (s.dt == dgrad_f32) return;
    dgrad_plan_t *on_copies = build_direct(&p, policy(), 1, 0);
    cr_assert(on_copies && on_copies->direct == DIRECT_BLOCKS_CL
            && on_copies->staged);
    check_plan_ex(&p, on_copies, 1, 0);
    check_plan_ex(&p, on_copies, 1, 1);
    plan_destroy(on_copies);
}

/* The channels-last loop of windows that do not overlap
 * (src/plan/direct_blocks.c): output columns per input pixel (S * Cout
 * of the last axis) of one partial vector (6), of whole and partial
 * vectors of 16 (40), of a chunk of 64 and one more vector (80), of
 * whole chunks (128); input rows not a multiple of any pixel block
 * (13); every type with a bias; K < S (outputs and whole rows no tap
 * reaches: the bias there); 1D to 3D, two images; both kernel sets;
 * 16-bit output rows of several stretches and of one pixel a stretch;
 * strided pixels, rows and images. */
Test(onednn, own_loop_blocks_channels_last) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int64_t couts[] = {3, 20, 40, 64};
    for (int k = 1; k <= 2; k++) {
        policy()->own_kernels = k;
        for (int i = 0; i < 4; i++) {
            shape_t s = {.nsp = 2, .dt = dts[i % 3], .N = 1, .G = 1,
                    .Cin = 20 + i, .Cout = couts[i], .X = {3, 13},
                    .K = {2, 2}, .S = {2, 2}, .D = {1, 1}, .PB = {0, 0},
                    .has_bias = i != 1};
            check_blocks(s);
        }
        shape_t one = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 7,
                .Cout = 5, .X = {29}, .K = {1}, .S = {3}, .D = {1},
                .PB = {0}, .has_bias = 1};
        check_blocks(one);
        shape_t v = {.nsp = 3, .dt = dgrad_bf16, .N = 2, .G = 1, .Cin = 4,
                .Cout = 9, .X = {2, 3, 7}, .K = {1, 2, 2}, .S = {2, 3, 2},
                .D = {1, 1, 1}, .PB = {0, 0, 0}, .has_bias = 1};
        check_blocks(v);
        /* 16-bit output rounded a stretch at a time: 128 columns, 53
         * pixels in stretches of 24, 24 and 5; 4098 columns, one pixel
         * a stretch */
        shape_t wide = {.nsp = 2, .dt = dgrad_f16, .N = 1, .G = 1, .Cin = 5,
                .Cout = 64, .X = {2, 53}, .K = {2, 2}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 0}, .has_bias = 1};
        check_blocks(wide);
        wide.dt = dgrad_bf16;
        wide.Cout = 2049;
        wide.X[1] = 3;
        check_blocks(wide);
    }
    /* Input pixels 3 elements apart beyond their channels, output rows 5
     * beyond their pixels, images 7 beyond their rows: the loop reads
     * and writes through the caller's strides (80 columns: both kernels
     * of a row; in bf16, input rows widened pixel by pixel). */
    policy()->own_kernels = 1;
    for (int i = 0; i < 2; i++) {
        shape_t g = {.nsp = 2, .dt = i ? dgrad_bf16 : dgrad_f32, .N = 2,
                .G = 1, .Cin = 6, .Cout = 40, .X = {3, 9}, .K = {2, 2},
                .S = {2, 2}, .D = {1, 1}, .PB = {0, 0}, .Y = {6, 18},
                .act_layout = NXC, .has_bias = 1};
        dgrad_problem_t p = make_problem(&g);
        p.in_strides[3] = g.Cin + 3;
        p.in_strides[2] = g.X[1] * p.in_strides[3];
        p.in_strides[0] = g.X[0] * p.in_strides[2] + 7;
        p.out_strides[2] = g.Y[1] * g.Cout + 5;
        p.out_strides[0] = g.Y[0] * p.out_strides[2] + 7;
        dgrad_plan_t *plan = NULL;
        cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(),
                             &plan),
                dgrad_success, "%s", dgrad_last_error_message());
        cr_assert_str_eq(dgrad_plan_impl_name(plan), "dgrad:direct_blocks");
        cr_assert(!plan->staged);
        dgrad_plan_release(plan);
        check_problem_ex(&p, 1, 0);
    }
}

/* The blocks loop on @p s, whose windows overlap or are cut by the
 * padding or the output's size, on the user's buffers: 16-bit ones too,
 * the input rows an output row reads widened in f32 by the loop, except
 * where they are more than half of WIDENED_MAX_ROWS (16): then on f32
 * copies of whole tensors. */
static void check_blocks_overlapping(shape_t s) {
    check_own_loop_as(s, NXC, "dgrad:direct_blocks");
    s.act_layout = NXC;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert(own && own->direct == DIRECT_BLOCKS_CL);
    int64_t rows = 1;
    for (int i = 0; i < s.nsp - 1; i++)
        rows *= (s.K[i] + s.S[i] - 1) / s.S[i];
    cr_assert_eq(own->staged, s.dt != dgrad_f32 && rows > 8,
            "type %d, %ld input rows an output row", (int)s.dt, (long)rows);
    plan_destroy(own);
}

/* check_blocks_overlapping of @p s in f32, bf16 and f16. */
static void check_blocks_overlapping_types(shape_t s) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        s.dt = dts[i];
        check_blocks_overlapping(s);
    }
}

/* The blocks loop where windows overlap (K > S: a block sums the taps of
 * several input pixels and rows), where padding or the output's size
 * cut blocks at a row's ends (partial blocks of the columns they keep)
 * and where whole rows or blocks get no tap (the bias there): FCN-8s's
 * k4s2 at few channels, k3s2 with padding 1 and an output padding
 * (ENet), k16s8 in 1D (HiFi-GAN), stride 1, negative padding, an output
 * longer than the natural one, input rows of 1 and 2 pixels (every block
 * at an edge), K < S with padding, 3D, rows of several stretches; each
 * 2D and 1D case in every type; with a bias, two images; both kernel
 * sets. */
Test(onednn, own_loop_blocks_where_windows_overlap) {
    for (int k = 1; k <= 2; k++) {
        policy()->own_kernels = k;
        shape_t fcn = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 21,
                .Cout = 21, .X = {5, 7}, .K = {4, 4}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 0}, .has_bias = 1};
        set_natural_y(&fcn, 0);
        check_blocks_overlapping_types(fcn);
        /* rows of several stretches of output (a 16-bit output is
         * rounded a stretch at a time): 60 blocks of 128 columns, 300
         * of 16 in the lanes form */
        shape_t wide = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 8,
                .Cout = 64, .X = {3, 60}, .K = {3, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&wide, 1);
        check_blocks_overlapping_types(wide);
        shape_t lanes = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4,
                .Cin = 20, .Cout = 8, .X = {3, 300}, .K = {3, 3},
                .S = {2, 2}, .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&lanes, 0);
        check_blocks_overlapping_types(lanes);
        shape_t enet = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1,
                .Cin = 6, .Cout = 13, .X = {4, 9}, .K = {3, 3},
                .S = {2, 2}, .D = {1, 1}, .PB = {1, 1}};
        set_natural_y(&enet, 0); /* natural - 2 PB + 1: output padding */
        check_blocks_overlapping_types(enet);
        shape_t hifi = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 1,
                .Cin = 8, .Cout = 5, .X = {23}, .K = {16}, .S = {8},
                .D = {1}, .PB = {4}, .has_bias = 1};
        set_natural_y(&hifi, 4);
        check_blocks_overlapping_types(hifi);
        shape_t s1 = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
                .Cout = 20, .X = {5, 6}, .K = {3, 3}, .S = {1, 1},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&s1, 1);
        check_blocks_overlapping_types(s1);
        /* output starting before the natural one, ending past it */
        shape_t neg = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
                .Cout = 7, .X = {3, 5}, .K = {4, 4}, .S = {2, 3},
                .D = {1, 1}, .PB = {-1, -2}, .has_bias = 1};
        set_natural_y(&neg, -3);
        check_blocks_overlapping_types(neg);
        for (int64_t x = 1; x <= 2; x++) {
            shape_t r = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1,
                    .Cin = 5, .Cout = 16, .X = {x}, .K = {5}, .S = {2},
                    .D = {1}, .PB = {1}, .has_bias = 1};
            set_natural_y(&r, 0);
            check_blocks_overlapping_types(r);
        }
        shape_t gaps = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1,
                .Cin = 4, .Cout = 9, .X = {3, 7}, .K = {1, 2},
                .S = {3, 3}, .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&gaps, -1);
        check_blocks_overlapping_types(gaps);
        shape_t v = {.nsp = 3, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 5,
                .Cout = 6, .X = {3, 4, 5}, .K = {3, 4, 3}, .S = {2, 2, 2},
                .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
        set_natural_y(&v, 0);
        check_blocks_overlapping(v);
        /* groups as block-diagonal weights: the specification's grouped
         * example (4 groups of 5 -> 2), and 8 groups of 3 -> 4 in 3D */
        shape_t spec = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4,
                .Cin = 20, .Cout = 8, .X = {4, 9}, .K = {3, 3},
                .S = {2, 2}, .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&spec, 0);
        check_blocks_overlapping_types(spec);
        shape_t g8 = {.nsp = 3, .dt = dgrad_f16, .N = 2, .G = 8,
                .Cin = 24, .Cout = 32, .X = {2, 3, 4}, .K = {3, 3, 3},
                .S = {1, 1, 1}, .D = {1, 1, 1}, .PB = {1, 1, 1}};
        set_natural_y(&g8, 0);
        check_blocks_overlapping(g8);
    }
}

/* The blocks loop on @p s in @p layout (the policy's kernels), checked
 * against the reference, with the input spread where the policy says
 * (spread_input): the form it must run in (direct_blocks_lanes; with
 * AVX-512, else 0, block-diagonal weights) is @p form. */
static void check_blocks_form(shape_t s, int layout, int form) {
    check_own_loop_as(s, layout, "dgrad:direct_blocks");
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    int avx2 = policy()->own_kernels == 2 && cpu_has_avx512f();
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, avx2);
    cr_assert(own && own->direct == DIRECT_BLOCKS_CL);
    cr_assert_eq(direct_blocks_lanes(own), cpu_has_avx512f() ? form : 0,
            "G %ld, Cin %ld, Cout %ld, spread_input %d", (long)s.G,
            (long)s.Cin, (long)s.Cout, policy()->spread_input);
    /* rows from lists keep the lists they make (few here) */
    cr_assert_eq(own->direct_lists != NULL,
            cpu_has_avx512f() && !avx2 && form == 3);
    plan_destroy(own);
}

/* The blocks loop on @p s (channels-last), its groups in the lanes form
 * where @p lanes: permuted as the terms load the input (the input never
 * spread), and from the spread input (always spread) in form @p spread:
 * 3 where the blocks run from lists, 2 row by row. */
static void check_blocks_lanes(shape_t s, int lanes, int spread) {
    int was = policy()->spread_input;
    policy()->spread_input = 1;
    check_blocks_form(s, NXC, lanes);
    policy()->spread_input = 2;
    check_blocks_form(s, NXC, lanes ? spread : 0);
    policy()->spread_input = was;
}

/* @p p (strides of its own) on the blocks loop, its input spread and
 * its rows from lists (with AVX-512), checked against the reference with
 * variable and constant weights; the plan checked is the blocks loop's. */
static void check_blocks_listed(const dgrad_problem_t *p) {
    dgrad_plan_t *plan = build_direct(p, policy(), DIRECT_EITHER, 0);
    cr_assert(plan);
    cr_assert_eq(direct_blocks_lanes(plan), cpu_has_avx512f() ? 3 : 0);
    plan_destroy(plan);
    check_problem_as(p, "dgrad:direct_blocks");
}

/* Groups in the lanes form (AVX-512: each vector of output columns
 * holds several groups), each case with the input permuted per channel
 * of a group as the terms load it, and spread first (then, the blocks
 * of rows with the same terms from lists where every column fits one
 * call, else row by row): deconv_ci_3d:grouped (4 groups of 4, 5^3,
 * stride 1: rows of 3 interior blocks on the short kernels and two ends
 * on the one-pixel ones, or rows grouped by their terms; channels in one
 * vector), the specification's grouped example (4 x 5 -> 2: channels in
 * two vectors; ends whose columns the padding cuts), 2 and 3 vectors of
 * columns (Cout dividing 16) with partial blocks at the ends (and with
 * channels in two vectors; every tap of the last axis at once, 2 or 3),
 * 4 vectors in 1D, 5 (row by row), 8 groups of 2 -> 1, 16-bit rows widened in the
 * loop (windows that do not overlap) or spread and rounded, a pixel stride
 * beyond the channels (spread by the rule), and the rule with channels
 * contiguous (rows long enough for the taps kernels permuted, shorter
 * ones and 3D spread); every type, with and without a bias. Block-diagonal weights instead for 2 groups, output columns of
 * no common lane pattern (4 x 5 output channels) and the AVX2 kernels. */
Test(onednn, own_loop_blocks_lanes_form) {
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    policy()->own_kernels = 1;
    shape_t ci = {.nsp = 3, .dt = dgrad_f32, .N = 2, .G = 4, .Cin = 16,
            .Cout = 16, .X = {5, 5, 5}, .K = {3, 3, 3}, .S = {1, 1, 1},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&ci, 0);
    check_blocks_lanes(ci, 1, 3);
    shape_t spec = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 20,
            .Cout = 8, .X = {4, 13}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&spec, 0);
    check_blocks_lanes(spec, 1, 3);
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        /* 32 columns (2 vectors), 48 (3), 64 (4) */
        shape_t v = {.nsp = 2, .dt = dts[i], .N = 2, .G = 4,
                .Cin = 4 + 12 * i, .Cout = 16, .X = {3, 10},
                .K = {4, 2 + 2 * i}, .S = {2, 2 + i}, .D = {1, 1},
                .PB = {1, i}, .has_bias = i != 1};
        set_natural_y(&v, 0);
        check_blocks_lanes(v, 1, 3);
    }
    /* channels in two vectors, 2 vectors of columns: rows of 11 blocks,
     * more than one kernel call's pixels and a part call's */
    shape_t two_by_two = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4,
            .Cin = 20, .Cout = 16, .X = {3, 11}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&two_by_two, 0);
    check_blocks_lanes(two_by_two, 1, 3);
    /* each pixel permuted once for the taps of the last axis
     * (lanes_taps): 2 and 3 taps, one and two vectors of channels and
     * of columns */
    for (int i = 0; i < 8; i++) {
        int64_t K = i % 2 ? 5 + (i / 4) : 3;
        shape_t taps = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4,
                .Cin = i / 2 % 2 ? 20 : 16, .Cout = i / 4 ? 16 : 8,
                .X = {3, 11}, .K = {3, K}, .S = {2, 2}, .D = {1, 1},
                .PB = {1, K / 2}, .has_bias = 1};
        set_natural_y(&taps, 0);
        check_blocks_lanes(taps, 1, 3);
    }
    shape_t wide = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 8, .Cin = 32,
            .Cout = 16, .X = {19}, .K = {9}, .S = {4}, .D = {1}, .PB = {3}};
    set_natural_y(&wide, 1);
    check_blocks_lanes(wide, 1, 3);
    /* 80 columns: the spread rows run row by row */
    shape_t wider = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 4, .Cin = 16,
            .Cout = 16, .X = {9}, .K = {7}, .S = {5}, .D = {1}, .PB = {2},
            .has_bias = 1};
    set_natural_y(&wider, 0);
    check_blocks_lanes(wider, 1, 2);
    shape_t g8 = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 8, .Cin = 16,
            .Cout = 8, .X = {3, 7}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&g8, 0);
    check_blocks_lanes(g8, 1, 3);
    shape_t rows = {.nsp = 2, .dt = dgrad_bf16, .N = 1, .G = 4, .Cin = 12,
            .Cout = 8, .X = {3, 9}, .K = {2, 2}, .S = {2, 2}, .D = {1, 1},
            .PB = {0, 0}, .has_bias = 1};
    set_natural_y(&rows, 0);
    check_blocks_lanes(rows, 1, 3);
    shape_t two = spec;
    two.G = 2;
    check_blocks_lanes(two, 0, 0);
    shape_t tail = spec;
    tail.Cout = 20;
    tail.S[1] = 1;
    set_natural_y(&tail, 0);
    check_blocks_lanes(tail, 0, 0);
    policy()->own_kernels = 2;
    check_blocks_lanes(spec, 0, 0);
    /* input pixels 3 floats apart beyond their 16 channels, spread by
     * the rule (small) */
    policy()->own_kernels = 1;
    policy()->spread_input = 0;
    shape_t st = ci;
    st.act_layout = NXC;
    dgrad_problem_t p = make_problem(&st);
    p.in_strides[4] = st.Cin + 3;
    p.in_strides[3] = st.X[2] * p.in_strides[4];
    p.in_strides[2] = st.X[1] * p.in_strides[3];
    p.in_strides[0] = st.X[0] * p.in_strides[2] + 5;
    check_blocks_listed(&p);
    /* the rule with channels contiguous (NXC): the 2D grouped example's
     * k3s2 permuted (its rows of TAPS_MIN_ROW_BLOCKS blocks and more on
     * the taps kernels), spread where rows are shorter, and in 3D */
    int64_t row_pixels[] = {13, 12};
    for (int i = 0; i < 2; i++) {
        shape_t k3s2 = spec;
        k3s2.X[1] = row_pixels[i];
        set_natural_y(&k3s2, 0);
        check_blocks_form(k3s2, NXC, i == 0 ? 1 : 3);
    }
    shape_t g3d = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 20,
            .Cout = 8, .X = {3, 4, 14}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {1, 1, 1}, .has_bias = 1};
    set_natural_y(&g3d, 0);
    check_blocks_form(g3d, NXC, 3);
}

/* check_blocks_form (lists: form 3) with the spread input in each
 * thread's scratch or in one copy the threads share (@p shared): the
 * plan's shared scratch holds it or nothing, and a 16-bit plan reads and
 * writes the user's tensors itself (no f32 copies). */
static void check_spread_copies(shape_t s, int layout, int shared) {
    int was = policy()->spread_input;
    policy()->spread_input = shared ? 3 : 0;
    check_blocks_form(s, layout, 3);
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert(own && own->direct == DIRECT_BLOCKS_CL);
    if (cpu_has_avx512f()) {
        cr_assert_eq(direct_blocks_shared_scratch(own) > 0, shared,
                "shared scratch %zu bytes, spread_input %d",
                direct_blocks_shared_scratch(own), policy()->spread_input);
        cr_assert_not(own->staged, "%s", dgrad_data_type_name(s.dt));
    }
    plan_destroy(own);
    policy()->spread_input = was;
}

/* The lanes form on NCX activations, where only the spread input (its
 * channels gathered a plane apart) gives it: by the rule, the blocks run
 * from lists and scatter their columns into the NCX output;
 * deconv_ci_3d:grouped (its 64,000-byte spread in each thread's scratch,
 * and in one shared copy; with one image too) in every type, NCX and
 * NXC (16-bit widened as it is spread, the rows rounded into the output
 * by the loop), the grouped example (ends the padding cuts; 20 channels,
 * transposed 16 at a time), 2 vectors of columns, strided channels,
 * images and rows in every type. Never spread, the groups are
 * block-diagonal weights; 80 columns run row by row. */
Test(onednn, own_loop_blocks_lanes_on_ncx) {
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    policy()->own_kernels = 1;
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t ci = {.nsp = 3, .dt = dts[i], .N = 2, .G = 4, .Cin = 16,
                .Cout = 16, .X = {5, 5, 5}, .K = {3, 3, 3},
                .S = {1, 1, 1}, .D = {1, 1, 1}, .PB = {1, 1, 1},
                .has_bias = i != 1};
        set_natural_y(&ci, 0);
        check_spread_copies(ci, NCX, 0);
        check_spread_copies(ci, NCX, 1);
        check_spread_copies(ci, NXC, 0);
        check_spread_copies(ci, NXC, 1);
        /* one image: each thread's rows read pixels of the other's share
         * of the spread */
        shape_t one = ci;
        one.N = 1;
        check_spread_copies(one, NCX, 0);
        check_spread_copies(one, NXC, 0);
        policy()->spread_input = 1;
        check_blocks_form(ci, NCX, 0);
    }
    policy()->spread_input = 0;
    shape_t spec = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 20,
            .Cout = 8, .X = {4, 13}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&spec, 0);
    check_blocks_form(spec, NCX, 3);
    shape_t v = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 4, .Cin = 8,
            .Cout = 16, .X = {3, 10}, .K = {4, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}};
    set_natural_y(&v, 1);
    check_blocks_form(v, NCX, 3);
    shape_t wider = {.nsp = 1, .dt = dgrad_f32, .N = 2, .G = 4, .Cin = 16,
            .Cout = 16, .X = {9}, .K = {7}, .S = {5}, .D = {1}, .PB = {2},
            .has_bias = 1};
    set_natural_y(&wider, 0);
    check_blocks_form(wider, NCX, 2);
    shape_t one = {.nsp = 1, .dt = dgrad_f32, .N = 3, .G = 4, .Cin = 4,
            .Cout = 4, .X = {5}, .K = {3}, .S = {3}, .D = {1}, .PB = {2}};
    set_natural_y(&one, 3);
    check_blocks_form(one, NCX, 3);
    /* channels 3 floats apart beyond a plane, images 5 beyond theirs
     * (an image's positions still one run: spread 16 at a time,
     * transposed); then rows 2 apart beyond theirs too (each pixel's
     * channels gathered), in every type */
    for (int i = 0; i < 3; i++) {
        shape_t st = spec;
        st.dt = dts[i];
        st.act_layout = NCX;
        dgrad_problem_t p = make_problem(&st);
        p.in_strides[1] = st.X[0] * st.X[1] + 3;
        p.in_strides[0] = st.Cin * p.in_strides[1] + 5;
        check_blocks_listed(&p);
        p.in_strides[2] = st.X[1] + 2;
        p.in_strides[1] = st.X[0] * p.in_strides[2] + 3;
        p.in_strides[0] = st.Cin * p.in_strides[1] + 5;
        check_blocks_listed(&p);
    }
}

/* Whether the CPU runs the row vectors loop (direct_row_vectors.c):
 * vectors of 16 lanes with AVX-512, of 8 with AVX2 (and FMA). */
static int row_vectors_cpu(void) {
    return cpu_has_avx512f() || cpu_has_avx2_fma();
}

/* @p s in @p layout on the row vectors loop where the CPU runs it
 * (none elsewhere): the plan of that loop reads and writes a 16-bit
 * problem's tensors itself (no f32 copies), and is checked against the
 * reference for every weights layout, with variable and constant
 * weights. */
static void check_row_vectors(shape_t s, int layout) {
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    int applies = own && own->direct == DIRECT_ROW_VECTORS;
    cr_assert_eq(applies, row_vectors_cpu(), "%s, Y %ld x Cout %ld",
            dgrad_data_type_name(s.dt), (long)s.Y[s.nsp - 1], (long)s.Cout);
    if (applies) cr_assert_not(own->staged);
    if (own) plan_destroy(own);
    if (applies) check_own_loop_as(s, layout, "dgrad:direct_row_vectors");
}

/* Whether own loop @p kind applies to @p s on activations in @p layout,
 * on the user's tensors or f32 copies. */
static int loop_applies(shape_t s, int layout, int kind) {
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    int applies = own && own->direct == kind;
    if (own) plan_destroy(own);
    return applies;
}

/* Whether the row vectors loop applies to @p s (channels-last). */
static int row_vectors_apply(shape_t s) {
    return loop_applies(s, NXC, DIRECT_ROW_VECTORS);
}

/* The row vectors loop (direct_row_vectors.c): every kind of geometry is
 * in its tables, so each case has rows no other does. ONNX's 3D test
 * problem (1 -> 2 channels, k3: rows of 7 pixels on 14 lanes); stride,
 * padding and a cropped end on both axes (lanes no tap reaches, rows no
 * input row reaches); deconv1d:1's dilation (pad 3, dilation 3: taps
 * that reach no lane); 4 groups of 2 -> 3 channels on 3 vectors whose
 * lanes start mid-pixel; 8 whole vectors (16 channels of one group),
 * 3 images; every type, NXC and NCX (the output scattered), with and
 * without a bias; an input of its own strides. It applies only up to
 * 128 values a row and 16 channels a group. */
Test(onednn, own_loop_row_vectors) {
    policy()->own_loop_kind = DIRECT_ROW_VECTORS;
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t onnx3d = {.nsp = 3, .dt = dts[i], .N = 1, .G = 1, .Cin = 1,
                .Cout = 2, .X = {3, 4, 5}, .K = {3, 3, 3}, .S = {1, 1, 1},
                .D = {1, 1, 1}, .PB = {0, 0, 0}, .has_bias = i != 1};
        set_natural_y(&onnx3d, 0);
        shape_t strided = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1, .Cin = 3,
                .Cout = 2, .X = {3, 3}, .K = {3, 3}, .S = {3, 2},
                .D = {1, 1}, .PB = {1, 2}, .has_bias = i != 2};
        set_natural_y(&strided, 1);
        shape_t dilated = {.nsp = 1, .dt = dts[i], .N = 2, .G = 1, .Cin = 8,
                .Cout = 8, .X = {5}, .K = {3}, .S = {1}, .D = {3},
                .PB = {3}, .has_bias = 1};
        set_natural_y(&dilated, 6);
        shape_t grouped = {.nsp = 2, .dt = dts[i], .N = 2, .G = 4, .Cin = 8,
                .Cout = 12, .X = {2, 2}, .K = {2, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 1}, .has_bias = i != 0};
        set_natural_y(&grouped, 0);
        shape_t full = {.nsp = 1, .dt = dts[i], .N = 3, .G = 1, .Cin = 16,
                .Cout = 8, .X = {8}, .K = {2}, .S = {2}, .D = {1},
                .PB = {0}, .has_bias = 1};
        set_natural_y(&full, 0);
        cr_assert_eq(onnx3d.Y[2] * onnx3d.Cout, 14);
        cr_assert_eq(dilated.Y[0], 2);
        cr_assert_eq(grouped.Y[1] * grouped.Cout, 48);
        cr_assert_eq(full.Y[0] * full.Cout, 128);
        shape_t cases[] = {onnx3d, strided, dilated, grouped, full};
        for (int c = 0; c < 5; c++) {
            check_row_vectors(cases[c], NXC);
            check_row_vectors(cases[c], NCX);
        }
        /* input pixels 3 floats apart beyond their channels, images 5
         * beyond theirs; then NCX, pixels 2 apart (16-bit rows widened
         * element by element) */
        for (int layout = NXC; layout >= NCX; layout--) {
            shape_t st = grouped;
            st.act_layout = layout;
            dgrad_problem_t p = make_problem(&st);
            if (layout == NXC) {
                p.in_strides[3] = st.Cin + 3;
                p.in_strides[2] = st.X[1] * p.in_strides[3];
                p.in_strides[0] = st.X[0] * p.in_strides[2] + 5;
            } else {
                p.in_strides[3] = 2;
                p.in_strides[2] = 2 * st.X[1];
                p.in_strides[1] = st.X[0] * p.in_strides[2];
                p.in_strides[0] = st.Cin * p.in_strides[1];
            }
            dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
            cr_assert_eq(own && own->direct == DIRECT_ROW_VECTORS,
                    row_vectors_cpu());
            if (own) plan_destroy(own);
            check_problem_ex(&p, 1, 0);
            check_problem_ex(&p, 1, 1);
        }
    }
    /* 129 values a row, 17 channels of a group: not this loop */
    shape_t wide = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 3, .X = {41}, .K = {3}, .S = {1}, .D = {1}, .PB = {0}};
    set_natural_y(&wide, 0);
    cr_assert_eq(wide.Y[0] * wide.Cout, 129);
    cr_assert_not(row_vectors_apply(wide));
    wide.Y[0]--;
    cr_assert_eq(row_vectors_apply(wide), row_vectors_cpu());
    shape_t deep = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 17,
            .Cout = 2, .X = {4}, .K = {3}, .S = {1}, .D = {1}, .PB = {0}};
    set_natural_y(&deep, 0);
    cr_assert_not(row_vectors_apply(deep));
    deep.Cin = 16;
    cr_assert_eq(row_vectors_apply(deep), row_vectors_cpu());
    /* timed on a reduced copy only where it applies to the problem too
     * (the copy's rows are shorter: within the limit where the
     * problem's are not) */
    shape_t copy_s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 2,
            .Cout = 4, .X = {3, 6}, .K = {3, 3}, .S = {1, 1}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NXC};
    set_natural_y(&copy_s, 0);
    shape_t long_s = copy_s;
    long_s.X[1] = 40;
    set_natural_y(&long_s, 0);
    dgrad_problem_t copy = make_problem(&copy_s),
                    longer = make_problem(&long_s), same = copy;
    dgrad_plan_t *own = build_direct_as_problem(&copy, &same, policy(),
            DIRECT_EITHER, 0);
    cr_assert_eq(own && own->direct == DIRECT_ROW_VECTORS, row_vectors_cpu());
    if (own) plan_destroy(own);
    cr_assert_null(build_direct_as_problem(&copy, &longer, policy(),
            DIRECT_EITHER, 0));
}

/* Whether the CPU runs the phase pair loop (direct_phase_pair.c). */
static int phase_pair_cpu(void) {
    return cpu_has_avx512f() && cpu_has_avx512bw() && cpu_has_avx512vl();
}

/* Whether the phase pair loop applies to @p s on activations in
 * @p layout; where it does, it reads a 16-bit problem's tensors itself
 * (no f32 copies). */
static int phase_pair_applies(shape_t s, int layout) {
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    int applies = own && own->direct == DIRECT_PHASE_PAIR;
    if (applies) cr_assert_not(own->staged);
    if (own) plan_destroy(own);
    return applies;
}

/* The phase pair loop (direct_phase_pair.c), 1D stride 2, on NCX rows
 * and on NXC (the input transposed into channel rows in scratch, the
 * output stored a channel stride apart), each case against the
 * reference in every type, every weights layout, variable and prepared
 * weights: masknet's taps (k7: shifts 0 to -3,
 * the last with no odd tap) on 3 steps of a row one longer than natural,
 * whose first and last steps pass the row's ends; dilation 2 with pad 2
 * (shifts of both signs, every tap in the even phase: odd positions
 * hold the bias alone) on a cropped row; 2 groups of 4 output channels
 * (3 vectors a step); 3 groups of 1 and 2 images; 2 channels on 65
 * positions a phase (a second step of one position); 20 input channels
 * (NXC: a whole block of 16 and one of 4) on 37 positions (two blocks,
 * the second of 5); 64 input channels on a row long enough to be shared
 * over threads. An NCX input of its own channel and image strides; an
 * NXC one with positions and images apart beyond their channels; an NCX
 * input with an NXC output and the other way round. Not where neither
 * positions nor channels are of unit stride, not stride 3, not 2D, not
 * 5 channels a group, not 9 shifts. */
Test(onednn, own_loop_phase_pair) {
    policy()->own_loop_kind = DIRECT_PHASE_PAIR;
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t masknet = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 8, .Cout = 3, .X = {150}, .K = {7}, .S = {2},
                .D = {1}, .PB = {0}, .has_bias = i != 1};
        set_natural_y(&masknet, -1);
        shape_t dilated = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 5, .Cout = 2, .X = {37}, .K = {3}, .S = {2},
                .D = {2}, .PB = {2}, .has_bias = 1};
        set_natural_y(&dilated, 15);
        shape_t grouped = {.nsp = 1, .dt = dts[i], .N = 2, .G = 2,
                .Cin = 6, .Cout = 8, .X = {50}, .K = {4}, .S = {2},
                .D = {1}, .PB = {1}, .has_bias = i != 2};
        set_natural_y(&grouped, -1);
        shape_t single = {.nsp = 1, .dt = dts[i], .N = 2, .G = 3,
                .Cin = 3, .Cout = 3, .X = {70}, .K = {5}, .S = {2},
                .D = {1}, .PB = {2}, .has_bias = i != 0};
        set_natural_y(&single, 0);
        shape_t tail = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1, .Cin = 4,
                .Cout = 2, .X = {65}, .K = {2}, .S = {2}, .D = {1},
                .PB = {0}};
        set_natural_y(&tail, 0);
        shape_t blocks = {.nsp = 1, .dt = dts[i], .N = 2, .G = 1,
                .Cin = 20, .Cout = 3, .X = {37}, .K = {3}, .S = {2},
                .D = {1}, .PB = {1}, .has_bias = 1};
        set_natural_y(&blocks, 1);
        cr_assert_eq(masknet.Y[0], 306);
        cr_assert_eq(dilated.Y[0], 60);
        cr_assert_eq(tail.Y[0], 130);
        shape_t cases[] = {masknet, dilated, grouped, single, tail, blocks};
        for (int c = 0; c < 6; c++)
            for (int layout = NCX; layout <= NXC; layout++) {
                cr_assert_eq(phase_pair_applies(cases[c], layout),
                        phase_pair_cpu(), "case %d layout %d", c, layout);
                if (phase_pair_cpu())
                    check_own_loop_as(cases[c], layout,
                            "dgrad:direct_phase_pair");
            }
        /* input channels 3 floats apart beyond their rows, images 5
         * beyond theirs */
        shape_t st = grouped;
        st.act_layout = NCX;
        dgrad_problem_t p = make_problem(&st);
        p.in_strides[1] = st.X[0] + 3;
        p.in_strides[0] = st.Cin * p.in_strides[1] + 5;
        dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
        cr_assert_eq(own && own->direct == DIRECT_PHASE_PAIR,
                phase_pair_cpu());
        if (own) plan_destroy(own);
        if (!phase_pair_cpu()) continue;
        check_problem_as(&p, "dgrad:direct_phase_pair");
        /* that input with an NXC output */
        shape_t nxc = st;
        nxc.act_layout = NXC;
        dgrad_problem_t q = make_problem(&nxc);
        memcpy(p.out_strides, q.out_strides, sizeof p.out_strides);
        check_problem_as(&p, "dgrad:direct_phase_pair");
        /* an NXC input with positions 3 elements apart beyond their
         * channels, images 5 beyond theirs, into an NCX output */
        q.in_strides[2] = st.Cin + 3;
        q.in_strides[0] = st.X[0] * q.in_strides[2] + 5;
        dgrad_problem_t ncx_out = make_problem(&st);
        memcpy(q.out_strides, ncx_out.out_strides, sizeof q.out_strides);
        check_problem_as(&q, "dgrad:direct_phase_pair");
        /* neither positions nor channels of unit stride: not on the
         * user's tensors (a 16-bit problem's f32 copies are dense) */
        q.in_strides[1] = 2;
        q.in_strides[2] = 2 * st.Cin;
        q.in_strides[0] = st.X[0] * q.in_strides[2];
        own = build_direct(&q, policy(), 0, 0);
        cr_assert(!own || own->direct != DIRECT_PHASE_PAIR);
        if (own) plan_destroy(own);
    }
    /* shared over threads: a 16-bit input widened by each thread's
     * share before the steps */
    for (int i = 0; i < 3 && phase_pair_cpu(); i++) {
        shape_t forked = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 64, .Cout = 3, .X = {800}, .K = {7}, .S = {2},
                .D = {1}, .PB = {0}, .has_bias = 1};
        set_natural_y(&forked, 0);
        check_own_loop_as(forked, NCX, "dgrad:direct_phase_pair");
        check_own_loop_as(forked, NXC, "dgrad:direct_phase_pair");
    }
    /* where it does not apply */
    shape_t s3 = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {20}, .K = {3}, .S = {3}, .D = {1}, .PB = {0}};
    set_natural_y(&s3, 0);
    cr_assert_not(phase_pair_applies(s3, NCX));
    shape_t flat = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {3, 20}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {0, 0}};
    set_natural_y(&flat, 0);
    cr_assert_not(phase_pair_applies(flat, NCX));
    shape_t five = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
            .Cout = 5, .X = {20}, .K = {3}, .S = {2}, .D = {1}, .PB = {0}};
    set_natural_y(&five, 0);
    cr_assert_not(phase_pair_applies(five, NCX));
    five.Cout = 4;
    set_natural_y(&five, 0);
    cr_assert_eq(phase_pair_applies(five, NCX), phase_pair_cpu());
    shape_t wide = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {20}, .K = {17}, .S = {2}, .D = {1}, .PB = {0}};
    set_natural_y(&wide, 0);
    cr_assert_not(phase_pair_applies(wide, NCX));
    wide.K[0] = 16;
    set_natural_y(&wide, 0);
    cr_assert_eq(phase_pair_applies(wide, NCX), phase_pair_cpu());
}

/* Whether the gemm rows loop applies to @p s on activations in
 * @p layout; where it does, a 16-bit problem runs it on f32 copies. */
static int gemm_rows_applies(shape_t s, int layout) {
    s.act_layout = layout;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    int applies = own && own->direct == DIRECT_GEMM_ROWS;
    if (applies) cr_assert_eq(own->staged, s.dt != dgrad_f32);
    if (own) plan_destroy(own);
    return applies;
}

/* The gemm rows loop (direct_gemm_rows.c), each case against the
 * reference in every type, both activation layouts (NXC: the product
 * reads the input transposed, the output is written a channel stride
 * apart), every weights layout, variable and prepared weights:
 * masknet's 3 channels at k7 s2 (odd kw reach odd positions from their
 * own shifts); stride 3 and 2 with dilation 2, a negative and a positive
 * pad and a cropped end (taps that reach no position, rows no input row
 * reaches at the start); 2 groups of 16 -> 2 channels, 3 images, output
 * rows past every input row's reach (the bias alone); 1D; stride 1;
 * and one image of rows shared over threads in bands (more than one
 * product a band, input rows computed by both bands at their edge).
 * An NCX input of its own channel and image strides, and an NXC one
 * with pixels apart beyond their channels. Not under 16 input channels
 * a group, not 3D (a post-op chain it carries: test_post_ops.c). */
Test(onednn, own_loop_gemm_rows) {
    policy()->own_loop_kind = DIRECT_GEMM_ROWS;
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t masknet = {.nsp = 2, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 16, .Cout = 3, .X = {5, 9}, .K = {7, 7}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 0}, .has_bias = i != 1};
        set_natural_y(&masknet, 0);
        shape_t dilated = {.nsp = 2, .dt = dts[i], .N = 2, .G = 1,
                .Cin = 17, .Cout = 2, .X = {4, 7}, .K = {3, 4}, .S = {3, 2},
                .D = {2, 1}, .PB = {-1, 2}, .has_bias = 1};
        set_natural_y(&dilated, 2);
        shape_t grouped = {.nsp = 2, .dt = dts[i], .N = 3, .G = 2,
                .Cin = 32, .Cout = 4, .X = {3, 5}, .K = {4, 4}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = i != 2};
        set_natural_y(&grouped, -3);
        shape_t one_d = {.nsp = 1, .dt = dts[i], .N = 2, .G = 1, .Cin = 20,
                .Cout = 3, .X = {40}, .K = {7}, .S = {2}, .D = {1},
                .PB = {2}, .has_bias = 1};
        set_natural_y(&one_d, 0);
        shape_t stride1 = {.nsp = 2, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 16, .Cout = 5, .X = {6, 6}, .K = {3, 3}, .S = {1, 1},
                .D = {1, 1}, .PB = {1, 1}};
        set_natural_y(&stride1, 0);
        shape_t banded = {.nsp = 2, .dt = dts[i], .N = 1, .G = 1,
                .Cin = 16, .Cout = 3, .X = {40, 64}, .K = {7, 7},
                .S = {2, 2}, .D = {1, 1}, .PB = {0, 0}, .has_bias = 1};
        set_natural_y(&banded, 0);
        cr_assert_eq(dilated.Y[0], 13); /* row 0 reached by no input row */
        cr_assert_eq(grouped.Y[0], 10); /* rows 7-9 by none */
        shape_t cases[] = {masknet, dilated, grouped, one_d, stride1, banded};
        for (int c = 0; c < 6; c++)
            for (int layout = NCX; layout <= NXC; layout++) {
                cr_assert(gemm_rows_applies(cases[c], layout), "case %d", c);
                check_own_loop_as(cases[c], layout, "dgrad:gemm_rows");
            }
        /* input channels 3 floats apart beyond their planes, images 5
         * beyond theirs; an NXC input with pixels 3 apart beyond their
         * channels */
        for (int layout = NCX; layout <= NXC; layout++) {
            shape_t st = grouped;
            st.act_layout = layout;
            dgrad_problem_t p = make_problem(&st);
            if (layout == NCX) {
                p.in_strides[1] = st.X[0] * st.X[1] + 3;
                p.in_strides[0] = st.Cin * p.in_strides[1] + 5;
            } else {
                p.in_strides[3] = st.Cin + 3;
                p.in_strides[2] = st.X[1] * p.in_strides[3];
                p.in_strides[0] = st.X[0] * p.in_strides[2] + 5;
            }
            check_problem_as(&p, "dgrad:gemm_rows");
        }
    }
    /* where it does not apply */
    shape_t thin = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 15,
            .Cout = 3, .X = {4, 4}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {0, 0}};
    set_natural_y(&thin, 0);
    cr_assert_not(gemm_rows_applies(thin, NCX));
    thin.Cin = 16;
    cr_assert(gemm_rows_applies(thin, NCX));
    dgrad_problem_t chained = make_problem(&thin);
    chained.n_post_ops = 1;
    chained.post_ops[0] = (dgrad_post_op_t){dgrad_post_relu, 0, 0,
            dgrad_f32, {0}, {0}};
    dgrad_plan_t *own = build_direct(&chained, policy(), DIRECT_EITHER, 0);
    cr_assert(own && own->direct == DIRECT_GEMM_ROWS); /* carries it */
    if (own) plan_destroy(own);
    shape_t s3d = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 16,
            .Cout = 3, .X = {3, 3, 3}, .K = {3, 3, 3}, .S = {2, 2, 2},
            .D = {1, 1, 1}, .PB = {0, 0, 0}};
    set_natural_y(&s3d, 0);
    cr_assert_not(gemm_rows_applies(s3d, NCX));
}

/* Whether the phase pair loop's AMX form (direct_phase_pair_amx.c)
 * applies to @p s on activations in @p layout (it reads bf16 itself:
 * there are no f32 copies it could take). */
static int phase_pair_amx_applies(shape_t s, int layout) {
    return loop_applies(s, layout, DIRECT_PHASE_PAIR_AMX);
}

/* The phase pair loop on AMX tiles (direct_phase_pair_amx.c): bf16, 1D
 * stride 2, NCX rows, each case against the reference in every weights
 * layout, variable and prepared weights: masknet's taps on 8 input
 * channels (one block of 32 channels, 24 of them zeros) and on 72 (two
 * whole blocks and one of 8) on a row one longer than natural, whose
 * first and last chunks pass the row's ends; dilation 2 with pad 2 (odd
 * positions hold the bias alone); 2 groups of 4 output channels and 2
 * images; 3 groups of 1; 8 output channels (C's 16 rows); 65 positions
 * a phase (a second chunk of one position; masknet's 153 make one step
 * of 3 chunks of 4); a row of 49 steps, long enough to be shared over
 * threads. An input of its own channel and image strides.
 * Not on other types, NXC, 9 output channels a group, stride 3 or 2D;
 * nowhere on a CPU without AMX. */
Test(onednn, own_loop_phase_pair_amx) {
    policy()->own_loop_kind = DIRECT_PHASE_PAIR_AMX;
    int amx = cpu_has_amx_bf16();
    const char *name = "dgrad:direct_phase_pair_amx";
    shape_t masknet = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 8,
            .Cout = 3, .X = {150}, .K = {7}, .S = {2}, .D = {1}, .PB = {0},
            .has_bias = 1};
    set_natural_y(&masknet, -1);
    shape_t deep = masknet;
    deep.Cin = 72;
    deep.has_bias = 0;
    shape_t dilated = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 5,
            .Cout = 2, .X = {37}, .K = {3}, .S = {2}, .D = {2}, .PB = {2},
            .has_bias = 1};
    set_natural_y(&dilated, 15);
    shape_t grouped = {.nsp = 1, .dt = dgrad_bf16, .N = 2, .G = 2, .Cin = 6,
            .Cout = 8, .X = {50}, .K = {4}, .S = {2}, .D = {1}, .PB = {1},
            .has_bias = 1};
    set_natural_y(&grouped, -1);
    shape_t single = {.nsp = 1, .dt = dgrad_bf16, .N = 2, .G = 3, .Cin = 3,
            .Cout = 3, .X = {70}, .K = {5}, .S = {2}, .D = {1}, .PB = {2}};
    set_natural_y(&single, 0);
    shape_t eight = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 33,
            .Cout = 8, .X = {40}, .K = {3}, .S = {2}, .D = {1}, .PB = {1},
            .has_bias = 1};
    set_natural_y(&eight, 0);
    shape_t tail = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {65}, .K = {2}, .S = {2}, .D = {1}, .PB = {0}};
    set_natural_y(&tail, 0);
    shape_t forked = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1,
            .Cin = 64, .Cout = 3, .X = {12500}, .K = {7}, .S = {2},
            .D = {1}, .PB = {0}, .has_bias = 1};
    set_natural_y(&forked, 0);
    cr_assert_eq(masknet.Y[0], 306);
    cr_assert_eq(tail.Y[0], 130);
    shape_t cases[] = {masknet, deep, dilated, grouped, single, eight, tail,
            forked};
    for (int c = 0; c < 8; c++) {
        cr_assert_eq(phase_pair_amx_applies(cases[c], NCX), amx, "case %d",
                c);
        cr_assert_not(phase_pair_amx_applies(cases[c], NXC), "case %d", c);
        if (amx) check_own_loop_as(cases[c], NCX, name);
    }
    /* input channels 3 elements apart beyond their rows, images 5
     * beyond theirs */
    shape_t st = grouped;
    st.act_layout = NCX;
    dgrad_problem_t p = make_problem(&st);
    p.in_strides[1] = st.X[0] + 3;
    p.in_strides[0] = st.Cin * p.in_strides[1] + 5;
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert_eq(own && own->direct == DIRECT_PHASE_PAIR_AMX, amx);
    if (own) plan_destroy(own);
    if (amx) check_problem_as(&p, name);
    /* where it does not apply */
    shape_t other = masknet;
    other.dt = dgrad_f32;
    cr_assert_not(phase_pair_amx_applies(other, NCX));
    other.dt = dgrad_f16;
    cr_assert_not(phase_pair_amx_applies(other, NCX));
    shape_t nine = eight;
    nine.Cout = 9;
    cr_assert_not(phase_pair_amx_applies(nine, NCX));
    shape_t s3 = {.nsp = 1, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {20}, .K = {3}, .S = {3}, .D = {1}, .PB = {0}};
    set_natural_y(&s3, 0);
    cr_assert_not(phase_pair_amx_applies(s3, NCX));
    shape_t flat = {.nsp = 2, .dt = dgrad_bf16, .N = 1, .G = 1, .Cin = 4,
            .Cout = 2, .X = {3, 20}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {0, 0}};
    set_natural_y(&flat, 0);
    cr_assert_not(phase_pair_amx_applies(flat, NCX));
}

/* Packed projection plans on oneDNN's brgemm matmul, and those of them
 * whose weights are reordered (the packing exercised, not a copy of the
 * in-place plan). */
static int projection_packed_brg, projection_packed_reordered;

/* Whether the projection (projection.c) builds for @p s on activations
 * in @p layout and weights in @p wei, weights packed or not; where it
 * does, the plan against the reference, weights variable and prepared. */
static int check_projection(shape_t s, int layout, int wei, int packed) {
    s.act_layout = layout;
    s.wei_layout = wei;
    dgrad_problem_t p = make_problem(&s);
    int applies = 0;
    cr_assert_eq(engine_init(), dnnl_success); /* made at a first plan */
    for (int staged = 0; staged < 2; staged++) {
        dgrad_plan_t *mm = build_projection(&p, policy(), staged, packed);
        if (!mm) continue;
        applies = 1;
        cr_assert(!strncmp(dgrad_plan_impl_name(mm), "matmul:", 7), "%s",
                dgrad_plan_impl_name(mm));
        cr_assert_eq(mm->projection, layout == NCX ? PROJECTION_CHANNEL_MAJOR
                                                   : PROJECTION_TAP_MAJOR);
        cr_assert_eq(step_exists(&mm->wei.reorder), packed
                && !md_equal(md_ref(&mm->wei.io_md), md_ref(&mm->wei.conv_md)));
        if (packed && strstr(dgrad_plan_impl_name(mm), "brg")) {
            projection_packed_brg++;
            projection_packed_reordered += step_exists(&mm->wei.reorder);
        }
        check_plan_ex(&p, mm, 1, 0);
        check_plan_ex(&p, mm, 1, 1);
        plan_destroy(mm);
    }
    return applies;
}

/* The projection (projection.c): one input position, output the
 * kernel's footprint, as one matmul on views of the user's tensors, in
 * every type (16-bit through f32 copies where oneDNN has no matmul in
 * the type), with and without a bias, weights read in place and packed:
 * 2D as DCGAN's first layer (the stride says nothing with one input
 * position), 1D, 3D with a kernel axis of 1 (dilation then free), an
 * input whose images are 3 elements apart beyond their channels. It
 * applies to NCX with channel-major weights and NXC with tap-major ones,
 * not to the crossed pairs (no one stride over both); not with 2
 * positions, a pad, an output past the footprint, dilation gaps or 2
 * groups. Chosen by policy projection 2 where it applies. */
Test(onednn, projection) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t dcgan = {.nsp = 2, .dt = dts[i], .N = 3, .G = 1, .Cin = 5,
                .Cout = 4, .X = {1, 1}, .K = {4, 3}, .S = {1, 2},
                .D = {1, 1}, .PB = {0, 0}, .has_bias = i != 1};
        shape_t line = {.nsp = 1, .dt = dts[i], .N = 2, .G = 1, .Cin = 7,
                .Cout = 3, .X = {1}, .K = {5}, .S = {3}, .D = {1},
                .PB = {0}, .has_bias = i != 2};
        shape_t cube = {.nsp = 3, .dt = dts[i], .N = 1, .G = 1, .Cin = 3,
                .Cout = 2, .X = {1, 1, 1}, .K = {2, 1, 3}, .S = {1, 1, 1},
                .D = {1, 3, 1}, .PB = {0, 0, 0}, .has_bias = 1};
        shape_t cases[] = {dcgan, line, cube};
        for (int c = 0; c < 3; c++) {
            set_natural_y(&cases[c], 0);
            for (int packed = 0; packed < 2; packed++) {
                cr_assert(check_projection(cases[c], NCX, WEI_CANONICAL,
                                  packed), "case %d packed %d", c, packed);
                cr_assert(check_projection(cases[c], NXC, WEI_XIO, packed),
                        "case %d packed %d", c, packed);
                cr_assert(check_projection(cases[c], NXC, WEI_KFIRST,
                                  packed), "case %d packed %d", c, packed);
                cr_assert_not(check_projection(cases[c], NCX, WEI_XIO,
                                      packed), "case %d", c);
                cr_assert_not(check_projection(cases[c], NXC, WEI_CANONICAL,
                                      packed), "case %d", c);
            }
        }
        /* never offered, then chosen where it applies (the policy's
         * knob is part of the plan cache's key), with images 3 elements
         * apart beyond their channels */
        for (int layout = NCX; layout <= NXC; layout++)
            for (int knob = 0; knob <= 2; knob += 2) {
                policy()->projection = knob;
                shape_t st = dcgan;
                set_natural_y(&st, 0);
                st.act_layout = layout;
                st.wei_layout = layout == NCX ? WEI_CANONICAL : WEI_XIO;
                dgrad_problem_t p = make_problem(&st);
                p.in_strides[0] = st.Cin + 3;
                dgrad_plan_t *plan = NULL;
                cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable,
                                     policy(), &plan),
                        dgrad_success, "%s", dgrad_last_error_message());
                cr_assert_eq(!strncmp(dgrad_plan_impl_name(plan), "matmul:",
                                     7), knob == 2, "%s",
                        dgrad_plan_impl_name(plan));
                dgrad_plan_release(plan);
                check_problem_ex(&p, 1, 0);
                check_problem_ex(&p, 1, 1);
            }
        policy()->projection = 1;
    }
    if (projection_packed_brg)
        cr_assert_gt(projection_packed_reordered, 0);
    /* where it does not apply */
    shape_t base = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 4,
            .Cout = 4, .X = {1, 1}, .K = {3, 3}, .S = {1, 1}, .D = {1, 1},
            .PB = {0, 0}};
    set_natural_y(&base, 0);
    cr_assert(check_projection(base, NCX, WEI_CANONICAL, 0));
    shape_t two = base, pad = base, tail = base, gaps = base, groups = base;
    two.X[1] = 2;
    set_natural_y(&two, 0);
    /* a pad, and one past the natural end (output padding, below the
     * stride): the footprint's size, shifted */
    pad.PB[0] = 1;
    pad.S[0] = 2;
    pad.Y[0] = natural(&pad, 0) - 1 + 1;
    cr_assert_eq(pad.Y[0], pad.K[0]);
    tail.Y[1]++;
    gaps.D[0] = 2; /* cropped to the footprint's size */
    gaps.Y[0] = natural(&gaps, 0) - (gaps.K[0] - 1);
    cr_assert_eq(gaps.Y[0], gaps.K[0]);
    groups.G = 2;
    shape_t no[] = {two, pad, tail, gaps, groups};
    for (int c = 0; c < 5; c++) {
        cr_assert_not(check_projection(no[c], NCX, WEI_CANONICAL, 0),
                "case %d", c);
        check_all_layouts(no[c]);
    }
}

/* The scatter (small_copy.c) wherever the policy offers it, planned by
 * ranking so that the plans are oneDNN's blocked kernels: in backward-
 * data plans (their weights, and inputs brought into channel blocks)
 * and in folded ones, where it also folds the weights itself
 * (fuse_weights) unless the plan computes on f32 copies. Each plan's
 * output is the reference's, with user and prepared weights, in every
 * layout and type; some plans must have taken the scatter and some
 * folded ones the fused scatter, and under policy 0 none (the knob is
 * part of the plan cache's key). */
static int scatter_steps(const dgrad_plan_t *plan) {
    return (plan->in.reorder.own == OWN_COPY_SCATTER)
            + (plan->wei.reorder.own == OWN_COPY_SCATTER);
}

Test(onednn, small_copy_in_plans) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int scattered[2] = {0, 0}, fused = 0;
    policy()->layout_search = 0;
    policy()->own_loop = 0;
    policy()->projection = 0;
    for (int knob = 2; knob >= 0; knob -= 2)
        for (int fold = 0; fold <= 2; fold += 2)
            for (int i = 0; i < 3; i++) {
                policy()->small_copy = knob;
                policy()->phase_fold = fold;
                shape_t line = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1,
                        .Cin = 16, .Cout = 3, .X = {9}, .K = {7},
                        .S = {2}, .D = {1}, .PB = {0}, .has_bias = i == 0};
                shape_t grouped = {.nsp = 2, .dt = dts[i], .N = 2, .G = 2,
                        .Cin = 4, .Cout = 6, .X = {4, 5}, .K = {3, 2},
                        .S = {2, 2}, .D = {1, 2}, .PB = {1, 0}};
                shape_t cube = {.nsp = 3, .dt = dts[i], .N = 1, .G = 1,
                        .Cin = 3, .Cout = 5, .X = {3, 2, 3},
                        .K = {2, 3, 2}, .S = {2, 1, 2}, .D = {1, 1, 1},
                        .PB = {0, 1, 0}, .has_bias = 1};
                /* folded: 16 forward channels and 16 inputs fill the
                 * kernel's blocks (no padding), and the second phase has
                 * one tap of a window of two (a zero the scatter writes) */
                shape_t full = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1,
                        .Cin = 16, .Cout = 8, .X = {6}, .K = {3},
                        .S = {2}, .D = {1}, .PB = {0}};
                shape_t shapes[] = {line, grouped, cube, full};
                for (int c = 0; c < 4; c++) {
                    set_natural_y(&shapes[c], 0);
                    for (int a = NCX; a <= NXC; a++)
                        for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++) {
                            shapes[c].act_layout = a;
                            shapes[c].wei_layout = w;
                            dgrad_problem_t p = make_problem(&shapes[c]);
                            dgrad_plan_t *plan = NULL;
                            cr_assert_eq(dgrad_plan_get(&p,
                                                 dgrad_weights_variable,
                                                 policy(), &plan),
                                    dgrad_success, "%s",
                                    dgrad_last_error_message());
                            int n = scatter_steps(plan);
                            cr_assert(knob || !n, "%s",
                                    dgrad_plan_impl_name(plan));
                            scattered[fold / 2] += n;
                            if (plan->fold.weights_fused) {
                                cr_assert_eq(knob, 2);
                                cr_assert_not(plan->staged);
                                fused++;
                            }
                            check_plan_ex(&p, plan, 1, 0);
                            check_plan_ex(&p, plan, 1, 1);
                            dgrad_plan_release(plan);
                        }
                }
            }
    cr_log_info("scatter steps %d (backward data), %d (folded), of them "
                "fused %d", scattered[0], scattered[1], fused);
    cr_assert_gt(scattered[0], 0);
    cr_assert_gt(fused, 0);
}

/* Lists of more than LISTS_MAX_BLOCKS blocks are not kept: the rows
 * make theirs on every execution (the input spread where the policy
 * asks, whatever its size; one line of 255 rows of 515 blocks, 131,325
 * in all). */
Test(onednn, own_loop_blocks_lists_not_kept_past_their_limit) {
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    policy()->own_kernels = 1;
    policy()->spread_input = 2;
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 4, .Cin = 4,
            .Cout = 4, .X = {128, 512}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .act_layout = NXC};
    set_natural_y(&s, 0);
    cr_assert_gt(s.Y[0] * (s.X[1] + 3), LISTS_MAX_BLOCKS);
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *own = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert(own && own->direct == DIRECT_BLOCKS_CL);
    cr_assert_eq(direct_blocks_lanes(own), cpu_has_avx512f() ? 3 : 0);
    cr_assert_null(own->direct_lists);
    plan_destroy(own);
    check_problem_ex(&p, 1, 0);
}

/* 16-bit rows from lists, rounded into the user's output by the loop
 * (blocks_round_rows): rows of 19 pixels of 16 channels (short enough
 * that the rule spreads the input in NXC too, TAPS_MIN_ROW_BLOCKS), of
 * which LIST_MAX_ROUNDED_FLOATS holds fewer than a run has (a run in
 * several parts), in NCX (channels gathered, rows contiguous), NXC (one run),
 * NCX with a gap after each row (a row at a time), and pixels 2 floats
 * apart beyond their channels (neither layout: element by element);
 * bf16 and f16, with a bias; on the AVX2 kernels, through f32 copies. */
Test(onednn, own_loop_blocks_lanes_16bit_rounded) {
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    policy()->own_kernels = 1;
    policy()->spread_input = 0;
    dgrad_data_type_t dts[] = {dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 2; i++) {
        shape_t s = {.nsp = 2, .dt = dts[i], .N = 2, .G = 4, .Cin = 16,
                .Cout = 16, .X = {16, 10}, .K = {3, 3}, .S = {2, 2},
                .D = {1, 1}, .PB = {1, 1}, .has_bias = 1};
        set_natural_y(&s, 0);
        cr_assert_gt(s.Y[0], LIST_MAX_ROUNDED_FLOATS / (s.Y[1] * s.Cout));
        check_spread_copies(s, NCX, 1);
        check_spread_copies(s, NXC, 1);
        s.act_layout = NCX;
        dgrad_problem_t p = make_problem(&s);
        /* the AVX2 kernels have no lanes form: there the 16-bit NCX
         * input goes through f32 copies */
        dgrad_plan_t *avx2 = build_direct(&p, policy(), 0, 1);
        cr_assert_null(avx2, "%s", avx2 ? avx2->impl : "");
        policy()->own_kernels = 2;
        check_own_loop_as(s, NCX, "dgrad:direct_blocks");
        policy()->own_kernels = 1;
        p.out_strides[2] = s.Y[1] + 3;
        p.out_strides[1] = s.Y[0] * p.out_strides[2];
        p.out_strides[0] = s.Cout * p.out_strides[1];
        check_blocks_listed(&p);
        s.act_layout = NXC;
        p = make_problem(&s);
        p.out_strides[3] = s.Cout + 2;
        p.out_strides[2] = s.Y[1] * p.out_strides[3];
        p.out_strides[0] = s.Y[0] * p.out_strides[2];
        check_blocks_listed(&p);
    }
}

/* @p s in bf16 and f16 (bf16 alone on the AMX loop), every weights
 * layout, with variable and prepared weights, on the own loop @p kind
 * (@p impl), its user's weights ending at a page the process may not
 * read (a word read past them faults), compared with the reference. */
static void check_weights_to_their_end(shape_t s, int kind,
        const char *impl) {
    policy()->own_loop = 2;
    policy()->own_loop_kind = kind;
    policy()->own_kernels = 1;
    long page = sysconf(_SC_PAGESIZE);
    /* the AMX loop is bf16's only */
    dgrad_data_type_t dts[] = {dgrad_bf16, dgrad_f16};
    int types = kind == DIRECT_PHASE_PAIR_AMX ? 1 : 2;
    for (int i = 0; i < types; i++)
        for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++)
            for (int prepared = 0; prepared <= 1; prepared++) {
                s.dt = dts[i];
                s.wei_layout = w;
                dgrad_problem_t p = make_problem(&s);
                dgrad_plan_t *plan = NULL;
                cr_assert_eq(dgrad_plan_get(&p, prepared
                                             ? dgrad_weights_constant
                                             : dgrad_weights_variable,
                                     policy(), &plan),
                        dgrad_success, "%s", dgrad_last_error_message());
                cr_assert_str_eq(dgrad_plan_impl_name(plan), impl);
#if defined(__x86_64__) && defined(__GNUC__)
                if (kind == DIRECT_BLOCKS_CL && cpu_has_avx512f())
                    cr_assert(blocks_pack_gathers(plan),
                            "the weights are not packed by gathers");
#endif
                buffers_t b;
                buffers_init(&b, &p, 1, 77u);
                size_t bytes = (size_t)b.n_wei * elsize(p.dt),
                       pages = (bytes + (size_t)page - 1) / (size_t)page;
                char *m = mmap(NULL, (pages + 1) * (size_t)page,
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
                cr_assert(m != MAP_FAILED);
                cr_assert_eq(mprotect(m + pages * (size_t)page,
                                     (size_t)page, PROT_NONE),
                        0);
                void *at_end = m + pages * (size_t)page - bytes;
                memcpy(at_end, b.wei, bytes);
                free(b.wei);
                b.wei = at_end;
                check_plan_on(&p, plan, &b, 1, prepared);
                b.wei = NULL;
                munmap(m, (pages + 1) * (size_t)page);
                buffers_free(&b);
                dgrad_plan_release(plan);
            }
}

/* 16-bit weights packed by gathers of 32-bit words at their elements
 * (gather_avx512.h gather16; the row vectors loop's AVX2 form reads
 * them one by one): the weights' last element is read alone,
 * so that no word passes the tensor's end; every weights layout puts
 * the last element in another packed row and lane. The blocks loop
 * (direct_blocks_pack.c), the row vectors loop (direct_row_vectors.c)
 * and the phase pair loop (direct_phase_pair.c), which gather every
 * 16-bit weight. */
Test(onednn, own_loop_16bit_weights_gathered_to_their_end) {
    shape_t s = {.nsp = 3, .N = 2, .G = 4, .Cin = 16, .Cout = 16,
            .X = {5, 5, 5}, .K = {3, 3, 3}, .S = {1, 1, 1}, .D = {1, 1, 1},
            .PB = {1, 1, 1}, .act_layout = NXC};
    set_natural_y(&s, 0);
    check_weights_to_their_end(s, DIRECT_BLOCKS_CL, "dgrad:direct_blocks");
    if (!row_vectors_cpu()) return;
    shape_t r = {.nsp = 2, .N = 2, .G = 2, .Cin = 4, .Cout = 6,
            .X = {3, 4}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NCX};
    set_natural_y(&r, 0);
    check_weights_to_their_end(r, DIRECT_ROW_VECTORS,
            "dgrad:direct_row_vectors");
    if (!phase_pair_cpu()) return;
    shape_t pp = {.nsp = 1, .N = 1, .G = 2, .Cin = 6, .Cout = 6, .X = {20},
            .K = {5}, .S = {2}, .D = {1}, .PB = {1}, .act_layout = NCX};
    set_natural_y(&pp, 0);
    check_weights_to_their_end(pp, DIRECT_PHASE_PAIR,
            "dgrad:direct_phase_pair");
    if (!cpu_has_amx_bf16()) return;
    check_weights_to_their_end(pp, DIRECT_PHASE_PAIR_AMX,
            "dgrad:direct_phase_pair_amx");
}

/* The blocks loop on NCX activations (the input read along strided
 * channels, each output row computed channels-last in scratch and
 * stored channel by channel, 16 pixels at a time with AVX-512 and a
 * masked tail), asked for by the policy where the rows loop applies too:
 * rows of 34 pixels (two whole vectors and a tail), of 7 (a tail only),
 * of 16, 1D and 3D, 2 groups, every type (16-bit on f32 copies), a
 * bias; strided pixels and channels. */
Test(onednn, own_loop_blocks_channels_first) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    for (int k = 1; k <= 2; k++) {
        policy()->own_kernels = k;
        shape_t fcn = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 21,
                .Cout = 21, .X = {4, 16}, .K = {4, 4}, .S = {2, 2},
                .D = {1, 1}, .PB = {0, 0}, .has_bias = 1};
        set_natural_y(&fcn, 0);
        for (int i = 0; i < 3; i++) {
            fcn.dt = dts[i];
            check_own_loop_as(fcn, NCX, "dgrad:direct_blocks");
        }
        shape_t tail = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
                .Cout = 17, .X = {4}, .K = {3}, .S = {2}, .D = {1},
                .PB = {1}};
        set_natural_y(&tail, 0);
        check_own_loop_as(tail, NCX, "dgrad:direct_blocks");
        shape_t whole = {.nsp = 3, .dt = dgrad_f32, .N = 1, .G = 2,
                .Cin = 6, .Cout = 4, .X = {2, 3, 8}, .K = {2, 2, 2},
                .S = {2, 2, 2}, .D = {1, 1, 1}, .PB = {0, 0, 0},
                .has_bias = 1};
        set_natural_y(&whole, 0);
        check_own_loop_as(whole, NCX, "dgrad:direct_blocks");
    }
    shape_t g = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 1, .Cin = 6,
            .Cout = 9, .X = {3, 9}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NCX, .has_bias = 1};
    set_natural_y(&g, 0);
    dgrad_problem_t p = make_problem(&g);
    p.in_strides[2] = g.X[1] + 2;
    p.in_strides[1] = g.X[0] * p.in_strides[2] + 3;
    p.in_strides[0] = g.Cin * p.in_strides[1] + 5;
    p.out_strides[2] = g.Y[1] + 3;
    p.out_strides[1] = g.Y[0] * p.out_strides[2] + 1;
    p.out_strides[0] = g.Cout * p.out_strides[1] + 7;
    check_problem_as(&p, "dgrad:direct_blocks");
}

/* Where it does not apply: more than BLOCKS_MAX_GROUPS groups, dilation,
 * more than BLOCKS_MAX_TERMS terms (K / S taps, 3D); and, for the loop
 * that widens 16-bit rows itself, NCX and output rows that read more
 * input rows than half of WIDENED_MAX_ROWS (9: 3D, k3s1). */
Test(onednn, own_loop_blocks_where_it_does_not_apply) {
    shape_t base = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 4,
            .Cout = 6, .X = {3, 5}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .act_layout = NXC};
    policy()->own_loop_kind = DIRECT_BLOCKS_CL;
    for (int c = 0; c < 5; c++) {
        shape_t s = base;
        if (c == 0) s.G = s.Cin = s.Cout = 9;
        if (c == 1) {
            s.dt = dgrad_bf16;
            s.act_layout = NCX;
            s.K[0] = s.K[1] = 2;
            s.PB[0] = s.PB[1] = 0;
        }
        if (c == 2) s.D[1] = 2;
        if (c == 3) {
            s.nsp = 3;
            s.X[2] = 4;
            for (int i = 0; i < 3; i++) {
                s.K[i] = 9;
                s.S[i] = 2;
                s.D[i] = 1;
                s.PB[i] = 0;
            }
        }
        if (c == 4) {
            s.dt = dgrad_bf16;
            s.nsp = 3;
            s.X[2] = 4;
            for (int i = 0; i < 3; i++) {
                s.K[i] = 3;
                s.S[i] = 1;
                s.D[i] = 1;
                s.PB[i] = 1;
            }
        }
        set_natural_y(&s, 0);
        dgrad_problem_t p = make_problem(&s);
        int staged = c == 1 || c == 4 ? 0 : DIRECT_EITHER;
        dgrad_plan_t *plan = build_direct(&p, policy(), staged, 0);
        cr_assert(!plan, "case %d: the blocks loop took it", c);
    }
    /* each on f32 copies where it is 16-bit and the rest applies */
    shape_t ncx = base;
    ncx.dt = dgrad_bf16;
    ncx.act_layout = NCX;
    set_natural_y(&ncx, 0);
    dgrad_problem_t q = make_problem(&ncx);
    dgrad_plan_t *staged = build_direct(&q, policy(), DIRECT_EITHER, 0);
    cr_assert(staged && staged->direct == DIRECT_BLOCKS_CL && staged->staged);
    plan_destroy(staged);
    set_natural_y(&base, 0);
    dgrad_problem_t p = make_problem(&base);
    dgrad_plan_t *plan = build_direct(&p, policy(), DIRECT_EITHER, 0);
    cr_assert(plan && plan->direct == DIRECT_BLOCKS_CL && !plan->staged);
    plan_destroy(plan);
}

/* A folded plan whose forward convolution has output windows wholly in
 * its padding (17 depthwise channels folded into a dense 1D convolution,
 * input 2, window 3, output 7: right padding 5), in each type and
 * channels-last: oneDNN 3.7.1's brgemm kernel crashed on it in bf16
 * (onednn_defects.c, pd_safe_for_padding); the plan must run
 * and match the reference. */
Test(onednn, a_fold_with_windows_in_the_padding) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    policy()->phase_fold = 2;
    policy()->own_loop = 0;
    for (int i = 0; i < 3; i++) {
        shape_t s = {.nsp = 1, .dt = dts[i], .N = 1, .G = 17, .Cin = 17,
                .Cout = 17, .X = {2}, .K = {3}, .S = {1}, .D = {1},
                .PB = {0}, .act_layout = NXC};
        set_natural_y(&s, -3);
        cr_assert_eq(s.Y[0], 7);
        for (int w = WEI_CANONICAL; w <= WEI_KFIRST; w++) {
            s.wei_layout = w;
            dgrad_problem_t p = make_problem(&s);
            check_problem_ex(&p, 1, 0);
        }
    }
}

/* A folded 3D plan whose forward convolution has one input channel per
 * group and an input depth of 1 under a padded window of 3 (conformance
 * case sweep-quick#0157: 3 groups of one channel, the fold
 * g3 mb1_ic3oc9_id1od3kd3pd2): oneDNN 3.7.1's brgemm kernel, its first
 * implementation in bf16 on an AVX-512-BF16 CPU, got 231 of 504
 * elements wrong (onednn_defects.c, depth_taps_dropped); on Sapphire
 * Rapids its AMX kernel gets the same shape wrong with 3 channels in one
 * group too (the fold dense). Every type, both activation layouts, both
 * groupings, candidates ranked, not timed, so that the first
 * implementation offered is the one run. */
Test(onednn, a_fold_over_a_depth_shorter_than_its_window) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    policy()->layout_search = 0;
    policy()->phase_fold = 2;
    policy()->own_loop = 0;
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 4; a++) {
            /* 3 groups of 1 channel, and 1 group of 3 (a dense fold of an
             * odd channel count) */
            shape_t s = {.nsp = 3, .dt = dts[i], .N = 1, .G = a < 2 ? 3 : 1,
                    .Cin = 3, .Cout = 3, .X = {1, 3, 4}, .K = {3, 2, 3},
                    .S = {1, 1, 3}, .D = {1, 1, 2}, .PB = {0, 0, 0},
                    .act_layout = a % 2 ? NXC : NCX};
            set_natural_y(&s, 0);
            dgrad_problem_t p = make_problem(&s);
            check_problem_ex(&p, 1, 0);
        }
}

/* A backward-data plan with a result position no tap reaches (depth:
 * an input of 1 under a window of 2 dilated by 2, front padding 1, so
 * position 0 reads positions -1 and 1): oneDNN 3.7.1's AMX brgemm
 * backward-data kernel crashed on it (conformance case sweep-full#2574,
 * bf16, an Intel Xeon with AMX; onednn_defects.c,
 * pd_positions_without_taps); without the fence this test crashes there.
 * Every type, both activation layouts, no fold and no own loop,
 * candidates ranked, not timed, so that the first implementation
 * offered is the one run. */
Test(onednn, a_result_position_no_tap_reaches) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    policy()->layout_search = 0;
    policy()->phase_fold = 0;
    policy()->own_loop = 0;
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 2; a++) {
            shape_t s = {.nsp = 3, .dt = dts[i], .N = 1, .G = 1, .Cin = 2,
                    .Cout = 3, .X = {1, 1, 2}, .K = {2, 1, 4},
                    .S = {1, 1, 1}, .D = {2, 2, 1}, .PB = {1, 0, 0},
                    .Y = {1, 1, 5}, .act_layout = a ? NXC : NCX};
            dgrad_problem_t p = make_problem(&s);
            check_problem_ex(&p, 1, 0);
        }
}

/* The own loops' kernel set as the policy asks (own_kernels 2: AVX2 on
 * a CPU with AVX-512, the timed choice's other candidate; 1: the widest),
 * each plan matching the reference: the rows loop in every type (16-bit
 * ones read by the kernels themselves) and the depthwise one. On a CPU
 * without AVX-512 both ask for what it runs anyway. */
Test(onednn, own_loop_kernel_sets) {
    shape_t rows = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 6,
            .Cout = 10, .X = {5, 40}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .has_bias = 1};
    shape_t dw = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 37, .Cin = 37,
            .Cout = 37, .X = {5, 7}, .K = {4, 4}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}, .has_bias = 1};
    set_natural_y(&rows, 1);
    set_natural_y(&dw, -1);
    int wide = cpu_has_avx512f() && cpu_has_avx2_fma();
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int k = 1; k <= 2; k++)
        for (int i = 0; i < 4; i++) {
            shape_t s = i < 3 ? rows : dw;
            if (i < 3) s.dt = dts[i];
            s.act_layout = i < 3 ? NCX : NXC;
            policy()->own_kernels = k;
            check_own_loop_as(s, s.act_layout,
                    i < 3 ? "dgrad:direct" : "dgrad:direct_dw");
            dgrad_problem_t p = make_problem(&s);
            dgrad_plan_t *plan = NULL;
            cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable,
                                 policy(), &plan),
                    dgrad_success, "%s", dgrad_last_error_message());
            int avx2 = plan->direct_avx2;
            /* 16-bit activations read by AVX-512 kernels need BW too */
            int expect = k == 2 && wide
                    && (i == 0 || i == 3 || plan->staged || cpu_has_avx512bw());
            dgrad_plan_release(plan);
            cr_assert_eq(avx2, expect, "own_kernels %d, case %d: AVX2 "
                    "kernels %d", k, i, avx2);
        }
}

/* @p p planned on the rows loop wherever it applies, with kernel set
 * @p set (policy own_kernels: 1 the widest the CPU has, 2 AVX2), no
 * fold; asserts that it is the rows loop. */
static dgrad_plan_t *rows_loop_plan(const dgrad_problem_t *p, int set) {
    policy()->own_loop = 2;
    policy()->own_kernels = set;
    policy()->phase_fold = 0;
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_eq(dgrad_plan_impl_name(plan), "dgrad:direct");
    return plan;
}

/* Windows of 3 at stride 2 on the last axis, on staged padded copies:
 * the kernels load each input run once for both phases
 * (direct_shared_phase: with an odd padding the even phase has the one
 * tap, with an even padding the odd phase). The AVX2 kernels do where
 * the CPU has AVX-512VL, for 1 to 4 channels a block, rounding into
 * 16-bit output as they store, after a bias (a block of 5 channels takes
 * the pair kernels); the AVX-512 kernels wherever they run, into f32
 * rows, for blocks of up to 12 channels (the wide blocks' rows whose
 * taps they do not take, inputs shorter than the window, run the
 * AVX-512 pair kernels of as many channels). Every plan matches the
 * reference; elsewhere the same shapes run the pair kernels. */
Test(onednn, own_loop_shares_each_run_between_phases) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int64_t cgs[] = {1, 2, 3, 4, 5, 8, 12};
    int vl = cpu_has_avx512vl() && cpu_has_avx2_fma();
    /* own_kernels 2: the AVX2 set; 1: the widest the CPU has */
    for (int set = 1; set <= 2; set++)
        for (int64_t pb = 0; pb <= 3; pb++)
            for (size_t c = 0; c < sizeof cgs / sizeof *cgs; c++) {
                int64_t cg = cgs[c];
                if (set == 2 && cg > 5) continue;
                shape_t s = {.nsp = 3, .dt = dts[(pb + cg) % 3], .N = 1,
                        .G = 2, .Cin = 6, .Cout = 2 * cg,
                        .X = {3, 4, cg == 5 && pb == 0 ? 1 : 37},
                        .K = {3, 3, 3},
                        .S = {2, 2, 2}, .D = {1, 1, 1}, .PB = {1, 1, pb},
                        .has_bias = 1, .act_layout = NCX};
                set_natural_y(&s, (pb + cg) % 2);
                int avx512 = set == 1 && cpu_has_avx512f()
                        && (s.dt == dgrad_f32 || cpu_has_avx512bw());
                dgrad_problem_t p = make_problem(&s);
                dgrad_plan_t *plan = rows_loop_plan(&p, set);
                int padded = plan->direct_stage.padded,
                    phase = direct_shared_phase(plan);
                dgrad_plan_release(plan);
                int sharing = avx512 || vl;
                cr_assert(!sharing || padded,
                        "set %d, pad %lld, %lld channels: copies not "
                        "padded", set, (long long)pb, (long long)cg);
                cr_assert_eq(phase, sharing ? (pb % 2 ? 0 : 1) : -1,
                        "set %d, pad %lld, %lld channels: one-tap phase %d",
                        set, (long long)pb, (long long)cg, phase);
                check_problem_ex(&p, 1, 0);
            }
}

/* Multiplies the @p n values of @p buf by 2^@p e (exact where the
 * results are representable in @p dt). */
static void scale_values(void *buf, dgrad_data_type_t dt, int64_t n, int e) {
    for (int64_t i = 0; i < n; i++)
        dgrad_store(buf, dt, i, ldexp(dgrad_load(buf, dt, i), e));
}

/* The rounding tests' problem: 2 groups of 5 input channels, @p cout
 * output channels, rows of 2 whole steps and a partial one (stride 2,
 * last window @p k), in @p dt. */
static dgrad_problem_t rounding_problem(dgrad_data_type_t dt, int64_t cout,
        int64_t k) {
    shape_t s = {.nsp = 2, .dt = dt, .N = 1, .G = 2, .Cin = 10,
            .Cout = cout, .X = {5, 75}, .K = {3, k}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .act_layout = NCX};
    set_natural_y(&s, 1);
    return make_problem(&s);
}

/* bf16 output below f32's normal range, rounded by the rows loop's
 * kernels as they store it (AVX512_BF16's conversion reads a subnormal
 * f32 as zero, so those vectors take the integer rounding,
 * direct_avx2.c): inputs of 2^-133 (bf16's smallest subnormal) times
 * small integers, weights of 2^-3 times them, so each sum is exact in
 * f32 and, mostly subnormal, rounds to bf16's spacing of 2^-133 there.
 * Windows of 3 (the kernels sharing loads: AVX-512, or AVX2 where the
 * CPU has AVX-512VL) and of 4 (the pair kernels), rows of 2 whole steps
 * and a partial one, with either kernel set. */
Test(onednn, own_loop_rounds_subnormal_bf16) {
    /* own_kernels 2: the AVX2 set; 1: the widest (the AVX-512 kernels
     * sharing loads round as they store too) */
    for (int set = 1; set <= 2; set++)
        for (int64_t k = 3; k <= 4; k++) {
            dgrad_problem_t p = rounding_problem(dgrad_bf16, 4, k);
            dgrad_plan_t *plan = rows_loop_plan(&p, set);
            buffers_t b;
            buffers_init(&b, &p, 1, 99u);
            scale_values(b.in, p.dt, b.n_in, -133);
            scale_values(b.wei, p.dt, b.n_wei, -3);
            check_plan_on(&p, plan, &b, 1, 0);
            /* the values that matter: most of the output is subnormal */
            int64_t subnormal = 0;
            for (int64_t i = 0; i < b.n_out; i++) {
                double v = fabs(dgrad_load(b.ref, p.dt, i));
                subnormal += v > 0 && v < 0x1p-126;
            }
            cr_assert_gt(subnormal, b.n_out / 2, "%lld of %lld subnormal",
                    (long long)subnormal, (long long)b.n_out);
            buffers_free(&b);
            dgrad_plan_release(plan);
        }
}

/* 16-bit output rounded by the rows loop's kernels as they store it, to
 * nearest even: integer inputs and weights whose sums are exact in f32
 * but need more bits than bf16 (8) or f16 (11) keep, compared exactly
 * with the reference's rounding of the same sums. Both kernel sets,
 * windows of 3 (the kernels sharing loads) and of 4 (the pair kernels). */
Test(onednn, own_loop_rounds_sums_as_stored) {
    dgrad_data_type_t dts[] = {dgrad_bf16, dgrad_f16};
    for (int set = 1; set <= 2; set++)
        for (int d = 0; d < 2; d++)
            for (int64_t k = 3; k <= 4; k++) {
                dgrad_problem_t p = rounding_problem(dts[d], 6, k);
                dgrad_plan_t *plan = rows_loop_plan(&p, set);
                buffers_t b;
                buffers_init(&b, &p, 1, 7u);
                /* bf16: |x|, |w| < 256 (exact), sums < 2^24; f16: < 57,
                 * sums within f16's range */
                unsigned seed = 11u;
                int span = dts[d] == dgrad_bf16 ? 255 : 56;
                for (int64_t i = 0; i < b.n_in; i++)
                    dgrad_store(b.in, p.dt, i,
                            rand_r(&seed) % (2 * span + 1) - span);
                for (int64_t i = 0; i < b.n_wei; i++)
                    dgrad_store(b.wei, p.dt, i,
                            rand_r(&seed) % (2 * span + 1) - span);
                check_plan_on(&p, plan, &b, 1, 0);
                /* the values that matter: many sums needed rounding */
                int64_t rounded = 0;
                double exact = dts[d] == dgrad_bf16 ? 256 : 2048;
                for (int64_t i = 0; i < b.n_out; i++)
                    rounded += fabs(dgrad_load(b.ref, p.dt, i)) > exact;
                cr_assert_gt(rounded, b.n_out / 8, "%lld of %lld beyond %g",
                        (long long)rounded, (long long)b.n_out, exact);
                buffers_free(&b);
                dgrad_plan_release(plan);
            }
}

Test(onednn, own_loop_only_where_it_applies) {
    /* Channels-last activations: a oneDNN plan. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 2, .X = {5, 5}, .K = {3, 3}, .S = {2, 2},
            .D = {1, 1}, .PB = {1, 1}, .act_layout = NXC};
    set_natural_y(&s, 0);
    policy()->own_loop = 2;
    dgrad_problem_t p = make_problem(&s);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_neq(dgrad_plan_impl_name(plan), "dgrad:direct");
    dgrad_plan_release(plan);
    check_problem_ex(&p, 1, 0);
}

/* A plan of dgrad's own loop made while the caller's OpenMP count was 1
 * and executed with 4: its per-thread scratch was sized for one thread,
 * so the execution must not use more (ASan sees an overflow otherwise),
 * and the result stays the reference's. */
Test(onednn, own_loop_threads_beyond_creation) {
#ifdef _OPENMP
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 2, .G = 4, .Cin = 20,
            .Cout = 8, .X = {40, 64}, .K = {3, 3}, .S = {2, 2}, .D = {1, 1},
            .PB = {1, 1}};
    set_natural_y(&s, 1);
    policy()->own_loop = 2;
    dgrad_problem_t p = make_problem(&s);
    int old = omp_get_max_threads();
    omp_set_num_threads(1);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_eq(dgrad_plan_impl_name(plan), "dgrad:direct");
    omp_set_num_threads(4);
    check_problem_ex(&p, 1, 0);
    omp_set_num_threads(old);
    dgrad_plan_release(plan);
#endif
}

/* The own loop keeps each thread's term lists (weights included) from
 * row to row: a second execution with other weights in the same plan
 * must not see the first's. */
Test(onednn, own_loop_weights_change_between_executes) {
    /* K = S: every row of a class has the same taps, and one group and
     * image: without the reset the second execution would take the
     * first's lists. */
    shape_t s = {.nsp = 2, .dt = dgrad_f32, .N = 1, .G = 1, .Cin = 3,
            .Cout = 2, .X = {6, 20}, .K = {2, 2}, .S = {2, 2},
            .D = {1, 1}, .PB = {0, 0}};
    set_natural_y(&s, 0);
    policy()->own_loop = 2;
    dgrad_problem_t p = make_problem(&s);
    buffers_t first, second;
    buffers_init(&first, &p, 1, 11u);
    buffers_init(&second, &p, 1, 22u);
    dgrad_reference_compute(&p, second.in, second.wei, NULL, second.ref,
            second.abs_sum);
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(&p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_str_eq(dgrad_plan_impl_name(plan), "dgrad:direct");
    cr_assert_eq(dgrad_plan_execute(plan, first.in, first.wei, 0, NULL,
                         first.out), dgrad_success);
    cr_assert_eq(dgrad_plan_execute(plan, second.in, second.wei, 0, NULL,
                         second.out), dgrad_success);
    compare(&p, &second, 0);
    dgrad_plan_release(plan);
    buffers_free(&first);
    buffers_free(&second);
}

/* Variable weights that are the same bytes as the last execution's are
 * taken prepared from the execution context (execute.c,
 * weights_unchanged): through a run of executions whose weights change
 * in their last element, then their first, change back, and come again
 * from another address, every output is the reference's for the
 * weights of that execution, and the repeats that find a copy (and only
 * they) took the prepared one. After the third change in a row the
 * execution keeps no copy (weights_worth_keeping: only the 1st, 2nd,
 * 4th, ... of such a run do), so the first repeat after it is not taken
 * prepared and the second is. In each form that prepares weights:
 * oneDNN's reorder (ranked plans on blocked kernels), the fold, dgrad's
 * blocks loop (whose small weights each thread packs into its own
 * scratch, so the first repeat packs them for the context) and the
 * phase pair loop, in each type (f16 through f32 copies on oneDNN 2.6);
 * weights of more than WEIGHTS_SEEN_MAX_BYTES (256 KiB) are never taken
 * so (@p kept 0). */
static void check_weights_reuse(const dgrad_problem_t *p, int kept) {
    dgrad_plan_t *plan = NULL;
    cr_assert_eq(dgrad_plan_get(p, dgrad_weights_variable, policy(), &plan),
            dgrad_success, "%s", dgrad_last_error_message());
    const char *impl = dgrad_plan_impl_name(plan);
    cr_assert_gt(dgrad_plan_prepared_weights_size(plan), 0, "%s", impl);
    buffers_t b;
    buffers_init(&b, p, 1, 99u);
    size_t bytes = (size_t)b.n_wei * elsize(p->dt);
    void *original = malloc(bytes), *elsewhere = malloc(bytes);
    cr_assert(original && elsewhere);
    memcpy(original, b.wei, bytes);
    memcpy(elsewhere, b.wei, bytes);
    /* executions 1, 5 and 6 repeat the weights before them; 2, 3 and 4
     * change them, and 4, the third change in a row, keeps no copy */
    static const int repeats[7] = {0, 1, 0, 0, 0, 0, 1};
    long reused = 0;
    for (int e = 0; e < 7; e++) {
        int64_t at = e == 2 ? b.n_wei - 1 : 0;
        if (e == 2 || e == 3) {
            double v = dgrad_load(b.wei, p->dt, at);
            dgrad_store(b.wei, p->dt, at, v >= 3 ? -3 : v + 1);
        }
        if (e == 4) memcpy(b.wei, original, bytes);
        const void *w = e == 5 ? elsewhere : b.wei;
        dgrad_reference_compute(p, b.in, w, p->has_bias ? b.bias : NULL,
                b.ref, b.abs_sum);
        cr_assert_eq(dgrad_plan_execute(plan, b.in, w, 0,
                             p->has_bias ? b.bias : NULL, b.out),
                dgrad_success, "%s", dgrad_last_error_message());
        int64_t bad = mismatches(p, &b, 0, 1);
        cr_assert_eq(bad, 0, "%s, execution %d: %lld mismatches", impl, e,
                (long long)bad);
        exec_ctx_t *c = atomic_load(&plan->spare);
        cr_assert_not_null(c);
        reused += kept ? repeats[e] : 0;
        cr_assert_eq(c->wei_reused, reused,
                "%s, %zu bytes of weights, execution %d: taken prepared %ld "
                "times, not %ld", impl, bytes, e, c->wei_reused, reused);
    }
    cr_log_info("%s: %ld repeats taken prepared", impl, reused);
    free(original);
    free(elsewhere);
    buffers_free(&b);
    dgrad_plan_release(plan);
}

Test(onednn, unchanged_variable_weights_taken_prepared) {
    dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int i = 0; i < 3; i++) {
        shape_t grouped = {.nsp = 3, .dt = dts[i], .N = 2, .G = 4,
                .Cin = 16, .Cout = 16, .X = {5, 5, 5}, .K = {3, 3, 3},
                .S = {1, 1, 1}, .D = {1, 1, 1}, .PB = {1, 1, 1},
                .has_bias = i != 1, .act_layout = NXC,
                .wei_layout = WEI_XIO};
        set_natural_y(&grouped, 0);
        shape_t line = {.nsp = 1, .dt = dts[i], .N = 1, .G = 1, .Cin = 8,
                .Cout = 3, .X = {150}, .K = {7}, .S = {2}, .D = {1},
                .PB = {0}, .has_bias = 1, .act_layout = NCX,
                .wei_layout = WEI_KFIRST};
        set_natural_y(&line, -1);
        /* 64 -> 32 channels, 5x5: 102 or 205 KB of weights, kept; 64 ->
         * 96: 307 or 614 KB, past the 256 KiB kept */
        shape_t wide = {.nsp = 2, .dt = dts[i], .N = 1, .G = 1, .Cin = 64,
                .Cout = 32, .X = {6, 6}, .K = {5, 5}, .S = {1, 1},
                .D = {1, 1}, .PB = {2, 2}, .has_bias = 1, .act_layout = NCX,
                .wei_layout = WEI_KFIRST};
        set_natural_y(&wide, 0);
        shape_t wider = wide;
        wider.Cout = 96;
        dgrad_problem_t g = make_problem(&grouped), l = make_problem(&line),
                        m = make_problem(&wide), h = make_problem(&wider);
        /* oneDNN's kernels, ranked: blocked weights */
        *policy() = dgrad_plan_policy_default();
        policy()->layout_search = 0;
        policy()->own_loop = 0;
        policy()->projection = 0;
        policy()->phase_fold = 0;
        check_weights_reuse(&g, 1);
        check_weights_reuse(&m, 1);
        check_weights_reuse(&h, 0);
        policy()->phase_fold = 2;
        check_weights_reuse(&l, 1);
        /* dgrad's loops */
        *policy() = dgrad_plan_policy_default();
        policy()->own_loop = 2;
        policy()->own_loop_kind = DIRECT_BLOCKS_CL;
        check_weights_reuse(&g, 1);
        policy()->own_loop_kind = DIRECT_PHASE_PAIR;
        check_weights_reuse(&l, 1);
    }
}

/* A candidate computing the output tail, timed by the search with its
 * post-op chain made (carried by a oneDNN step where oneDNN takes it),
 * then run on one thread and on all (keep_faster_threading): the tail
 * check there runs the bare op, which a step carrying the chain cannot
 * do without the chain's operands (it read them from NULL, a crash of
 * `dgrad conform --sweep full` at sweep-full#3390, this problem: ONNX
 * 1D, 2 groups of 1 channel, stride 3, an output padding of 2, the
 * chain Maximum (full), Maximum (per channel), Sigmoid). Every tail
 * candidate of both layouts goes through both steps, and then against
 * the reference with the chain. One on the user's layouts (no reorder
 * after the bias add) carries the chain in the bias add: the candidates
 * come out of all_candidates marked to carry it whatever the caller's
 * array held before (a field once left unset made that random: this
 * test failed in about one run of four). */
Test(onednn, tail_candidates_carrying_a_chain_keep_their_threading) {
    shape_t s = {.nsp = 1, .dt = dgrad_f32, .N = 1, .G = 2, .Cin = 2,
            .Cout = 2, .X = {3}, .K = {1}, .S = {3}, .D = {1}, .PB = {0},
            .Y = {9}, .has_bias = 1};
    float full[18], per_channel[2] = {0.25f, -0.5f};
    for (int i = 0; i < 18; i++) full[i] = (float)(i % 5) - 2.0f;
    const void *operands[2] = {full, per_channel};
    policy()->chain_pass = 1; /* carried wherever a step can (not timed) */
    /* no one-thread twin inside the search (a timed choice, built without
     * its chain made): keep_faster_threading always gets the search's
     * plan, and keeps its one-thread twin */
    policy()->threading = 1;
    cr_assert_eq(engine_init(), dnnl_success);
    for (int layout = NCX; layout <= NXC; layout++) {
        s.act_layout = layout;
        dgrad_problem_t p = make_problem(&s);
        p.n_post_ops = 3;
        p.post_ops[0] = (dgrad_post_op_t){dgrad_post_max, 0, 0, dgrad_f32,
                {1, 2, 9}, {p.out_strides[0], p.out_strides[1],
                        p.out_strides[2]}};
        p.post_ops[1] = (dgrad_post_op_t){dgrad_post_max, 0, 0, dgrad_f32,
                {1, 2, 1}, {2, 1, 1}};
        p.post_ops[2] = (dgrad_post_op_t){dgrad_post_logistic, 0, 0,
                dgrad_f32, {0}, {0}};
        cand_pd_t pds[MAX_CAND_PDS];
        memset(pds, 0xff, sizeof pds);
        dnnl_status_t err = dnnl_success;
        int n = all_candidates(&p, policy(), 0, pds, &err);
        int on_user_layouts = 0;
        for (int k = 0; k < n; k++) {
            cr_assert_eq(pds[k].chain_passed, 0, "candidate %d", k);
            if (!pds[k].extend_tail) continue;
            const char *what = "";
            int w = -1;
            double ms = INFINITY;
            dgrad_plan_t *plan = search(&p, policy(), 0, 0, &pds[k], 1, &w,
                    &ms, &err, &what);
            if (!plan) continue;
            if (!pds[k].reorders && !step_exists(&plan->out.reorder)) {
                on_user_layouts++;
                cr_assert_str_eq(dgrad_plan_chain_carrier(plan), "bias add",
                        "%s, layout %d", plan->impl, layout);
            }
            plan = keep_faster_threading(&p, policy(), 0, 0, &pds[k], plan,
                    &ms);
            cr_assert(plan);
            float in[6], wei[2], bias[2], out[18], want[18];
            for (int i = 0; i < 6; i++) in[i] = (float)i - 2.5f;
            wei[0] = 1.5f;
            wei[1] = -2.0f;
            bias[0] = 0.5f;
            bias[1] = -1.0f;
            cr_assert_eq(plan_run_whole(plan, in, wei, 0, bias, operands, out),
                    dnnl_success, "%s", plan->impl);
            dgrad_reference_compute_fused(&p, in, wei, bias, operands, want,
                    NULL);
            for (int i = 0; i < 18; i++)
                cr_assert(fabsf(out[i] - want[i]) <= 1e-6f,
                        "%s, layout %d, element %d: %g, want %g", plan->impl,
                        layout, i, out[i], want[i]);
            plan_destroy(plan);
        }
        destroy_pds(pds, n);
        cr_assert(on_user_layouts > 0, "layout %d: no tail candidate on the "
                "user's layouts", layout);
    }
}
