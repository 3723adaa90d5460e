/*
 * Every resource dgrad acquires goes through here: its heap allocations
 * and (through DGRAD_ACQUIRE) each oneDNN creation call whose failure it
 * handles. Builds with DGRAD_FAULT_INJECTION defined (the fault tests'
 * own build, tests/fault/) link src/fault_injection.c, where the Nth
 * acquisition after dgrad_fault_arm(N) fails as if memory had run out;
 * in every other build the check is the constant 0 and these are the C
 * library's functions.
 */
#ifndef DGRAD_ALLOC_H
#define DGRAD_ALLOC_H

#include <stdlib.h>
#include <string.h>

#ifdef DGRAD_FAULT_INJECTION
/* Counts one acquisition; 1 when it is the one armed to fail. */
int dgrad_fault_hit(void);
#else
static inline int dgrad_fault_hit(void) { return 0; }
#endif

static inline void *dgrad_malloc(size_t size) {
    return dgrad_fault_hit() ? NULL : malloc(size);
}

static inline void *dgrad_calloc(size_t count, size_t size) {
    return dgrad_fault_hit() ? NULL : calloc(count, size);
}

static inline void *dgrad_realloc(void *ptr, size_t size) {
    return dgrad_fault_hit() ? NULL : realloc(ptr, size);
}

/* @p size is rounded up to a multiple of @p alignment, as C11 wants. */
static inline void *dgrad_aligned_alloc(size_t alignment, size_t size) {
    if (dgrad_fault_hit()) return NULL;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    return aligned_alloc(alignment, rounded ? rounded : alignment);
}

static inline char *dgrad_strdup(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = dgrad_malloc(n);
    if (copy) memcpy(copy, text, n);
    return copy;
}

/* A oneDNN creation call that fails with dnnl_out_of_memory, without
 * being made, when fault injection picks it. */
#define DGRAD_ACQUIRE(call) (dgrad_fault_hit() ? dnnl_out_of_memory : (call))

/* A oneDNN primitive execution, which fault injection makes fail with
 * dnnl_runtime_error (without running it): the tests then see that the
 * steps before the one writing the caller's output leave it untouched. */
#define DGRAD_FALLIBLE(call) (dgrad_fault_hit() ? dnnl_runtime_error : (call))

#endif
