/* Compiled twin of rocketq/client/_sendext_py.py (read its docstring): a plain V2 send's extFields in one call.
 *
 * Building the dict, the numbers' text and the properties text was ~2.3 us of Python per send on the second host
 * (build_send_request 2.9 us with its other steps). Whatever is not the usual (a number that is not an int, a
 * properties mapping that is not a dict of ASCII str) is handed to the pure code for the same result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *properties_to_string;  /* rocketq.client._validators.properties_to_string: the unusual texts */
enum { A, B, C, D, E, F, G, H, I, J, K, M, N, KEYS };
static const char *KEY_TEXT[KEYS] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "n"};
static PyObject *s_keys[KEYS], *s_zero, *s_false;
#define SMALL 1024
static PyObject *small_text[SMALL];  /* "0" .. "1023": queue ids, flags, queue counts */

/* str(v), as the pure twin writes it (new reference) */
static PyObject *decimal_text(PyObject *v) {
    if (!PyLong_CheckExact(v)) return PyObject_Str(v);  /* a bool, an int subclass, anything: str() decides */
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return PyObject_Str(v);  /* beyond long long: str() writes it (or raises its digit limit) */
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n >= 0 && n < SMALL) return Py_NewRef(small_text[n]);
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%lld", n);
    return PyUnicode_FromStringAndSize(buf, len);
}

/* properties_to_string(props) for a dict of ASCII str (None values left out); the pure function otherwise */
static PyObject *properties_text(PyObject *props) {
    if (!PyDict_CheckExact(props)) return PyObject_CallOneArg(properties_to_string, props);
    Py_ssize_t pos = 0, total = 0, count = 0;
    PyObject *k, *v;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (v == Py_None) continue;
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(k) || !PyUnicode_IS_ASCII(v))
            return PyObject_CallOneArg(properties_to_string, props);
        total += PyUnicode_GET_LENGTH(k) + 1 + PyUnicode_GET_LENGTH(v);
        count++;
    }
    if (count > 1) total += count - 1;
    PyObject *out = PyUnicode_New(total, 127);
    if (out == NULL) return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
    pos = 0;
    int first = 1;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (v == Py_None) continue;
        if (!first) *o++ = 0x02;
        first = 0;
        Py_ssize_t kn = PyUnicode_GET_LENGTH(k), vn = PyUnicode_GET_LENGTH(v);
        memcpy(o, PyUnicode_1BYTE_DATA(k), (size_t)kn);
        o += kn;
        *o++ = 0x01;
        memcpy(o, PyUnicode_1BYTE_DATA(v), (size_t)vn);
        o += vn;
    }
    return out;
}

static PyObject *v2_ext(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) return PyErr_Format(PyExc_TypeError, "v2_ext() takes 11 arguments (%zd given)", nargs);
    /* args: group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag, born_ms, flag, props, batch,
     * broker_name. Converted in the pure twin's order, stopping at the first error (no call with one pending). */
    PyObject *values[KEYS] = {NULL}, *ext = NULL;
    values[A] = Py_NewRef(args[0]);
    values[B] = Py_NewRef(args[1]);
    values[C] = Py_NewRef(args[2]);
    for (int i = D; i <= H; i++)
        if ((values[i] = decimal_text(args[3 + i - D])) == NULL) goto done;
    if ((values[I] = properties_text(args[8])) == NULL) goto done;
    values[J] = Py_NewRef(s_zero);
    values[K] = Py_NewRef(s_false);
    values[M] = Py_NewRef(args[9]);
    values[N] = Py_NewRef(args[10]);
    ext = PyDict_New();
    if (ext == NULL) goto done;
    for (int i = 0; i < KEYS; i++) {
        if (PyDict_SetItem(ext, s_keys[i], values[i]) < 0) {
            Py_CLEAR(ext);
            goto done;
        }
    }
done:
    for (int i = 0; i < KEYS; i++) Py_XDECREF(values[i]);
    return ext;
}

static PyMethodDef methods[] = {
    {"v2_ext", (PyCFunction)(void (*)(void))v2_ext, METH_FASTCALL,
     "v2_ext(group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag, born_ms, flag, props, batch, "
     "broker_name) -> dict: see _sendext_py.v2_ext"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sendext_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sendext_c(void) {
    PyObject *validators = PyImport_ImportModule("rocketq.client._validators");
    if (validators == NULL) return NULL;
    properties_to_string = PyObject_GetAttrString(validators, "properties_to_string");
    Py_DECREF(validators);
    if (properties_to_string == NULL) return NULL;
    for (int i = 0; i < KEYS; i++)
        if ((s_keys[i] = PyUnicode_InternFromString(KEY_TEXT[i])) == NULL) return NULL;
    s_zero = PyUnicode_InternFromString("0");
    s_false = PyUnicode_InternFromString("false");
    if (s_zero == NULL || s_false == NULL) return NULL;
    for (int n = 0; n < SMALL; n++) {
        char buf[8];
        int len = snprintf(buf, sizeof buf, "%d", n);
        if ((small_text[n] = PyUnicode_FromStringAndSize(buf, len)) == NULL) return NULL;
    }
    return PyModule_Create(&module);
}
