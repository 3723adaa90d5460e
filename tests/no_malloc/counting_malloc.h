/*
 * Allocation counting for the no-allocation tests: a program that
 * includes this (once) replaces the process's allocation functions; with
 * the executable's symbols exported (CMake's ENABLE_EXPORTS), the
 * libraries' calls bind to them too. `allocations` counts every call.
 * Not for sanitized builds: sanitizers replace malloc themselves.
 */
#ifndef DGRAD_TESTS_COUNTING_MALLOC_H
#define DGRAD_TESTS_COUNTING_MALLOC_H

#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static size_t allocations;

static void count_one(void) {
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
    count_one();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_one();
    return __libc_calloc(count, size);
}

void *realloc(void *p, size_t size) {
    count_one();
    return __libc_realloc(p, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **p, size_t alignment, size_t size) {
    count_one();
    void *block = __libc_memalign(alignment, size);
    if (!block) return ENOMEM;
    *p = block;
    return 0;
}

#endif
