/*
 * dgrad — the command line: one binary, one subcommand per job. It uses the
 * plugin only through the loader, as a graph compiler would.
 */
#include <stdio.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

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

/* The convention every command's --help repeats for its own case. */
static const char *const exit_status_text =
        "Exit status, of dgrad and of every command:\n"
        "  0  success: everything asked for ran and every check passed\n"
        "  1  failure: a run or a check failed, or something it needs could\n"
        "     not be had (a file, the plugin, memory)\n"
        "  2  usage error: the command line is wrong (unknown command or\n"
        "     option, missing or bad value, nothing to run); nothing ran\n";

static void usage(FILE *out) {
    fprintf(out,
            "usage: dgrad [--plugin PATH] COMMAND [OPTIONS]\n"
            "       dgrad COMMAND --help\n"
            "       dgrad [--plugin PATH] --version\n\n"
            "Runs the transposed-convolution family on oneDNN through the dgrad\n"
            "plugin (default: $DGRAD_PLUGIN, else libdgrad_plugin.so next to this\n"
            "program or in ../lib).\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\noptions:\n"
            "  --plugin PATH  the plugin module to load\n"
            "  --version      dgrad's version, the plugin's and the oneDNN it\n"
            "                 runs on (status 1 when the plugin cannot be loaded)\n"
            "  -h, --help     this text\n\n"
            "%s", exit_status_text);
}

/* Prints dgrad's version, the plugin's (loaded as the commands load it)
 * and the version of the oneDNN library this process runs on. */
static int print_version(void) {
    const dnnl_version_t *onednn = dnnl_version();
    static const struct {
        unsigned id;
        const char *name;
    } runtimes[] = {{DNNL_RUNTIME_SEQ, "sequential"}, {DNNL_RUNTIME_OMP, "OpenMP"},
            {DNNL_RUNTIME_TBB, "TBB"}, {DNNL_RUNTIME_THREADPOOL, "threadpool"}};
    const char *runtime = "unknown";
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (onednn->cpu_runtime == runtimes[i].id) runtime = runtimes[i].name;
    printf("dgrad %d.%d.%d\n", DGRAD_VERSION_MAJOR, DGRAD_VERSION_MINOR,
            DGRAD_VERSION_PATCH);
    /* Distribution builds say "N/A" for the commit. */
    int has_hash = onednn->hash && *onednn->hash && strcmp(onednn->hash, "N/A");
    printf("oneDNN %d.%d.%d (%s CPU runtime%s%s)\n", onednn->major,
            onednn->minor, onednn->patch, runtime, has_hash ? ", commit " : "",
            has_hash ? onednn->hash : "");
    char path[4096], error[1024];
    if (tool_plugin_path) snprintf(path, sizeof path, "%s", tool_plugin_path);
    else dgrad_loader_default_path(path, sizeof path);
    dgrad_loader_plugin_t *plugin = NULL;
    if (dgrad_loader_open(path, &plugin, error, sizeof error) != dgrad_success) {
        fflush(stdout); /* the versions above, then the reason */
        fprintf(stderr, "dgrad: %s\n", error);
        return 1;
    }
    const dgrad_plugin_api_t *api = dgrad_loader_api(plugin);
    printf("plugin %s %s (ABI %u.%u) from %s\n", api->plugin_name,
            api->plugin_version, api->abi_major, api->abi_minor, path);
    dgrad_loader_close(plugin);
    return 0;
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
    int i = 1, version = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            version = 1;
        } else if (!strcmp(argv[i], "--plugin")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dgrad: --plugin needs a value (a path)\n");
                return 2;
            }
            tool_plugin_path = argv[++i];
        } else if (!strncmp(argv[i], "--plugin=", 9)) {
            tool_plugin_path = argv[i] + 9;
        } else {
            fprintf(stderr, "dgrad: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (version) {
        if (i < argc) {
            fprintf(stderr, "dgrad: --version takes no command ('%s' given)\n",
                    argv[i]);
            return 2;
        }
        return print_version();
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
