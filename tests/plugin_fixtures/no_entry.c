/* A loadable module that is not a dgrad plugin: it lacks the entry symbol
 * (the loader must say "not a dgrad plugin"). */
__attribute__((visibility("default"))) int dgrad_test_not_an_entry(void) {
    return 0;
}
