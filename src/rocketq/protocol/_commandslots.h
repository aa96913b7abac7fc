/* Where RemotingCommand's fields live in its instances (a slots dataclass): the offsets of their member
   descriptors, read once at module init, so the compiled codecs read and write the fields in place.
   Included by the frame codec and the broker's plain-send reader. */
#ifndef ROCKETQ_COMMANDSLOTS_H
#define ROCKETQ_COMMANDSLOTS_H

#include <Python.h>
#include <structmember.h>

/* Fill offsets[i] for names[i] of type; 0, or -1 with TypeError when one is not an object slot. */
static int command_slot_offsets(PyTypeObject *type, const char *const *names, int count, Py_ssize_t *offsets) {
    for (int i = 0; i < count; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)type, names[i]);
        if (d == NULL) return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ attribute", type->tp_name, names[i]);
            return -1;
        }
    }
    return 0;
}

#endif
