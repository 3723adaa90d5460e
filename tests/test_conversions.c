/*
 * The vector conversions of contiguous runs (src/plan/convert.c: AVX-512,
 * F16C and AVX2 paths, whichever this CPU has; ctests conversions_avx2
 * and conversions_baseline run the narrower ones): bit for bit what the
 * scalar code of dtype.h gives, on the values where rounding is decided
 * (ties to even either way, the largest values that still round to a
 * finite number, subnormals, signaling and quiet NaNs, infinities, signed
 * zeros) and on random ones, in runs of every length up to 3 vectors of
 * 16 and at every start within a vector, so that the vector body and the
 * scalar tail both take each value. The scalar code itself is checked
 * against known encodings here too, and the rows loop's AVX2 kernels
 * that round 16-bit output as they store it against the scalar code on
 * the same values.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "plan/direct_rows.h"
#include "plan/plan_impl.h"

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f32 bit patterns where bf16 or f16 rounding is decided. */
static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u,
        0x3f808000u, /* bf16 tie, even below: 0x3f80 */
        0x3f818000u, /* bf16 tie, odd below: 0x3f82 */
        0x3f808001u, 0x3f807fffu, 0x7f7fffffu, 0xff7fffffu,
        0x7f7f8000u, /* rounds to bf16 inf */
        0x7f800000u, 0xff800000u, 0x7f800001u, /* signaling NaN */
        0x7fffffffu, 0xffff8000u, /* NaNs that rounding would carry out of */
        0x7fc00000u, 0xffc00000u, 0x7fa00000u, 0x00000001u, 0x807fffffu,
        0x3f801000u, /* f16 tie, even below: 0x3c00 */
        0x3f803000u, /* f16 tie, odd below: 0x3c02 */
        0x477fe000u, /* f16 65504, the largest */
        0x477ff000u, /* f16 tie to inf */
        0x477fefffu, 0x38800000u, /* f16 smallest normal */
        0x33000000u, /* half the smallest f16 subnormal: to 0 */
        0x33000001u, 0x33c00000u, 0x387fc000u, 0xb3800000u};
#define NSPECIAL (sizeof special / sizeof special[0])

static void check_runs(dgrad_data_type_t dt) {
    enum { LEN = 48 + 15 };
    float src[LEN + 16];
    uint16_t got[LEN + 16];
    float back[LEN + 16];
    srand(7);
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < LEN + 16; i++)
            src[i] = round < 2 ? from_bits(special[(size_t)(i + round * 5)
                                                   % NSPECIAL])
                               : from_bits((uint32_t)rand() << 1
                                         ^ (uint32_t)rand());
        for (int start = 0; start < 16; start++)
            for (int n = 0; n <= 48; n += (n < 20 ? 1 : 7)) {
                memset(got, 0xa5, sizeof got);
                convert_run_from_f32(dt, src + start, got, n);
                for (int i = 0; i < n; i++) {
                    float f = src[start + i];
                    uint16_t want = dt == dgrad_bf16 ? dgrad_f32_to_bf16(f)
                                                     : dgrad_f32_to_f16(f);
                    uint32_t u;
                    memcpy(&u, &f, 4);
                    cr_assert_eq(got[i], want,
                            "%s from f32 0x%08x (run of %d from %d, element "
                            "%d): got 0x%04x, want 0x%04x",
                            dgrad_data_type_name(dt), u, n, start, i, got[i],
                            want);
                }
                cr_assert_eq(got[n], 0xa5a5, "wrote past the run of %d", n);
                memset(back, 0xa5, sizeof back);
                convert_run_to_f32(dt, got, back, n);
                for (int i = 0; i < n; i++) {
                    float want = dt == dgrad_bf16 ? dgrad_bf16_to_f32(got[i])
                                                  : dgrad_f16_to_f32(got[i]);
                    cr_assert(!memcmp(&back[i], &want, 4),
                            "%s 0x%04x to f32: got %a, want %a",
                            dgrad_data_type_name(dt), got[i],
                            (double)back[i], (double)want);
                }
            }
    }
}

Test(conversions, vector_runs_round_as_the_scalar_code) {
    check_runs(dgrad_bf16);
    check_runs(dgrad_f16);
}

Test(conversions, the_scalar_code_gives_the_known_encodings) {
    const struct {
        uint32_t f32;
        uint16_t bf16, f16;
    } known[] = {{0x3f800000u, 0x3f80, 0x3c00}, {0x3f808000u, 0x3f80, 0x3c04},
            {0x3f818000u, 0x3f82, 0x3c0c}, {0x7f800001u, 0x7fc0, 0x7e00},
            {0x7f7f8000u, 0x7f80, 0x7c00}, {0x477fe000u, 0x4780, 0x7bff},
            {0x477ff000u, 0x4780, 0x7c00}, {0x33000000u, 0x3300, 0x0000},
            {0x33000001u, 0x3300, 0x0001}, {0x80000000u, 0x8000, 0x8000},
            {0x3f801000u, 0x3f80, 0x3c00}, {0x3f803000u, 0x3f80, 0x3c02}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        float f = from_bits(known[i].f32);
        cr_assert_eq(dgrad_f32_to_bf16(f), known[i].bf16,
                "bf16 of 0x%08x: 0x%04x, want 0x%04x", known[i].f32,
                dgrad_f32_to_bf16(f), known[i].bf16);
        cr_assert_eq(dgrad_f32_to_f16(f), known[i].f16,
                "f16 of 0x%08x: 0x%04x, want 0x%04x", known[i].f32,
                dgrad_f32_to_f16(f), known[i].f16);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The AVX2 kernels for both phases of stride 2 that round into bf16 or
 * f16 rows as they store them (src/plan/direct_avx2.c), every block width
 * and kernel length, on rows and unpadded: each output is one term, the
 * channel's power-of-two weight times one input value (so the f32 sum
 * is exact or rounded once, as in C), rounded bit for bit as the scalar
 * code rounds it; nothing written past the row. */
static void check_rounding_kernels(dgrad_data_type_t dt) {
    enum { IN = 4096, ODD = 2048, LEN_MAX = 700 };
    static float in[IN];
    static uint16_t rows[CO_BLOCK_WIDE][LEN_MAX + 16];
    srand(11);
    for (int i = 0; i < IN; i++)
        in[i] = i % 3 ? from_bits(special[(size_t)i / 3 % NSPECIAL])
                      : from_bits((uint32_t)rand() << 1 ^ (uint32_t)rand());
    static const int64_t lens[] = {1, 2, 15, 16, 17, 33, 63, 64, 65, 127,
            130, 255, 256, 257, 511, 513, 700};
    for (int cb = 1; cb <= CO_BLOCK_WIDE; cb++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int padded = 0; padded < 2; padded++) {
                int64_t len = lens[li], count = (len + 1) / 2;
                term_t te = {.off = 0, .lo = 0,
                        .hi = padded ? direct_padded_end(count) : count},
                       to = te;
                to.off = ODD;
                float bias[CO_BLOCK_WIDE] = {0};
                void *dst[CO_BLOCK_WIDE];
                for (int j = 0; j < cb; j++) {
                    te.w[j] = to.w[j] = ldexpf(1, -j);
                    dst[j] = rows[j];
                }
                memset(rows, 0xa5, sizeof rows);
                terms_span_t span = {te.lo, te.hi};
                direct_avx2_pair_rounding(dt == dgrad_bf16 ? 1 : 2, cb,
                        count, padded)(in, &te, 1, span, &to, 1, span, bias,
                        NULL, len, dst);
                for (int j = 0; j < cb; j++) {
                    for (int64_t x = 0; x < len; x++) {
                        float v = in[(x & 1) * ODD + x / 2],
                              sum = 0.0f + te.w[j] * v;
                        uint16_t want = dt == dgrad_bf16
                                ? dgrad_f32_to_bf16(sum)
                                : dgrad_f32_to_f16(sum);
                        uint32_t u;
                        memcpy(&u, &sum, 4);
                        cr_assert_eq(rows[j][x], want,
                                "%s, %d channels, row of %lld%s, channel "
                                "%d at %lld: f32 0x%08x rounded to 0x%04x, "
                                "want 0x%04x",
                                dgrad_data_type_name(dt), cb, (long long)len,
                                padded ? " padded" : "", j, (long long)x, u,
                                rows[j][x], want);
                    }
                    cr_assert_eq(rows[j][len], 0xa5a5,
                            "%d channels: wrote past the row of %lld", cb,
                            (long long)len);
                }
            }
}

Test(conversions, kernels_round_their_output_as_the_scalar_code) {
    if (!cpu_has_avx2_fma()) return; /* the portable loop writes f32 */
    check_rounding_kernels(dgrad_bf16);
    check_rounding_kernels(dgrad_f16);
}
#endif
