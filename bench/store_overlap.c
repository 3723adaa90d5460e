/*
 * dgrad_store_overlap: whether FMAs and the output's stores to memory
 * overlap, on synthetic work of the 3D example at 112^3's size (2.98
 * GFLOP, 112 MB of input read, 355 MB of output written), both threads
 * (bench/README.md, thirty-second look).
 *
 *   dgrad_store_overlap BLOCK_BYTES FMA_SCALE regs|l2 plain|stream MODE
 *
 * The output goes in blocks of BLOCK_BYTES; each block has its share of
 * the FMAs (times FMA_SCALE: 1 runs them at the FMA units' peak, about 3
 * at the rows kernel's rate), on registers alone (regs) or with one
 * 64-byte load from a 256 KiB buffer of the thread's (in L2) per 4 FMAs
 * (l2, as the kernel loads its input rows), and its stores, ordinary
 * (plain: each line read for ownership) or streaming (stream). MODE:
 * fmas or stores alone; free, each thread its half of the blocks, a
 * block's FMAs then its stores; split, one thread every block's stores
 * and the other half of the FMAs. Prints the fastest of 6 runs in ms.
 * x86-64 with AVX-512F only.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define IN_BYTES ((size_t)112394240)
#define OUT_BYTES ((size_t)354772832)
#define FLOPS 2.98e9
#define L2_FLOATS 65536

enum { FMAS, STORES, FREE, SPLIT };

typedef struct job {
    int th, mode, loads, stream;
    size_t block, blocks; /* floats a block, blocks in all */
    long fmas;            /* vector FMAs a block */
    const float *in, *l2;
    float *out;
    float sink;
} job_t;

#define AVX512 __attribute__((target("avx512f")))

/* Twelve independent chains: the FMA units' latency (4 cycles) times
 * their count (2 a cycle) is eight chains at least, and the loop keeps
 * them in registers only if they are named. */
AVX512 static __m512 fma_block(const job_t *j, long n, __m512 v) {
    __m512 a0 = v, a1 = v, a2 = v, a3 = v, a4 = v, a5 = v, a6 = v, a7 = v,
           a8 = v, a9 = v, a10 = v, a11 = v;
    __m512 x = _mm512_set1_ps(0.999f), y = x, z = x;
    const float *l2 = j->l2;
    long at = 0;
    for (long i = 0; i < n; i += 12) {
        if (j->loads) {
            x = _mm512_loadu_ps(l2 + at);
            y = _mm512_loadu_ps(l2 + at + 16);
            z = _mm512_loadu_ps(l2 + at + 32);
            at = (at + 48) & (L2_FLOATS - 64);
        }
        a0 = _mm512_fmadd_ps(a0, x, v);
        a1 = _mm512_fmadd_ps(a1, x, v);
        a2 = _mm512_fmadd_ps(a2, x, v);
        a3 = _mm512_fmadd_ps(a3, x, v);
        a4 = _mm512_fmadd_ps(a4, y, v);
        a5 = _mm512_fmadd_ps(a5, y, v);
        a6 = _mm512_fmadd_ps(a6, y, v);
        a7 = _mm512_fmadd_ps(a7, y, v);
        a8 = _mm512_fmadd_ps(a8, z, v);
        a9 = _mm512_fmadd_ps(a9, z, v);
        a10 = _mm512_fmadd_ps(a10, z, v);
        a11 = _mm512_fmadd_ps(a11, z, v);
    }
    a0 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
    a4 = _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7));
    a8 = _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11));
    return _mm512_add_ps(a0, _mm512_add_ps(a4, a8));
}

AVX512 static void store_block(const job_t *j, size_t b, __m512 v) {
    size_t in_n = IN_BYTES / sizeof(float) / j->blocks / 16 * 16;
    const float *src = j->in + b * in_n;
    for (size_t i = 0; i < in_n; i += 16)
        v = _mm512_add_ps(v, _mm512_loadu_ps(src + i));
    float *d = j->out + b * j->block;
    for (size_t i = 0; i + 16 <= j->block; i += 16) {
        if (j->stream)
            _mm512_stream_ps(d + i, v);
        else
            _mm512_storeu_ps(d + i, v);
    }
}

AVX512 static void *run(void *arg) {
    job_t *j = arg;
    __m512 v = _mm512_set1_ps(1.0f);
    size_t b0 = j->blocks * (size_t)j->th / 2,
           b1 = j->blocks * (size_t)(j->th + 1) / 2;
    if (j->mode == SPLIT) {
        if (j->th == 0)
            for (size_t b = 0; b < j->blocks; b++) store_block(j, b, v);
        else
            for (size_t b = 0; b < j->blocks; b++)
                v = fma_block(j, j->fmas / 2, v);
    } else {
        for (size_t b = b0; b < b1; b++) {
            if (j->mode != STORES) v = fma_block(j, j->fmas, v);
            if (j->mode != FMAS) store_block(j, b, v);
        }
    }
    if (j->stream) _mm_sfence(); /* the streamed lines reach memory */
    float lanes[16];
    _mm512_storeu_ps(lanes, v);
    j->sink = lanes[0];
    return NULL;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    static const char *modes[] = {"fmas", "stores", "free", "split"};
    int mode = -1;
    for (int m = 0; argc == 6 && m < 4; m++)
        if (!strcmp(argv[5], modes[m])) mode = m;
    long long block_bytes = argc == 6 ? atoll(argv[1]) : 0;
    double scale = argc == 6 ? atof(argv[2]) : 0;
    if (mode < 0 || block_bytes < 64 || block_bytes > (1LL << 26)
            || block_bytes % 64 || !(scale > 0 && scale < 100)
            || (strcmp(argv[3], "regs") && strcmp(argv[3], "l2"))
            || (strcmp(argv[4], "plain") && strcmp(argv[4], "stream"))) {
        fprintf(stderr, "usage: %s BLOCK_BYTES FMA_SCALE regs|l2 "
                "plain|stream fmas|stores|free|split\n"
                "  BLOCK_BYTES a multiple of 64 up to 64 MiB, FMA_SCALE "
                "in (0, 100)\n", argv[0]);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f")) {
        fprintf(stderr, "%s: needs AVX-512F\n", argv[0]);
        return 2;
    }
    size_t block = (size_t)block_bytes / sizeof(float),
           blocks = OUT_BYTES / sizeof(float) / block;
    long fmas = (long)(FLOPS / 2 / 16 / (double)blocks * scale) / 12 * 12;
    float *in = aligned_alloc(64, IN_BYTES),
          *out = aligned_alloc(64, blocks * block * sizeof(float)),
          *l2 = aligned_alloc(64, 2 * L2_FLOATS * sizeof(float));
    if (!in || !out || !l2) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        free(in);
        free(out);
        free(l2);
        return 1;
    }
    memset(in, 0, IN_BYTES);
    memset(out, 0, blocks * block * sizeof(float));
    for (size_t i = 0; i < 2 * L2_FLOATS; i++) l2[i] = 0.999f;
    double best = 0;
    for (int r = 0; r < 6; r++) {
        job_t j[2];
        pthread_t t[2];
        double t0 = now_ms();
        for (int th = 0; th < 2; th++) {
            j[th] = (job_t){th, mode, !strcmp(argv[3], "l2"),
                    !strcmp(argv[4], "stream"), block, blocks, fmas, in,
                    l2 + (size_t)th * L2_FLOATS, out, 0};
            pthread_create(&t[th], NULL, run, &j[th]);
        }
        for (int th = 0; th < 2; th++) pthread_join(t[th], NULL);
        double ms = now_ms() - t0;
        if (r == 0 || ms < best) best = ms;
    }
    printf("%s, blocks of %lld bytes, FMAs x%g on %s, %s stores: %.2f ms\n",
            argv[5], block_bytes, scale, argv[3], argv[4], best);
    free(in);
    free(out);
    free(l2);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "dgrad_store_overlap: x86-64 only\n");
    return 2;
}
#endif
