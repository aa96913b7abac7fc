/* Compiled twin of rocketq/store/_plainrun_py.py (read that file for the specification).
 *
 * Profiling the broker at 1,000 sends in flight put a third of its main thread in storing runs of plain
 * messages: per message a tuple unpacked, five dict lookups, the record written, a consume-queue unit packed,
 * index keys hashed, an arrival and a result built, each a Python step. This loop does the common case of a
 * whole run in one call and leaves every uncommon message to the general Python path. Same arguments, results,
 * bytes written and collected values as the pure twin; tests run both.
 *
 * A failed allocation part-way (MemoryError) raises with the message's record written but not counted, as a
 * MemoryError part-way through the pure twin would: the caller has not advanced the file, so the next append
 * writes over it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_storecodec.h"

#define MAX_PROPS 32767
#define BORN_V6 0x10
#define STORE_V6 0x20
#define NARGS 19

/* An int field of a message, or -1 with *ok cleared when it is not an int the general path would store. */
static long long int_field(PyObject *o, int *ok) {
    if (!PyLong_CheckExact(o)) { *ok = 0; return -1; }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) *ok = 0;
    return v;
}

/* The dict value of `key` as bytes (borrowed), NULL when absent or not bytes (an error is left only on failure). */
static PyObject *cached_bytes(PyObject *dict, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(dict, key);
    return (v != NULL && PyBytes_CheckExact(v)) ? v : NULL;
}

/* stats[topic] = [messages, bytes], added to. */
static int count_stat(PyObject *stats, PyObject *topic, Py_ssize_t size) {
    PyObject *stat = PyDict_GetItemWithError(stats, topic);
    if (stat == NULL) {
        if (PyErr_Occurred()) return -1;
        PyObject *fresh = Py_BuildValue("[nn]", (Py_ssize_t)1, size);
        if (fresh == NULL) return -1;
        int rc = PyDict_SetItem(stats, topic, fresh);
        Py_DECREF(fresh);
        return rc;
    }
    if (!PyList_CheckExact(stat) || PyList_GET_SIZE(stat) != 2) {
        PyErr_SetString(PyExc_TypeError, "write_plain_run: stats values must be [messages, bytes]");
        return -1;
    }
    for (int k = 0; k < 2; k++) {
        Py_ssize_t was = PyLong_AsSsize_t(PyList_GET_ITEM(stat, k));
        if (was == -1 && PyErr_Occurred()) return -1;
        PyObject *now = PyLong_FromSsize_t(was + (k == 0 ? 1 : size));
        if (now == NULL) return -1;
        PyList_SetItem(stat, k, now);  /* steals `now`, drops the old value */
    }
    return 0;
}

/* units[key] = [first queue offset, bytearray of units], this unit appended. */
static int add_unit(PyObject *units, PyObject *key, long long queue_offset, long long phys, Py_ssize_t size,
                    long long code) {
    unsigned char unit[20];
    put64(unit, (uint64_t)phys);
    put32(unit + 8, (uint32_t)size);
    put64(unit + 12, (uint64_t)code);
    PyObject *group = PyDict_GetItemWithError(units, key);
    if (group == NULL) {
        if (PyErr_Occurred()) return -1;
        PyObject *packed = PyByteArray_FromStringAndSize((const char *)unit, 20);
        if (packed == NULL) return -1;
        PyObject *fresh = Py_BuildValue("[LN]", queue_offset, packed);
        if (fresh == NULL) return -1;
        int rc = PyDict_SetItem(units, key, fresh);
        Py_DECREF(fresh);
        return rc;
    }
    PyObject *packed = PyList_CheckExact(group) && PyList_GET_SIZE(group) == 2 ? PyList_GET_ITEM(group, 1) : NULL;
    if (packed == NULL || !PyByteArray_CheckExact(packed)) {
        PyErr_SetString(PyExc_TypeError, "write_plain_run: units values must be [offset, bytearray]");
        return -1;
    }
    Py_ssize_t n = PyByteArray_GET_SIZE(packed);
    if (PyByteArray_Resize(packed, n + 20) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(packed) + n, unit, 20);
    return 0;
}

static PyObject *write_plain_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != NARGS) {
        PyErr_Format(PyExc_TypeError, "write_plain_run() takes exactly %d arguments (%zd given)", NARGS, nargs);
        return NULL;
    }
    PyObject *messages = args[4], *store_obj = args[6], *topics = args[9], *hosts = args[10];
    PyObject *tags_cache = args[11], *queue_table = args[12], *prefixes = args[13], *out = args[14];
    PyObject *units = args[15], *index_keys = args[16], *arrivals = args[17], *stats = args[18];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), limit = PyLong_AsSsize_t(args[2]), start = PyLong_AsSsize_t(args[5]);
    long long phys_base = PyLong_AsLongLong(args[3]), store_ts = PyLong_AsLongLong(args[7]);
    Py_ssize_t max_body = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(messages) && !PyTuple_CheckExact(messages)) {
        PyErr_SetString(PyExc_TypeError, "write_plain_run: messages must be a list or tuple");
        return NULL;
    }
    if (!PyBytes_CheckExact(store_obj) || !PyDict_CheckExact(topics) || !PyDict_CheckExact(hosts)
        || !PyDict_CheckExact(tags_cache) || !PyDict_CheckExact(queue_table)
        || (prefixes != Py_None && !PyDict_CheckExact(prefixes)) || !PyList_CheckExact(out)
        || !PyDict_CheckExact(units) || !PyList_CheckExact(index_keys) || !PyList_CheckExact(arrivals)
        || !PyDict_CheckExact(stats)) {
        PyErr_SetString(PyExc_TypeError, "write_plain_run: bad argument types");
        return NULL;
    }
    Py_buffer mm;
    if (PyObject_GetBuffer(args[0], &mm, PyBUF_WRITABLE) < 0) return NULL;
    if (pos < 0 || limit > mm.len) {
        PyBuffer_Release(&mm);
        PyErr_SetString(PyExc_ValueError, "write_plain_run: position or limit outside the buffer");
        return NULL;
    }
    const unsigned char *store_b = (const unsigned char *)PyBytes_AS_STRING(store_obj);
    Py_ssize_t store_n = PyBytes_GET_SIZE(store_obj);
    int store_v6 = store_n == 20 ? STORE_V6 : 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(messages), i = start < 0 ? 0 : start;
    PyObject **items = PySequence_Fast_ITEMS(messages);
    for (; i < n; i++) {
        PyObject *m = items[i];
        if (!PyTuple_CheckExact(m) || PyTuple_GET_SIZE(m) != 12) break;
        PyObject *topic = PyTuple_GET_ITEM(m, 0), *qid_obj = PyTuple_GET_ITEM(m, 1);
        PyObject *body = PyTuple_GET_ITEM(m, 2), *props = PyTuple_GET_ITEM(m, 3);
        PyObject *tags = PyTuple_GET_ITEM(m, 9), *uniq = PyTuple_GET_ITEM(m, 10), *keys = PyTuple_GET_ITEM(m, 11);
        if (!PyUnicode_CheckExact(topic) || !PyBytes_CheckExact(body) || !PyBytes_CheckExact(props)) break;
        if ((tags != Py_None && !PyUnicode_CheckExact(tags)) || (uniq != Py_None && !PyUnicode_CheckExact(uniq))
            || (keys != Py_None && !PyUnicode_CheckExact(keys)))
            break;
        int ok = 1;
        long long queue_id = int_field(qid_obj, &ok), flag = int_field(PyTuple_GET_ITEM(m, 4), &ok);
        long long sys_flag = int_field(PyTuple_GET_ITEM(m, 5), &ok), born_ts = int_field(PyTuple_GET_ITEM(m, 6), &ok);
        long long reconsume = int_field(PyTuple_GET_ITEM(m, 8), &ok);
        if (!ok || queue_id < INT_MIN || queue_id > INT_MAX || flag < INT_MIN || flag > INT_MAX
            || sys_flag < INT_MIN || sys_flag > INT_MAX || reconsume < INT_MIN || reconsume > INT_MAX)
            break;
        PyObject *tail = cached_bytes(topics, topic);
        PyObject *born = tail == NULL ? NULL : cached_bytes(hosts, PyTuple_GET_ITEM(m, 7));
        if (born == NULL || PyBytes_GET_SIZE(tail) < 1 || PyBytes_GET_SIZE(body) > max_body
            || PyBytes_GET_SIZE(props) > MAX_PROPS)
            break;
        Py_ssize_t born_n = PyBytes_GET_SIZE(born);
        if ((born_n != 8 && born_n != 20) || (store_n != 8 && store_n != 20)) break;
        long long code = 0;
        if (tags != Py_None && PyUnicode_GET_LENGTH(tags) > 0) {
            PyObject *hit = PyDict_GetItemWithError(tags_cache, tags);
            if (hit == NULL || !PyLong_CheckExact(hit)) break;
            code = PyLong_AsLongLong(hit);
            if (code == -1 && PyErr_Occurred()) goto fail;
        }
        int has_keys = (uniq != Py_None && PyUnicode_GET_LENGTH(uniq) > 0)
                       || (keys != Py_None && PyUnicode_GET_LENGTH(keys) > 0);
        uint32_t prefix = 0;
        if (prefixes != Py_None && has_keys) {
            PyObject *hit = PyDict_GetItemWithError(prefixes, topic);
            if (hit == NULL || !PyLong_CheckExact(hit)) break;
            prefix = (uint32_t)PyLong_AsUnsignedLongMask(hit);
        }
        Py_ssize_t size = 72 + born_n + store_n + PyBytes_GET_SIZE(body) + PyBytes_GET_SIZE(tail) + 2
                          + PyBytes_GET_SIZE(props);
        if (pos + size > limit) break;
        PyObject *key = PyTuple_Pack(2, topic, qid_obj);
        if (key == NULL) goto fail;
        PyObject *was = PyDict_GetItemWithError(queue_table, key);
        long long queue_offset = 0;
        if (was != NULL) queue_offset = PyLong_AsLongLong(was);
        if (PyErr_Occurred()) { Py_DECREF(key); goto fail; }
        long long phys = phys_base + pos;
        int v6 = (born_n == 20 ? BORN_V6 : 0) | store_v6;
        put_record((unsigned char *)mm.buf + pos, size,
                   body_crc(body, (const unsigned char *)PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body)),
                   (const unsigned char *)PyBytes_AS_STRING(body),
                   PyBytes_GET_SIZE(body), (const unsigned char *)PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail),
                   (const unsigned char *)PyBytes_AS_STRING(props), PyBytes_GET_SIZE(props), (int)queue_id, (int)flag,
                   queue_offset, phys, ((int)sys_flag & ~(BORN_V6 | STORE_V6)) | v6, born_ts,
                   (const unsigned char *)PyBytes_AS_STRING(born), born_n, store_ts, store_b, store_n,
                   (int)reconsume, 0);
        pos += size;
        PyObject *next = PyLong_FromLongLong(queue_offset + 1);
        int rc = next == NULL ? -1 : PyDict_SetItem(queue_table, key, next);
        if (rc == 0) {
            PyObject *stored = Py_BuildValue("(LLn)", phys, queue_offset, size);
            rc = stored == NULL ? -1 : PyList_Append(out, stored);
            Py_XDECREF(stored);
        }
        if (rc == 0) rc = add_unit(units, key, queue_offset, phys, size, code);
        if (rc == 0 && prefixes != Py_None && has_keys) rc = append_key_entries(index_keys, prefix, uniq, keys, phys);
        if (rc == 0) {
            PyObject *code_obj = PyLong_FromLongLong(code);
            PyObject *arrival = code_obj == NULL ? NULL : PyTuple_Pack(4, topic, qid_obj, next, code_obj);
            rc = arrival == NULL ? -1 : PyList_Append(arrivals, arrival);
            Py_XDECREF(arrival);
            Py_XDECREF(code_obj);
        }
        if (rc == 0) rc = count_stat(stats, topic, size);
        Py_XDECREF(next);
        Py_DECREF(key);
        if (rc < 0) goto fail;
    }
    if (PyErr_Occurred()) goto fail;  /* a lookup that failed rather than missed */
    PyBuffer_Release(&mm);
    return Py_BuildValue("(nn)", i, pos);
fail:
    PyBuffer_Release(&mm);
    return NULL;
}

static PyMethodDef methods[] = {
    {"write_plain_run", (PyCFunction)(void (*)(void))write_plain_run, METH_FASTCALL,
     "the common case of a run of plain messages: records written, dispatch collected"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plainrun_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__plainrun_c(void) {
    storecodec_init_crc();
    return PyModule_Create(&module);
}
