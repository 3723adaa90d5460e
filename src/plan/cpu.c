/*
 * The vector instruction sets dgrad's own kernels use (the own loops, the
 * post-op pass, the f16 conversions), read from the CPU once and capped by
 * DGRAD_MAX_CPU_ISA: `avx512_core` leaves out AVX512_BF16, `avx2`
 * AVX-512, `baseline` every extension, any value at all leaves out AMX,
 * unset caps nothing. With it a test on an
 * AVX-512 machine runs the kernels an AVX2-only CPU runs (ctest
 * conform_own_loop_avx2, beside ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN's
 * own), since the development and CI machines change CPU between runs.
 */
#include "plan_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#endif

enum {
    CPU_AVX512F = 1,
    CPU_AVX512BW = 2,
    CPU_AVX2_FMA = 4,
    CPU_READ = 8,
    CPU_AVX512VL = 16,
    CPU_AVX512BF16 = 32,
    CPU_AVX512DQ = 64,
    CPU_AMX_BF16 = 128
};

#if defined(__x86_64__) && defined(__GNUC__)
/* Whether the CPU has AMX tiles with bf16 products (CPUID leaf 7: EDX
 * bits 24 and 22) and Linux lets this process use their state: a
 * process must ask for it (arch_prctl ARCH_REQ_XCOMP_PERM, 0x1023, for
 * XTILEDATA, state component 18) or its first tile instruction faults.
 * Asking again once granted succeeds, so oneDNN's own request (it asks
 * before running its AMX kernels) and this one do not interfere. */
static int amx_bf16_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 24)) || !(d & (1u << 22))) return 0;
#ifdef SYS_arch_prctl
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return 0;
#endif
}
#endif

static int cpu_features(void) {
    static atomic_int features = 0;
    int f = atomic_load(&features);
    if (f) return f;
    f = CPU_READ;
#if defined(__x86_64__) && defined(__GNUC__)
    const char *cap = getenv("DGRAD_MAX_CPU_ISA");
    int avx2 = !cap || strcmp(cap, "baseline") != 0;
    int avx512 = avx2 && (!cap || strcmp(cap, "avx2") != 0);
    /* "avx2": every AVX2 CPU has F16C, and GCC and Clang 14 both know
     * the name (Clang 14 does not know "f16c"). */
    if (avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        f |= CPU_AVX2_FMA;
    if (avx512 && __builtin_cpu_supports("avx512f")) {
        f |= CPU_AVX512F;
        if (__builtin_cpu_supports("avx512vl")) {
            f |= CPU_AVX512VL;
            if (__builtin_cpu_supports("avx512bw")) f |= CPU_AVX512BW;
        }
        if (__builtin_cpu_supports("avx512dq")) f |= CPU_AVX512DQ;
        if ((!cap || strcmp(cap, "avx512_core") != 0)
                && __builtin_cpu_supports("avx512bf16"))
            f |= CPU_AVX512BF16;
        /* AMX only uncapped: every cap names a CPU without it */
        if (!cap && (f & CPU_AVX512BW) && amx_bf16_usable())
            f |= CPU_AMX_BF16;
    }
#endif
    atomic_store(&features, f);
    return f;
}

int cpu_has_avx512f(void) { return (cpu_features() & CPU_AVX512F) != 0; }
int cpu_has_avx512bw(void) { return (cpu_features() & CPU_AVX512BW) != 0; }
int cpu_has_avx512vl(void) { return (cpu_features() & CPU_AVX512VL) != 0; }
int cpu_has_avx512dq(void) { return (cpu_features() & CPU_AVX512DQ) != 0; }
int cpu_has_avx2_fma(void) { return (cpu_features() & CPU_AVX2_FMA) != 0; }
int cpu_has_avx512_bf16(void) {
    return (cpu_features() & CPU_AVX512BF16) != 0;
}
int cpu_has_amx_bf16(void) { return (cpu_features() & CPU_AMX_BF16) != 0; }

/* The L1 data cache's ways, and the distance at which addresses share a
 * set (its size over its ways), as the C library reads them from the
 * CPU; where it cannot, 8 ways of 4 KiB (every x86-64 CPU of this
 * project's machines: getconf LEVEL1_DCACHE_ASSOC). */
int cpu_l1d_ways(void) {
#ifdef _SC_LEVEL1_DCACHE_ASSOC
    long w = sysconf(_SC_LEVEL1_DCACHE_ASSOC);
    if (w > 0) return (int)w;
#endif
    return 8;
}

/* sysconf's figure for @p name where it gives one (> 0), else
 * @p otherwise. */
static int64_t sysconf_or(int name, int64_t otherwise) {
    long v = sysconf(name);
    return v > 0 ? v : otherwise;
}

int64_t cpu_llc_bytes(void) {
#ifdef _SC_LEVEL3_CACHE_SIZE
    return sysconf_or(_SC_LEVEL3_CACHE_SIZE, (int64_t)32 << 20);
#else
    return (int64_t)32 << 20;
#endif
}

int64_t cpu_l2_bytes(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
    return sysconf_or(_SC_LEVEL2_CACHE_SIZE, (int64_t)512 << 10);
#else
    return (int64_t)512 << 10;
#endif
}

int64_t cpu_l1d_set_period(void) {
#if defined(_SC_LEVEL1_DCACHE_ASSOC) && defined(_SC_LEVEL1_DCACHE_SIZE)
    long w = sysconf(_SC_LEVEL1_DCACHE_ASSOC),
         size = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (w > 0 && size > 0 && size % w == 0) return size / w;
#endif
    return 4096;
}
