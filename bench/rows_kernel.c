/*
 * dgrad_rows_kernel: one kernel of the rows loop (direct_avx2.c,
 * direct_avx512.c), both phases of stride 2 for a block of channels,
 * timed alone on synthetic terms, so that what limits it can be told from
 * what limits the whole loop (bench/README.md "What limits the rows loop
 * on AVX2").
 *
 *   dgrad_rows_kernel CB LEN ROWS EVEN [SPACING [padded|- [cold|- [KERNEL]]]]
 *
 * CB output channels (1-12), output rows of LEN, ROWS input rows read by
 * EVEN terms of the even phase and 2 x EVEN of the odd one (the odd
 * phase's second tap one position further, as stride 2 with 3 taps),
 * input rows SPACING floats apart (default: the row plus 64; a multiple
 * of 1024 puts every row in the same L1 sets, as the channel planes of
 * 224 x 224 do); `padded`: the kernel for padded copies (direct_stage.c:
 * every term read over whole steps, the long kernels from one step on);
 * `cold`: each call writes the next rows of 64 MiB planes instead of the
 * same cached row (an output beyond the last-level cache). KERNEL: the
 * AVX2 pair kernel by default; `shared`, the AVX2 kernel that loads each
 * run once for both phases (phase_shared_fn, CB up to 4, padded copies, a
 * CPU with AVX-512VL), the odd terms' m + 1 taps listed first, as
 * row_terms lists windows of 3 with an odd padding (DGRAD_MAX_CPU_ISA=avx2
 * refuses it, as it keeps the loop from it); `pair512` and `shared512`,
 * the AVX-512 kernels of those two kinds (CB up to 4, a CPU with
 * AVX-512F; shared512 on padded copies).
 * Prints GFLOP/s of one thread (useful multiply-adds only).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/direct_rows.h"

#if defined(__x86_64__) && defined(__GNUC__)
static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s CB LEN ROWS EVEN [SPACING [padded|- "
                "[cold|- [KERNEL]]]]\n",
                argv[0]);
        return 2;
    }
    int cb = atoi(argv[1]), rows = atoi(argv[3]), ne = atoi(argv[4]);
    int64_t len = atoll(argv[2]), count = (len + 1) / 2;
    int padded = argc > 6 && !strcmp(argv[6], "padded");
    int64_t end = padded ? direct_padded_end(count) : count;
    int64_t spacing = argc > 5 ? atoll(argv[5]) : end + 64;
    int no = 2 * ne;
    if (cb < 1 || cb > CO_BLOCK_WIDE || len < 2 || rows < 1 || ne < 1
            || no > 4096 || spacing < end + 1) {
        fprintf(stderr, "%s: CB 1-%d, LEN >= 2, ROWS >= 1, EVEN 1-2048, "
                "SPACING > LEN/2\n", argv[0], CO_BLOCK_WIDE);
        return 2;
    }
    size_t in_n = (size_t)(rows * spacing + 64);
    float *in = aligned_alloc(64, (in_n * sizeof(float) + 63) / 64 * 64);
    term_t *te = calloc((size_t)ne, sizeof *te),
           *to = calloc((size_t)no, sizeof *to);
    float *dst[CO_BLOCK_WIDE], bias[CO_BLOCK_WIDE] = {0};
    if (!in || !te || !to) return 1;
    for (size_t i = 0; i < in_n; i++) in[i] = (float)(i % 7) * 0.1f;
    for (int k = 0; k < ne; k++) {
        te[k].off = (k % rows) * spacing;
        te[k].lo = 0;
        te[k].hi = end;
        for (int j = 0; j < CO_BLOCK_WIDE; j++) te[k].w[j] = 0.01f * j;
    }
    for (int k = 0; k < no; k++) { /* taps at m + 1, then at m */
        int next = k < ne;
        to[k].off = (k % ne % rows) * spacing + next;
        to[k].lo = 0;
        to[k].hi = padded ? end : count - next;
        for (int j = 0; j < CO_BLOCK_WIDE; j++) to[k].w[j] = 0.01f * j;
    }
    int cold = argc > 7 && !strcmp(argv[7], "cold");
    int64_t plane = cold ? ((int64_t)64 << 20) / 4 / cb : len + 64;
    for (int j = 0; j < cb; j++)
        if (!(dst[j] = aligned_alloc(64, (size_t)plane * 4))) return 1;
    for (int j = 0; cold && j < cb; j++) memset(dst[j], 0, (size_t)plane * 4);
    const char *kernel = argc > 8 ? argv[8] : "pair";
    int avx512 = !strcmp(kernel, "pair512") || !strcmp(kernel, "shared512");
    int sharing = !strcmp(kernel, "shared") || !strcmp(kernel, "shared512");
    if (!avx512 && !sharing && strcmp(kernel, "pair")) {
        fprintf(stderr, "%s: KERNEL: pair, shared, pair512 or shared512\n",
                argv[0]);
        return 2;
    }
    if (avx512 && ((!sharing && cb > CO_BLOCK) || !cpu_has_avx512f())) {
        fprintf(stderr, "%s: %s: CB 1-%d, AVX-512F\n", argv[0], kernel,
                CO_BLOCK);
        return 2;
    }
    phase_pair_fn pair = avx512 ? direct_avx512_pair(0, cb)
                                : direct_avx2_pair(0, cb, count, padded);
    phase_shared_fn shared = !sharing ? NULL
            : avx512                  ? direct_avx512_pair_shared(0, cb, 0)
                                      : direct_avx2_pair_shared(0, cb, 0);
    if (sharing && (!shared || !padded || (!avx512 && !cpu_has_avx512vl()))) {
        fprintf(stderr, "%s: %s: CB 1-%d, padded, AVX-512VL\n", argv[0],
                kernel, SHARED_CO_BLOCK);
        return 2;
    }
    double flops_per_call = 2.0 * cb * (ne + no) * (double)count;
    long calls = (long)(4e9 / flops_per_call) + 1;
    terms_span_t ce = direct_terms_common(te, ne),
                 co = direct_terms_common(to, no);
    void *out[CO_BLOCK_WIDE];
    for (int j = 0; j < cb; j++) out[j] = dst[j];
    pair(in, te, ne, ce, to, no, co, bias, NULL, len, out);
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = seconds();
        int64_t at = 0;
        for (long i = 0; i < calls; i++) {
            if (cold) {
                at = at + 2 * len > plane ? 0 : at + len;
                for (int j = 0; j < cb; j++) out[j] = dst[j] + at;
            }
            if (shared)
                shared(in, te, ne, to, ne, bias, NULL, len, out);
            else
                pair(in, te, ne, ce, to, no, co, bias, NULL, len, out);
        }
        double rate = flops_per_call * (double)calls / (seconds() - t0);
        if (rate > best) best = rate;
    }
    printf("cb %d, rows of %lld, %d + %d terms on %d input rows %lld floats "
           "apart%s, %s: %.1f GFLOP/s\n", cb, (long long)len, ne, no, rows,
            (long long)spacing, padded ? ", padded" : "", kernel,
            best * 1e-9);
    for (int j = 0; j < cb; j++) free(dst[j]);
    free(te);
    free(to);
    free(in);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "dgrad_rows_kernel: x86-64 with GCC or Clang only\n");
    return 2;
}
#endif
