/*
 * The report: one line per failing run (every run with -v), the final line
 * "N passed, N failed, N skipped", and on request a JUnit XML file (one
 * <testsuite> per file or sweep, one <testcase> per run), written with
 * libxml2 so that names and messages are escaped correctly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/tree.h>
#include <libxml/xmlsave.h>

#include "conform.h"

struct cf_report {
    FILE *out;
    int verbose;
    long counts[3];
    int keep;          /* keep results for JUnit */
    cf_result_t *results;
    size_t n, cap;
};

cf_report_t *cf_report_create(FILE *out, int verbose, int keep_for_junit) {
    cf_report_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->out = out;
    r->verbose = verbose;
    r->keep = keep_for_junit;
    return r;
}

void cf_report_destroy(cf_report_t *r) {
    if (!r) return;
    free(r->results);
    free(r);
}

static const char *verdict_word(cf_verdict_t v) {
    return v == cf_pass ? "PASS" : v == cf_fail ? "FAIL" : "SKIP";
}

static const char *num(char *buf, size_t size, double v) {
    if (v < 0) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.3g", v);
    return buf;
}

/* Names and messages may quote bytes of broken input files: one report line
 * stays one line (control characters become '?'), and the XML stays
 * well-formed (there non-ASCII bytes become '?' as well). */
static const char *clean(char *buf, size_t size, const char *text, int ascii) {
    size_t i = 0;
    for (; text[i] && i + 1 < size; i++) {
        unsigned char ch = (unsigned char)text[i];
        int bad = ch < 0x20 || ch == 0x7f || (ascii && ch >= 0x80);
        buf[i] = bad && !(ascii && (ch == '\n' || ch == '\t')) ? '?' : (char)ch;
    }
    buf[i] = '\0';
    return buf;
}

void cf_report_add(cf_report_t *r, const cf_result_t *res) {
    r->counts[res->verdict]++;
    if (res->verdict == cf_fail || r->verbose) {
        char a[32], b[32], name[CF_NAME], detail[CF_MESSAGE];
        fprintf(r->out, "%s %s %s %s %s max_abs=%s max_rel=%s first=%s%s%s\n",
                verdict_word(res->verdict),
                clean(name, sizeof name, res->name, 0), res->dtype, res->layout,
                res->status, num(a, sizeof a, res->max_abs),
                num(b, sizeof b, res->max_rel), res->first,
                res->detail[0] ? " " : "",
                clean(detail, sizeof detail, res->detail, 0));
        fflush(r->out);
    }
    if (!r->keep) return;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        cf_result_t *grown = realloc(r->results, cap * sizeof *grown);
        if (!grown) return; /* the JUnit file then lacks this run */
        r->results = grown;
        r->cap = cap;
    }
    r->results[r->n++] = *res;
}

long cf_report_count(const cf_report_t *r, cf_verdict_t verdict) {
    return r->counts[verdict];
}

void cf_report_summary(cf_report_t *r) {
    fprintf(r->out, "%ld passed, %ld failed, %ld skipped\n", r->counts[cf_pass],
            r->counts[cf_fail], r->counts[cf_skip]);
    fflush(r->out);
}

/* ---------------------------------------------------------------- JUnit */

static xmlNodePtr add_child(xmlNodePtr parent, const char *name) {
    return xmlNewChild(parent, NULL, BAD_CAST name, NULL);
}

static void set_attr(xmlNodePtr node, const char *name, const char *value) {
    char buf[CF_MESSAGE + 256];
    xmlSetProp(node, BAD_CAST name, BAD_CAST clean(buf, sizeof buf, value, 1));
}

static void add_text(xmlNodePtr node, const char *text) {
    char buf[CF_MESSAGE + 256];
    xmlNodeAddContent(node, BAD_CAST clean(buf, sizeof buf, text, 1));
}

static void set_count(xmlNodePtr node, const char *name, long value) {
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", value);
    set_attr(node, name, buf);
}

static void add_testcase(xmlNodePtr suite, const cf_result_t *res) {
    char name[CF_NAME + 48], a[32], b[32], text[CF_MESSAGE + 256];
    snprintf(name, sizeof name, "%s [%s %s]", res->name, res->dtype,
            res->layout);
    xmlNodePtr tc = add_child(suite, "testcase");
    set_attr(tc, "classname", res->suite);
    set_attr(tc, "name", name);
    set_attr(tc, "time", "0");
    snprintf(text, sizeof text, "%s max_abs=%s max_rel=%s first=%s %s",
            res->status, num(a, sizeof a, res->max_abs),
            num(b, sizeof b, res->max_rel), res->first, res->detail);
    if (res->verdict == cf_fail) {
        xmlNodePtr f = add_child(tc, "failure");
        set_attr(f, "message", res->status);
        set_attr(f, "type", res->status);
        add_text(f, text);
    } else if (res->verdict == cf_skip) {
        xmlNodePtr s = add_child(tc, "skipped");
        set_attr(s, "message", res->detail);
    } else {
        xmlNodePtr o = add_child(tc, "system-out");
        add_text(o, text);
    }
}

int cf_report_write_junit(const cf_report_t *r, const char *path, char *err,
        size_t size) {
    xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
    xmlNodePtr root = xmlNewNode(NULL, BAD_CAST "testsuites");
    xmlDocSetRootElement(doc, root);
    set_attr(root, "name", "dgrad conform");
    set_count(root, "tests", (long)r->n);
    long total_fail = 0, total_skip = 0;
    /* Suites in order of first appearance; results grouped under each. */
    char *done = calloc(r->n + 1, 1);
    for (size_t i = 0; done && i < r->n; i++) {
        if (done[i]) continue;
        const char *suite = r->results[i].suite;
        xmlNodePtr s = add_child(root, "testsuite");
        set_attr(s, "name", suite);
        long tests = 0, fails = 0, skips = 0;
        for (size_t j = i; j < r->n; j++) {
            if (done[j] || strcmp(r->results[j].suite, suite)) continue;
            done[j] = 1;
            add_testcase(s, &r->results[j]);
            tests++;
            fails += r->results[j].verdict == cf_fail;
            skips += r->results[j].verdict == cf_skip;
        }
        set_count(s, "tests", tests);
        set_count(s, "failures", fails);
        set_count(s, "errors", 0);
        set_count(s, "skipped", skips);
        total_fail += fails;
        total_skip += skips;
    }
    set_count(root, "failures", total_fail);
    set_count(root, "errors", 0);
    set_count(root, "skipped", total_skip);
    int ok = done && xmlSaveFormatFileEnc(path, doc, "UTF-8", 1) >= 0;
    if (!ok) snprintf(err, size, "cannot write JUnit report '%s'", path);
    free(done);
    xmlFreeDoc(doc);
    return ok;
}
