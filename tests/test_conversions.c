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
 * against known encodings here too.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
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
