/*
 * What `dgrad bench` writes: the preamble, a row per problem and the
 * summary on stdout, the CSV file and the gnuplot plot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* ----------------------------------------------------------------- table */

void bench_print_preamble(FILE *f, int n_problems, const bench_options_t *o,
        const bench_backend_t *be, const bench_machine_t *m,
        double load_start) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(f, "dgrad bench: %d problem%s, %s, data %s, weights %s%s; dgrad "
            "via %s [%s]\n", n_problems, n_problems == 1 ? "" : "s",
            dgrad_data_type_name(o->dt), bench_layout_name(o->layout),
            bench_wlayout_name(o->wlayout),
            o->constant_weights ? " (constant)"
                    : o->changing_weights ? " (changing at every execution)"
                                          : "",
            be->name, be->detail);
    fprintf(f, "machine: %ld CPUs, peak %.1f GFLOP/s (%s), %.1f GB/s (%s), "
            "%.2f CPUs busy with other work at start; %d samples of >= %.2g "
            "ms after %d warm-up, interleaved; raw baseline %s\n",
            ncpu, m->gflops, m->gflops_source, m->gbs, m->gbs_source,
            load_start, o->reps, o->min_sample_ms, o->warmup,
            o->raw_layout == bench_raw_preferred
                    ? "on oneDNN's preferred layouts (format_tag_any, data "
                      "and weights reordered once, untimed)"
                    : o->raw_prepacked ? "on prepacked weights"
                                       : "on the user's layouts");
    if (o->chain.n)
        fprintf(f, "post-ops %s (%d): dgrad ms is the fused op; bare ms the "
                "op alone; unfused ms the bare op then one oneDNN pass over "
                "the output per post-op; raw is a oneDNN deconvolution with "
                "the chain as its post-ops attribute%s\n", o->chain.text,
                o->chain.n, o->in_place ? "; --in-place: the fused op "
                "accumulates onto its Add's operand in the output's buffer"
                : "");
    if (load_start > 0.25)
        fprintf(f, "note: other processes are running (%.2f CPUs busy): "
                "timings are noisy; ratios measured in this run remain "
                "comparable\n", load_start);
    fprintf(f, "\n");
}

/* Whether the table has oneDNN Graph's columns (builds on oneDNN 3). */
static int graph_column(const bench_options_t *o) {
    return bench_graph_available() && !o->no_graph && !o->chain.n;
}

void bench_print_header(FILE *f, const bench_options_t *o) {
    fprintf(f, "%-30s %-27s %9s %17s %-24s %9s %6s %8s %8s %6s %9s %9s %7s",
            "problem", "dgrad impl", "dgrad ms", "[min..max]", "raw impl",
            "raw ms", "ratio", "added us", "GFLOP/s", "roof%", "compile",
            "cached", "mem MB");
    if (o->dt != dgrad_f32) {
        char vs[16];
        snprintf(vs, sizeof vs, "%s/f32", dgrad_data_type_name(o->dt));
        fprintf(f, " %8s", vs);
    }
    if (graph_column(o)) fprintf(f, " %9s %7s", "graph ms", "/graph");
    if (o->chain.n)
        fprintf(f, " %9s %10s %6s %7s", "bare ms", "unfused ms", "/bare",
                "unf/fus");
    fprintf(f, "  %s\n", "check");
}

/* dgrad's added cost: its median time minus the baseline's, in
 * microseconds (NaN without a baseline). */
static double added_us(const bench_result_t *r) {
    return r->raw_ok ? (r->dg.med - r->raw.med) * 1e3 : NAN;
}

static void fmt_ms(char *buf, size_t n, double v) {
    if (isnan(v)) snprintf(buf, n, "n/a");
    else if (v < 1) snprintf(buf, n, "%.4f", v);
    else if (v < 100) snprintf(buf, n, "%.3f", v);
    else snprintf(buf, n, "%.1f", v);
}

void bench_print_row(FILE *f, const bench_problem_t *p,
        const bench_result_t *r, const bench_options_t *o) {
    char name[31], impl[28], med[16], lo[16], hi[16], range[40], raw[16],
            comp[16], cached[16];
    snprintf(name, sizeof name, "%.30s", bench_problem_label(p));
    snprintf(impl, sizeof impl, "%.27s", r->impl[0] ? r->impl : "-");
    if (!r->ran) {
        fprintf(f, "%-30s %-27s FAILED: %s\n", name, impl, r->error);
        return;
    }
    fmt_ms(med, sizeof med, r->dg.med);
    fmt_ms(lo, sizeof lo, r->dg.min);
    fmt_ms(hi, sizeof hi, r->dg.max);
    snprintf(range, sizeof range, "[%s..%s]", lo, hi);
    fmt_ms(raw, sizeof raw, r->raw.med);
    fmt_ms(comp, sizeof comp, r->compile_ms);
    snprintf(cached, sizeof cached, "%.1fus", r->cached_us);
    size_t n = strlen(comp);
    snprintf(comp + n, sizeof comp - n, "ms");
    char rimpl[25];
    snprintf(rimpl, sizeof rimpl, "%.24s", r->raw_impl);
    fprintf(f, "%-30s %-27s %9s %17s %-24s %9s %6.3f %8.2f %8.1f %6.1f %9s "
            "%9s %7.1f", name, impl, med, range, rimpl, raw,
            r->dg.med / r->raw.med, added_us(r), r->gflops, r->roof_pct, comp,
            cached, r->mem_mb);
    if (o->dt != dgrad_f32) fprintf(f, " %8.3f", r->dg.med / r->f32.med);
    if (graph_column(o)) {
        char g[16];
        fmt_ms(g, sizeof g, r->graph.med);
        fprintf(f, " %9s %7.3f", g, r->dg.med / r->graph.med);
    }
    if (o->chain.n) {
        char bare[16], unf[16];
        fmt_ms(bare, sizeof bare, r->bare.med);
        fmt_ms(unf, sizeof unf, r->unfused.med);
        fprintf(f, " %9s %10s %6.3f %7.3f", bare, unf, r->dg.med / r->bare.med,
                r->unfused.med / r->dg.med);
    }
    fprintf(f, "  %s\n", r->check < 0 ? "-" : r->check ? "ok" : "FAIL");
    /* why, on a line of its own: the table's columns stay aligned */
    if (r->check == 0 && r->error[0])
        fprintf(f, "%-30s   %s\n", "", r->error);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double geomean(const double *v, int n) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0 && isfinite(v[i])) {
            s += log(v[i]);
            k++;
        }
    return k ? exp(s / k) : NAN;
}

/* The target for microsecond problems: on those whose roofline time is
 * under SMALL_ROOF_US, dgrad within TARGET_ADDED_US of the baseline. */
#define SMALL_ROOF_US 10.0
#define TARGET_ADDED_US 2.0

/* dgrad's added cost on the small problems: largest, median, and how many
 * meet the target. Returns -1 when out of memory. */
static int print_added_cost(FILE *f, const bench_result_t *r, int n) {
    double *v = malloc(sizeof(double) * (n > 0 ? n : 1));
    int k = 0, within = 0;
    if (!v) return -1;
    for (int i = 0; i < n; i++)
        if (r[i].ran && r[i].raw_ok && !r[i].raw_wrong
                && r[i].roof_ms * 1e3 < SMALL_ROOF_US) {
            v[k] = added_us(&r[i]);
            within += v[k] <= TARGET_ADDED_US;
            k++;
        }
    if (k) {
        qsort(v, k, sizeof *v, cmp_double);
        double med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
        fprintf(f, "  added us (dgrad - raw) where the roofline time is under "
                "%g us: largest %.2f, median %.2f; %d of %d within %g us\n",
                SMALL_ROOF_US, v[k - 1], med, within, k, TARGET_ADDED_US);
    } else {
        fprintf(f, "  added us (dgrad - raw) where the roofline time is under "
                "%g us: no such problem with a baseline\n", SMALL_ROOF_US);
    }
    free(v);
    return 0;
}

/* The targets of --post-ops (bench/README.md): a fused chain costs at
 * most FUSED_OVER_BARE_TARGET times the bare op (bias + ReLU), and the
 * unfused chain takes at least UNFUSED_OVER_FUSED_TARGET times the fused
 * one on memory-bound problems (geomeans). */
#define FUSED_OVER_BARE_TARGET 1.05
#define UNFUSED_OVER_FUSED_TARGET 1.5

/* The fusion lines of the summary (nothing without --post-ops). Returns
 * -1 when out of memory. */
static int print_fusion(FILE *f, const bench_result_t *r, int n) {
    double *v = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    int nb = 0, nu = 0, nm = 0, wrong = 0;
    if (!v) return -1;
    double *over_bare = v, *unf = v + n, *unf_mem = v + 2 * n;
    for (int i = 0; i < n; i++) {
        const bench_result_t *x = &r[i];
        if (!x->ran || isnan(x->bare.med)) continue;
        over_bare[nb++] = x->dg.med / x->bare.med;
        if (!x->unfused_ok) continue;
        if (x->unfused_wrong) {
            wrong++;
            continue;
        }
        unf[nu++] = x->unfused.med / x->dg.med;
        if (x->memory_bound) unf_mem[nm++] = x->unfused.med / x->dg.med;
    }
    if (nb) {
        double gb = geomean(over_bare, nb);
        fprintf(f, "  geomean fused/bare time ratio: %.3f (%d problems; "
                "target for bias+relu <= %.2f: %s)\n", gb, nb,
                FUSED_OVER_BARE_TARGET,
                gb <= FUSED_OVER_BARE_TARGET ? "met" : "not met");
    }
    if (nu)
        fprintf(f, "  geomean unfused/fused time ratio: %.3f (%d problems)\n",
                geomean(unf, nu), nu);
    if (nm) {
        double gm = geomean(unf_mem, nm);
        fprintf(f, "  geomean unfused/fused on memory-bound problems: %.3f "
                "(%d; target >= %.2f: %s)\n", gm, nm,
                UNFUSED_OVER_FUSED_TARGET,
                gm >= UNFUSED_OVER_FUSED_TARGET ? "met" : "not met");
    } else if (nb) {
        fprintf(f, "  geomean unfused/fused on memory-bound problems: no "
                "such problem with an unfused chain\n");
    }
    if (wrong)
        fprintf(f, "  the unfused chain's output wrong (dgrad's right) on "
                "%d problems: not in its ratios\n", wrong);
    free(v);
    return 0;
}

int bench_print_summary(FILE *f, const bench_problem_t *p,
        const bench_result_t *r, int n, double seconds,
        const bench_options_t *o) {
    double *ratios = calloc((size_t)n * 5, sizeof(double));
    if (!ratios) {
        fprintf(stderr, "dgrad bench: out of memory\n");
        return -1;
    }
    int failed = 0, nr = 0, nd = 0, nf = 0, nroof = 0, ng = 0;
    int raw_wrong = 0, graph_wrong = 0;
    double *r_all = ratios, *r_dw = ratios + n, *r_vs_f32 = ratios + 2 * n,
           *roofs = ratios + 3 * n, *r_graph = ratios + 4 * n;
    double cached_max = 0;
    for (int i = 0; i < n; i++) {
        const bench_result_t *x = &r[i];
        if (!x->ran || x->check == 0) failed++;
        if (!x->ran) continue;
        raw_wrong += x->raw_ok && x->raw_wrong;
        graph_wrong += x->graph_ok && x->graph_wrong;
        if (x->raw_ok && !x->raw_wrong) {
            r_all[nr++] = x->dg.med / x->raw.med;
            if (bench_desc_is_depthwise(&p[i].d))
                r_dw[nd++] = x->dg.med / x->raw.med;
        }
        if (x->has_f32) r_vs_f32[nf++] = x->dg.med / x->f32.med;
        if (x->graph_ok && !x->graph_wrong)
            r_graph[ng++] = x->dg.med / x->graph.med;
        roofs[nroof++] = x->roof_pct;
        if (x->cached_us > cached_max) cached_max = x->cached_us;
    }
    fprintf(f, "\nsummary (%d problems, %d failed, %.1f s):\n", n, failed,
            seconds);
    fprintf(f, "  geomean dgrad/raw oneDNN time ratio: %.3f (%d problems)\n",
            geomean(r_all, nr), nr);
    if (nd)
        fprintf(f, "  geomean dgrad/raw on depthwise problems: %.3f (%d)\n",
                geomean(r_dw, nd), nd);
    if (nf)
        fprintf(f, "  geomean dgrad %s/f32 time ratio: %.3f (%d)\n",
                dgrad_data_type_name(o->dt), geomean(r_vs_f32, nf), nf);
    if (raw_wrong)
        fprintf(f, "  raw oneDNN's output wrong (dgrad's right) on %d "
                "problems: not in its ratios\n", raw_wrong);
    if (ng)
        fprintf(f, "  geomean dgrad/oneDNN Graph time ratio: %.3f (%d "
                "problems)\n", geomean(r_graph, ng), ng);
    if (graph_wrong)
        fprintf(f, "  oneDNN Graph's output wrong (dgrad's right) on %d "
                "problems: not in its ratio\n", graph_wrong);
    if (nr && print_added_cost(f, r, n)) {
        free(ratios);
        fprintf(stderr, "dgrad bench: out of memory\n");
        return -1;
    }
    if (print_fusion(f, r, n)) {
        free(ratios);
        fprintf(stderr, "dgrad bench: out of memory\n");
        return -1;
    }
    fprintf(f, "  geomean roofline fraction: %.1f%%\n", geomean(roofs, nroof));
    fprintf(f, "  cached compile: largest median %.1f us\n", cached_max);
    fprintf(f, "  CPUs busy with other work at the end: %.2f\n",
            bench_other_load(300));
    free(ratios);
    return failed;
}

/* ------------------------------------------------------------------ files */

static void csv_num(FILE *f, double v, const char *fmt) {
    if (isnan(v) || isinf(v)) fputs("nan", f);
    else fprintf(f, fmt, v);
}

int bench_write_csv(const char *path, const bench_problem_t *p,
        const bench_result_t *r, int n, const bench_options_t *o) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dgrad bench: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    /* New columns go at the end: readers of the older header keep
     * working. */
    fputs("problem,dt,data_format,weights_format,dgrad_ms,onednn_ms,ratio,"
          "gflops,roofline_pct,compile_ms,compile_cached_us,raw_baseline,"
          "roofline_us,added_us,graph_ms,raw_wrong,graph_wrong,post_ops,"
          "bare_ms,unfused_ms,memory_bound,unfused_wrong,f32_ms\n", f);
    const char *baseline = o->no_raw ? "none"
            : bench_raw_baseline_name(o->raw_layout, o->raw_prepacked);
    for (int i = 0; i < n; i++) {
        const bench_result_t *x = &r[i];
        double nan_ = NAN;
        fprintf(f, "%s,%s,%s,%s,", p[i].text, dgrad_data_type_name(o->dt),
                bench_layout_name(o->layout), bench_wlayout_name(o->wlayout));
        csv_num(f, x->ran ? x->dg.med : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->raw.med : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->dg.med / x->raw.med : nan_, "%.5g");
        fputc(',', f);
        csv_num(f, x->ran ? x->gflops : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->roof_pct : nan_, "%.5g");
        fputc(',', f);
        csv_num(f, x->compile_ms, "%.5g");
        fputc(',', f);
        csv_num(f, x->cached_us, "%.5g");
        fprintf(f, ",%s,", baseline);
        csv_num(f, x->roof_ms * 1e3, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? added_us(x) : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->graph.med : nan_, "%.6g");
        fprintf(f, ",%d,%d,", x->raw_wrong, x->graph_wrong);
        /* The chain as given: bench_chain_parse refuses commas. */
        fprintf(f, "%s,", o->chain.text);
        csv_num(f, x->ran ? x->bare.med : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->unfused.med : nan_, "%.6g");
        fprintf(f, ",%d,%d,", x->memory_bound, x->unfused_wrong);
        csv_num(f, x->ran && x->has_f32 ? x->f32.med : nan_, "%.6g");
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "dgrad bench: error writing %s\n", path);
        return -1;
    }
    return 0;
}

static int have_program(const char *name) {
    const char *path = getenv("PATH");
    char buf[4096];
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? path : ".", name);
        if (access(buf, X_OK) == 0) return 1;
        path += n + (colon != NULL);
    }
    return 0;
}

int bench_write_plot(const char *png, const bench_problem_t *p,
        const bench_result_t *r, int n, const bench_options_t *o,
        const bench_backend_t *be) {
    if (!have_program("gnuplot")) {
        fprintf(stderr, "dgrad bench: --plot %s: gnuplot is not installed "
                "(apt-get install -y gnuplot-nox); the table%s were written, "
                "the plot was not\n", png, o->csv ? " and the CSV" : "");
        return -1;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "dgrad bench: cannot run gnuplot: %s\n",
                strerror(errno));
        return -1;
    }
    int rows = 0;
    for (int i = 0; i < n; i++) rows += r[i].ran;
    int width = 300 + 28 * (rows > 10 ? rows : 10);
    fprintf(g, "set terminal pngcairo noenhanced size %d,760 font ',9'\n"
               "set output '%s'\n", width > 4000 ? 4000 : width, png);
    fprintf(g, "set title 'dgrad bench: %s %s/%s%s, dgrad through the %s; "
               "roofline = min(peak, bytes/time x bandwidth)'\n",
            dgrad_data_type_name(o->dt), bench_layout_name(o->layout),
            bench_wlayout_name(o->wlayout),
            o->constant_weights ? " constant weights" : "", be->name);
    fputs("set logscale y\nset ylabel 'GFLOP/s'\nset grid ytics\n"
          "set xtics rotate by 60 right\n"
          "set key outside top center horizontal\n"
          "set bmargin 14\nset xrange [-1:*]\n", g);
    fputs("$data << EOD\n", g);
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].ran) continue;
        fprintf(g, "%d \"%s\" %.6g %.6g %.6g\n", x++,
                bench_problem_label(&p[i]),
                r[i].gflops, r[i].raw_ok ? r[i].raw_gflops : NAN,
                r[i].roof_gflops);
    }
    fputs("EOD\n", g);
    const char *raw_on = o->raw_layout == bench_raw_preferred
            ? "preferred layouts"
            : o->raw_prepacked ? "prepacked weights" : "user layout";
    fprintf(g, "plot $data using 1:5:($1-0.4):($1+0.4):xtic(2) with xerrorbars "
          "pt 0 lw 2 lc rgb '#999999' title 'roofline', "
          "'' using 1:4 with points pt 6 ps 1.2 lc rgb '#d62728' "
          "title 'raw oneDNN (%s)', "
          "'' using 1:3 with points pt 7 ps 1.0 lc rgb '#1f77b4' "
          "title 'dgrad'\n", raw_on);
    int rc = pclose(g);
    if (rc != 0) {
        fprintf(stderr, "dgrad bench: gnuplot failed (status %d); no plot "
                "written to %s\n", rc, png);
        return -1;
    }
    return 0;
}
