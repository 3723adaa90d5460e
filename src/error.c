#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char error_message[1024];

dgrad_status_t dgrad_error(dgrad_status_t status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, args);
    va_end(args);
    return status;
}

void dgrad_error_clear(void) { error_message[0] = '\0'; }

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
