/*
 * What dgrad's own loops written once for every CPU share (direct_dw.c,
 * direct_blocks.c): GCC's vector extension at each target's own width
 * (16 floats for AVX-512, 8 for AVX2, 4 for the baseline; wider vectors
 * than the target's registers compile to spills: 40x slower on AVX2),
 * and the chain's leading ReLU or Clamp applied to a vector. Macros,
 * not functions: a function taking or returning a vector would change
 * the ABI between targets.
 */
#ifndef DGRAD_PLAN_DIRECT_VEC_H
#define DGRAD_PLAN_DIRECT_VEC_H

#include <stdint.h>
#include <string.h>

#include "plan_impl.h"

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

#define V_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define V_STORE(p, v) memcpy((p), &(v), sizeof(v))
/* m ? x : y, lane by lane (m: all ones or zero) */
#define V_SELECT(VF, VI, m, x, y)                                             \
    ((VF)(((VI)(x) & (m)) | ((VI)(y) & ~(m))))
/* x > 0 ? x : alpha x; Clamp: x < min ? min : x > max ? max : x (NaN
 * stays) */
#define V_EPILOGUE(VF, VI, ep, v)                                             \
    do {                                                                      \
        VF lo_ = (VF){0} + (ep)->a;                                           \
        if ((ep)->clip) {                                                     \
            VF hi_ = (VF){0} + (ep)->b;                                       \
            v = V_SELECT(VF, VI, v < lo_, lo_,                                \
                    V_SELECT(VF, VI, v > hi_, hi_, v));                       \
        } else {                                                              \
            v = V_SELECT(VF, VI, v > (VF){0}, v, lo_ * v);                    \
        }                                                                     \
    } while (0)

static inline float scalar_epilogue(const epilogue_t *ep, float v) {
    if (ep->clip) return v < ep->a ? ep->a : v > ep->b ? ep->b : v;
    return v > 0.0f ? v : ep->a * v;
}

#endif
