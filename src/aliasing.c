/*
 * Aliasing of strided layouts (see aliasing.h).
 *
 * Two indices i != j alias when sum_k (i_k - j_k) * s_k == 0. Four checks,
 * cheapest first:
 * - a stride 0 on an axis of two or more elements aliases at once;
 * - sorted by stride, a layout where every stride exceeds the largest
 *   offset the smaller-stride axes reach (dense, padded, permuted, blocked
 *   by hand ...) is free of aliasing: each axis steps past everything
 *   inside it;
 * - otherwise the strides interleave (e.g. dims 3x2, strides 2x3: offsets
 *   0 2 4 3 5 7, no alias; strides 2x2: 0 2 4 2 ..., alias). Two axes a, b
 *   alias on their own when the smallest steps with equal offsets,
 *   s_b/g on a and s_a/g on b (g = gcd), fit in their dims: exact for
 *   pairs, at any size;
 * - beyond pairs the only exact answer is to visit the offsets: a bitmap
 *   over the span marks each one, up to DGRAD_ALIASING_MAX_VISIT elements
 *   and as many addresses.
 */
#include "aliasing.h"

#include <string.h>

#include "alloc.h"

#define MAX_AXES 16

/* Offset of @p idx (ndims values). */
static int64_t offset_of(int ndims, const int64_t *idx,
        const int64_t *strides) {
    int64_t off = 0;
    for (int k = 0; k < ndims; k++) off += idx[k] * strides[k];
    return off;
}

/* Advances @p idx in row-major order; 0 after the last index. */
static int next_index(int ndims, const int64_t *dims, int64_t *idx) {
    for (int k = ndims - 1; k >= 0; k--) {
        if (++idx[k] < dims[k]) return 1;
        idx[k] = 0;
    }
    return 0;
}

/* Sets @p second to the first index (row-major) other than @p first with
 * the offset of @p first; the caller knows one exists. */
static void find_partner(int ndims, const int64_t *dims,
        const int64_t *strides, const int64_t *first, int64_t *second) {
    int64_t want = offset_of(ndims, first, strides);
    memset(second, 0, (size_t)ndims * sizeof *second);
    do {
        if (memcmp(second, first, (size_t)ndims * sizeof *first)
                && offset_of(ndims, second, strides) == want)
            return;
    } while (next_index(ndims, dims, second));
}

/* Visits every offset with a bitmap over the span. */
static dgrad_aliasing_t visit_all(int ndims, const int64_t *dims,
        const int64_t *strides, int64_t span, int64_t *first,
        int64_t *second) {
    uint8_t *seen = dgrad_calloc((size_t)(span / 8 + 1), 1);
    if (!seen) return dgrad_aliasing_no_memory;
    dgrad_aliasing_t result = dgrad_aliasing_none;
    memset(first, 0, (size_t)ndims * sizeof *first);
    do {
        int64_t off = offset_of(ndims, first, strides);
        uint8_t bit = (uint8_t)(1u << (off % 8));
        if (seen[off / 8] & bit) {
            find_partner(ndims, dims, strides, first, second);
            result = dgrad_aliasing_found;
            break;
        }
        seen[off / 8] |= bit;
    } while (next_index(ndims, dims, first));
    free(seen);
    return result;
}

/* Sorts the axes of two or more elements by stride into @p order;
 * returns their count, or -1 when one of them has stride 0 (its index in
 * @p zero_axis). */
static int sort_axes(int ndims, const int64_t *dims, const int64_t *strides,
        int *order, int *zero_axis) {
    int n = 0;
    for (int k = 0; k < ndims; k++) {
        if (dims[k] <= 1) continue;
        if (strides[k] == 0) {
            *zero_axis = k;
            return -1;
        }
        int j = n++;
        for (; j > 0 && strides[order[j - 1]] > strides[k]; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    return n;
}

/* Whether sorted axes nest; @p span receives the largest offset. */
static int axes_nest(int n, const int *order, const int64_t *dims,
        const int64_t *strides, int64_t *span) {
    int nested = 1;
    *span = 0;
    for (int j = 0; j < n; j++) {
        int k = order[j];
        if (strides[k] <= *span) nested = 0;
        *span += (dims[k] - 1) * strides[k];
    }
    return nested;
}

static int any_empty(int ndims, const int64_t *dims) {
    for (int k = 0; k < ndims; k++)
        if (dims[k] == 0) return 1;
    return 0;
}

int dgrad_layout_is_nested(int ndims, const int64_t *dims,
        const int64_t *strides) {
    int order[MAX_AXES], zero_axis;
    int64_t span;
    if (ndims < 1 || ndims > MAX_AXES || any_empty(ndims, dims)) return 1;
    int n = sort_axes(ndims, dims, strides, order, &zero_axis);
    return n >= 0 && axes_nest(n, order, dims, strides, &span);
}

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Two axes that alias on their own (strides > 0): witnesses set. */
static int pair_aliases(int ndims, const int64_t *dims, const int64_t *strides,
        int64_t *first, int64_t *second) {
    for (int a = 0; a < ndims; a++)
        for (int b = a + 1; b < ndims; b++) {
            if (dims[a] <= 1 || dims[b] <= 1) continue;
            int64_t g = gcd(strides[a], strides[b]);
            int64_t step_a = strides[b] / g, step_b = strides[a] / g;
            if (step_a < dims[a] && step_b < dims[b]) {
                first[a] = step_a;
                second[b] = step_b;
                return 1;
            }
        }
    return 0;
}

dgrad_aliasing_t dgrad_layout_find_alias(int ndims, const int64_t *dims,
        const int64_t *strides, int64_t *first, int64_t *second) {
    int order[MAX_AXES], zero_axis;
    int64_t span, count = 1;
    if (ndims < 1 || ndims > MAX_AXES || any_empty(ndims, dims))
        return dgrad_aliasing_none;
    for (int k = 0; k < ndims; k++) first[k] = second[k] = 0;
    int n = sort_axes(ndims, dims, strides, order, &zero_axis);
    if (n < 0) {
        second[zero_axis] = 1;
        return dgrad_aliasing_found;
    }
    if (axes_nest(n, order, dims, strides, &span)) return dgrad_aliasing_none;
    if (pair_aliases(ndims, dims, strides, first, second))
        return dgrad_aliasing_found;
    /* The dims product fits int64 (checked by the caller), so no partial
     * product overflows. */
    for (int k = 0; k < ndims; k++) count *= dims[k];
    if (count > DGRAD_ALIASING_MAX_VISIT || span >= DGRAD_ALIASING_MAX_VISIT)
        return dgrad_aliasing_unknown;
    return visit_all(ndims, dims, strides, span, first, second);
}
