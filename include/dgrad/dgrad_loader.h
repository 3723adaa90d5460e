/*
 * Host-side loader for libdgrad_plugin.so: loads the module, finds the
 * entry symbol, negotiates the ABI and reports every failure clearly.
 * Link with libdgrad_loader.a (and -ldl).
 */
#ifndef DGRAD_DGRAD_LOADER_H
#define DGRAD_DGRAD_LOADER_H

#include <stddef.h>

#include "dgrad/dgrad_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded plugin. */
typedef struct dgrad_loader_plugin dgrad_loader_plugin_t;

/**
 * Loads the plugin at @p path and asks it for the table of ABI major
 * DGRAD_PLUGIN_ABI_MAJOR (the version this header describes). The loader
 * reports through @p error only: dgrad_last_error_message() is the
 * plugin's and is not set.
 * @param path The module's file path (as dlopen takes it).
 * @param plugin Out: the loaded plugin; release with dgrad_loader_close().
 *     Not written on failure.
 * @param error  Out, on failure: a message naming the path and the cause
 *     ("no such file", "not a dgrad plugin: symbol ... not found", "ABI
 *     mismatch with plugin '...': host ABI major 2, plugin ABI 1.1", or a
 *     major-1 table smaller than ABI 1.0's), cut to @p error_size bytes.
 *     Not written on success; may be NULL.
 * @param error_size Bytes available at @p error (0: nothing is written).
 * @returns dgrad_success;
 *     dgrad_invalid_arguments: @p path or @p plugin is NULL, or the file
 *     is missing or cannot be loaded (dlopen's reason);
 *     dgrad_unimplemented: the module has no DGRAD_PLUGIN_ENTRY_SYMBOL
 *     (not a dgrad plugin);
 *     dgrad_abi_mismatch: the plugin has no table of the host's ABI major,
 *     or its major-1 table is smaller than ABI 1.0's;
 *     dgrad_out_of_memory.
 *     On success every ABI 1.0 entry of the table may be called without a
 *     DGRAD_PLUGIN_API_HAS check.
 */
dgrad_status_t dgrad_loader_open(const char *path,
        dgrad_loader_plugin_t **plugin, char *error, size_t error_size);

/** As dgrad_loader_open, asking for the table of ABI major @p abi_major
 * (for tests of the negotiation); same parameters and statuses. */
dgrad_status_t dgrad_loader_open_version(const char *path,
        uint32_t abi_major, dgrad_loader_plugin_t **plugin, char *error,
        size_t error_size);

/** The plugin's function table (valid until dgrad_loader_close); NULL for
 * a NULL @p plugin. */
const dgrad_plugin_api_t *dgrad_loader_api(const dgrad_loader_plugin_t *plugin);

/** Unloads the plugin; NULL accepted. Every object created through the
 * table must be destroyed first. Cannot fail. */
void dgrad_loader_close(dgrad_loader_plugin_t *plugin);

/**
 * The default plugin path for a program: $DGRAD_PLUGIN if set (and not
 * empty), else libdgrad_plugin.so in the directory of the running
 * executable, else in ../lib/ or ../lib/x86_64-linux-gnu/ relative to it.
 * @param path Out: the path found, or the first candidate when none
 *     exists; cut to @p size bytes.
 * @param size Bytes available at @p path (at least 1).
 * @returns 1 when the file written to @p path exists, 0 otherwise.
 */
int dgrad_loader_default_path(char *path, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* DGRAD_DGRAD_LOADER_H */
