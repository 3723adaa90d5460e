/* The command line of `dgrad conform`: options, then paths and sweeps into
 * the runner, the report and its exit status. */
#define _POSIX_C_SOURCE 200809L /* strtok_r, strcasecmp */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conform.h"
#include "graph_anchor.h"

static const char *usage_text =
        "usage: dgrad conform [options] PATH...\n"
        "       dgrad conform [options] --sweep quick|full [PATH...]\n\n"
        "Runs conformance cases through the dgrad plugin and checks every\n"
        "result against the reference. A PATH is a file or a directory (read\n"
        "recursively, .json and .xml files):\n"
        "  vector files (JSON with \"cases\": inputs and expected outputs),\n"
        "  oneDNN Graph JSON graph files (JSON with \"graph\", benchdnn format:\n"
        "    ConvolutionBackwardData and ConvTranspose ops),\n"
        "  OpenVINO IR XML (a <net> or a bare <layer>),\n"
        "  benchdnn graph batch files (lines of --reset, --dt, --in-shapes,\n"
        "    --op-attrs, --mb, --case, --batch; named as a PATH, not found in\n"
        "    directories; recognised by their content).\n"
        "Graph and IR ops run on generated small integers.\n\n"
        "options:\n"
        "  --dtypes LIST      data types each case runs in (default f32,bf16,f16)\n"
        "  --formats LIST     layouts each case runs in: native (as written) and\n"
        "                     translations into oneDNN Graph's dialect: NCX/OIX,\n"
        "                     NCX/XIO, NXC/OIX, NXC/XIO; or all\n"
        "                     (default native,NXC/XIO)\n"
        "  --sweep MODE       add generated cases over the whole op matrix and\n"
        "                     invalid cases: quick (minutes) or full (releases)\n"
        "  --junit FILE       also write a JUnit XML report to FILE\n"
        "  --filter TEXT      run only cases whose name contains TEXT\n"
        "  --oracle NAME      what outputs are judged against: reference (the\n"
        "                     oracle library and files' expected data, the\n"
        "                     default) or onednn-graph (oneDNN Graph's own\n"
        "                     ConvolutionBackwardData, or its ConvTranspose for\n"
        "                     that op's cases, on the same data; builds on\n"
        "                     oneDNN 3; problems it refuses are skipped with\n"
        "                     its reason)\n"
        "  --inputs-dir DIR   batch files' --case= and --batch= paths are looked\n"
        "                     up next to the batch file, then in DIR (e.g.\n"
        "                     oneDNN's tests/benchdnn/inputs/graph)\n"
        "  --max-elements N   tensors with more elements are compiled and their\n"
        "                     output dims checked, but not executed (skipped)\n"
        "                     (default 33554432)\n"
        "  -v, --verbose      a line for every run, not only for failures\n"
        "  -h, --help         this text\n\n"
        "Report: one line per failing run (one case in one data type and one\n"
        "layout): verdict, case, dtype, layout, status, max_abs, max_rel, the\n"
        "first mismatching index (in the output's own dims order) and details;\n"
        "then the line \"N passed, N failed, N skipped\". Unreadable or\n"
        "malformed files are failures named with their position.\n"
        "Batch files: benchdnn options that do not change what an op computes\n"
        "are ignored (%s);\n"
        "any other unknown option is an error.\n"
        "Exit status: 0 when cases ran and nothing failed; 1 when something\n"
        "failed, no case ran (\"no case ran\": an empty folder, or files\n"
        "holding no op dgrad runs) or the plugin cannot be loaded; 2 on usage\n"
        "errors.\n";

static int usage_error(FILE *err, const char *fmt, const char *arg) {
    fprintf(err, "dgrad conform: ");
    fprintf(err, fmt, arg);
    fprintf(err, "\n(see dgrad conform --help)\n");
    return 2;
}

static int parse_dtypes(const char *text, cf_options_t *o) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    o->n_dtypes = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        dgrad_data_type_t dt = cf_data_type_named(t);
        if (!cf_is_compute_type(dt)) return 0;
        int seen = 0;
        for (int i = 0; i < o->n_dtypes; i++) seen |= o->dtypes[i] == dt;
        if (!seen) o->dtypes[o->n_dtypes++] = dt;
    }
    return o->n_dtypes > 0 && strlen(text) < sizeof buf;
}

static int parse_formats(const char *text, cf_options_t *o) {
    static const struct {
        const char *name;
        unsigned flag;
    } names[] = {{"native", CF_LAYOUT_NATIVE}, {"NCX/OIX", CF_LAYOUT_NCX_OIX},
            {"NCX/XIO", CF_LAYOUT_NCX_XIO}, {"NXC/OIX", CF_LAYOUT_NXC_OIX},
            {"NXC/XIO", CF_LAYOUT_NXC_XIO}, {"all", CF_LAYOUT_ALL}};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    o->layouts = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof names / sizeof *names && strcasecmp(t, names[i].name)) i++;
        if (i == sizeof names / sizeof *names) return 0;
        o->layouts |= names[i].flag;
    }
    return o->layouts != 0 && strlen(text) < sizeof buf;
}

int cf_cli_parse(int argc, char **argv, cf_cli_t *cli, FILE *out, FILE *err) {
    memset(cli, 0, sizeof *cli);
    cf_options_default(&cli->options);
    cli->paths = calloc((size_t)argc + 1, sizeof *cli->paths);
    if (!cli->paths) return usage_error(err, "%s", "out of memory");
    int only_paths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_paths || a[0] != '-' || !a[1]) {
            cli->paths[cli->n_paths++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_paths = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fprintf(out, usage_text, cf_batch_ignored_options());
            return 0;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            cli->options.verbose = 1;
            continue;
        }
        /* Options with a value: --opt VALUE or --opt=VALUE. */
        static const char *const with_value[] = {"--dtypes", "--formats",
                "--sweep", "--junit", "--filter", "--max-elements",
                "--inputs-dir", "--oracle"};
        const char *value = NULL;
        size_t k = 0, n = sizeof with_value / sizeof *with_value;
        for (; k < n; k++) {
            size_t len = strlen(with_value[k]);
            if (!strncmp(a, with_value[k], len) && (a[len] == '=' || !a[len])) {
                if (a[len] == '=') value = a + len + 1;
                else if (i + 1 < argc) value = argv[++i];
                else return usage_error(err, "option '%s' needs a value", a);
                break;
            }
        }
        if (k == n) return usage_error(err, "unknown option '%s'", a);
        switch (k) {
            case 0:
                if (!parse_dtypes(value, &cli->options))
                    return usage_error(err, "bad --dtypes '%s' (a list of f32, "
                            "bf16, f16)", value);
                break;
            case 1:
                if (!parse_formats(value, &cli->options))
                    return usage_error(err, "bad --formats '%s' (a list of "
                            "native, NCX/OIX, NCX/XIO, NXC/OIX, NXC/XIO, all)",
                            value);
                break;
            case 2:
                if (!strcmp(value, "quick")) cli->sweep = cf_sweep_quick;
                else if (!strcmp(value, "full")) cli->sweep = cf_sweep_full;
                else return usage_error(err, "bad --sweep '%s' (quick or full)", value);
                break;
            case 3: cli->junit = value; break;
            case 4: cli->options.filter = value; break;
            case 6: cli->inputs_dir = value; break;
            case 7:
                if (!strcmp(value, "reference"))
                    cli->options.oracle = cf_oracle_reference;
                else if (!strcmp(value, "onednn-graph"))
                    cli->options.oracle = cf_oracle_onednn_graph;
                else return usage_error(err, "bad --oracle '%s' (reference or "
                        "onednn-graph)", value);
                if (cli->options.oracle == cf_oracle_onednn_graph
                        && !graph_anchor_available())
                    return usage_error(err, "--oracle %s needs a build on "
                            "oneDNN 3 with its graph API (scripts/build.sh "
                            "--onednn3)", value);
                break;
            default: {
                char *end;
                errno = 0;
                long long v = strtoll(value, &end, 10);
                if (end == value || *end || errno || v < 1)
                    return usage_error(err, "bad --max-elements '%s' (a "
                            "positive integer)", value);
                cli->options.max_elements = v;
            }
        }
    }
    if (!cli->n_paths && cli->sweep == cf_sweep_none)
        return usage_error(err, "%s", "nothing to run: give a PATH or --sweep");
    return -1;
}

void cf_cli_free(cf_cli_t *cli) {
    free(cli->paths);
    cli->paths = NULL;
}

int cf_cli_run(const cf_cli_t *cli, const cf_backend_t *backend, FILE *out,
        FILE *err) {
    cf_report_t *report = cf_report_create(out, cli->options.verbose,
            cli->junit != NULL);
    cf_runner_t *runner = report ? cf_runner_create(&cli->options, backend, report)
                                 : NULL;
    if (!runner) {
        fprintf(err, "dgrad conform: out of memory\n");
        cf_report_destroy(report);
        return 1;
    }
    for (int i = 0; i < cli->n_paths; i++)
        cf_read_path(cli->paths[i], cli->inputs_dir, cf_runner_sink(runner));
    cf_sweep_generate(cli->sweep, cf_runner_sink(runner));
    cf_report_summary(report);
    int status = cf_report_count(report, cf_fail) ? 1 : 0;
    /* Nothing checked is not a success: a wrong folder, or files whose ops
     * are all of other kinds, would otherwise pass. */
    if (!cf_report_count(report, cf_pass) && !status) {
        fprintf(err, "dgrad conform: no case ran (%ld skipped)\n",
                cf_report_count(report, cf_skip));
        status = 1;
    }
    char msg[256];
    if (cli->junit && !cf_report_write_junit(report, cli->junit, msg, sizeof msg)) {
        fprintf(err, "dgrad conform: %s\n", msg);
        status = 1;
    }
    cf_runner_destroy(runner);
    cf_report_destroy(report);
    return status;
}
