/* A plugin from the future: it serves only ABI major 2, so a host of
 * major 1 must be refused with both versions named. Only the table's
 * version header is meaningful (a real major-2 table would differ). */
#include "dgrad/dgrad_plugin.h"

static const dgrad_plugin_api_t table_v2 = {
        .struct_size = sizeof(dgrad_plugin_api_t),
        .abi_major = 2,
        .abi_minor = 0,
        .plugin_name = "major2-fixture",
        .plugin_version = "9.0.0",
};

__attribute__((visibility("default"))) const dgrad_plugin_api_t *
dgrad_plugin_get_api(uint32_t host_abi_major) {
    return host_abi_major == 2 ? &table_v2 : NULL;
}
