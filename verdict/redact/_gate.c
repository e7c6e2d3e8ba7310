/* The detector-family gate: one compiled pass over a text that says which families of detectors
 * COULD find something in it (verdict/redact/redactor.py, `Redactor._scan`, skips the others).
 *
 * Each bit is a superset condition of what its family's scanner finds, argued next to it and
 * checked by tests/redact/test_gates.py (gated redaction equals running every scanner). A bit may
 * be set for text in which the scanner finds nothing; it must never be clear for text in which it
 * finds something. Per text in Python `re` such a gate costs as much as the scanner it spares;
 * here it is a few instructions per character. Optional: without it the redactor runs every
 * scanner, as before.
 *
 * Also here, compiled for the same reason: the collector's tests of which attribute values need no
 * redaction (collector/redaction.py: token_shaped, structural, content_keys; its Python stays the
 * reference and the fallback). All functions hold the GIL and run no Python code while they read
 * a str or walk a dict (structural calls `redact` only after it has read its value).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Keep in step with verdict/redact/redactor.py. */
enum { NUMBERS = 1, ASSIGNMENTS = 2, KEYS = 4, AT = 8, IPV6 = 16 };

/* Character classes of ASCII (non-ASCII characters are none of them). */
enum {
    C_DIGIT = 1,   /* 0-9 */
    C_RUN = 2,     /* ( ) space - /: join digits in a number run (numbers._CANDIDATE) */
    C_DOT = 4,     /* . */
    C_NAME = 8,    /* A-Za-z0-9_.- : a field name (assignments._NAME_REVERSED) */
    C_STRIP = 16,  /* _ . - : dropped when a name is normalised (credentials._SEPARATORS) */
    C_QUOTE = 32,  /* \ " ' space tab: between a name and its separator */
    C_UPPER = 64,  /* A-Z */
    C_TRIGGER = 128,  /* can end or anchor a finding: looked at in the scan, the rest skipped */
};
static unsigned char CLASS[128];

/* The last n characters of a normalised name (one byte per character, newest lowest). */
#define LAST(roll, n) ((roll) & ((n) >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * (n))) - 1)))
#define S2(a, b) (((uint64_t)(a) << 8) | (uint64_t)(b))
#define S3(a, b, c) ((S2(a, b) << 8) | (uint64_t)(c))
#define S4(a, b, c, d) ((S3(a, b, c) << 8) | (uint64_t)(d))
#define S5(a, b, c, d, e) ((S4(a, b, c, d) << 8) | (uint64_t)(e))
#define S6(a, b, c, d, e, f) ((S5(a, b, c, d, e) << 8) | (uint64_t)(f))

/* Whether the normalised name `norm` (lower case, no `-_.`) ends with a credential hint
 * (credentials._HINTS: every credential name, normalised, contains one), given its last letter. */
static inline int
ends_with_hint(uint64_t norm, unsigned last)
{
    switch (last) {
    case 's': return LAST(norm, 4) == S4('p', 'a', 's', 's');
    case 'y': return LAST(norm, 3) == S3('k', 'e', 'y');
    case 'h': return LAST(norm, 4) == S4('a', 'u', 't', 'h');
    case 'd': return LAST(norm, 4) == S4('c', 'r', 'e', 'd') || LAST(norm, 3) == S3('p', 'w', 'd');
    case 't': return LAST(norm, 6) == S6('s', 'e', 'c', 'r', 'e', 't') || LAST(norm, 3) == S3('j', 'w', 't');
    case 'n': return LAST(norm, 5) == S5('t', 'o', 'k', 'e', 'n') || LAST(norm, 3) == S3('p', 'i', 'n');
    case 'e': return LAST(norm, 6) == S6('c', 'o', 'o', 'k', 'i', 'e');
    case 'i': return LAST(norm, 5) == S5('s', 'e', 's', 's', 'i');
    case 'p': return LAST(norm, 3) == S3('o', 't', 'p');
    case 'v': return LAST(norm, 2) == S2('c', 'v');
    default: return 0;
    }
}

/* `c` as keys.has_auth_word / keys._auth compare it: lower-cased ASCII letters, and the
 * non-ASCII characters Python's case-insensitive `re` matches to one of "bearer"/"basic"
 * (U+017F long s, U+0130/U+0131 dotted and dotless I); anything else breaks the word. */
static inline unsigned
auth_fold(Py_UCS4 c)
{
    if (c < 128) {
        return (CLASS[c] & C_UPPER) ? c + 32 : ((c >= 'a' && c <= 'z') ? c : 0);
    }
    if (c == 0x17f) return 's';
    if (c == 0x130 || c == 0x131) return 'i';
    return 0;
}

#define CHAR Py_UCS1
#define KIND(name) name##_ucs1
#include "_gate_kind.h"
#undef CHAR
#undef KIND
#define CHAR Py_UCS2
#define KIND(name) name##_ucs2
#include "_gate_kind.h"
#undef CHAR
#undef KIND
#define CHAR Py_UCS4
#define KIND(name) name##_ucs4
#include "_gate_kind.h"
#undef CHAR
#undef KIND

static PyObject *
families(PyObject *Py_UNUSED(module), PyObject *arg)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.200s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (PyUnicode_READY(arg) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    const void *data = PyUnicode_DATA(arg);
    long bits;
    switch (PyUnicode_KIND(arg)) {
    case PyUnicode_1BYTE_KIND: bits = scan_ucs1((const Py_UCS1 *)data, n); break;
    case PyUnicode_2BYTE_KIND: bits = scan_ucs2((const Py_UCS2 *)data, n); break;
    default: bits = scan_ucs4((const Py_UCS4 *)data, n); break;
    }
    return PyLong_FromLong(bits);
}

/* collector.redaction.token_shaped: at most `max_len` characters, printable (str.isprintable),
 * no space and no `@`. */
static int
is_token(PyObject *s, Py_ssize_t max_len)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n > max_len) return 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == ' ' || c == '@') return 0;
        if (c < 128 ? (c < 0x20 || c == 0x7f) : !Py_UNICODE_ISPRINTABLE(c)) return 0;
    }
    return 1;
}

static int
max_len_arg(PyObject *arg, Py_ssize_t *max_len)
{
    *max_len = PyLong_AsSsize_t(arg);
    return *max_len == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *
token_shaped(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t max_len;
    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "token_shaped(max_len, text)");
        return NULL;
    }
    if (max_len_arg(args[0], &max_len) < 0 || PyUnicode_READY(args[1]) < 0) return NULL;
    return PyBool_FromLong(is_token(args[1], max_len));
}

/* structural(redact, max_len, value): collector.redaction.ServerRedaction.structural in `content`
 * mode: None and token-shaped strings as they are, anything else through `redact`. */
static PyObject *
structural(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t max_len;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "structural(redact, max_len, value)");
        return NULL;
    }
    if (max_len_arg(args[1], &max_len) < 0) return NULL;
    PyObject *value = args[2];
    if (value == Py_None) return Py_NewRef(value);
    if (PyUnicode_Check(value)) {
        if (PyUnicode_READY(value) < 0) return NULL;
        if (is_token(value, max_len)) return Py_NewRef(value);
    }
    return PyObject_CallOneArg(args[0], value);
}

/* content_keys(attrs, structural, max_len): the keys of the attribute map `attrs` whose values
 * collector.redaction.ServerRedaction.attributes redacts in `content` mode (its Python loop, kept
 * as the reference: tests/collector/test_redaction_gate.py), in the map's order; None when a key
 * is not an exact str or not yet in `structural` (key -> is_structural(key)): then the caller runs
 * the loop, which also fills `structural`. Runs no Python code, so the maps cannot change under it. */
static PyObject *
content_keys(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t max_len, pos = 0;
    PyObject *key, *value;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "content_keys(attrs: dict, structural: dict, max_len: int)");
        return NULL;
    }
    if (max_len_arg(args[2], &max_len) < 0) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    while (PyDict_Next(args[0], &pos, &key, &value)) {
        int keep;
        if (!PyUnicode_CheckExact(key)) goto unknown;
        if (PyBool_Check(value) || PyFloat_CheckExact(value) || value == Py_None) {
            keep = 1;
        } else {
            int overflow = 0;
            long small = PyLong_CheckExact(value) ? PyLong_AsLongAndOverflow(value, &overflow) : 0;
            if (PyLong_CheckExact(value) && !overflow && small > -1000000 && small < 1000000) {
                keep = 1;  /* _SMALL_INT */
            } else if (PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyList_CheckExact(value)) {
                PyObject *structural = PyDict_GetItemWithError(args[1], key);  /* borrowed */
                if (structural == NULL) {
                    if (PyErr_Occurred()) goto error;
                    goto unknown;
                }
                keep = structural == Py_True;
                if (keep && PyUnicode_CheckExact(value)) {
                    if (PyUnicode_READY(value) < 0) goto error;
                    keep = is_token(value, max_len);
                } else if (keep && PyList_CheckExact(value)) {
                    for (Py_ssize_t i = 0; keep && i < PyList_GET_SIZE(value); i++) {
                        PyObject *item = PyList_GET_ITEM(value, i);
                        keep = PyUnicode_CheckExact(item) && PyUnicode_READY(item) == 0 && is_token(item, max_len);
                    }
                }
            } else {
                keep = 0;  /* maps, bytes, tuples, subclasses: content */
            }
        }
        if (!keep && PyList_Append(out, key) < 0) goto error;
    }
    return out;
unknown:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef METHODS[] = {
    {"families", families, METH_O,
     "families(text) -> int: the bitmask of detector families that could find something in text."},
    {"token_shaped", (PyCFunction)(void (*)(void))token_shaped, METH_FASTCALL,
     "token_shaped(max_len, text) -> bool: collector.redaction.token_shaped."},
    {"structural", (PyCFunction)(void (*)(void))structural, METH_FASTCALL,
     "structural(redact, max_len, value): collector.redaction.ServerRedaction.structural in content mode."},
    {"content_keys", (PyCFunction)(void (*)(void))content_keys, METH_FASTCALL,
     "content_keys(attrs, structural, max_len) -> list | None: the keys ServerRedaction.attributes redacts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "verdict.redact._gate",
    "Compiled detector-family gate of verdict.redact (optional).", 0, METHODS, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__gate(void)
{
    for (unsigned c = '0'; c <= '9'; c++) CLASS[c] |= C_DIGIT | C_NAME;
    for (unsigned c = 'A'; c <= 'Z'; c++) CLASS[c] |= C_UPPER | C_NAME;
    for (unsigned c = 'a'; c <= 'z'; c++) CLASS[c] |= C_NAME;
    for (const char *c = "() -/"; *c; c++) CLASS[(unsigned char)*c] |= C_RUN;
    CLASS['.'] |= C_DOT;
    for (const char *c = "_.-"; *c; c++) CLASS[(unsigned char)*c] |= C_NAME | C_STRIP;
    for (const char *c = "\\\"' \t"; *c; c++) CLASS[(unsigned char)*c] |= C_QUOTE;
    for (const char *c = "0123456789:=@-_KSzJbB"; *c; c++) CLASS[(unsigned char)*c] |= C_TRIGGER;
    return PyModule_Create(&MODULE);
}
