/*
 * dgrad_memory_floor: how long the memory alone takes for what a memory
 * bound problem must move, one thread per online CPU, so that a loop's
 * time can be split into that floor and the rest (bench/README.md,
 * thirty-first look: the 3D example at 112^3).
 *
 *   dgrad_memory_floor READ_BYTES WRITE_BYTES [plain|stream]
 *
 * Each thread reads its share of READ_BYTES and then writes its share of
 * WRITE_BYTES, with ordinary stores (plain: each line read for ownership
 * first) or streaming ones (stream). Both buffers are touched before the
 * timing. Prints the fastest of 8 runs in ms. x86-64 only (SSE streaming
 * stores, which every x86-64 CPU has).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

typedef struct share {
    const float *in;
    float *out;
    size_t in_n, out_n; /* floats, multiples of 4 */
    int stream;
    float sum;
} share_t;

static void *run_share(void *arg) {
    share_t *s = arg;
    __m128 acc = _mm_setzero_ps(), v = _mm_set1_ps(1.0f);
    for (size_t i = 0; i < s->in_n; i += 4)
        acc = _mm_add_ps(acc, _mm_load_ps(s->in + i));
    if (s->stream)
        for (size_t i = 0; i < s->out_n; i += 4) _mm_stream_ps(s->out + i, v);
    else
        for (size_t i = 0; i < s->out_n; i += 4) _mm_store_ps(s->out + i, v);
    _mm_sfence();
    float lanes[4];
    _mm_storeu_ps(lanes, acc);
    s->sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    return NULL;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "plain") != 0
                                && strcmp(argv[3], "stream") != 0)) {
        fprintf(stderr, "usage: %s READ_BYTES WRITE_BYTES [plain|stream]\n",
                argv[0]);
        return 2;
    }
    size_t in_n = (size_t)strtoull(argv[1], NULL, 10) / 64 * 16,
           out_n = (size_t)strtoull(argv[2], NULL, 10) / 64 * 16;
    int stream = argc > 3 && !strcmp(argv[3], "stream");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    float *in = aligned_alloc(64, in_n * sizeof *in + 64),
          *out = aligned_alloc(64, out_n * sizeof *out + 64);
    if (!in || !out) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        free(in);
        free(out);
        return 1;
    }
    memset(in, 0, in_n * sizeof *in);
    memset(out, 0, out_n * sizeof *out);
    double best = 0;
    float sum = 0;
    for (int r = 0; r < 8; r++) {
        pthread_t th[64];
        share_t sh[64];
        int joined[64];
        double t0 = now_ms();
        for (int t = 0; t < nt; t++) {
            /* shares of whole 64-byte lines */
            size_t ia = in_n / 16 * t / nt * 16, ib = in_n / 16 * (t + 1) / nt * 16,
                   oa = out_n / 16 * t / nt * 16,
                   ob = out_n / 16 * (t + 1) / nt * 16;
            sh[t] = (share_t){in + ia, out + oa, ib - ia, ob - oa, stream, 0};
            joined[t] = pthread_create(&th[t], NULL, run_share, &sh[t]) == 0;
            if (!joined[t]) run_share(&sh[t]);
        }
        for (int t = 0; t < nt; t++) {
            if (joined[t]) pthread_join(th[t], NULL);
            sum += sh[t].sum;
        }
        double ms = now_ms() - t0;
        if (r == 0 || ms < best) best = ms;
    }
    printf("%d threads, read %.1f MB, write %.1f MB (%s stores): %.2f ms%s\n",
            nt, (double)in_n * 4e-6, (double)out_n * 4e-6,
            stream ? "streaming" : "ordinary", best, sum != 0 ? " " : "");
    free(in);
    free(out);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "dgrad_memory_floor: x86-64 only\n");
    return 2;
}
#endif
