/* Thread-local error message shared by every layer. */
#ifndef DGRAD_ERROR_H
#define DGRAD_ERROR_H

#include "dgrad/dgrad.h"

/* Records @p status with a printf-style message for the calling thread and
 * returns @p status, so callers can write `return dgrad_error(...)`. */
dgrad_status_t dgrad_error(dgrad_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's message (called at the start of API calls). */
void dgrad_error_clear(void);

/* Names the op in the calling thread's message: a message that starts with
 * "<kind>: " becomes "<kind> '<name>': ...", any other gets
 * "<kind> '<name>': " in front. Nothing changes when @p name is NULL or
 * empty. The message keeps its bound: a long one loses its tail. */
void dgrad_error_name_op(const char *kind, const char *name);

/* Formats up to @p n int64 values as "a,b,c" into @p buf (for messages). */
const char *dgrad_format_dims(char *buf, size_t buf_size, const int64_t *v,
        int n);

#endif
