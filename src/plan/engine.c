/*
 * The CPU engine, the failures of the oneDNN layer and their messages, and
 * the checks a canonical problem passes before oneDNN sees it.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "alloc.h"
#include "error.h"

static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
dnnl_engine_t engine;
atomic_long live_plans;

/* Creates the CPU engine at the first planning; a failed creation is
 * tried again at the next one. */
dnnl_status_t engine_init(void) {
    static int exit_handler;
    dnnl_status_t s = dnnl_success;
    pthread_mutex_lock(&engine_lock);
    if (!engine) {
        s = DGRAD_ACQUIRE(dnnl_engine_create(&engine, dnnl_cpu, 0));
        if (s != dnnl_success) engine = NULL;
    }
    /* Release cached plans (and the engine) at exit so leak checkers see
     * a clean process. */
    if (engine && !exit_handler) exit_handler = atexit(cache_clear_at_exit) == 0;
    pthread_mutex_unlock(&engine_lock);
    return s;
}

/* A failure during planning that is not about the candidate (out of
 * memory, or a primitive that fails to run on the scratch buffers) does
 * not make the search skip to another candidate: the caller would get a
 * plan that depends on memory pressure, and fault-injection tests could
 * not see the failure. The planning fails as a whole. Each acquisition
 * and execution in the oneDNN layer reports through these. */
static _Thread_local dnnl_status_t planning_failure;

dnnl_status_t acquired(dnnl_status_t s) {
    if (s == dnnl_out_of_memory) planning_failure = s;
    return s;
}

void planning_reset(void) { planning_failure = dnnl_success; }

dnnl_status_t planning_failed(void) { return planning_failure; }

void planning_fail(dnnl_status_t s) { planning_failure = s; }

void *allocated(void *p) {
    if (!p) planning_failure = dnnl_out_of_memory;
    return p;
}

dnnl_data_type_t to_dnnl_dt(dgrad_data_type_t dt) {
    switch (dt) {
        case dgrad_f32: return dnnl_f32;
        case dgrad_bf16: return dnnl_bf16;
        case dgrad_f16: return dnnl_f16;
        default: return dnnl_data_type_undef;
    }
}

void describe_problem(const dgrad_problem_t *p, char *buf,
        size_t size) {
    char x[64], k[64], s[64], d[64], pb[64], y[64];
    snprintf(buf, size,
            "%s N=%lld G=%lld Cin=%lld Cout=%lld X=%s K=%s S=%s D=%s "
            "PB=%s Y=%s",
            dgrad_data_type_name(p->dt), (long long)p->N, (long long)p->G,
            (long long)p->Cin, (long long)p->Cout,
            dgrad_format_dims(x, sizeof x, p->X, p->nsp),
            dgrad_format_dims(k, sizeof k, p->K, p->nsp),
            dgrad_format_dims(s, sizeof s, p->S, p->nsp),
            dgrad_format_dims(d, sizeof d, p->D, p->nsp),
            dgrad_format_dims(pb, sizeof pb, p->PB, p->nsp),
            dgrad_format_dims(y, sizeof y, p->Y, p->nsp));
}

/* Maps a oneDNN failure to a dgrad status with a message naming the step,
 * the problem and the oneDNN status. */
dgrad_status_t dnnl_fail_as(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what, dgrad_status_t otherwise) {
    char desc[512];
    describe_problem(p, desc, sizeof desc);
    dgrad_status_t st = s == dnnl_out_of_memory ? dgrad_out_of_memory
            : s == dnnl_unimplemented ? dgrad_unimplemented
            : otherwise;
    return dgrad_error(st, "oneDNN %s failed (%s) for %s", what,
            dnnl_status2str(s), desc);
}

dgrad_status_t dnnl_fail(const dgrad_problem_t *p, dnnl_status_t s,
        const char *what) {
    return dnnl_fail_as(p, s, what, dgrad_runtime_error);
}

dgrad_status_t check_problem(const dgrad_problem_t *p) {
    int ok = p->nsp >= 1 && p->nsp <= DGRAD_MAX_SPATIAL && p->G >= 1
            && p->N >= 0 && p->Cin >= 0 && p->Cout >= 0
            && p->Cin % p->G == 0 && p->Cout % p->G == 0
            && to_dnnl_dt(p->dt) != dnnl_data_type_undef;
    for (int i = 0; ok && i < p->nsp; i++)
        ok = p->S[i] >= 1 && p->D[i] >= 1 && p->K[i] >= 1 && p->Y[i] >= 0;
    for (int i = 0; ok && i < 2 + p->nsp; i++)
        ok = p->in_strides[i] >= 0 && p->out_strides[i] >= 0
                && p->wei_strides[i] >= 0 && p->wei_strides[i + 1] >= 0;
    ok = ok && p->bias_stride >= 0;
    char desc[512];
    if (!ok) {
        describe_problem(p, desc, sizeof desc);
        return dgrad_error(dgrad_invalid_arguments,
                "oneDNN lowering: malformed canonical problem (%s)", desc);
    }
    /* oneDNN 2.6 computes some blockings in 32-bit ints: a channel count of
     * 2^32 crashes primitive creation (SIGFPE), so larger dims are refused
     * before oneDNN sees them. */
    int64_t largest = p->N > p->Cin ? p->N : p->Cin;
    if (p->Cout > largest) largest = p->Cout;
    for (int i = 0; i < p->nsp; i++) {
        int64_t sp[] = {p->X[i], p->K[i], p->Y[i], p->S[i], p->D[i],
                p->PB[i] < 0 ? -p->PB[i] : p->PB[i]};
        for (size_t j = 0; j < sizeof sp / sizeof sp[0]; j++)
            if (sp[j] > largest) largest = sp[j];
    }
    if (largest <= INT32_MAX) return dgrad_success;
    describe_problem(p, desc, sizeof desc);
    return dgrad_error(dgrad_unimplemented,
            "oneDNN lowering: a size (%lld) exceeds 2^31-1, the largest "
            "oneDNN 2.6 handles safely (%s)", (long long)largest, desc);
}
