/*
 * dgrad_sgemm_bands: oneDNN's sgemm on the products of a transposed
 * convolution's columns (M = output channels x taps, K = input channels
 * of a group, COLS input positions), either as one product whose threads
 * oneDNN runs inside it (BAND 0), or as products of BAND columns shared
 * out over the OpenMP threads, one thread each, as the gemm rows loop
 * makes them (src/plan/direct_gemm_rows.c; bench/README.md, thirty-first
 * look).
 *
 *   dgrad_sgemm_bands M K COLS BAND
 *
 * Prints the fastest of 5 runs in ms and GFLOP/s.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s M K COLS BAND\n", argv[0]);
        return 2;
    }
    long long m = atoll(argv[1]), k = atoll(argv[2]), cols = atoll(argv[3]),
              band = atoll(argv[4]);
    if (m < 1 || k < 1 || cols < 1 || band < 0 || m > (1 << 16)
            || k > (1 << 16) || cols > (1LL << 28) || band > cols) {
        fprintf(stderr, "%s: M, K 1-65536, COLS 1-2^28, BAND 0-COLS\n",
                argv[0]);
        return 2;
    }
#ifdef _OPENMP
    int nt = omp_get_max_threads();
#else
    int nt = 1;
#endif
    long long c_cols = band ? band * nt : cols;
    float *a = malloc(sizeof(float) * (size_t)(m * k)),
          *b = malloc(sizeof(float) * (size_t)(k * cols)),
          *c = malloc(sizeof(float) * (size_t)(m * c_cols));
    if (!a || !b || !c) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        free(a);
        free(b);
        free(c);
        return 1;
    }
    for (long long i = 0; i < m * k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (long long i = 0; i < k * cols; i++) b[i] = (float)(i % 5) * 0.1f;
    double best = 0;
    int failed = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now_ms();
        if (!band) {
            failed |= dnnl_sgemm('T', 'N', m, cols, k, 1.0f, a, m, b, cols,
                    0.0f, c, cols) != dnnl_success;
        } else {
#pragma omp parallel reduction(| : failed)
            {
#ifdef _OPENMP
                int t = omp_get_thread_num();
#else
                int t = 0;
#endif
                float *mine = c + m * band * t;
                for (long long p0 = band * t; p0 < cols; p0 += band * nt) {
                    long long n = p0 + band > cols ? cols - p0 : band;
                    failed |= dnnl_sgemm('T', 'N', m, n, k, 1.0f, a, m,
                            b + p0, cols, 0.0f, mine, n) != dnnl_success;
                }
            }
        }
        double ms = now_ms() - t0;
        if (r == 0 || ms < best) best = ms;
    }
    if (failed) fprintf(stderr, "%s: dnnl_sgemm failed\n", argv[0]);
    else
        printf("M %lld, K %lld, %lld columns, %s: %.2f ms, %.1f GFLOP/s\n",
                m, k, cols, band ? "bands shared out" : "one product", best,
                2.0 * (double)m * (double)k * (double)cols / best * 1e-6);
    free(a);
    free(b);
    free(c);
    return failed;
}
