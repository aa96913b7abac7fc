/* Compiled twin of the generated ``from_ext`` functions in rocketq/protocol/headers.py (``compile_from_ext``):
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

static PyObject *HeaderError;  /* rocketq.protocol.headers.HeaderError */
static PyObject *parse_int;    /* headers._parse_int(raw, key): floats and the error */
static PyObject *parse_bool;   /* headers._parse_bool(raw) */

enum { K_STR = 0, K_INT = 1, K_BOOL = 2 };
/* One plan entry: (slot offset, key to read, key to read when it is absent or None, kind, default,
 * message when missing (None: not required), wire key). */
enum { P_OFFSET, P_KEY, P_ALT, P_KIND, P_DEFAULT, P_MISSING, P_WIRE, P_SIZE };

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *error, *pint, *pbool;
    if (!PyArg_ParseTuple(args, "OOO:configure", &error, &pint, &pbool)) return NULL;
    Py_XSETREF(HeaderError, Py_NewRef(error));
    Py_XSETREF(parse_int, Py_NewRef(pint));
    Py_XSETREF(parse_bool, Py_NewRef(pbool));
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
static PyObject *read_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "read_header() takes 4 arguments (%zd given)", nargs);
    PyTypeObject *cls = (PyTypeObject *)args[0];
    PyObject *plan = args[1], *pure = args[2], *ext = args[3];
    if (!PyDict_CheckExact(ext)) return PyObject_CallOneArg(pure, ext);
    if (!PyType_Check(cls) || !PyTuple_CheckExact(plan) || HeaderError == NULL) {
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
        } else if (kind == K_INT) {
            value = PyLong_FromUnicodeObject(raw, 10);  /* what int(raw) does */
            if (value == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_ValueError)) goto fail;
                PyErr_Clear();
                value = PyObject_CallFunctionObjArgs(parse_int, raw, PyTuple_GET_ITEM(spec, P_WIRE), NULL);
                if (value == NULL) goto fail;
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

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(HeaderError, parse_int, parse_bool): set once by headers.py"},
    {"slot_offset", slot_offset, METH_VARARGS, "slot_offset(cls, name) -> int: where a __slots__ member lives"},
    {"read_header", (PyCFunction)(void (*)(void))read_header, METH_FASTCALL,
     "read_header(cls, plan, pure, ext) -> header: see rocketq.protocol.headers.compile_from_ext"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_headercodec_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__headercodec_c(void) { return PyModule_Create(&module); }
