/* dgrad_conform_core: `dgrad conform` over the plugin's table linked in
 * with the library instead of the loaded module, for development (built
 * in the tree, not installed). Same options and report. */
#include <stdio.h>

#include "conform.h"

int main(int argc, char **argv) {
    cf_cli_t cli;
    int status = cf_cli_parse(argc, argv, &cli, stdout, stderr);
    if (status < 0) {
        cf_backend_t backend;
        cf_backend_core_init(&backend);
        status = cf_cli_run(&cli, &backend, stdout, stderr);
    }
    cf_cli_free(&cli);
    return status;
}
