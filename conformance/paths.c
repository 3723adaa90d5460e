/*
 * From command-line paths to readers: a directory is read recursively
 * (its .json and .xml files, in name order, so reports are stable); a file
 * goes to the reader of its extension, or of its first character when the
 * extension says nothing ('{' JSON, '<' XML, '-' or '#' a benchdnn batch
 * file). A JSON file is a vector file when it has "cases", a oneDNN Graph
 * file when it has "graph".
 *
 * Files without those extensions are not read from directories: a folder
 * of batch files also holds the cases they name (reading both would run
 * every case twice, once without the batch line's rewrites) and files such
 * as README or LICENSE. A batch file is named on the command line (or by
 * another batch file's --batch=), as benchdnn takes it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conform.h"

/* Bounds the recursion (symbolic links may form cycles). */
#define MAX_DEPTH 32

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int read_file(const char *path, const char *inputs_dir,
        cf_sink_t *sink) {
    if (has_suffix(path, ".json")) return cf_read_json_file(path, sink);
    if (has_suffix(path, ".xml")) return cf_read_ir_file(path, sink);
    FILE *f = fopen(path, "rb");
    int ch = EOF;
    if (f) {
        do ch = fgetc(f);
        while (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r');
        fclose(f);
    }
    if (ch == '{') return cf_read_json_file(path, sink);
    if (ch == '<') return cf_read_ir_file(path, sink);
    if (ch == '-' || ch == '#')
        return cf_read_batch_file(path, inputs_dir, sink);
    cf_sink_errorf(sink, path, path, "unreadable", "%s", f ? "neither JSON, "
            "XML nor a benchdnn batch file (expected a .json or .xml file, or "
            "lines of --options)" : strerror(errno));
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_dir(const char *path, const char *inputs_dir, cf_sink_t *sink,
        int depth) {
    if (depth > MAX_DEPTH) {
        cf_sink_errorf(sink, path, path, "unreadable", "directories nested "
                "deeper than %d (a link cycle?)", MAX_DEPTH);
        return 1;
    }
    DIR *dir = opendir(path);
    if (!dir) {
        cf_sink_errorf(sink, path, path, "unreadable", "%s", strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int errors = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden files */
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) break;
        snprintf(names[n++], len, "%s%s%s", path,
                has_suffix(path, "/") ? "" : "/", e->d_name);
    }
    closedir(dir);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISDIR(st.st_mode))
            errors += read_dir(names[i], inputs_dir, sink, depth + 1);
        else if (has_suffix(names[i], ".json") || has_suffix(names[i], ".xml"))
            errors += read_file(names[i], inputs_dir, sink);
        free(names[i]);
    }
    free(names);
    return errors;
}

int cf_read_path(const char *path, const char *inputs_dir, cf_sink_t *sink) {
    struct stat st;
    if (stat(path, &st) != 0) {
        cf_sink_errorf(sink, path, path, "unreadable", "%s", strerror(errno));
        return 1;
    }
    return S_ISDIR(st.st_mode) ? read_dir(path, inputs_dir, sink, 0)
                               : read_file(path, inputs_dir, sink);
}
