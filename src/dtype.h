/* Element types: sizes, names and scalar conversions (no oneDNN). */
#ifndef DGRAD_DTYPE_H
#define DGRAD_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "dgrad/dgrad.h"

/* bf16 <-> f32: round to nearest even, NaN kept quiet. */
static inline uint16_t dgrad_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float dgrad_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16 <-> f32, round to nearest even, subnormals and inf/NaN. */
static inline float dgrad_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t dgrad_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    /* NaN: quiet, the payload's top bits kept, as F16C and AVX-512 do */
    if (absu > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((absu >> 13) & 0x3ffu));
    if (absu >= 0x477ff000u) return sign | 0x7c00u; /* overflow -> inf */
    if (absu < 0x38800000u) { /* result subnormal or zero */
        if (absu < 0x33000000u) return sign; /* below half the smallest */
        uint32_t e = absu >> 23;
        uint32_t m = (absu & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t half = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u);
    return (uint16_t)(sign | (((r >> 13) - (112u << 10)) & 0xffffu));
}

/* Loads element @p i of a buffer of type @p dt as double (f32/bf16/f16). */
static inline double dgrad_load(const void *base, dgrad_data_type_t dt,
        int64_t i) {
    switch (dt) {
        case dgrad_f32: return ((const float *)base)[i];
        case dgrad_bf16: return dgrad_bf16_to_f32(((const uint16_t *)base)[i]);
        case dgrad_f16: return dgrad_f16_to_f32(((const uint16_t *)base)[i]);
        case dgrad_s32: return ((const int32_t *)base)[i];
        case dgrad_s64: return (double)((const int64_t *)base)[i];
        default: return 0.0;
    }
}

/* Stores @p v (rounded to f32 first, then to the type) as element @p i. */
static inline void dgrad_store(void *base, dgrad_data_type_t dt, int64_t i,
        double v) {
    float f = (float)v;
    switch (dt) {
        case dgrad_f32: ((float *)base)[i] = f; break;
        case dgrad_bf16: ((uint16_t *)base)[i] = dgrad_f32_to_bf16(f); break;
        case dgrad_f16: ((uint16_t *)base)[i] = dgrad_f32_to_f16(f); break;
        default: break;
    }
}

/* Unit roundoff of a floating type (half the machine epsilon). */
static inline double dgrad_data_type_unit_roundoff(dgrad_data_type_t dt) {
    switch (dt) {
        case dgrad_bf16: return 1.0 / 256.0;
        case dgrad_f16: return 1.0 / 2048.0;
        default: return 1.0 / 16777216.0;
    }
}

#endif
