/*
 * The runner's backend over the core library (the Criterion tests and the
 * development runner): the plugin's own table, built over the library
 * linked into this program (plugin/CMakeLists.txt, dgrad_plugin_table),
 * driven by the one adapter of backend_plugin.c. Nothing in the `dgrad`
 * command refers to this file, so the static library's copy of it is
 * never linked there (the command loads the plugin module instead).
 */
#include "conform.h"
#include "dgrad/dgrad_plugin.h" /* the entry point, linked in here */

void cf_backend_core_init(cf_backend_t *b) {
    cf_backend_plugin_init(b, dgrad_plugin_get_api(DGRAD_PLUGIN_ABI_MAJOR));
    b->name = "core";
}
