/*
 * Whether a strided layout maps two in-bounds elements to one address.
 * No oneDNN, no dialects: plain index arithmetic on dims and strides.
 */
#ifndef DGRAD_ALIASING_H
#define DGRAD_ALIASING_H

#include <stdint.h>

typedef enum dgrad_aliasing {
    dgrad_aliasing_none = 0,     /* every element has its own address */
    dgrad_aliasing_found = 1,    /* two elements share one (witnesses given) */
    dgrad_aliasing_unknown = -1, /* interleaved strides over more elements
                                  * or addresses than the exhaustive check
                                  * visits */
    dgrad_aliasing_no_memory = -2, /* the exhaustive check's bitmap could
                                    * not be allocated */
} dgrad_aliasing_t;

/* Largest element count, and address span, the exhaustive check visits
 * (interleaved layouts that no pair of axes decides; nested layouts are
 * decided in O(ndims^2)). */
#define DGRAD_ALIASING_MAX_VISIT ((int64_t)1 << 24)

/*
 * Whether the layout is nested: ordered by stride, every axis of two or
 * more elements steps past the largest offset the smaller-stride axes
 * reach (dense, padded and permuted layouts are). A nested layout never
 * aliases; one that is not may or may not (dgrad_layout_find_alias
 * decides).
 */
int dgrad_layout_is_nested(int ndims, const int64_t *dims,
        const int64_t *strides);

/*
 * Decides whether the layout of @p ndims dims with non-negative @p strides
 * (in elements) aliases. When it does, @p first and @p second (ndims
 * values each) receive two different indices with the same offset.
 * Dims must be >= 0 and the largest offset must fit int64 (the dialect
 * layer checks both before).
 */
dgrad_aliasing_t dgrad_layout_find_alias(int ndims, const int64_t *dims,
        const int64_t *strides, int64_t *first, int64_t *second);

#endif
