/* Host-side loader: dlopen, entry symbol, ABI negotiation (dgrad_loader.h). */
#define _GNU_SOURCE
#include "dgrad/dgrad_loader.h"
#include "alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dgrad_loader_plugin {
    void *handle;
    const dgrad_plugin_api_t *api;
};

static dgrad_status_t fail(char *error, size_t size, dgrad_status_t st,
        const char *fmt, const char *path, const char *detail) {
    if (error && size) snprintf(error, size, fmt, path, detail);
    return st;
}

/* Checks the table the plugin returned for @p abi_major; on a mismatch
 * writes the reason, naming both versions, into @p detail. */
static dgrad_status_t negotiate(dgrad_plugin_get_api_fn get_api,
        uint32_t abi_major, const dgrad_plugin_api_t **api, char *detail,
        size_t detail_size) {
    const dgrad_plugin_api_t *table = get_api(abi_major);
    if (table && table->abi_major == abi_major) {
        /* A table of major 1 holds every ABI 1.0 entry, so hosts call
         * those unchecked (later minors: DGRAD_PLUGIN_API_HAS). Major 1 is
         * the only major this header knows the table of. */
        if (abi_major == 1 && table->struct_size < DGRAD_PLUGIN_API_SIZE_1_0) {
            snprintf(detail, detail_size, "plugin table struct_size (%zu "
                    "bytes; ABI 1.0 has %zu): the table lacks ABI 1.0 "
                    "entries", table->struct_size,
                    (size_t)DGRAD_PLUGIN_API_SIZE_1_0);
            return dgrad_abi_mismatch;
        }
        *api = table;
        return dgrad_success;
    }
    /* Ask for the plugin's own major to name it in the message. */
    const dgrad_plugin_api_t *own = NULL;
    for (uint32_t m = 1; m < 64 && !own; m++)
        if (m != abi_major) own = get_api(m);
    if (own)
        snprintf(detail, detail_size, "host ABI major %u, plugin ABI %u.%u",
                abi_major, own->abi_major, own->abi_minor);
    else
        snprintf(detail, detail_size, "host ABI major %u is not implemented "
                "by the plugin", abi_major);
    return dgrad_abi_mismatch;
}

dgrad_status_t dgrad_loader_open_version(const char *path,
        uint32_t abi_major, dgrad_loader_plugin_t **plugin, char *error,
        size_t error_size) {
    if (!path || !plugin)
        return fail(error, error_size, dgrad_invalid_arguments,
                "dgrad loader: %s%s", "path and plugin must not be NULL", "");
    /* dlerror() words a missing file as "cannot open shared object file";
     * say it plainly, and keep dlerror() for the other causes. */
    if (access(path, F_OK) != 0)
        return fail(error, error_size, dgrad_invalid_arguments,
                "cannot load plugin '%s': %s", path,
                errno == ENOENT ? "no such file" : strerror(errno));
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return fail(error, error_size, dgrad_invalid_arguments,
                "cannot load plugin '%s': %s", path, dlerror());

    dgrad_status_t st = dgrad_success;
    const dgrad_plugin_api_t *api = NULL;
    dgrad_loader_plugin_t *loaded = NULL;
    char detail[256];
    dgrad_plugin_get_api_fn get_api;
    *(void **)&get_api = dlsym(handle, DGRAD_PLUGIN_ENTRY_SYMBOL);
    if (!get_api)
        st = fail(error, error_size, dgrad_unimplemented,
                "'%s' is not a dgrad plugin: %s", path,
                "symbol " DGRAD_PLUGIN_ENTRY_SYMBOL " not found");
    if (st == dgrad_success) {
        st = negotiate(get_api, abi_major, &api, detail, sizeof detail);
        if (st != dgrad_success)
            fail(error, error_size, st, "ABI mismatch with plugin '%s': %s",
                    path, detail);
    }
    if (st == dgrad_success) {
        loaded = dgrad_calloc(1, sizeof *loaded);
        if (!loaded)
            st = fail(error, error_size, dgrad_out_of_memory,
                    "cannot load plugin '%s': %s", path, "out of memory");
    }
    if (st != dgrad_success) {
        dlclose(handle);
        return st;
    }
    loaded->handle = handle;
    loaded->api = api;
    *plugin = loaded;
    return dgrad_success;
}

dgrad_status_t dgrad_loader_open(const char *path,
        dgrad_loader_plugin_t **plugin, char *error, size_t error_size) {
    return dgrad_loader_open_version(path, DGRAD_PLUGIN_ABI_MAJOR, plugin,
            error, error_size);
}

const dgrad_plugin_api_t *dgrad_loader_api(const dgrad_loader_plugin_t *plugin) {
    return plugin ? plugin->api : NULL;
}

void dgrad_loader_close(dgrad_loader_plugin_t *plugin) {
    if (!plugin) return;
    dlclose(plugin->handle);
    free(plugin);
}

int dgrad_loader_default_path(char *path, size_t size) {
    const char *env = getenv("DGRAD_PLUGIN");
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return access(path, F_OK) == 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(path, size, "libdgrad_plugin.so");
        return 0;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    const char *candidates[] = {"%s/libdgrad_plugin.so", "%s/../lib/libdgrad_plugin.so",
            "%s/../lib/x86_64-linux-gnu/libdgrad_plugin.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        snprintf(path, size, candidates[i], exe);
        if (access(path, F_OK) == 0) return 1;
    }
    snprintf(path, size, candidates[0], exe);
    return 0;
}
