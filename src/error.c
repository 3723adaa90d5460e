#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char error_message[1024];

dgrad_status_t dgrad_error(dgrad_status_t status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, args);
    va_end(args);
    return status;
}

void dgrad_error_clear(void) { error_message[0] = '\0'; }

void dgrad_error_name_op(const char *kind, const char *name) {
    if (!name || !*name) return;
    size_t kind_len = strlen(kind);
    const char *rest = error_message;
    if (!strncmp(rest, kind, kind_len) && rest[kind_len] == ':'
            && rest[kind_len + 1] == ' ')
        rest += kind_len + 2;
    char named[sizeof error_message];
    /* A message that no longer fits is cut, as dgrad_error cuts. */
    if (snprintf(named, sizeof named, "%s '%s': %s", kind, name, rest) < 0)
        return;
    memcpy(error_message, named, sizeof named);
}

const char *dgrad_last_error_message(void) { return error_message; }

const char *dgrad_format_dims(char *buf, size_t buf_size, const int64_t *v,
        int n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < buf_size; i++) {
        int w = snprintf(buf + used, buf_size - used, i ? ",%lld" : "%lld",
                (long long)v[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

const char *dgrad_status_name(dgrad_status_t status) {
    switch (status) {
        case dgrad_success: return "success";
        case dgrad_out_of_memory: return "out_of_memory";
        case dgrad_invalid_arguments: return "invalid_arguments";
        case dgrad_unimplemented: return "unimplemented";
        case dgrad_invalid_shape: return "invalid_shape";
        case dgrad_invalid_data_type: return "invalid_data_type";
        case dgrad_runtime_error: return "runtime_error";
        case dgrad_abi_mismatch: return "abi_mismatch";
    }
    return "unknown_status";
}
