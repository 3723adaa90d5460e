/*
 * `dgrad bench`: times dgrad against a raw oneDNN primitive on benchdnn
 * deconvolution descriptors, in one run and interleaved, with GFLOP/s, the
 * roofline fraction, cold and cached compile times and peak memory; writes
 * a table, a CSV file and a gnuplot plot. The pieces are in bench.h; this
 * is their order.
 *
 * dgrad is reached the way a graph compiler reaches it: through the plugin
 * table (loaded with the loader), building a oneDNN Graph
 * ConvolutionBackwardData op with the user's data and weights formats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "tool.h"

/* Runs every problem, printing its row as it finishes; the results stay
 * for the summary and the files. */
static void run_all(const bench_problem_list_t *list,
        const bench_backend_t *be, const bench_options_t *o,
        const bench_machine_t *m, bench_result_t *results) {
    for (int i = 0; i < list->n; i++) {
        if (!o->quiet && isatty(2)) {
            fprintf(stderr, "\r\033[K[%d/%d] %s", i + 1, list->n,
                    bench_problem_label(&list->v[i]));
            fflush(stderr);
        }
        bench_run_problem(&list->v[i], be, o, m, &results[i]);
        if (!o->quiet && isatty(2)) fprintf(stderr, "\r\033[K");
        bench_print_row(stdout, &list->v[i], &results[i], o);
        fflush(stdout);
    }
}

int dgrad_bench_main(int argc, char **argv) {
    bench_options_t o;
    bench_problem_list_t list = {
            calloc(BENCH_MAX_PROBLEMS, sizeof(bench_problem_t)), 0};
    bench_result_t *results = NULL;
    bench_backend_t be;
    int rc, backend_open = 0;
    if (!list.v) {
        fprintf(stderr, "dgrad bench: out of memory\n");
        return 1;
    }
    rc = bench_options_parse(argc, argv, &o, &list);
    if (rc != BENCH_RUN) goto out;
    if (o.list_problems) {
        for (int i = 0; i < list.n; i++)
            bench_print_problem_json(stdout, &list.v[i]);
        rc = fflush(stdout) ? 1 : 0;
        goto out;
    }
    rc = 1;
    if (bench_backend_open(&be, o.backend, o.core_lib)) goto out;
    backend_open = 1;

    double load_start = bench_other_load(300);
    bench_machine_t m;
    if (bench_machine_measure(&o, &m)) {
        fprintf(stderr, "dgrad bench: calibration failed (peak %.1f GFLOP/s, "
                "%.1f GB/s); give --peak-gflops and --peak-gbs\n", m.gflops,
                m.gbs);
        goto out;
    }
    bench_print_preamble(stdout, list.n, &o, &be, &m, load_start);
    bench_print_header(stdout, &o);
    fflush(stdout);

    results = calloc((size_t)list.n, sizeof *results);
    if (!results) {
        fprintf(stderr, "dgrad bench: out of memory\n");
        goto out;
    }
    double t_start = bench_now_ms();
    run_all(&list, &be, &o, &m, results);
    int failed = bench_print_summary(stdout, list.v, results, list.n,
            (bench_now_ms() - t_start) / 1e3, &o);

    rc = failed != 0;
    if (o.csv && bench_write_csv(o.csv, list.v, results, list.n, &o)) rc = 1;
    if (o.plot && bench_write_plot(o.plot, list.v, results, list.n, &o, &be))
        rc = 1;
out:
    if (backend_open) bench_backend_close(&be);
    free(results);
    free(list.v);
    return rc;
}
