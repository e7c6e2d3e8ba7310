/* The detector-family gate: one compiled pass over a text that says which families of detectors
 * COULD find something in it (verdict/redact/redactor.py, `Redactor._scan`, skips the others).
 *
 * Each bit is a superset condition of what its family's scanner finds, argued next to it and
 * checked by tests/redact/test_gates.py (gated redaction equals running every scanner). A bit may
 * be set for text in which the scanner finds nothing; it must never be clear for text in which it
 * finds something. Per text in Python `re` such a gate costs as much as the scanner it spares;
 * here it is a few instructions per character. Optional: without it the redactor runs every
 * scanner, as before.
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

static PyMethodDef METHODS[] = {
    {"families", families, METH_O,
     "families(text) -> int: the bitmask of detector families that could find something in text."},
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
