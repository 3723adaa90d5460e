/* `dgrad conform` (issue 4): the name is reserved until the runner lands. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

int dgrad_conform_main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--help")) {
        printf("usage: dgrad conform [options] PATH...\n(not implemented yet)\n");
        return 0;
    }
    fprintf(stderr, "dgrad conform: not implemented yet\n");
    return 2;
}
