/* `dgrad conform`: the runner over the plugin table, loaded through the
 * loader as a graph compiler would load it. */
#include <stdio.h>

#include "conform.h"
#include "tool.h"

int dgrad_conform_main(int argc, char **argv) {
    cf_cli_t cli;
    int status = cf_cli_parse(argc, argv, &cli, stdout, stderr);
    if (status >= 0) {
        cf_cli_free(&cli);
        return status;
    }
    dgrad_loader_plugin_t *plugin = NULL;
    const dgrad_plugin_api_t *api = tool_load_plugin(tool_plugin_path, &plugin);
    if (!api) {
        fprintf(stderr, "dgrad conform: cannot run without the plugin\n");
        cf_cli_free(&cli);
        return 1;
    }
    cf_backend_t backend;
    cf_backend_plugin_init(&backend, api);
    status = cf_cli_run(&cli, &backend, stdout, stderr);
    cf_cli_free(&cli);
    dgrad_loader_close(plugin);
    return status;
}
