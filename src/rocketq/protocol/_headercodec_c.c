/* Compiled twin of the generated ``from_ext`` functions in rocketq/protocol/header_codec.py (``compile_from_ext``):
 * a request's extFields (str -> str) into a frozen, slotted header dataclass.
 *
 * Profiling the broker put ~7-9 % of a send's or a pull's time in reading its header (a dict lookup, an int()
 * and a descriptor call per field). This reads the same fields by a plan built once per class in Python, and
 * writes the slots directly. Anything unusual (a mapping that is not a dict, a value that is not a str) goes to
 * the generated Python function; a value int() refuses goes to the same helper that function uses, so the
 * results and errors are the same (tests run both).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *HeaderError;  /* rocketq.protocol.header_codec.HeaderError */
static PyObject *parse_int;    /* header_codec._parse_int(raw, key): floats and the error */
static PyObject *parse_bool;   /* header_codec._parse_bool(raw) */
static PyObject *out_of_range; /* header_codec._out_of_range(raw, key, bits): raises the HeaderError */

/* K_INT: a Java Long (64 bits); K_INT32: a Java Integer. A value outside its width is refused (as Java's
 * parseLong/parseInt refuse it) by the same helper the generated code calls. */
enum { K_STR = 0, K_INT = 1, K_BOOL = 2, K_INT32 = 3 };
/* One plan entry: (slot offset, key to read, key to read when it is absent or None, kind, default,
 * message when missing (None: not required), wire key). */
enum { P_OFFSET, P_KEY, P_ALT, P_KIND, P_DEFAULT, P_MISSING, P_WIRE, P_SIZE };

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *error, *pint, *pbool, *prange;
    if (!PyArg_ParseTuple(args, "OOOO:configure", &error, &pint, &pbool, &prange)) return NULL;
    Py_XSETREF(HeaderError, Py_NewRef(error));
    Py_XSETREF(parse_int, Py_NewRef(pint));
    Py_XSETREF(parse_bool, Py_NewRef(pbool));
    Py_XSETREF(out_of_range, Py_NewRef(prange));
    Py_RETURN_NONE;
}

/* Where attribute `name` lives in instances of `cls` (it must be a __slots__ member). */
static PyObject *slot_offset(PyObject *self, PyObject *args) {
    PyTypeObject *cls;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "O!U:slot_offset", &PyType_Type, &cls, &name)) return NULL;
    PyObject *d = PyObject_GetAttr((PyObject *)cls, name);
    if (d == NULL) return NULL;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && PyType_IsSubtype(cls, ((PyDescrObject *)d)->d_type)
             && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
    Py_ssize_t offset = ok ? ((PyMemberDescrObject *)d)->d_member->offset : -1;
    Py_DECREF(d);
    if (!ok) return PyErr_Format(PyExc_TypeError, "%s.%U is not a __slots__ attribute", cls->tp_name, name);
    return PyLong_FromSsize_t(offset);
}

/* read_header(cls, plan, pure, ext): see the top of this file. */
/* int(raw) for the usual text, an optional '-' and 1 to 18 ASCII digits (what every client sends), without the
 * copy PyLong_FromUnicodeObject makes first; NULL without an error for anything else (whitespace, '+', '_',
 * other digits), which the caller hands to PyLong_FromUnicodeObject as before. */
static PyObject *plain_decimal(PyObject *raw) {
    if (!PyUnicode_IS_ASCII(raw)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(raw);
    const unsigned char *p = PyUnicode_1BYTE_DATA(raw);
    int negative = n > 0 && p[0] == '-';
    Py_ssize_t i = negative;
    if (n - i < 1 || n - i > 18) return NULL;
    long long v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return NULL;
        v = v * 10 + (p[i] - '0');
    }
    return PyLong_FromLongLong(negative ? -v : v);
}

static PyObject *read_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "read_header() takes 4 arguments (%zd given)", nargs);
    PyTypeObject *cls = (PyTypeObject *)args[0];
    PyObject *plan = args[1], *pure = args[2], *ext = args[3];
    if (!PyDict_CheckExact(ext)) return PyObject_CallOneArg(pure, ext);
    if (!PyType_Check(cls) || !PyTuple_CheckExact(plan) || HeaderError == NULL || out_of_range == NULL) {
        PyErr_SetString(PyExc_TypeError, "read_header: bad class or plan (or configure() not called)");
        return NULL;
    }
    PyObject *obj = cls->tp_alloc(cls, 0);
    if (obj == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(plan);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PyTuple_GET_ITEM(plan, i);
        PyObject *raw = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(spec, P_KEY));  /* borrowed */
        PyObject *alt = PyTuple_GET_ITEM(spec, P_ALT);
        if (raw == Py_None) raw = NULL;  /* ext.get() giving None reads as absent */
        if (raw == NULL && alt != Py_None && !PyErr_Occurred()) {
            raw = PyDict_GetItemWithError(ext, alt);
            if (raw == Py_None) raw = NULL;
        }
        if (PyErr_Occurred()) goto fail;
        if (raw != NULL && !PyUnicode_CheckExact(raw)) {  /* not ours to judge */
            Py_DECREF(obj);
            return PyObject_CallOneArg(pure, ext);
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, P_KIND));
        PyObject *value;
        if (raw == NULL || (kind != K_STR && PyUnicode_GET_LENGTH(raw) == 0)) {
            PyObject *missing = PyTuple_GET_ITEM(spec, P_MISSING);
            if (missing != Py_None) {
                PyErr_SetObject(HeaderError, missing);
                goto fail;
            }
            value = Py_NewRef(PyTuple_GET_ITEM(spec, P_DEFAULT));
        } else if (kind == K_STR) {
            value = Py_NewRef(raw);
        } else if (kind == K_INT || kind == K_INT32) {
            value = plain_decimal(raw);
            if (value == NULL && !PyErr_Occurred()) value = PyLong_FromUnicodeObject(raw, 10);  /* what int() does */
            if (value == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_ValueError)) goto fail;
                PyErr_Clear();
                value = PyObject_CallFunctionObjArgs(parse_int, raw, PyTuple_GET_ITEM(spec, P_WIRE), NULL);
                if (value == NULL) goto fail;
            }
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(value);
                goto fail;
            }
            if (overflow || (kind == K_INT32 && (v < INT32_MIN || v > INT32_MAX))) {
                Py_DECREF(value);
                PyObject *bits = PyLong_FromLong(kind == K_INT32 ? 32 : 64);
                if (bits == NULL) goto fail;
                PyObject *r = PyObject_CallFunctionObjArgs(out_of_range, raw, PyTuple_GET_ITEM(spec, P_WIRE), bits, NULL);
                Py_DECREF(bits);
                Py_XDECREF(r);  /* it raises; a return would be a bug there, still an error here */
                if (r != NULL) PyErr_SetString(PyExc_RuntimeError, "out_of_range() returned");
                goto fail;
            }
        } else {
            if (PyUnicode_CompareWithASCIIString(raw, "true") == 0) value = Py_NewRef(Py_True);
            else if (PyUnicode_CompareWithASCIIString(raw, "false") == 0) value = Py_NewRef(Py_False);
            else if ((value = PyObject_CallOneArg(parse_bool, raw)) == NULL) goto fail;
        }
        Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, P_OFFSET));
        PyObject **slot = (PyObject **)((char *)obj + offset);
        Py_XSETREF(*slot, value);
    }
    return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

/* plain_properties(text, excluded, suffix, dropped): the compiled twin of
 * rocketq.protocol.message._plain_properties_py (read its docstring). One pass over the text's UTF-8 instead of a
 * dict of its pieces: the broker asks this of every send. A piece is NAME 0x01 VALUE, pieces end with 0x02 (Java's
 * form drops the last one). */
#define MAX_PIECES 64
static PyObject *plain_fallback;  /* the pure twin: texts of more pieces than tracked here go to it */

static PyObject *set_plain_fallback(PyObject *self, PyObject *fn) {
    Py_XSETREF(plain_fallback, Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* 1 when the piece's name is one of ``names`` (a tuple of str), 0 when not, -1 on error */
static int name_in(PyObject *names, const char *piece, Py_ssize_t name_len) {
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t len;
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, i), &len);
        if (name == NULL) return -1;
        if (len == name_len && memcmp(name, piece, (size_t)name_len) == 0) return 1;
    }
    return 0;
}

static PyObject *plain_properties(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1]) || !PyBytes_Check(args[2])
        || !PyTuple_Check(args[3]))
        return PyErr_Format(PyExc_TypeError, "plain_properties(str, tuple, bytes, tuple)");
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(args[0], &n);
    if (s == NULL) {  /* not encodable (a lone surrogate): not stored as it came */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const char *names[MAX_PIECES];
    Py_ssize_t name_lens[MAX_PIECES], piece_lens[MAX_PIECES];
    char drop[MAX_PIECES];
    const char *found[3] = {NULL, NULL, NULL};  /* TAGS, UNIQ_KEY, KEYS values */
    Py_ssize_t found_lens[3] = {0, 0, 0};
    int pieces = 0, java_form = 0, any_dropped = 0;
    Py_ssize_t start = 0;
    while (start < n) {
        const char *piece = s + start;
        const char *stop = memchr(piece, 0x02, (size_t)(n - start));
        Py_ssize_t len = stop ? stop - piece : n - start;
        if (stop == NULL) java_form = 1;
        const char *sep = memchr(piece, 0x01, (size_t)len);
        Py_ssize_t name_len = sep ? sep - piece : 0;
        if (name_len == 0 || name_len + 1 >= len) Py_RETURN_NONE;  /* a dropped piece */
        if (pieces == MAX_PIECES) {
            if (plain_fallback == NULL) return PyErr_Format(PyExc_RuntimeError, "set_plain_fallback() not called");
            return PyObject_Vectorcall(plain_fallback, args, (size_t)nargs, NULL);
        }
        for (int i = 0; i < pieces; i++)  /* a repeated name: the dict keeps one */
            if (name_lens[i] == name_len && memcmp(names[i], piece, (size_t)name_len) == 0) Py_RETURN_NONE;
        int hit = name_in(args[1], piece, name_len);
        if (hit < 0) return NULL;
        if (hit) Py_RETURN_NONE;
        hit = name_in(args[3], piece, name_len);
        if (hit < 0) return NULL;
        drop[pieces] = (char)hit;
        any_dropped |= hit;
        int which = -1;
        if (name_len == 4 && memcmp(piece, "TAGS", 4) == 0) which = 0;
        else if (name_len == 8 && memcmp(piece, "UNIQ_KEY", 8) == 0) which = 1;
        else if (name_len == 4 && memcmp(piece, "KEYS", 4) == 0) which = 2;
        if (which >= 0) {
            found[which] = sep + 1;
            found_lens[which] = len - name_len - 1;
        }
        names[pieces] = piece;
        piece_lens[pieces] = len;
        name_lens[pieces++] = name_len;
        start += len + 1;
    }
    Py_ssize_t suffix_len = PyBytes_GET_SIZE(args[2]);
    PyObject *stored;
    if (!any_dropped) {  /* the common case: the text as it came (Java's form gets its last 0x02 back) */
        stored = PyBytes_FromStringAndSize(NULL, n + java_form + suffix_len);
        if (stored == NULL) return NULL;
        char *o = PyBytes_AS_STRING(stored);
        memcpy(o, s, (size_t)n);
        if (java_form) o[n] = 0x02;
        memcpy(o + n + java_form, PyBytes_AS_STRING(args[2]), (size_t)suffix_len);
    } else {  /* the kept pieces, each ended by 0x02 */
        Py_ssize_t size = suffix_len;
        for (int i = 0; i < pieces; i++)
            if (!drop[i]) size += piece_lens[i] + 1;
        stored = PyBytes_FromStringAndSize(NULL, size);
        if (stored == NULL) return NULL;
        char *o = PyBytes_AS_STRING(stored);
        for (int i = 0; i < pieces; i++) {
            if (drop[i]) continue;
            memcpy(o, names[i], (size_t)piece_lens[i]);
            o += piece_lens[i];
            *o++ = 0x02;
        }
        memcpy(o, PyBytes_AS_STRING(args[2]), (size_t)suffix_len);
    }
    PyObject *out = PyTuple_New(4);
    if (out == NULL) {
        Py_DECREF(stored);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, stored);
    for (int i = 0; i < 3; i++) {
        PyObject *v = found[i] ? PyUnicode_DecodeUTF8(found[i], found_lens[i], NULL) : Py_NewRef(Py_None);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i + 1, v);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(HeaderError, parse_int, parse_bool, out_of_range): set once by header_codec.py"},
    {"slot_offset", slot_offset, METH_VARARGS, "slot_offset(cls, name) -> int: where a __slots__ member lives"},
    {"read_header", (PyCFunction)(void (*)(void))read_header, METH_FASTCALL,
     "read_header(cls, plan, pure, ext) -> header: see rocketq.protocol.header_codec.compile_from_ext"},
    {"set_plain_fallback", set_plain_fallback, METH_O, "set_plain_fallback(fn): the pure twin, for long texts"},
    {"plain_properties", (PyCFunction)(void (*)(void))plain_properties, METH_FASTCALL,
     "plain_properties(text, excluded, suffix, dropped) -> (bytes, tags, uniq_key, keys) | None: see "
     "rocketq.protocol.message"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_headercodec_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__headercodec_c(void) { return PyModule_Create(&module); }
