/*
 * The two ways `dgrad bench` reaches dgrad, both as a plugin table: the
 * plugin's own, loaded with the loader exactly as a graph compiler loads
 * it, and one filled from the core C API of libdgrad.so (loaded with
 * dlopen, so that the command does not depend on the shared library and
 * nothing of it clashes with the oracle objects linked into the command).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tool.h"

/* ------------------------------------------------------------ plugin table */

static int open_plugin(bench_backend_t *be) {
    const dgrad_plugin_api_t *api = tool_load_plugin(tool_plugin_path,
            &be->plugin);
    if (!api) return -1;
    /* Every entry used here is in ABI 1.0; check anyway. */
    if (!DGRAD_PLUGIN_API_HAS(api, compiled_op_execute)) {
        fprintf(stderr, "dgrad bench: the plugin's table is too small "
                "(%zu bytes)\n", api->struct_size);
        dgrad_loader_close(be->plugin);
        be->plugin = NULL;
        return -1;
    }
    be->api = api;
    be->name = "plugin";
    snprintf(be->detail_buf, sizeof be->detail_buf, "%s %s (ABI %u.%u)",
            api->plugin_name ? api->plugin_name : "?",
            api->plugin_version ? api->plugin_version : "?", api->abi_major,
            api->abi_minor);
    return 0;
}

/* ---------------------------------------------------------------- core API */

/* The core API's compile and execute, behind the table's argument structs
 * (the entries the bench uses; the rest of the table stays NULL). */
static struct {
    dgrad_status_t (*compile)(dgrad_compiled_op_t **, const dgrad_op_t *,
            size_t, const dgrad_logical_tensor_t *, dgrad_logical_tensor_t *);
    dgrad_status_t (*execute)(const dgrad_compiled_op_t *, size_t,
            const void *const *, void *);
} core_fns;

static dgrad_status_t core_compile(dgrad_plugin_compile_args_t *args) {
    return core_fns.compile(&args->compiled, args->op, args->n_inputs,
            args->inputs, args->output);
}

static dgrad_status_t core_execute(dgrad_plugin_execute_args_t *args) {
    return core_fns.execute(args->compiled, args->n_inputs, args->inputs,
            args->output);
}

/* Directory of the running program, with a trailing '/'. */
static int program_dir(char *buf, size_t size) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    slash[1] = 0;
    snprintf(buf, size, "%s", exe);
    return 0;
}

static void *try_dlopen(const char *path, char *tried, size_t size) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        size_t n = strlen(tried);
        snprintf(tried + n, size - n, "\n  %.1000s: %.1000s", path, dlerror());
    }
    return h;
}

#define LOAD(dst, sym)                                                       \
    do {                                                                     \
        *(void **)(&(dst)) = dlsym(be->dl, sym);                             \
        if (!(dst)) {                                                        \
            fprintf(stderr, "dgrad bench: %s has no symbol %s\n",            \
                    be->detail_buf, sym);                                    \
            dlclose(be->dl);                                                 \
            be->dl = NULL;                                                   \
            return -1;                                                       \
        }                                                                    \
    } while (0)

static int open_core(bench_backend_t *be, const char *path) {
    char dir[PATH_MAX], cand[PATH_MAX + 64], tried[4096] = "";
    const char *env = getenv("DGRAD_CORE_LIB");
    if (!path) path = env && *env ? env : NULL;
    if (path) {
        be->dl = try_dlopen(path, tried, sizeof tried);
        snprintf(be->detail_buf, sizeof be->detail_buf, "%.500s", path);
    } else {
        static const char *rel[] = {"libdgrad.so", "../lib/libdgrad.so.0",
                "../lib/libdgrad.so"};
        if (program_dir(dir, sizeof dir) == 0)
            for (size_t i = 0; !be->dl && i < sizeof rel / sizeof rel[0]; i++) {
                snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
                if (access(cand, R_OK) != 0) continue;
                be->dl = try_dlopen(cand, tried, sizeof tried);
                snprintf(be->detail_buf, sizeof be->detail_buf, "%.500s", cand);
            }
        if (!be->dl) {
            be->dl = try_dlopen("libdgrad.so.0", tried, sizeof tried);
            snprintf(be->detail_buf, sizeof be->detail_buf, "libdgrad.so.0");
        }
    }
    if (!be->dl) {
        fprintf(stderr, "dgrad bench: cannot load the core library "
                "libdgrad.so:%s\n", tried);
        return -1;
    }
    be->name = "core";
    dgrad_plugin_api_t *t = &be->core_table;
    t->struct_size = sizeof *t;
    LOAD(t->last_error_message, "dgrad_last_error_message");
    LOAD(t->logical_tensor_init, "dgrad_logical_tensor_init");
    LOAD(t->op_create, "dgrad_op_create");
    LOAD(t->op_destroy, "dgrad_op_destroy");
    LOAD(t->op_set_attr_s64, "dgrad_op_set_attr_s64");
    LOAD(t->op_set_attr_s64s, "dgrad_op_set_attr_s64s");
    LOAD(t->op_set_attr_str, "dgrad_op_set_attr_str");
    LOAD(core_fns.compile, "dgrad_compiled_op_create");
    LOAD(core_fns.execute, "dgrad_compiled_op_execute");
    LOAD(t->compiled_op_destroy, "dgrad_compiled_op_destroy");
    LOAD(t->compiled_op_impl_name, "dgrad_compiled_op_impl_name");
    LOAD(t->op_append_post_op, "dgrad_op_append_post_op");
    t->compiled_op_create = core_compile;
    t->compiled_op_execute = core_execute;
    be->api = t;
    return 0;
}

int bench_backend_open(bench_backend_t *be, bench_backend_kind_t kind,
        const char *core_path) {
    memset(be, 0, sizeof *be);
    be->detail = be->detail_buf;
    if (kind == bench_backend_plugin) return open_plugin(be);
    if (kind == bench_backend_core) return open_core(be, core_path);
    if (open_plugin(be) == 0) return 0;
    fprintf(stderr, "dgrad bench: the plugin does not load (above); timing "
            "the core library instead (--backend core)\n");
    return open_core(be, core_path);
}

void bench_backend_close(bench_backend_t *be) {
    if (be->plugin) dgrad_loader_close(be->plugin);
    /* The core library stays loaded: oneDNN's jit code and the plan
     * cache's exit handler live in it. */
    memset(be, 0, sizeof *be);
}
