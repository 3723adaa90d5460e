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

/* Formats up to @p n int64 values as "a,b,c" into @p buf (for messages). */
const char *dgrad_format_dims(char *buf, size_t buf_size, const int64_t *v,
        int n);

#endif
