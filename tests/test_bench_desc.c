/*
 * `dgrad bench` descriptors: the closed-form FLOP count against a count
 * that visits every (input position, kernel tap) pair, the parser's
 * refusal of sizes that do not fit in 64 bits (status and message), and
 * the JSON line of --list-problems.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Pairs (x, k) with 0 <= s*x + (d+1)*k - p < o, visiting each. */
static double brute_axis_terms(const bench_desc_t *d, int a) {
    int64_t n = 0;
    for (int64_t x = 0; x < d->i[a]; x++)
        for (int64_t k = 0; k < d->k[a]; k++) {
            int64_t y = x * d->s[a] + k * (d->d[a] + 1) - d->p[a];
            n += y >= 0 && y < d->o[a];
        }
    return (double)n;
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static int64_t rnd(int64_t lo, int64_t hi) { /* inclusive */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

/* Random small problems: the output is cropped (o below the natural
 * size), padded beyond it (output padding, and more), with begin pads
 * from negative (the output starts before the first tap) to past the
 * natural size, strides larger than the kernel and dilations. */
Test(bench_desc, closed_form_flops_equal_brute_force_count) {
    int cropped = 0, padded = 0, negative_pad = 0;
    for (int t = 0; t < 20000; t++) {
        bench_desc_t d;
        memset(&d, 0, sizeof d);
        d.nsp = (int)rnd(1, 3);
        d.g = rnd(1, 3);
        d.mb = rnd(1, 3);
        d.ic = d.g * rnd(1, 3);
        d.oc = d.g * rnd(1, 3);
        double terms = 1;
        for (int a = 0; a < d.nsp; a++) {
            d.i[a] = rnd(1, 12);
            d.k[a] = rnd(1, 7);
            d.s[a] = rnd(1, 5);
            d.d[a] = rnd(0, 3);
            int64_t natural = bench_desc_natural(&d, a);
            d.p[a] = rnd(-4, natural / 2 + 2);
            d.o[a] = rnd(1, natural + 6);
            int64_t pe = natural - d.p[a] - d.o[a];
            cropped += pe > 0;
            padded += pe < 0;
            negative_pad += d.p[a] < 0;
            double want = brute_axis_terms(&d, a);
            cr_assert_eq(bench_desc_axis_terms(&d, a), want,
                    "axis terms i=%lld k=%lld s=%lld d=%lld p=%lld o=%lld: "
                    "%g, brute force %g", (long long)d.i[a], (long long)d.k[a],
                    (long long)d.s[a], (long long)d.d[a], (long long)d.p[a],
                    (long long)d.o[a], bench_desc_axis_terms(&d, a), want);
            terms *= want;
        }
        double flops = 2.0 * (double)(d.mb * d.ic * (d.oc / d.g)) * terms;
        cr_assert_eq(bench_desc_flops(&d), flops, "flops %g, brute force %g",
                bench_desc_flops(&d), flops);
    }
    /* The random problems cover every case the count distinguishes. */
    cr_assert(cropped > 1000 && padded > 1000 && negative_pad > 1000,
            "cropped %d, padded %d, negative begin pad %d", cropped, padded,
            negative_pad);
}

/* Sizes no loop could visit: counted at once and exactly. */
Test(bench_desc, flops_of_huge_axes_in_closed_form, .timeout = 5) {
    bench_desc_t d;
    char err[256];
    /* Full output: every one of the 10^12 x 10^6 pairs lands. */
    cr_assert_eq(bench_desc_parse("mb1ic1iw1000000000000oc1kw1000000", &d, err,
            sizeof err), 0, "%s", err);
    cr_assert_eq(bench_desc_axis_terms(&d, 0), 1e18);
    cr_assert_eq(bench_desc_flops(&d), 2e18);
    /* Stride 2, kernel 3, output cropped to the first 10^12 positions:
     * even y are reached by taps 0 and 2 (x = y/2 and y/2 - 1, the latter
     * from y = 2 on), odd y by tap 1: 2 * 5e11 - 1 + 5e11 pairs. */
    cr_assert_eq(bench_desc_parse("mb1ic1iw1000000000000oc1ow1000000000000"
            "kw3sw2pw0", &d, err, sizeof err), 0, "%s", err);
    cr_assert_eq(bench_desc_axis_terms(&d, 0), 1.5e12 - 1);
}

typedef struct refusal {
    const char *desc;
    const char *message;
} refusal_t;

Test(bench_desc, sizes_beyond_64_bits_are_refused) {
    static const refusal_t cases[] = {
        {"mb1ic99999999999999999999iw3kw3oc1",
                "'mb1ic99999999999999999999iw3kw3oc1': ic99999999999999999999 "
                "is out of range (descriptor values are at most "
                "9223372036854775807)"},
        {"mb1ic1iw9223372036854775807oc1kw3sw2",
                "'mb1ic1iw9223372036854775807oc1kw3sw2': on axis w, s*(i-1) + "
                "(k-1)*(d+1) + 1 = 1.845e+19 does not fit in 64 bits"},
        {"mb1ic1iw4kw3dw4611686018427387904oc1",
                "'mb1ic1iw4kw3dw4611686018427387904oc1': on axis w, s*(i-1) + "
                "(k-1)*(d+1) + 1 = 9.223e+18 does not fit in 64 bits"},
        {"mb1ic1iw4kw1dw9223372036854775807oc1",
                "'mb1ic1iw4kw1dw9223372036854775807oc1': on axis w, the "
                "dilation d+1 does not fit in 64 bits"},
        {"mb1ic1iw4kw3oc1ow9223372036854775807pw9223372036854775807",
                "'mb1ic1iw4kw3oc1ow9223372036854775807pw9223372036854775807': "
                "on axis w, the end pad s*(i-1) + (k-1)*(d+1) + 1 - p - o = "
                "-1.845e+19 does not fit in 64 bits"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bench_desc_t d;
        char err[512] = "";
        cr_assert_eq(bench_desc_parse(cases[c].desc, &d, err, sizeof err), -1,
                "%s accepted", cases[c].desc);
        cr_assert_str_eq(err, cases[c].message);
    }
    /* The largest sizes that fit are accepted. */
    bench_desc_t d;
    char err[512] = "";
    cr_assert_eq(bench_desc_parse("mb1ic1iw4611686018427387904oc1kw1sw2", &d,
            err, sizeof err), 0, "%s", err);
    cr_assert_eq(bench_desc_natural(&d, 0), INT64_MAX);
}

/* --list-problems: the line other programs read a problem from (bench/peers/
 * takes every size from it), exactly, for an output-padded grouped 2D
 * problem read from a batch file and a cropped, dilated 1D one. */
Test(bench_desc, list_problems_prints_every_size_as_json) {
    char path[] = "/tmp/dgrad_list_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *batch = fdopen(fd, "w");
    fputs("# two problems\n\n"
          "g2mb3ic4ih5iw6oc8oh12ow13kh3kw4sh2sw2ph1pw0n\"padded\"\n"
          "mb1ic2iw7oc3ow9kw3sw1pw2dw1\n", batch);
    fclose(batch);
    bench_problem_list_t list = {calloc(BENCH_MAX_PROBLEMS,
            sizeof(bench_problem_t)), 0};
    cr_assert_eq(bench_batch_read(&list, path), 0);
    cr_assert_eq(list.n, 2);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    for (int i = 0; i < list.n; i++) bench_print_problem_json(out, &list.v[i]);
    fclose(out);
    char want[2048];
    /* h: natural 2*4 + 2 + 1 = 11, end pad 11 - 1 - 12 = -2 (output
     * padding); w: natural 2*5 + 3 + 1 = 14, end pad 14 - 0 - 13 = 1.
     * 1D: natural 6 + 2*2 + 1 = 11, end pad 11 - 2 - 9 = 0. */
    snprintf(want, sizeof want,
            "{\"name\": \"padded\", \"label\": \"padded\", \"descriptor\": "
            "\"g2mb3ic4ih5iw6oc8oh12ow13kh3kw4sh2sw2ph1pw0npadded\", "
            "\"file\": \"%s\", \"line\": 3, \"mb\": 3, \"g\": 2, \"ic\": 4, "
            "\"oc\": 8, \"spatial_rank\": 2, \"axes\": \"hw\", \"i\": [5, 6], "
            "\"o\": [12, 13], \"k\": [3, 4], \"s\": [2, 2], \"p\": [1, 0], "
            "\"pad_end\": [-2, 1], \"d\": [0, 0], \"dilation\": [1, 1], "
            "\"natural\": [11, 14], \"depthwise\": false, \"flops\": %.17g}\n"
            "{\"name\": \"\", \"label\": \"mb1ic2iw7oc3ow9kw3pw2dw1\", "
            "\"descriptor\": \"mb1ic2iw7oc3ow9kw3pw2dw1\", \"file\": \"%s\", "
            "\"line\": 4, \"mb\": 1, \"g\": 1, \"ic\": 2, \"oc\": 3, "
            "\"spatial_rank\": 1, \"axes\": \"w\", \"i\": [7], \"o\": [9], "
            "\"k\": [3], \"s\": [1], \"p\": [2], \"pad_end\": [0], \"d\": [1], "
            "\"dilation\": [2], \"natural\": [11], \"depthwise\": false, "
            "\"flops\": %.17g}\n",
            path, bench_desc_flops(&list.v[0].d), path,
            bench_desc_flops(&list.v[1].d));
    cr_assert_str_eq(text, want);
    /* The 1D problem: every one of the 7 x 3 pairs lands except those
     * before the begin pad: y = x + 2k - 2 < 0 for (0,0), (1,0). */
    cr_assert_eq(bench_desc_flops(&list.v[1].d), 2.0 * 2 * 3 * (21 - 2));
    free(text);
    free(list.v);
    remove(path);
}
