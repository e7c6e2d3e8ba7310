/* ExportTraceServiceRequest protobuf bytes -> the plain tuples of collector.spandata, in one pass.
 *
 * Reading a span through upb costs a wrapper object per KeyValue and AnyValue (docs/collector.md,
 * "Instructions per span, issue 31"); this decoder reads the wire format directly into the values
 * flatten consumes. It is exact or it abstains: whatever it does not reproduce byte for byte
 * (groups, a singular message field sent twice (protobuf merges them), over-long varints, deep
 * nesting, invalid UTF-8) makes decode() return None, and the caller parses with upb instead, which
 * then accepts or rejects the request with its own error. Every read is bounds-checked against the
 * enclosing length; the GIL is held throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

/* AnyValue nesting abstained from: far below upb's recursion limit, so upb decides every deep request. */
#define MAX_DEPTH 32

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Rd;

/* collector.decoding's request size limit, counted as it counts: past it the decoder abstains (before
 * building more), and the upb path answers 413 with the exact counts. */
typedef struct {
    Py_ssize_t items, values, max_items, max_values;
} Budget;

/* Span attribute keys by position, from the previous span: senders repeat them in the same order, so most
 * keys are the previous span's string object again (decoded once, hash cached for the dict inserts). */
#define KEY_SLOTS 64

typedef struct {
    PyObject *keys[KEY_SLOTS];
    Py_ssize_t last_count; /* attributes of the previous span: the next one's dict is sized for them */
} Recent;

typedef struct {
    Budget *budget;
    Recent *recent;
    Py_ssize_t cap;
    PyObject *cap_obj;
    PyObject *truncate; /* callable(str, cap) -> str: collector.flatten's one truncation format */
    PyObject *b64;      /* callable(bytes) -> str */
    PyObject *content;  /* dict: span attribute key -> content column */
} Ctx;

/* Return conventions: pointers NULL with an exception set = a real error (memory, a callback);
 * NULL without one = abstain. ints: 0 ok, -1 the same two cases. */

static int varint(Rd *r, uint64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return -1;
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return -1; /* bits beyond 64: upb decides */
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int tag(Rd *r, uint32_t *field, int *wt) {
    uint64_t t;
    if (varint(r, &t) || t > UINT32_MAX || (t >> 3) == 0) return -1;
    *field = (uint32_t)(t >> 3);
    *wt = (int)(t & 7);
    return 0;
}

static int sub(Rd *r, Rd *out) {
    uint64_t n;
    if (varint(r, &n) || n > (uint64_t)(r->end - r->p)) return -1;
    out->p = r->p;
    out->end = r->p + n;
    r->p += n;
    return 0;
}

static int fixed(Rd *r, int bytes, uint64_t *out) {
    if (r->end - r->p < bytes) return -1;
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | r->p[i]; /* little-endian on any host */
    r->p += bytes;
    *out = v;
    return 0;
}

/* An unknown field (or a known number with another wire type, which protobuf treats as unknown). */
static int skip(Rd *r, int wt) {
    uint64_t v;
    Rd s;
    switch (wt) {
    case 0: return varint(r, &v);
    case 1: return fixed(r, 8, &v);
    case 2: return sub(r, &s);
    case 5: return fixed(r, 4, &v);
    default: return -1; /* groups and invalid wire types: upb decides */
    }
}

/* Strict UTF-8 (as protobuf checks proto3 strings); NULL without an exception when invalid. */
static PyObject *text(const Rd *s) {
    PyObject *o = PyUnicode_DecodeUTF8((const char *)s->p, s->end - s->p, NULL);
    if (o == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
    return o;
}

static int check_text(const Rd *s) {
    PyObject *o = text(s);
    if (o == NULL) return -1;
    Py_DECREF(o);
    return 0;
}

static PyObject *bytes_of(const Rd *s) { return PyBytes_FromStringAndSize((const char *)s->p, s->end - s->p); }

static PyObject *capped(Ctx *c, const Rd *s) {
    PyObject *o = text(s);
    if (o == NULL || PyUnicode_GET_LENGTH(o) <= c->cap) return o;
    PyObject *t = PyObject_CallFunctionObjArgs(c->truncate, o, c->cap_obj, NULL);
    Py_DECREF(o);
    return t;
}

/* Replace *slot with a new reference; -1 (abstain or error) when o is NULL. */
static int put(PyObject **slot, PyObject *o) {
    if (o == NULL) return -1;
    Py_XSETREF(*slot, o);
    return 0;
}

static int append(PyObject *list, PyObject *o) {
    if (o == NULL) return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* The collector.spandata NamedTuple classes (configure()): instances are built as tuple.__new__ builds
 * them, without calling the classes' Python __new__. */
enum { T_RESOURCE, T_SCOPE, T_SPAN, T_EVENT, T_LINK, T_COUNT };
static const int FIELDS[T_COUNT] = {2, 4, 18, 4, 4};
static PyTypeObject *types[T_COUNT];

/* A new T instance holding items (references stolen); NULL if any item is NULL or allocation fails. */
static PyObject *build(int t, ...) {
    va_list ap;
    PyObject *items[18];
    int missing = 0;
    va_start(ap, t);
    for (int i = 0; i < FIELDS[t]; i++) missing |= (items[i] = va_arg(ap, PyObject *)) == NULL;
    va_end(ap);
    PyObject *out = missing ? NULL : types[t]->tp_alloc(types[t], FIELDS[t]);
    for (int i = 0; i < FIELDS[t]; i++) {
        if (out != NULL) PyTuple_SET_ITEM(out, i, items[i]);
        else Py_XDECREF(items[i]);
    }
    return out;
}

static int spend(Ctx *c, Py_ssize_t items, Py_ssize_t values) {
    Budget *b = c->budget;
    b->items += items;
    b->values += values;
    return b->items > b->max_items || b->values > b->max_values ? -1 : 0;
}

static PyObject *any_value(Ctx *c, Rd r, int depth);

/* The key as a str, reusing *slot when it holds these very bytes (an ASCII str's data is its UTF-8). */
static PyObject *key_text(const Rd *s, PyObject **slot) {
    Py_ssize_t n = s->end - s->p;
    if (slot == NULL) return text(s);
    PyObject *k = *slot;
    if (k != NULL && PyUnicode_GET_LENGTH(k) == n && memcmp(PyUnicode_DATA(k), s->p, n) == 0) return Py_NewRef(k);
    k = text(s);
    if (k != NULL && PyUnicode_IS_COMPACT_ASCII(k)) Py_XSETREF(*slot, Py_NewRef(k));
    return k;
}

/* KeyValue -> (key, decoded value); slot: a key cache (Recent), or NULL. */
static int key_value(Ctx *c, Rd r, int depth, PyObject **key, PyObject **value, PyObject **slot) {
    uint32_t f;
    int wt, seen_value = 0;
    Rd s;
    *key = *value = NULL;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (f == 1 && wt == 2) {
            if (sub(&r, &s) || put(key, key_text(&s, slot))) goto fail;
        } else if (f == 2 && wt == 2) {
            if (seen_value++ || sub(&r, &s) || put(value, any_value(c, s, depth + 1))) goto fail;
        } else if (skip(&r, wt)) goto fail;
    }
    if (*key == NULL && (*key = PyUnicode_FromStringAndSize("", 0)) == NULL) goto fail;
    if (*value == NULL) *value = Py_NewRef(Py_None); /* no value: _any of an empty AnyValue */
    return 0;
fail:
    Py_CLEAR(*key);
    Py_CLEAR(*value);
    return -1;
}

static PyObject *any_value(Ctx *c, Rd r, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    uint32_t f;
    int wt, seen_array = 0, seen_kvlist = 0;
    uint64_t v;
    Rd s, item;
    PyObject *out = Py_NewRef(Py_None); /* no case set (or string_value_strindex): None, as _any */
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        PyObject *o = NULL;
        if (f == 1 && wt == 2) {
            if (sub(&r, &s)) goto fail;
            o = capped(c, &s);
        } else if (f == 2 && wt == 0) {
            if (varint(&r, &v)) goto fail;
            o = PyBool_FromLong(v != 0);
        } else if (f == 3 && wt == 0) {
            if (varint(&r, &v)) goto fail;
            o = PyLong_FromLongLong((long long)v);
        } else if (f == 4 && wt == 1) {
            if (fixed(&r, 8, &v)) goto fail;
            double d;
            memcpy(&d, &v, sizeof d);
            PyObject *fl = PyFloat_FromDouble(d);
            if (fl == NULL || isfinite(d)) o = fl;
            else { /* JSON has no NaN or infinity: their str(), as _any */
                o = PyObject_Str(fl);
                Py_DECREF(fl);
            }
        } else if (f == 5 && wt == 2) {
            if (seen_array++ || sub(&r, &s) || (o = PyList_New(0)) == NULL) goto fail;
            while (s.p < s.end) {
                if (tag(&s, &f, &wt)) goto fail_o;
                if (f == 1 && wt == 2) {
                    if (sub(&s, &item) || append(o, any_value(c, item, depth + 1))) goto fail_o;
                } else if (skip(&s, wt)) goto fail_o;
            }
        } else if (f == 6 && wt == 2) {
            if (seen_kvlist++ || sub(&r, &s) || (o = PyDict_New()) == NULL) goto fail;
            while (s.p < s.end) {
                if (tag(&s, &f, &wt)) goto fail_o;
                if (f == 1 && wt == 2) {
                    PyObject *k, *val;
                    if (sub(&s, &item) || key_value(c, item, depth, &k, &val, NULL)) goto fail_o;
                    int rc = PyDict_SetItem(o, k, val);
                    Py_DECREF(k);
                    Py_DECREF(val);
                    if (rc) goto fail_o;
                } else if (skip(&s, wt)) goto fail_o;
            }
        } else if (f == 7 && wt == 2) {
            if (sub(&r, &s)) goto fail;
            PyObject *b = bytes_of(&s);
            if (b == NULL) goto fail;
            o = PyObject_CallOneArg(c->b64, b);
            Py_DECREF(b);
        } else if (f == 8 && wt == 0) {
            if (varint(&r, &v)) goto fail;
            o = Py_NewRef(Py_None);
        } else {
            if (skip(&r, wt)) goto fail;
            continue;
        }
        if (put(&out, o)) goto fail;
        continue;
    fail_o:
        Py_DECREF(o);
        goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* One KeyValue appended to a list of (key, value) pairs. */
static int pair(Ctx *c, Rd *r, PyObject *list) {
    Rd s;
    PyObject *k, *v;
    if (spend(c, 0, 1) || sub(r, &s) || key_value(c, s, 0, &k, &v, NULL)) return -1;
    PyObject *t = PyTuple_Pack(2, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    return append(list, t);
}

static PyObject *span_event(Ctx *c, Rd r) {
    uint32_t f;
    int wt;
    uint64_t v, time = 0, dropped = 0;
    Rd s;
    PyObject *name = NULL, *attrs = PyList_New(0);
    if (attrs == NULL) return NULL;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (f == 1 && wt == 1) {
            if (fixed(&r, 8, &time)) goto fail;
        } else if (f == 2 && wt == 2) {
            if (sub(&r, &s) || put(&name, text(&s))) goto fail;
        } else if (f == 3 && wt == 2) {
            if (pair(c, &r, attrs)) goto fail;
        } else if (f == 4 && wt == 0) {
            if (varint(&r, &v)) goto fail;
            dropped = (uint32_t)v;
        } else if (skip(&r, wt)) goto fail;
    }
    if (name == NULL && (name = PyUnicode_FromStringAndSize("", 0)) == NULL) goto fail;
    return build(T_EVENT, PyLong_FromUnsignedLongLong(time), name, attrs, PyLong_FromUnsignedLongLong(dropped));
fail:
    Py_XDECREF(name);
    Py_DECREF(attrs);
    return NULL;
}

static PyObject *span_link(Ctx *c, Rd r) {
    uint32_t f;
    int wt;
    Rd s, trace_id = {NULL, NULL}, span_id = {NULL, NULL};
    PyObject *state = NULL, *attrs = PyList_New(0);
    if (attrs == NULL) return NULL;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (f == 1 && wt == 2) {
            if (sub(&r, &trace_id)) goto fail;
        } else if (f == 2 && wt == 2) {
            if (sub(&r, &span_id)) goto fail;
        } else if (f == 3 && wt == 2) {
            if (sub(&r, &s) || put(&state, text(&s))) goto fail;
        } else if (f == 4 && wt == 2) {
            if (pair(c, &r, attrs)) goto fail;
        } else if (skip(&r, wt)) goto fail;
    }
    if (state == NULL && (state = PyUnicode_FromStringAndSize("", 0)) == NULL) goto fail;
    return build(T_LINK, bytes_of(&trace_id), bytes_of(&span_id), state, attrs);
fail:
    Py_XDECREF(state);
    Py_DECREF(attrs);
    return NULL;
}

/* Span attributes straight into (attributes, content) dicts, as flatten._span_attributes splits them. */
static int span_attribute(Ctx *c, Rd *r, Py_ssize_t index, PyObject *attrs, PyObject *content) {
    Rd s;
    PyObject *k, *v;
    PyObject **slot = index < KEY_SLOTS ? &c->recent->keys[index] : NULL;
    if (spend(c, 0, 1) || sub(r, &s) || key_value(c, s, 0, &k, &v, slot)) return -1;
    PyObject *column = PyDict_GetItemWithError(c->content, k);
    int rc = column != NULL ? PyDict_SetItem(content, column, v)
             : PyErr_Occurred() ? -1 : PyDict_SetItem(attrs, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    return rc;
}

static PyObject *span(Ctx *c, Rd r) {
    uint32_t f;
    int wt, seen_status = 0;
    uint64_t v, start = 0, end = 0;
    int32_t kind = 0, code = 0;
    uint32_t dropped_attrs = 0, dropped_events = 0, dropped_links = 0;
    Py_ssize_t nattrs = 0;
    Rd s, ids[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    PyObject *state = NULL, *name = NULL, *message = NULL, *out = NULL;
    PyObject *attrs = _PyDict_NewPresized(c->recent->last_count), *content = PyDict_New(), *events = PyList_New(0), *links = PyList_New(0);
    if (attrs == NULL || content == NULL || events == NULL || links == NULL) goto fail;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (wt == 2 && (f == 1 || f == 2 || f == 4)) {
            if (sub(&r, &ids[f == 4 ? 2 : f - 1])) goto fail;
        } else if (f == 3 && wt == 2) {
            if (sub(&r, &s) || put(&state, text(&s))) goto fail;
        } else if (f == 5 && wt == 2) {
            if (sub(&r, &s) || put(&name, text(&s))) goto fail;
        } else if (f == 6 && wt == 0) {
            if (varint(&r, &v)) goto fail;
            kind = (int32_t)(uint32_t)v; /* an int32 enum keeps the low 32 bits */
        } else if ((f == 7 || f == 8) && wt == 1) {
            if (fixed(&r, 8, f == 7 ? &start : &end)) goto fail;
        } else if (f == 9 && wt == 2) {
            if (span_attribute(c, &r, nattrs++, attrs, content)) goto fail;
        } else if ((f == 10 || f == 12 || f == 14) && wt == 0) {
            if (varint(&r, &v)) goto fail;
            *(f == 10 ? &dropped_attrs : f == 12 ? &dropped_events : &dropped_links) = (uint32_t)v;
        } else if (f == 11 && wt == 2) {
            if (spend(c, 0, 1) || sub(&r, &s) || append(events, span_event(c, s))) goto fail;
        } else if (f == 13 && wt == 2) {
            if (spend(c, 0, 1) || sub(&r, &s) || append(links, span_link(c, s))) goto fail;
        } else if (f == 15 && wt == 2) {
            if (seen_status++ || sub(&r, &s)) goto fail; /* twice: protobuf merges them, upb decides */
            while (s.p < s.end) {
                if (tag(&s, &f, &wt)) goto fail;
                if (f == 2 && wt == 2) {
                    Rd m;
                    if (sub(&s, &m) || put(&message, text(&m))) goto fail;
                } else if (f == 3 && wt == 0) {
                    if (varint(&s, &v)) goto fail;
                    code = (int32_t)(uint32_t)v;
                } else if (skip(&s, wt)) goto fail;
            }
        } else if (skip(&r, wt)) goto fail;
    }
    PyObject *empty = PyUnicode_FromStringAndSize("", 0);
    if (empty == NULL) goto fail;
    out = build(T_SPAN, bytes_of(&ids[0]), bytes_of(&ids[1]), bytes_of(&ids[2]), state ? state : Py_NewRef(empty),
                name ? name : Py_NewRef(empty), PyLong_FromLong(kind), PyLong_FromUnsignedLongLong(start),
                PyLong_FromUnsignedLongLong(end), attrs, content, PyLong_FromSsize_t(nattrs),
                PyLong_FromUnsignedLong(dropped_attrs), events, PyLong_FromUnsignedLong(dropped_events), links,
                PyLong_FromUnsignedLong(dropped_links), PyLong_FromLong(code),
                message ? message : Py_NewRef(empty));
    Py_DECREF(empty);
    c->recent->last_count = nattrs;
    return out;
fail:
    Py_XDECREF(state);
    Py_XDECREF(name);
    Py_XDECREF(message);
    Py_XDECREF(attrs);
    Py_XDECREF(content);
    Py_XDECREF(events);
    Py_XDECREF(links);
    return NULL;
}

/* EntityRef (Resource.entity_refs): nothing flatten reads, but protobuf checks its strings. */
static int entity_ref(Rd r) {
    uint32_t f;
    int wt;
    Rd s;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) return -1;
        if (f >= 1 && f <= 4 && wt == 2) {
            if (sub(&r, &s) || check_text(&s)) return -1;
        } else if (skip(&r, wt)) return -1;
    }
    return 0;
}

static PyObject *scope_spans(Ctx *c, Rd r) {
    /* Scope attributes stay whole: content_for_scope compares the SDK's claim with them as sent. */
    Ctx whole = *c;
    whole.cap = PY_SSIZE_T_MAX;
    uint32_t f;
    int wt, seen_scope = 0;
    Rd s, m;
    PyObject *name = NULL, *version = NULL, *attrs = PyList_New(0), *spans = PyList_New(0);
    if (attrs == NULL || spans == NULL) goto fail;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (f == 1 && wt == 2) {
            if (seen_scope++ || sub(&r, &s)) goto fail;
            while (s.p < s.end) {
                if (tag(&s, &f, &wt)) goto fail;
                if ((f == 1 || f == 2) && wt == 2) {
                    if (sub(&s, &m) || put(f == 1 ? &name : &version, text(&m))) goto fail;
                } else if (f == 3 && wt == 2) {
                    if (pair(&whole, &s, attrs)) goto fail;
                } else if (skip(&s, wt)) goto fail;
            }
        } else if (f == 2 && wt == 2) {
            if (spend(c, 1, 0) || sub(&r, &s) || append(spans, span(c, s))) goto fail;
        } else if (f == 3 && wt == 2) {
            if (sub(&r, &s) || check_text(&s)) goto fail;
        } else if (skip(&r, wt)) goto fail;
    }
    if (name == NULL && (name = PyUnicode_FromStringAndSize("", 0)) == NULL) goto fail;
    if (version == NULL && (version = PyUnicode_FromStringAndSize("", 0)) == NULL) goto fail;
    return build(T_SCOPE, name, version, attrs, spans);
fail:
    Py_XDECREF(name);
    Py_XDECREF(version);
    Py_XDECREF(attrs);
    Py_XDECREF(spans);
    return NULL;
}

static PyObject *resource_spans(Ctx *c, Rd r) {
    uint32_t f;
    int wt, seen_resource = 0;
    Rd s, m;
    PyObject *attrs = PyList_New(0), *scopes = PyList_New(0);
    if (attrs == NULL || scopes == NULL) goto fail;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto fail;
        if (f == 1 && wt == 2) {
            if (seen_resource++ || sub(&r, &s)) goto fail;
            while (s.p < s.end) {
                if (tag(&s, &f, &wt)) goto fail;
                if (f == 1 && wt == 2) {
                    if (pair(c, &s, attrs)) goto fail;
                } else if (f == 3 && wt == 2) {
                    if (sub(&s, &m) || entity_ref(m)) goto fail;
                } else if (skip(&s, wt)) goto fail;
            }
        } else if (f == 2 && wt == 2) {
            if (sub(&r, &s) || append(scopes, scope_spans(c, s))) goto fail;
        } else if (f == 3 && wt == 2) {
            if (sub(&r, &s) || check_text(&s)) goto fail;
        } else if (skip(&r, wt)) goto fail;
    }
    return build(T_RESOURCE, attrs, scopes);
fail:
    Py_XDECREF(attrs);
    Py_XDECREF(scopes);
    return NULL;
}

static PyObject *decode(PyObject *module, PyObject *args) {
    Py_buffer data;
    Budget budget = {0, 0, 0, 0};
    Recent recent = {{NULL}, 0};
    Ctx c = {&budget, &recent, 0, NULL, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "y*nOOO!nn:decode", &data, &c.cap, &c.truncate, &c.b64, &PyDict_Type, &c.content,
                          &budget.max_items, &budget.max_values))
        return NULL;
    PyObject *out = NULL, *resources = NULL;
    if (types[T_COUNT - 1] == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_otlpdecode.configure() was not called");
        PyBuffer_Release(&data);
        return NULL;
    }
    /* Everything built here is a tree (no cycles): the cyclic collector's passes over the growing request
     * (≈ 5k instructions per span) would find nothing. It is off only while this call runs (another thread
     * could run meanwhile only inside the rare truncate/b64 callbacks: its collection is merely delayed). */
    int collecting = PyGC_Disable();
    if ((c.cap_obj = PyLong_FromSsize_t(c.cap)) == NULL || (resources = PyList_New(0)) == NULL) goto done;
    Rd r = {(const uint8_t *)data.buf, (const uint8_t *)data.buf + data.len}, s;
    uint32_t f;
    int wt;
    while (r.p < r.end) {
        if (tag(&r, &f, &wt)) goto done;
        if (f == 1 && wt == 2) {
            if (sub(&r, &s) || append(resources, resource_spans(&c, s))) goto done;
        } else if (skip(&r, wt)) goto done;
    }
    out = Py_NewRef(resources);
done:
    if (collecting) PyGC_Enable();
    Py_XDECREF(resources);
    Py_XDECREF(c.cap_obj);
    for (int i = 0; i < KEY_SLOTS; i++) Py_XDECREF(recent.keys[i]);
    PyBuffer_Release(&data);
    if (out == NULL && !PyErr_Occurred()) out = Py_NewRef(Py_None); /* abstained: parse with upb */
    return out;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *given[T_COUNT];
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!:configure", &PyType_Type, &given[0], &PyType_Type, &given[1], &PyType_Type,
                          &given[2], &PyType_Type, &given[3], &PyType_Type, &given[4]))
        return NULL;
    for (int t = 0; t < T_COUNT; t++) {
        PyTypeObject *type = (PyTypeObject *)given[t];
        PyObject *fields = PyObject_GetAttrString(given[t], "_fields");
        Py_ssize_t n = fields == NULL ? -1 : PyObject_Length(fields);
        Py_XDECREF(fields);
        /* Only a NamedTuple (a tuple subclass adding no state) can be built by tp_alloc and SET_ITEM. */
        if (n != FIELDS[t] || !PyType_IsSubtype(type, &PyTuple_Type) || type->tp_basicsize != PyTuple_Type.tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "configure: %s is not a NamedTuple of %d fields", type->tp_name, FIELDS[t]);
            return NULL;
        }
    }
    for (int t = 0; t < T_COUNT; t++) Py_XSETREF(types[t], (PyTypeObject *)Py_NewRef(given[t]));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(resource, scope, span, event, link): the NamedTuples built"},
    {"decode", decode, METH_VARARGS,
     "decode(data, cap, truncate, b64, content_columns, max_items, max_values) -> list of ResourceData, or None: "
     "parse with upb"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "collector._otlpdecode", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__otlpdecode(void) { return PyModule_Create(&module); }
