/* `dgrad demo`: placeholder until the demo lands. */
#include <stdio.h>

#include "tool.h"

int dgrad_demo_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "dgrad demo: not implemented yet\n");
    return 2;
}
