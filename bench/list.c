/*
 * `dgrad bench --list-problems`: every problem as one line of JSON, so
 * that programs timing other runtimes on the same problems (bench/peers/)
 * take their sizes from this parser instead of a second one.
 */
#include <stdio.h>

#include "bench.h"

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void put_axes(FILE *f, const char *key, const int64_t *v, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int a = 0; a < n; a++)
        fprintf(f, "%s%lld", a ? ", " : "", (long long)v[a]);
    fputc(']', f);
}

void bench_print_problem_json(FILE *f, const bench_problem_t *p) {
    const bench_desc_t *d = &p->d;
    int64_t pad_end[BENCH_MAX_SP], natural[BENCH_MAX_SP],
            dilation[BENCH_MAX_SP];
    for (int a = 0; a < d->nsp; a++) {
        pad_end[a] = bench_desc_pad_end(d, a);
        natural[a] = bench_desc_natural(d, a);
        dilation[a] = d->d[a] + 1;
    }
    fputs("{\"name\": ", f);
    put_string(f, d->name);
    fputs(", \"label\": ", f);
    put_string(f, bench_problem_label(p));
    fputs(", \"descriptor\": ", f);
    put_string(f, p->text);
    fputs(", \"file\": ", f);
    if (p->file[0]) put_string(f, p->file);
    else fputs("null", f);
    fprintf(f, ", \"line\": %d", p->line);
    fprintf(f, ", \"mb\": %lld, \"g\": %lld, \"ic\": %lld, \"oc\": %lld",
            (long long)d->mb, (long long)d->g, (long long)d->ic,
            (long long)d->oc);
    fprintf(f, ", \"spatial_rank\": %d, \"axes\": \"%s\"", d->nsp,
            "dhw" + (3 - d->nsp));
    put_axes(f, "i", d->i, d->nsp);
    put_axes(f, "o", d->o, d->nsp);
    put_axes(f, "k", d->k, d->nsp);
    put_axes(f, "s", d->s, d->nsp);
    put_axes(f, "p", d->p, d->nsp);
    put_axes(f, "pad_end", pad_end, d->nsp);
    put_axes(f, "d", d->d, d->nsp);
    put_axes(f, "dilation", dilation, d->nsp);
    put_axes(f, "natural", natural, d->nsp);
    fprintf(f, ", \"depthwise\": %s, \"flops\": %.17g}\n",
            bench_desc_is_depthwise(d) ? "true" : "false",
            bench_desc_flops(d));
}
