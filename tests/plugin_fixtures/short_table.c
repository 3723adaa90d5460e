/* A broken major-1 plugin whose table stops before the ABI 1.0 entries
 * end: the loader must refuse it, since hosts call 1.0 entries
 * unchecked. */
#include <stddef.h>

#include "dgrad/dgrad_plugin.h"

static const dgrad_plugin_api_t short_table = {
        .struct_size = offsetof(dgrad_plugin_api_t, query_support),
        .abi_major = 1,
        .abi_minor = 0,
        .plugin_name = "short-table-fixture",
        .plugin_version = "0.0.1",
};

__attribute__((visibility("default"))) const dgrad_plugin_api_t *
dgrad_plugin_get_api(uint32_t host_abi_major) {
    return host_abi_major == 1 ? &short_table : NULL;
}
