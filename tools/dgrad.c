/*
 * dgrad — the command line: one binary, one subcommand per job. It uses the
 * plugin only through the loader, as a graph compiler would.
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

const char *tool_plugin_path = NULL;

typedef struct command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
} command_t;

static const command_t commands[] = {
    {"demo", "run the specification's examples end to end through the plugin",
            dgrad_demo_main},
    {"conform", "run conformance suites (vectors, oneDNN Graph JSON, OpenVINO IR)",
            dgrad_conform_main},
    {"bench", "benchmark dgrad against raw oneDNN", dgrad_bench_main},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out,
            "usage: dgrad [--plugin PATH] COMMAND [OPTIONS]\n"
            "       dgrad COMMAND --help\n\n"
            "Runs the transposed-convolution family on oneDNN through the dgrad\n"
            "plugin (default: $DGRAD_PLUGIN, else libdgrad_plugin.so next to this\n"
            "program or in ../lib).\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

const dgrad_plugin_api_t *tool_load_plugin(const char *path,
        dgrad_loader_plugin_t **plugin) {
    char default_path[4096], error[1024];
    if (!path) {
        dgrad_loader_default_path(default_path, sizeof default_path);
        path = default_path;
    }
    if (dgrad_loader_open(path, plugin, error, sizeof error) != dgrad_success) {
        fprintf(stderr, "dgrad: %s\n", error);
        return NULL;
    }
    return dgrad_loader_api(*plugin);
}

int main(int argc, char **argv) {
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--plugin") && i + 1 < argc) {
            tool_plugin_path = argv[++i];
        } else if (!strncmp(argv[i], "--plugin=", 9)) {
            tool_plugin_path = argv[i] + 9;
        } else {
            fprintf(stderr, "dgrad: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "dgrad: no command given\n");
        usage(stderr);
        return 2;
    }
    for (size_t c = 0; c < N_COMMANDS; c++)
        if (!strcmp(argv[i], commands[c].name))
            return commands[c].main(argc - i, argv + i);
    fprintf(stderr, "dgrad: unknown command '%s'\n", argv[i]);
    usage(stderr);
    return 2;
}
