/* Compiled twin of rocketq/protocol/_pullcodec_py.py (read that file for the specification).
 *
 * Profiling a consumer draining a backlog put about half of its time in turning a pull answer's records into
 * message objects (record decode, properties, host text, then a second object per record). This does it in
 * one call per pull: the record's fields go straight into the slots of a new instance of the given class.
 * Same results and errors as the pure twin; tests run both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>

#include "_slots.h"

#define MESSAGE_MAGIC 0xDAA320A7u
#define SYSFLAG_COMPRESSED 0x1
#define SYSFLAG_BORNHOST_V6 0x10
#define SYSFLAG_STOREHOST_V6 0x20

static PyObject *ProtocolError;   /* rocketq.errors.ProtocolError */
static PyObject *ip_text_v6;      /* rocketq.protocol.message._ip_text, for IPv6 hosts */

/* The attributes set on each message, in this order (see the pure twin). */
enum {
    A_TOPIC, A_BODY, A_FLAG, A_PROPERTIES, A_TRANSACTION_ID, A_QUEUE_ID, A_QUEUE_OFFSET, A_COMMIT_LOG_OFFSET,
    A_STORE_SIZE, A_SYS_FLAG, A_BORN_TIMESTAMP, A_BORN_HOST, A_STORE_TIMESTAMP, A_STORE_HOST, A_RECONSUME_TIMES,
    A_PREPARED_TRANSACTION_OFFSET, A_BODY_CRC, A_BROKER_NAME, A_COUNT
};
static const char *const ATTR_NAMES[A_COUNT] = {
    "topic", "body", "flag", "properties", "transaction_id", "queue_id", "queue_offset", "commit_log_offset",
    "store_size", "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
    "prepared_transaction_offset", "body_crc", "broker_name",
};
static PyObject *attr_names[A_COUNT];  /* interned */
static PyObject *str_tran_msg, *str_uniq_key;

static inline int32_t get32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}
static inline int64_t get64(const unsigned char *p) {
    return (int64_t)(((uint64_t)(uint32_t)get32(p) << 32) | (uint64_t)(uint32_t)get32(p + 4));
}
static inline int16_t get16(const unsigned char *p) {
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

static inline void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value /* stolen */) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, value);
}

static PyObject *malformed(Py_ssize_t pos, const char *what) {
    PyErr_Format(ProtocolError, "malformed record at %zd: %s", pos, what);
    return NULL;
}

/* (ip text, port) for the host at p; the last IPv4 host of each kind is reused while it repeats. */
typedef struct { unsigned char raw[8]; PyObject *tuple; } host_cache_t;

static PyObject *host_tuple(const unsigned char *p, int v6, host_cache_t *cache) {
    if (!v6 && cache->tuple != NULL && memcmp(cache->raw, p, 8) == 0) {
        Py_INCREF(cache->tuple);
        return cache->tuple;
    }
    PyObject *text;
    if (v6) {
        PyObject *packed = PyBytes_FromStringAndSize((const char *)p, 16);
        if (packed == NULL) return NULL;
        text = PyObject_CallOneArg(ip_text_v6, packed);
        Py_DECREF(packed);
    } else {
        char buf[16];
        int n = snprintf(buf, sizeof buf, "%u.%u.%u.%u", p[0], p[1], p[2], p[3]);
        text = PyUnicode_FromStringAndSize(buf, n);
    }
    if (text == NULL) return NULL;
    PyObject *port = PyLong_FromLong(get32(p + (v6 ? 16 : 4)));
    if (port == NULL) { Py_DECREF(text); return NULL; }
    PyObject *tuple = PyTuple_Pack(2, text, port);
    Py_DECREF(text);
    Py_DECREF(port);
    if (tuple != NULL && !v6) {
        memcpy(cache->raw, p, 8);
        Py_XSETREF(cache->tuple, Py_NewRef(tuple));
    }
    return tuple;
}

/* Java's rule: split on 0x02; keep "name 0x01 value" with both non-empty (value may hold more 0x01).
 * Any invalid UTF-8 in the region, kept or not, is an error, as decoding the whole region first would be. */
static PyObject *decode_props(const unsigned char *p, Py_ssize_t n, Py_ssize_t pos) {
    PyObject *props = PyDict_New();
    if (props == NULL) return NULL;
    Py_ssize_t i = 0;
    while (i <= n && n > 0) {
        const unsigned char *piece = p + i;
        const unsigned char *stop = memchr(piece, 0x02, (size_t)(n - i));
        Py_ssize_t len = stop ? (Py_ssize_t)(stop - piece) : n - i;
        const unsigned char *sep = memchr(piece, 0x01, (size_t)len);
        if (sep != NULL && sep > piece && sep + 1 < piece + len) {
            PyObject *name = PyUnicode_DecodeUTF8((const char *)piece, sep - piece, NULL);
            PyObject *value = name ? PyUnicode_DecodeUTF8((const char *)sep + 1, piece + len - sep - 1, NULL)
                                   : NULL;
            int rc = value ? PyDict_SetItem(props, name, value) : -1;
            Py_XDECREF(name);
            Py_XDECREF(value);
            if (rc < 0) goto fail;
        } else if (len > 0) {  /* dropped, but it must still be UTF-8 */
            PyObject *check = PyUnicode_DecodeUTF8((const char *)piece, len, NULL);
            if (check == NULL) goto fail;
            Py_DECREF(check);
        }
        if (stop == NULL) break;
        i += len + 1;
    }
    return props;
fail:
    Py_DECREF(props);
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        PyErr_Format(ProtocolError, "malformed record at %zd: properties are not UTF-8", pos);
    }
    return NULL;
}

static int is_true_text(PyObject *value) {
    if (value == NULL || !PyUnicode_IS_ASCII(value) || PyUnicode_GET_LENGTH(value) != 4) return 0;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(value);
    return (s[0] | 0x20) == 't' && (s[1] | 0x20) == 'r' && (s[2] | 0x20) == 'u' && (s[3] | 0x20) == 'e';
}

static PyObject *decode_messages(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyTypeObject *cls;
    PyObject *broker_name, *extra_props, *inflate;
    if (!PyArg_ParseTuple(args, "y*O!UOO:decode_messages", &view, &PyType_Type, &cls, &broker_name, &extra_props,
                          &inflate))
        return NULL;
    Py_ssize_t offsets[A_COUNT];
    PyObject *out = NULL, *last_topic = NULL;
    host_cache_t born_cache = {{0}, NULL}, store_cache = {{0}, NULL};
    const unsigned char *last_topic_raw = NULL;
    Py_ssize_t last_topic_len = -1;
    if (slot_offsets(cls, attr_names, A_COUNT, offsets) < 0) goto done;
    if (extra_props == Py_None || (PyDict_Check(extra_props) && PyDict_GET_SIZE(extra_props) == 0)) extra_props = NULL;
    out = PyList_New(0);
    if (out == NULL) goto done;

    const unsigned char *buf = view.buf;
    Py_ssize_t total = view.len, pos = 0;
    while (pos < total) {
        const unsigned char *r = buf + pos;
        if (total - pos < 48) { malformed(pos, "shorter than a record's fixed part"); goto fail; }
        int32_t size = get32(r);
        if ((uint32_t)get32(r + 4) != MESSAGE_MAGIC) {
            PyErr_Format(ProtocolError, "bad magic 0x%08X at %zd", (uint32_t)get32(r + 4), pos);
            goto fail;
        }
        if (size < 91 || size > total - pos) {
            PyErr_Format(ProtocolError, "record size %d at %zd out of bounds (%zd bytes)", size, pos, total);
            goto fail;
        }
        Py_ssize_t end = size;  /* offsets below are relative to r */
        int32_t body_crc = get32(r + 8), queue_id = get32(r + 12), flag = get32(r + 16);
        int64_t queue_offset = get64(r + 20), phys = get64(r + 28);
        int32_t sys_flag = get32(r + 36);
        int64_t born_ts = get64(r + 40);
        int born_v6 = (sys_flag & SYSFLAG_BORNHOST_V6) != 0, store_v6 = (sys_flag & SYSFLAG_STOREHOST_V6) != 0;
        Py_ssize_t p = 48;
        Py_ssize_t fixed = p + (born_v6 ? 20 : 8) + 8 + (store_v6 ? 20 : 8) + 16;
        if (fixed + 3 > end) { malformed(pos, "fixed part overruns the record"); goto fail; }
        const unsigned char *born_p = r + p;
        p += born_v6 ? 20 : 8;
        int64_t store_ts = get64(r + p);
        p += 8;
        const unsigned char *store_p = r + p;
        p += store_v6 ? 20 : 8;
        int32_t reconsume = get32(r + p);
        int64_t prepared = get64(r + p + 4);
        int32_t body_len = get32(r + p + 12);
        p += 16;
        if (body_len < 0 || p + body_len + 3 > end) {
            PyErr_Format(ProtocolError, "body length %d out of bounds", body_len);
            goto fail;
        }
        const unsigned char *body_p = r + p;
        p += body_len;
        Py_ssize_t topic_len = r[p];
        p += 1;
        if (p + topic_len + 2 > end) { malformed(pos, "topic overruns the record"); goto fail; }
        const unsigned char *topic_p = r + p;
        p += topic_len;
        int16_t props_len = get16(r + p);
        p += 2;
        if (props_len < 0 || p + props_len != end) {
            PyErr_Format(ProtocolError, "properties length %d does not end the record", props_len);
            goto fail;
        }

        PyObject *topic;
        if (last_topic != NULL && topic_len == last_topic_len && memcmp(last_topic_raw, topic_p, topic_len) == 0) {
            topic = Py_NewRef(last_topic);
        } else {
            topic = PyUnicode_DecodeUTF8((const char *)topic_p, topic_len, NULL);
            if (topic == NULL) {
                if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    PyErr_Clear();
                    malformed(pos, "topic is not UTF-8");
                }
                goto fail;
            }
            Py_XSETREF(last_topic, Py_NewRef(topic));
            last_topic_raw = topic_p;
            last_topic_len = topic_len;
        }
        PyObject *props = decode_props(r + p, props_len, pos);
        if (props == NULL) { Py_DECREF(topic); goto fail; }
        if (extra_props != NULL && PyDict_Update(props, extra_props) < 0) {
            Py_DECREF(topic); Py_DECREF(props); goto fail;
        }
        PyObject *body = PyBytes_FromStringAndSize((const char *)body_p, body_len);
        if (body != NULL && (sys_flag & SYSFLAG_COMPRESSED)) {
            PyObject *flag_obj = PyLong_FromLong(sys_flag);
            PyObject *inflated = flag_obj ? PyObject_CallFunctionObjArgs(inflate, body, flag_obj, NULL) : NULL;
            Py_XDECREF(flag_obj);
            Py_SETREF(body, inflated);
        }
        PyObject *born = body ? host_tuple(born_p, born_v6, &born_cache) : NULL;
        PyObject *store = born ? host_tuple(store_p, store_v6, &store_cache) : NULL;
        PyObject *msg = store ? cls->tp_alloc(cls, 0) : NULL;
        if (msg == NULL) {
            Py_DECREF(topic); Py_DECREF(props); Py_XDECREF(body); Py_XDECREF(born); Py_XDECREF(store);
            goto fail;
        }
        PyObject *tx = Py_None;
        if (is_true_text(PyDict_GetItemWithError(props, str_tran_msg))) {
            tx = PyDict_GetItemWithError(props, str_uniq_key);
            if (tx == NULL) tx = Py_None;
        }
        set_slot(msg, offsets[A_TRANSACTION_ID], Py_NewRef(tx));
        set_slot(msg, offsets[A_TOPIC], topic);
        set_slot(msg, offsets[A_BODY], body);
        set_slot(msg, offsets[A_PROPERTIES], props);
        set_slot(msg, offsets[A_BORN_HOST], born);
        set_slot(msg, offsets[A_STORE_HOST], store);
        set_slot(msg, offsets[A_BROKER_NAME], Py_NewRef(broker_name));
        set_slot(msg, offsets[A_FLAG], PyLong_FromLong(flag));
        set_slot(msg, offsets[A_QUEUE_ID], PyLong_FromLong(queue_id));
        set_slot(msg, offsets[A_QUEUE_OFFSET], PyLong_FromLongLong(queue_offset));
        set_slot(msg, offsets[A_COMMIT_LOG_OFFSET], PyLong_FromLongLong(phys));
        set_slot(msg, offsets[A_STORE_SIZE], PyLong_FromLong(size));
        set_slot(msg, offsets[A_SYS_FLAG], PyLong_FromLong(sys_flag));
        set_slot(msg, offsets[A_BORN_TIMESTAMP], PyLong_FromLongLong(born_ts));
        set_slot(msg, offsets[A_STORE_TIMESTAMP], PyLong_FromLongLong(store_ts));
        set_slot(msg, offsets[A_RECONSUME_TIMES], PyLong_FromLong(reconsume));
        set_slot(msg, offsets[A_PREPARED_TRANSACTION_OFFSET], PyLong_FromLongLong(prepared));
        set_slot(msg, offsets[A_BODY_CRC], PyLong_FromLong(body_crc));
        if (PyErr_Occurred()) { Py_DECREF(msg); goto fail; }  /* an int allocation failed */
        int rc = PyList_Append(out, msg);
        Py_DECREF(msg);
        if (rc < 0) goto fail;
        pos += size;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(last_topic);
    Py_XDECREF(born_cache.tuple);
    Py_XDECREF(store_cache.tuple);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"decode_messages", decode_messages, METH_VARARGS,
     "decode_messages(buf, cls, broker_name, extra_props, inflate) -> list: see rocketq.protocol._pullcodec_py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pullcodec_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pullcodec_c(void) {
    PyObject *errors = PyImport_ImportModule("rocketq.errors");
    if (errors == NULL) return NULL;
    ProtocolError = PyObject_GetAttrString(errors, "ProtocolError");
    Py_DECREF(errors);
    if (ProtocolError == NULL) return NULL;
    PyObject *message = PyImport_ImportModule("rocketq.protocol.message");
    if (message == NULL) return NULL;
    ip_text_v6 = PyObject_GetAttrString(message, "_ip_text");
    Py_DECREF(message);
    if (ip_text_v6 == NULL) return NULL;
    if (intern_names(ATTR_NAMES, A_COUNT, attr_names) < 0) return NULL;
    str_tran_msg = PyUnicode_InternFromString("TRAN_MSG");
    str_uniq_key = PyUnicode_InternFromString("UNIQ_KEY");
    if (str_tran_msg == NULL || str_uniq_key == NULL) return NULL;
    return PyModule_Create(&module);
}
