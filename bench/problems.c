/*
 * The problems `dgrad bench` runs: descriptors from the command line and
 * batch files, and the rule that a problem's buffers fit in memory.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int bench_problem_add(bench_problem_list_t *l, const char *text,
        const char *where) {
    char err[512];
    if (l->n >= BENCH_MAX_PROBLEMS) {
        fprintf(stderr, "dgrad bench: more than %d problems\n",
                BENCH_MAX_PROBLEMS);
        return -1;
    }
    bench_problem_t *p = &l->v[l->n];
    p->file[0] = 0;
    p->line = 0;
    if (bench_desc_parse(text, &p->d, err, sizeof err)) {
        fprintf(stderr, "dgrad bench: %s%s\n", where, err);
        return -1;
    }
    bench_desc_format(&p->d, p->text, sizeof p->text);
    if (p->d.name[0]) {
        size_t n = strlen(p->text);
        snprintf(p->text + n, sizeof p->text - n, "n%s", p->d.name);
    }
    l->n++;
    return 0;
}

/* A batch file's problems; --batch=OTHER includes a file relative to it. */
static int read_batch(bench_problem_list_t *l, const char *path, int depth) {
    if (depth > 8) {
        fprintf(stderr, "dgrad bench: --batch nesting too deep at %s\n", path);
        return 2;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dgrad bench: cannot open batch file %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    char line[1024], where[1200];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\n", &save); tok && rc == 0;
                tok = strtok_r(NULL, " \t\r\n", &save)) {
            if (!strncmp(tok, "--batch=", 8)) {
                char sub[2048];
                const char *slash = strrchr(path, '/');
                if (tok[8] == '/' || !slash)
                    snprintf(sub, sizeof sub, "%s", tok + 8);
                else
                    snprintf(sub, sizeof sub, "%.*s/%s",
                            (int)(slash - path), path, tok + 8);
                rc = read_batch(l, sub, depth + 1);
                continue;
            }
            snprintf(where, sizeof where, "%.1000s:%d: ", path, lineno);
            rc = bench_problem_add(l, tok, where) ? 2 : 0;
            if (rc == 0) {
                bench_problem_t *p = &l->v[l->n - 1];
                p->line = lineno;
                if ((size_t)snprintf(p->file, sizeof p->file, "%s", path)
                        >= sizeof p->file) {
                    fprintf(stderr, "dgrad bench: batch file path '%.60s...' "
                            "is longer than %zu bytes\n", path,
                            sizeof p->file - 1);
                    rc = 2;
                }
            }
        }
    }
    fclose(f);
    return rc;
}


int bench_batch_read(bench_problem_list_t *l, const char *path) {
    return read_batch(l, path, 0);
}

bench_problem_size_t bench_problem_size(const bench_desc_t *d,
        dgrad_data_type_t dt, const bench_chain_t *chain) {
    bench_problem_size_t z = {(double)d->mb * (double)d->ic,
            (double)d->ic * (double)(d->oc / d->g), (double)d->mb * (double)d->oc,
            0, 0};
    for (int a = 0; a < d->nsp; a++) {
        z.n_in *= (double)d->i[a];
        z.n_wei *= (double)d->k[a];
        z.n_out *= (double)d->o[a];
    }
    /* Input, weights and output in dt, the baseline's output (f32 for f16)
     * and, for f16 and (without a chain) bf16, f32 copies of all three. */
    double es = (double)dgrad_data_type_size(dt),
           raw_es = dt == dgrad_f16 ? 4.0 : es;
    z.bytes = (z.n_in + z.n_wei + z.n_out) * es + z.n_out * raw_es;
    if (dt == dgrad_f16 || (dt == dgrad_bf16 && !(chain && chain->n)))
        z.bytes += (z.n_in + z.n_wei + z.n_out) * 4.0;
    /* With post-ops: the unfused chain's output, and each operand in its
     * type and, for the baseline, as f32 when that type is f16. */
    if (chain && chain->n) z.bytes += z.n_out * es;
    for (int i = 0; chain && i < chain->n; i++) {
        const bench_post_op_t *op = &chain->ops[i];
        double n = bench_operand_elems(op, d);
        dgrad_data_type_t odt = bench_operand_dt(op, dt);
        z.n_operands += n;
        z.bytes += n * (double)dgrad_data_type_size(odt)
                + (odt == dgrad_f16 ? n * 4.0 : 0);
    }
    return z;
}

/* A problem runs only when its buffers fit in physical memory; checked for
 * every problem before anything runs, so a mistyped size is refused at
 * once instead of failing (or swapping) after the calibration. */
int bench_problem_fits(const bench_problem_t *p, dgrad_data_type_t dt,
        const bench_chain_t *chain) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int known = pages > 0 && page > 0;
    /* Unknown memory size: the 48-bit address space still bounds it. */
    double memory = known ? (double)pages * (double)page : 0x1p48;
    bench_problem_size_t z = bench_problem_size(&p->d, dt, chain);
    if (z.bytes <= memory) return 0;
    fprintf(stderr, "dgrad bench: %s: its buffers need %.4g GB (input %.4g, "
            "weights %.4g, output %.4g, post-op operands %.4g elements in %s, "
            "and the baselines' outputs), more than %s (%.4g GB): a "
            "problem's buffers must fit in physical memory\n", p->text,
            z.bytes / 1e9, z.n_in, z.n_wei, z.n_out, z.n_operands,
            dgrad_data_type_name(dt),
            known ? "this machine's physical memory"
                  : "the 48-bit address space", memory / 1e9);
    return -1;
}

const char *bench_problem_label(const bench_problem_t *p) {
    return p->d.name[0] ? p->d.name : p->text;
}
