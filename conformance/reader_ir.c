/*
 * Reader of OpenVINO IR XML: a whole IR (<net> with <layers>) or a bare
 * <layer> element as in the specification's examples. Every
 * ConvolutionBackpropData and GroupConvolutionBackpropData layer runs on its
 * own, on generated data: attributes from <data>, dims from its ports. The
 * optional third input's values live in the weights file (.bin), not in
 * the XML: they are the output port's spatial dims. Layers of other kinds
 * are skipped with their kind named.
 *
 * Parsing is libxml2's, without network access or entity substitution;
 * syntax errors carry line and column, nodes their line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "conform.h"

typedef struct xctx {
    cf_sink_t *sink;
    const char *file;
    int errors;
} xctx_t;

static int xerr(xctx_t *x, xmlNodePtr node, const char *what,
        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* "<file>:<line>: <what>: <rule>" (libxml2 keeps lines, not columns, for
 * nodes); returns 0. */
static int xerr(xctx_t *x, xmlNodePtr node, const char *what,
        const char *fmt, ...) {
    char rule[CF_MESSAGE / 2], where[CF_WHERE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(rule, sizeof rule, fmt, args);
    va_end(args);
    snprintf(where, sizeof where, "%s:%ld", x->file, node ? xmlGetLineNo(node) : 0L);
    cf_sink_errorf(x->sink, x->file, where, what, "%s", rule);
    x->errors++;
    return 0;
}

static int is_element(xmlNodePtr n, const char *name) {
    return n && n->type == XML_ELEMENT_NODE
            && (!name || !xmlStrcmp(n->name, BAD_CAST name));
}

static xmlNodePtr first_child(xmlNodePtr n, const char *name) {
    for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
        if (is_element(c, name)) return c;
    return NULL;
}

/* An attribute's value copied into @p buf; 0 when absent. */
static int get_prop(xmlNodePtr n, const char *name, char *buf, size_t size) {
    xmlChar *v = xmlGetProp(n, BAD_CAST name);
    if (!v) return 0;
    snprintf(buf, size, "%s", (const char *)v);
    xmlFree(v);
    return 1;
}

/* A decimal integer with nothing else but blanks around it. */
static int parse_int(const char *text, int64_t *v) {
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (end == text || errno == ERANGE) return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r') end++;
    *v = (int64_t)x;
    return *end == '\0';
}

/* IR lists are "1,2,3": integers separated by commas. */
static int valid_list(const char *text) {
    const char *p = text;
    for (;;) {
        while (*p == ' ') p++;
        if (*p == '-' || *p == '+') p++;
        if (*p < '0' || *p > '9') return 0;
        while (*p >= '0' && *p <= '9') p++;
        while (*p == ' ') p++;
        if (*p == '\0') return 1;
        if (*p++ != ',') return 0;
    }
}

static const char *const list_attrs[] = {"strides", "pads_begin", "pads_end",
        "dilations", "output_padding"};

static int read_data(xctx_t *x, xmlNodePtr data, cf_case_t *c) {
    for (xmlAttrPtr a = data->properties; a; a = a->next) {
        const char *name = (const char *)a->name;
        char value[CF_ATTR_VALUE];
        int list = 0, known = !strcmp(name, "auto_pad");
        for (size_t i = 0; i < sizeof list_attrs / sizeof *list_attrs; i++)
            if (!strcmp(name, list_attrs[i])) list = known = 1;
        if (!known)
            return xerr(x, data, "unknown attribute", "'%.64s' is not an "
                    "attribute of %s (it has strides, pads_begin, pads_end, "
                    "dilations, auto_pad, output_padding)", name,
                    dgrad_op_kind_name(c->kind));
        xmlChar *v = xmlGetProp(data, a->name);
        size_t len = v ? strlen((const char *)v) : 0;
        if (v) snprintf(value, sizeof value, "%s", (const char *)v);
        xmlFree(v);
        if (len >= sizeof value)
            return xerr(x, data, "too large", "%s is longer than %zu bytes",
                    name, sizeof value - 1);
        /* An empty list is how IR writes an unset one. */
        if (list && !value[0]) continue;
        if (list && !valid_list(value))
            return xerr(x, data, "wrong type", "%s '%.64s' is not a "
                    "comma-separated integer list", name, value);
        if (!cf_case_add_attr(c, name, value))
            return xerr(x, data, "too large", "too many attributes");
    }
    return 1;
}

/* Dims of a <port>: each <dim> a concrete size. */
static int read_port(xctx_t *x, xmlNodePtr port, cf_tensor_t *t) {
    int nd = 0;
    int64_t count = 1;
    for (xmlNodePtr d = port->children; d; d = d->next) {
        if (!is_element(d, NULL)) continue;
        if (!is_element(d, "dim"))
            return xerr(x, d, "unknown element", "<%.32s> in a <port> (it "
                    "holds <dim> elements)", (const char *)d->name);
        if (nd == DGRAD_MAX_NDIMS)
            return xerr(x, d, "too large", "more than %d dims", DGRAD_MAX_NDIMS);
        xmlChar *text = xmlNodeGetContent(d);
        int64_t v = 0;
        int ok = text && parse_int((const char *)text, &v);
        char shown[40];
        snprintf(shown, sizeof shown, "%s", text ? (const char *)text : "");
        xmlFree(text);
        if (!ok)
            return xerr(x, d, "wrong type", "dim '%.32s' is not an integer "
                    "(dynamic dims are not run: the runner needs sizes)", shown);
        if (v < 1)
            return xerr(x, d, "bad value", "dim %lld: sizes are >= 1",
                    (long long)v);
        if (__builtin_mul_overflow(count, v, &count) || count > CF_READER_MAX_ELEMENTS)
            return xerr(x, d, "too large", "the port holds more than 2^40 "
                    "elements");
        t->dims[nd++] = v;
    }
    if (!nd) return xerr(x, port, "missing element", "a <port> has <dim>s");
    t->ndims = nd;
    return 1;
}

/* The <port>s of <input> or <output>, in document order. */
static int read_ports(xctx_t *x, xmlNodePtr parent, cf_tensor_t *t, int max,
        xmlNodePtr *nodes, int *count) {
    *count = 0;
    for (xmlNodePtr p = parent->children; p; p = p->next) {
        if (!is_element(p, NULL)) continue;
        if (!is_element(p, "port"))
            return xerr(x, p, "unknown element", "<%.32s> in <%s> (it holds "
                    "<port> elements)", (const char *)p->name,
                    (const char *)parent->name);
        if (*count == max)
            return xerr(x, p, "bad value", "more than %d ports in <%s>", max,
                    (const char *)parent->name);
        nodes[*count] = p;
        if (!read_port(x, p, &t[(*count)++])) return 0;
    }
    return 1;
}

static void read_layer(xctx_t *x, xmlNodePtr layer) {
    char id[64] = "?", name[128] = "", type[64];
    get_prop(layer, "id", id, sizeof id);
    get_prop(layer, "name", name, sizeof name);
    if (!get_prop(layer, "type", type, sizeof type)) {
        xerr(x, layer, "missing field", "a <layer> has a 'type'");
        return;
    }
    cf_case_t c;
    cf_case_init(&c);
    snprintf(c.name, sizeof c.name, "%s#layer%.32s:%.64s", x->file, id,
            name[0] ? name : type);
    snprintf(c.suite, sizeof c.suite, "%s", x->file);
    snprintf(c.where, sizeof c.where, "%s:%ld", x->file, xmlGetLineNo(layer));
    if (!strcmp(type, "ConvolutionBackpropData")) {
        c.kind = dgrad_op_convolution_backprop_data;
    } else if (!strcmp(type, "GroupConvolutionBackpropData")) {
        c.kind = dgrad_op_group_convolution_backprop_data;
    } else {
        static const char *const runs[] = {"ConvolutionBackpropData",
                "GroupConvolutionBackpropData"};
        const char *near = cf_near_kind(type, runs, 2);
        if (near) {
            xerr(x, layer, "unknown layer kind", "'%.64s' is not an OpenVINO "
                    "op dgrad knows; did you mean %s?", type, near);
            return;
        }
        char reason[160];
        snprintf(reason, sizeof reason, "layer kind %.64s is not run (dgrad "
                "runs ConvolutionBackpropData and GroupConvolutionBackpropData)",
                type);
        x->sink->on_skip(x->sink, x->file, c.name, reason);
        return;
    }
    xmlNodePtr data = first_child(layer, "data");
    xmlNodePtr input = first_child(layer, "input");
    xmlNodePtr output = first_child(layer, "output");
    if (!input || !output) {
        xerr(x, layer, "missing element", "a %s layer has <%s>", type,
                input ? "output" : "input");
        return;
    }
    if (data && !read_data(x, data, &c)) return;
    cf_tensor_t in[3], out[1];
    xmlNodePtr in_nodes[3], out_nodes[1];
    int n_in, n_out;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    if (!read_ports(x, input, in, 3, in_nodes, &n_in)
            || !read_ports(x, output, out, 1, out_nodes, &n_out))
        return;
    if (n_in < 2 || n_out != 1) {
        xerr(x, n_in < 2 ? input : output, "missing element", "%s has 2 or 3 "
                "input ports and 1 output port", type);
        return;
    }
    c.data = in[0];
    c.weights = in[1];
    c.output = out[0];
    c.expected = out[0];
    c.has_expected = 1;
    if (n_in == 3) {
        int nsp = (int)out[0].ndims - 2;
        if (in[2].ndims != 1 || in[2].dims[0] != nsp || nsp < 1) {
            xerr(x, in_nodes[2], "inconsistent", "the output_shape input is "
                    "1-D with one value per spatial axis of the output (%d)", nsp);
            return;
        }
        char prec[16] = "I64";
        get_prop(in_nodes[2], "precision", prec, sizeof prec);
        if (strcmp(prec, "I64") && strcmp(prec, "I32") && strcmp(prec, "i64")
                && strcmp(prec, "i32")) {
            xerr(x, in_nodes[2], "bad value", "output_shape precision '%.16s' "
                    "(dgrad takes I32 or I64)", prec);
            return;
        }
        c.shape_dt = prec[1] == '3' ? dgrad_s32 : dgrad_s64;
        c.third = cf_third_shape;
        c.n_shape = nsp;
        memcpy(c.shape_values, &out[0].dims[2], (size_t)nsp * sizeof(int64_t));
    }
    for (const char *s = c.name; *s; s++) c.seed = c.seed * 31u + (unsigned char)*s;
    x->sink->on_case(x->sink, &c);
}

static void read_doc(xctx_t *x, xmlDocPtr doc) {
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (is_element(root, "layer")) {
        read_layer(x, root);
    } else if (is_element(root, "net")) {
        xmlNodePtr layers = first_child(root, "layers");
        if (!layers) {
            xerr(x, root, "missing element", "a <net> has <layers>");
            return;
        }
        for (xmlNodePtr l = layers->children; l; l = l->next) {
            if (!is_element(l, NULL)) continue;
            if (!is_element(l, "layer")) {
                xerr(x, l, "unknown element", "<%.32s> in <layers>",
                        (const char *)l->name);
                continue;
            }
            read_layer(x, l);
        }
    } else {
        xerr(x, root, "unknown element", "root <%.32s>: an IR file is a <net> "
                "or a <layer>", root ? (const char *)root->name : "");
    }
}

/* The first error libxml2 reports (later ones follow from it). */
typedef struct first_error {
    int set;
    int line, column;
    char text[256];
} first_error_t;

static void on_xml_error(void *user, xmlErrorPtr e) {
    first_error_t *f = user;
    if (f->set || e->level < XML_ERR_ERROR) return;
    f->set = 1;
    f->line = e->line;
    f->column = e->int2;
    snprintf(f->text, sizeof f->text, "%s", e->message ? e->message : "error");
    size_t n = strlen(f->text);
    while (n && (f->text[n - 1] == '\n' || f->text[n - 1] == ' ')) f->text[--n] = '\0';
}

static int read_any(const char *name, const char *path, const char *buf,
        size_t size, cf_sink_t *sink) {
    xctx_t x = {sink, name, 0};
    first_error_t f;
    memset(&f, 0, sizeof f);
    const int options = XML_PARSE_NONET | XML_PARSE_BIG_LINES;
    xmlSetStructuredErrorFunc(&f, on_xml_error);
    xmlDocPtr doc;
    if (path) {
        doc = xmlReadFile(path, NULL, options);
    } else if (size > (size_t)2147483647) {
        doc = NULL;
        snprintf(f.text, sizeof f.text, "larger than 2 GiB");
    } else {
        doc = xmlReadMemory(buf, (int)size, name, NULL, options);
    }
    xmlSetStructuredErrorFunc(NULL, NULL);
    if (!doc) {
        char where[CF_WHERE];
        if (f.set && f.line > 0)
            snprintf(where, sizeof where, "%s:%d:%d", name, f.line, f.column);
        else
            snprintf(where, sizeof where, "%s", name);
        cf_sink_errorf(sink, name, where, f.set && f.line > 0 ? "malformed XML"
                                                             : "unreadable",
                "%s", f.text[0] ? f.text : "cannot read the file");
        return 1;
    }
    read_doc(&x, doc);
    xmlFreeDoc(doc);
    return x.errors;
}

int cf_read_ir_file(const char *path, cf_sink_t *sink) {
    return read_any(path, path, NULL, 0, sink);
}

int cf_read_ir_buffer(const char *name, const char *buf, size_t size,
        cf_sink_t *sink) {
    return read_any(name, NULL, buf, size, sink);
}
