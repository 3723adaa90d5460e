/*
 * Reader of benchdnn's graph batch files (the harness files of oneDNN's
 * tests/benchdnn/inputs/graph/; grammar: tests/benchdnn/doc/driver_graph.md
 * and benchdnn's own parser): the file's words, its options and nested
 * files. The other rooms are listed in reader_batch.h.
 *
 * A batch file is a stream of options, as on benchdnn's command line;
 * '#' at the start of a word comments out the rest of its line, and a word
 * ending in '\' continues with the next word (a long option over several
 * lines). Settings persist until --reset, also into and out of nested
 * --batch= files (benchdnn parses them in place). --case=FILE runs FILE, a
 * oneDNN Graph JSON graph file, with the current settings (batch_case.c):
 *   --dt=DT[,DT...]          f32, bf16, f16 or undef; or ID:DT[+ID:DT...]
 *   --in-shapes=ID:SHAPE[*TAG][+...][,...]   rewrite graph inputs
 *   --op-attrs=ID:NAME:VALUE[*NAME:VALUE][+...][,...]   rewrite attributes
 *   --mb=N[,N...]            rewrite the minibatch of the data inputs
 * Options of benchdnn that do not change what an op computes (engine,
 * mode, timing, verbosity, ...) are read and ignored; an unknown option is
 * an error.
 *
 * Paths (--case=, --batch=) are taken as they are when absolute, else
 * relative to the folder of the batch file that names them, else relative
 * to the --inputs-dir folder (oneDNN's harness files name their cases
 * relative to tests/benchdnn/inputs/graph/).
 *
 * Errors name the batch file and line: "<file>:<line>: <what>: <rule>".
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_batch.h"

int batch_err(batch_t *b, at_t at, const char *what, const char *fmt, ...) {
    char rule[CF_MESSAGE / 2], where[CF_WHERE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(rule, sizeof rule, fmt, args);
    va_end(args);
    if (at.line > 0) snprintf(where, sizeof where, "%s:%d", at.file, at.line);
    else snprintf(where, sizeof where, "%s", at.file);
    cf_sink_errorf(b->sink, at.file, where, what, "%s", rule);
    b->errors++;
    return 0;
}

/* Options that do not change what an op computes: benchdnn's global
 * options and the graph driver's partitioning and precision knobs. */
static const char *const ignored_options[] = {"--mode", "--mode-modifier",
        "--engine", "--cold-cache", "--canonical", "--check-ref-impl",
        "--cpu-isa-hints", "--fast-ref", "--fast-ref-gpu",
        "--fix-times-per-prb", "--impl", "--global-impl", "--skip-impl",
        "--global-skip-impl", "--max-ms-per-prb", "--num-streams",
        "--repeats-per-prb", "--mem-check", "--memory-kind", "--start",
        "--stream-kind", "--verbose", "--allow-enum-tags-only",
        "--attr-same-pd-check", "--expected-n-partitions", "--fpmath-mode",
        "--attr-fpmath",
        "--summary", "--perf-template", "--graph"};

const char *cf_batch_ignored_options(void) {
    static char list[512];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; i < sizeof ignored_options / sizeof *ignored_options;
                i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                    i ? ", " : "", ignored_options[i]);
    }
    return list;
}

static int is_ignored(const char *tok) {
    /* -v, -vN, --verbose=N */
    if (tok[0] == '-' && tok[1] == 'v' && (!tok[2] || isdigit((unsigned char)tok[2])))
        return 1;
    for (size_t i = 0; i < sizeof ignored_options / sizeof *ignored_options; i++) {
        size_t n = strlen(ignored_options[i]);
        if (!strncmp(tok, ignored_options[i], n) && (!tok[n] || tok[n] == '='))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ paths */

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder part of @p path ("" for none), with its slash. */
static void folder_of(const char *path, char *buf, size_t size) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(buf, size, "%.*s", (int)n, path);
}

/* Resolves @p name named in @p from; 0 with an error when not found. */
int batch_resolve_path(batch_t *b, at_t at, const char *option, const char *name,
        char *out, size_t size) {
    if (!name[0]) return batch_err(b, at, "bad value", "%s needs a file", option);
    if (name[0] == '/') {
        snprintf(out, size, "%s", name);
        if (is_file(out)) return 1;
        return batch_err(b, at, "unreadable", "%s%s: no such file", option, name);
    }
    char dir[CF_WHERE], tried[2 * CF_WHERE + 64];
    folder_of(at.file, dir, sizeof dir);
    snprintf(out, size, "%s%s", dir, name);
    if (is_file(out)) return 1;
    snprintf(tried, sizeof tried, "%s", out);
    if (b->inputs_dir) {
        snprintf(out, size, "%s%s%s", b->inputs_dir,
                b->inputs_dir[0] && b->inputs_dir[strlen(b->inputs_dir) - 1] != '/'
                        ? "/" : "", name);
        if (is_file(out)) return 1;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried),
                " nor %s", out);
    }
    return batch_err(b, at, "unreadable", "%s%s: found neither %s%s", option, name,
            tried, b->inputs_dir ? "" : " (relative paths are looked up "
            "next to the batch file, then in --inputs-dir, which is not set)");
}

/* ------------------------------------------------- small text helpers */

/* Splits @p text at @p delim into at most @p max parts (in place). */
int batch_split(char *text, char delim, char **parts, int max) {
    int n = 0;
    char *p = text;
    for (;;) {
        if (n == max) return -1;
        parts[n++] = p;
        char *d = strchr(p, delim);
        if (!d) return n;
        *d = '\0';
        p = d + 1;
    }
}

/* "2x28x28" -> dims; 0 on bad text. */
int batch_parse_dims_x(const char *text, int64_t *v, int max, int *n) {
    *n = 0;
    const char *p = text;
    if (!*p) return 0;
    for (;;) {
        if (!isdigit((unsigned char)*p) && *p != '-') return 0;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || *n == max) return 0;
        v[(*n)++] = x;
        if (!*end) return 1;
        if (*end != 'x') return 0;
        p = end + 1;
    }
}

int batch_parse_long(const char *text, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(text, &end, 10);
    return end != text && !*end && !errno;
}


/* ------------------------------------------------------------ tokens */

static int read_batch(batch_t *b, const char *path, at_t from);

static void option(batch_t *b, at_t at, const char *tok) {
    static const struct {
        const char *name;
        size_t offset;
    } settings[] = {{"--dt=", offsetof(settings_t, dt)},
            {"--in-shapes=", offsetof(settings_t, in_shapes)},
            {"--op-attrs=", offsetof(settings_t, op_attrs)},
            {"--mb=", offsetof(settings_t, mb)}};
    if (!strcmp(tok, "--reset")) {
        memset(&b->s, 0, sizeof b->s);
        return;
    }
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        size_t n = strlen(settings[i].name);
        if (strncmp(tok, settings[i].name, n)) continue;
        if (strlen(tok + n) >= BATCH_VALUE) {
            batch_err(b, at, "too large", "%.*s value is longer than %d bytes",
                    (int)n - 1, tok, BATCH_VALUE - 1);
            return;
        }
        snprintf((char *)&b->s + settings[i].offset, BATCH_VALUE, "%s", tok + n);
        return;
    }
    if (!strncmp(tok, "--case=", 7)) {
        batch_run_case(b, at, tok + 7);
        return;
    }
    if (!strncmp(tok, "--batch=", 8)) {
        char path[CF_WHERE];
        if (batch_resolve_path(b, at, "--batch=", tok + 8, path, sizeof path))
            read_batch(b, path, at);
        return;
    }
    if (is_ignored(tok)) return;
    if (tok[0] == '-')
        batch_err(b, at, "unknown option", "'%.64s' is not a benchdnn graph option "
                "dgrad conform knows (it reads --reset, --dt, --in-shapes, "
                "--op-attrs, --mb, --case, --batch and ignores %s)", tok,
                cf_batch_ignored_options());
    else
        batch_err(b, at, "unexpected word", "'%.64s' (a case is given as "
                "--case=FILE)", tok);
}

static int read_batch(batch_t *b, const char *path, at_t from) {
    if (b->depth >= BATCH_MAX_DEPTH)
        return batch_err(b, from, "too deep", "--batch files nested deeper than %d "
                "(does one name itself?)", BATCH_MAX_DEPTH);
    FILE *f = fopen(path, "rb");
    if (!f) return batch_err(b, from, "unreadable", "%s: %s", path, strerror(errno));
    char *text = malloc((size_t)BATCH_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, (size_t)BATCH_MAX_BYTES + 1, f) : 0;
    fclose(f);
    at_t at = {path, 0};
    if (!text || n > (size_t)BATCH_MAX_BYTES) {
        free(text);
        return batch_err(b, at, "too large", "a batch file is at most %ld bytes",
                BATCH_MAX_BYTES);
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        free(text);
        return batch_err(b, at, "unreadable", "a batch file is text (this one holds "
                "NUL bytes)");
    }
    /* Words (continuations joined) with the line each starts on, then the
     * options they make, in order. */
    char *joined = malloc(n + 1);
    int *lines = malloc((n / 2 + 2) * sizeof *lines);
    char **words = malloc((n / 2 + 2) * sizeof *words);
    if (!joined || !lines || !words) {
        free(text), free(joined), free(lines), free(words);
        return batch_err(b, at, "out of memory", "reading the batch file");
    }
    size_t used = 0, nw = 0;
    int continued = 0;
    char *line = text;
    while (line) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        at.line++;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\f\v", &save); tok;
                tok = strtok_r(NULL, " \t\r\f\v", &save)) {
            if (tok[0] == '#') break; /* the rest of the line is a comment */
            size_t len = strlen(tok);
            int more = tok[len - 1] == '\\';
            if (more) len--;
            if (continued && nw) {
                used--; /* extends the previous word over its NUL */
            } else {
                lines[nw] = at.line;
                words[nw++] = joined + used;
            }
            memcpy(joined + used, tok, len);
            used += len;
            joined[used++] = '\0';
            continued = more;
        }
        line = next;
    }
    free(text);
    b->depth++;
    for (size_t w = 0; w < nw; w++) {
        at.line = lines[w];
        if (words[w][0]) option(b, at, words[w]);
    }
    b->depth--;
    free(joined), free(lines), free(words);
    return 1;
}

int cf_read_batch_file(const char *path, const char *inputs_dir,
        cf_sink_t *sink) {
    batch_t *b = calloc(1, sizeof *b);
    if (!b) {
        cf_sink_errorf(sink, path, path, "out of memory", "reading the batch");
        return 1;
    }
    b->sink = sink;
    b->inputs_dir = inputs_dir;
    at_t none = {path, 0};
    read_batch(b, path, none);
    int errors = b->errors;
    free(b);
    return errors;
}
