/* `dgrad bench` (issue 5): the name is reserved until the benchmark lands. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

int dgrad_bench_main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--help")) {
        printf("usage: dgrad bench [options] PROBLEM...\n(not implemented yet)\n");
        return 0;
    }
    fprintf(stderr, "dgrad bench: not implemented yet\n");
    return 2;
}
