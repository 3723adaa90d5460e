/* libdgrad_plugin.so: the plugin ABI over the core library (issue 3).
 * Placeholder until the plugin work lands: no ABI version is served. */
#include "dgrad/dgrad_plugin.h"

__attribute__((visibility("default"))) const dgrad_plugin_api_t *
dgrad_plugin_get_api(uint32_t host_abi_major) {
    (void)host_abi_major;
    return NULL;
}
