/* Where a slots class's fields live in its instances: the offsets of their member descriptors, so the compiled
   codecs read and write the fields in place; and module_name.attr fetched at module init. Included by the frame
   codec, the pull codec, the broker's plain-send reader, the batch encoder and the gathering. */
#ifndef ROCKETQ_SLOTS_H
#define ROCKETQ_SLOTS_H

#include <Python.h>
#include <structmember.h>

/* out[i] = names[i] interned (once, at module init); 0, or -1 with the error set. */
static int intern_names(const char *const *names, int count, PyObject **out) {
    for (int i = 0; i < count; i++) {
        out[i] = PyUnicode_InternFromString(names[i]);
        if (out[i] == NULL) return -1;
    }
    return 0;
}

/* offsets[i] for the attribute names[i] of type (a __slots__ member of type or of a base); 0, or -1 with
   TypeError when one is not. */
static int slot_offsets(PyTypeObject *type, PyObject *const *names, int count, Py_ssize_t *offsets) {
    for (int i = 0; i < count; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)type, names[i]);
        if (d == NULL) return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && PyType_IsSubtype(type, ((PyDescrObject *)d)->d_type)
                 && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%U is not a __slots__ attribute", type->tp_name, names[i]);
            return -1;
        }
    }
    return 0;
}

/* module_name.attr, new reference; NULL with the error set (a compiled module's init). */
static PyObject *import_attr(const char *module_name, const char *attr) {
    PyObject *m = PyImport_ImportModule(module_name);
    if (m == NULL) return NULL;
    PyObject *value = PyObject_GetAttrString(m, attr);
    Py_DECREF(m);
    return value;
}

#endif
