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
 * DGRAD_PLUGIN_ABI_MAJOR (the version this header describes).
 * @param plugin Out: the loaded plugin; release with dgrad_loader_close().
 * @param error  Out, on failure: a message naming the path and the cause
 *     ("no such file", "not a dgrad plugin: symbol ... not found", "ABI
 *     mismatch with plugin '...': host ABI major 2, plugin ABI 1.1", or a
 *     major-1 table smaller than ABI 1.0's). Not written on success.
 * @param error_size Bytes available at @p error.
 * @returns dgrad_success, dgrad_invalid_arguments (NULL arguments, or the
 *     file cannot be loaded), dgrad_unimplemented (not a dgrad plugin),
 *     dgrad_abi_mismatch or dgrad_out_of_memory. On success every ABI 1.0
 *     entry of the table may be called without a DGRAD_PLUGIN_API_HAS
 *     check.
 */
dgrad_status_t dgrad_loader_open(const char *path,
        dgrad_loader_plugin_t **plugin, char *error, size_t error_size);

/** As dgrad_loader_open, asking for a given ABI major (for tests of the
 * negotiation). */
dgrad_status_t dgrad_loader_open_version(const char *path,
        uint32_t abi_major, dgrad_loader_plugin_t **plugin, char *error,
        size_t error_size);

/** The plugin's function table (valid until dgrad_loader_close). */
const dgrad_plugin_api_t *dgrad_loader_api(const dgrad_loader_plugin_t *plugin);

/** Unloads the plugin; NULL accepted. Every object created through the
 * table must be destroyed first. */
void dgrad_loader_close(dgrad_loader_plugin_t *plugin);

/**
 * The default plugin path for a program: $DGRAD_PLUGIN if set, else
 * libdgrad_plugin.so in the directory of the running executable, else in
 * ../lib/ relative to it. Writes at most @p size bytes; returns 0 when no
 * candidate exists (the first candidate is still written).
 */
int dgrad_loader_default_path(char *path, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* DGRAD_DGRAD_LOADER_H */
