/* Shared pieces of the `dgrad` command: each subcommand's entry point and
 * loading the plugin the way a graph compiler would (through the loader). */
#ifndef DGRAD_TOOL_H
#define DGRAD_TOOL_H

#include <stdio.h>

#include "dgrad/dgrad_loader.h"

/* Subcommands: argv[0] is the subcommand name; return the exit status. */
int dgrad_demo_main(int argc, char **argv);
int dgrad_conform_main(int argc, char **argv);
int dgrad_bench_main(int argc, char **argv);

/* Loads the plugin: @p path if non-NULL (the global --plugin option), else
 * the loader's default path. Prints the loader's error to stderr and
 * returns NULL on failure. */
const dgrad_plugin_api_t *tool_load_plugin(const char *path,
        dgrad_loader_plugin_t **plugin);

/* The --plugin PATH given before the subcommand (NULL if none). */
extern const char *tool_plugin_path;

#endif
