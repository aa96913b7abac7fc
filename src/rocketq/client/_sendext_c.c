/* Compiled twin of rocketq/client/_sendext_py.py (read its docstring): a plain V2 send's extFields in one call,
 * (v2_head) the whole head of a single plain send's frame, (send_answer) the SendResult of its answer and
 * (batch_results) each message's own result from an auto-batch's answer.
 *
 * Building the dict, the numbers' text and the properties text was ~2.3 us of Python per send on the second host
 * (build_send_request 2.9 us with its other steps). Whatever is not the usual (a number that is not an int, a
 * properties mapping that is not a dict of ASCII str) is handed to the pure code for the same result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>

#include "../protocol/_jsonwrite.h"

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
    return PyUnicode_FromStringAndSize(buf, put_int(buf, n) - buf);
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

/* ------------------------------------------------------------------------------- v2_head: the whole head */

static PyObject *pure_v2_head;  /* rocketq.client._sendext_py.v2_head: every call this code does not take */

/* a plain int (not a bool, not a subclass) within long long; -1 otherwise, nothing raised */
static int plain_int(PyObject *v, long long *out) {
    if (!PyLong_CheckExact(v)) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    return 0;
}

/* a plain str's UTF-8; NULL (nothing raised) for anything else or text UTF-8 cannot hold */
static const char *plain_text(PyObject *v, Py_ssize_t *n) {
    if (!PyUnicode_CheckExact(v)) return NULL;
    const char *s = PyUnicode_AsUTF8AndSize(v, n);
    if (s == NULL) PyErr_Clear();
    return s;
}

enum { H_OPAQUE, H_LANGUAGE, H_VERSION, H_GROUP, H_TOPIC, H_CREATE_KEY, H_QUEUE_NUMS, H_QUEUE_ID, H_SYS_FLAG,
       H_BORN, H_FLAG, H_PROPS, H_BROKER, H_BODY, H_ARGS };

/* v2_head(opaque, language, version, group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag,
 * born_ms, flag, props, broker_name, body): the frame head (length words and JSON header) of a single plain
 * SEND_MESSAGE_V2, byte for byte what the pure twin gives, without the extFields dict and the command. */
static PyObject *v2_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != H_ARGS) return PyErr_Format(PyExc_TypeError, "v2_head() takes 14 arguments (%zd given)", nargs);
    static const int int_args[] = {H_OPAQUE, H_VERSION, H_QUEUE_NUMS, H_QUEUE_ID, H_SYS_FLAG, H_BORN, H_FLAG};
    static const int text_args[] = {H_LANGUAGE, H_GROUP, H_TOPIC, H_CREATE_KEY, H_BROKER};
    long long num[H_ARGS];
    const char *text[H_ARGS];
    Py_ssize_t text_n[H_ARGS];
    for (size_t i = 0; i < sizeof int_args / sizeof *int_args; i++)
        if (plain_int(args[int_args[i]], &num[int_args[i]]) < 0) goto pure;
    size_t room = 8 + 256 + 7 * 24;  /* the length words, the fixed text (~205 B), seven ints of <= 20 digits */
    for (size_t i = 0; i < sizeof text_args / sizeof *text_args; i++) {
        int a = text_args[i];
        if ((text[a] = plain_text(args[a], &text_n[a])) == NULL) goto pure;
        room += str_room(text_n[a]);
    }
    PyObject *props = args[H_PROPS], *body = args[H_BODY], *k, *v;
    if (!PyDict_CheckExact(props)) goto pure;
    Py_ssize_t body_len;
    if (PyBytes_CheckExact(body)) body_len = PyBytes_GET_SIZE(body);
    else if (PyByteArray_CheckExact(body)) body_len = PyByteArray_GET_SIZE(body);
    else goto pure;
    Py_ssize_t pos = 0, kn, vn;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (v == Py_None) continue;
        if (plain_text(k, &kn) == NULL || plain_text(v, &vn) == NULL) goto pure;
        room += str_room(kn) + str_room(vn) + 12;
    }
    if (scratch_reserve(room) < 0) return PyErr_NoMemory();
    char *o = scratch + 8;
    /* "a" .. "h": the three texts, then the five numbers as text, each opened as "<key>":" */
    static const int ext_args[] = {H_GROUP, H_TOPIC, H_CREATE_KEY, H_QUEUE_NUMS, H_QUEUE_ID, H_SYS_FLAG, H_BORN, H_FLAG};
    o = LIT(o, "{\"code\":310,\"extFields\":{");
    for (int i = 0; i < 8; i++) {
        int a = ext_args[i];
        o = put_lit(o, i ? "\",\"" : "\"", i ? 3 : 1);
        *o++ = (char)('a' + i);
        o = LIT(o, "\":\"");
        o = i < 3 ? put_text(o, text[a], text_n[a]) : put_int(o, num[a]);
    }
    o = LIT(o, "\",\"i\":\"");
    pos = 0;
    int first = 1;
    while (PyDict_Next(props, &pos, &k, &v)) {  /* properties_to_string, escaped as it is written */
        if (v == Py_None) continue;
        if (!first) o = LIT(o, "\\u0002");
        first = 0;
        const char *ks = PyUnicode_AsUTF8AndSize(k, &kn), *vs = PyUnicode_AsUTF8AndSize(v, &vn);
        o = put_text(o, ks, kn);
        o = LIT(o, "\\u0001");
        o = put_text(o, vs, vn);
    }
    o = LIT(o, "\",\"j\":\"0\",\"k\":\"false\",\"m\":\"false\",\"n\":\"");
    o = put_text(o, text[H_BROKER], text_n[H_BROKER]);
    o = LIT(o, "\"},\"flag\":0,\"language\":\"");
    o = put_text(o, text[H_LANGUAGE], text_n[H_LANGUAGE]);
    o = LIT(o, "\",\"opaque\":");
    o = put_int(o, num[H_OPAQUE]);
    o = LIT(o, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    o = put_int(o, num[H_VERSION]);
    *o++ = '}';
    Py_ssize_t header_len = (o - scratch) - 8;
    if (header_len > 0xFFFFFF || 4 + header_len + body_len > (Py_ssize_t)UINT32_MAX) goto pure;  /* it raises */
    put32(scratch, (uint32_t)(4 + header_len + body_len));
    put32(scratch + 4, (uint32_t)header_len);
    return PyBytes_FromStringAndSize(scratch, 8 + header_len);
pure:
    return PyObject_Vectorcall(pure_v2_head, args, (size_t)nargs, NULL);
}

/* --------------------------------------------------------------------- send_answer: the answer's result */

static PyObject *pure_send_answer;    /* rocketq.client._sendext_py.send_answer: a mapping that is not a dict */
static PyTypeObject *SendResultType;  /* rocketq.client.message.SendResult (a slots dataclass) */
static PyObject *default_region, *s_queue_id_attr;
enum { R_STATUS, R_MSG_ID, R_OFFSET_MSG_ID, R_MQ, R_QUEUE_OFFSET, R_TX, R_REGION, R_TRACE, R_FIELDS };
static const char *const RESULT_FIELDS[R_FIELDS] = {
    "status", "msg_id", "offset_msg_id", "message_queue", "queue_offset", "transaction_id", "region_id", "trace_on",
};
static Py_ssize_t result_offset[R_FIELDS];
enum { X_MSG_ID, X_QUEUE_ID, X_QUEUE_OFFSET, X_REGION, X_TRACE, X_TX, X_KEYS };
static const char *const ANSWER_KEYS[X_KEYS] = {
    "msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON", "transactionId",
};
static PyObject *s_answer_keys[X_KEYS];

/* a str of -?[0-9]{1,18} (the pure twin's pattern) as its value; -1 when it is not one */
static int decimal_value(PyObject *v, long long *out) {
    if (v == NULL || !PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) return -1;
    const Py_UCS1 *p = PyUnicode_1BYTE_DATA(v);
    Py_ssize_t n = PyUnicode_GET_LENGTH(v), i = 0;
    int negative = n > 0 && p[0] == '-';
    i = negative;
    if (n - i < 1 || n - i > 18) return -1;
    long long x = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        x = x * 10 + (p[i] - '0');
    }
    *out = negative ? -x : x;
    return 0;
}

/* send_answer(ext, status, uniq_id, mq) -> SendResult | None: see _sendext_py.send_answer */
static PyObject *send_answer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "send_answer() takes 4 arguments (%zd given)", nargs);
    PyObject *ext = args[0];
    if (!PyDict_CheckExact(ext)) return PyObject_Vectorcall(pure_send_answer, args, (size_t)nargs, NULL);
    /* the queue sent to first: reading an attribute may run Python code, which could change ext */
    PyObject *mq_queue_id = PyObject_GetAttr(args[3], s_queue_id_attr);
    if (mq_queue_id == NULL) return NULL;
    int overflow = 0;
    long long sent_to = PyLong_Check(mq_queue_id) ? PyLong_AsLongLongAndOverflow(mq_queue_id, &overflow) : 0;
    int sent_to_known = PyLong_Check(mq_queue_id) && !overflow;
    Py_DECREF(mq_queue_id);
    if (PyErr_Occurred()) return NULL;
    PyObject *got[X_KEYS] = {NULL}, *result = NULL;
    for (int i = 0; i < X_KEYS; i++) {  /* owned: a key's __eq__ could change ext during a later lookup */
        got[i] = Py_XNewRef(PyDict_GetItemWithError(ext, s_answer_keys[i]));
        if (got[i] == NULL && PyErr_Occurred()) goto done;
    }
    long long queue_id, queue_offset;
    PyObject *region = got[X_REGION], *trace = got[X_TRACE];
    if (got[X_MSG_ID] == NULL || !PyUnicode_CheckExact(got[X_MSG_ID]) || decimal_value(got[X_QUEUE_ID], &queue_id) < 0
        || decimal_value(got[X_QUEUE_OFFSET], &queue_offset) < 0 || (region != NULL && !PyUnicode_CheckExact(region))
        || (trace != NULL && !PyUnicode_CheckExact(trace)) || !sent_to_known || sent_to != queue_id) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *values[R_FIELDS];
    values[R_STATUS] = Py_NewRef(args[1]);
    values[R_MSG_ID] = Py_NewRef(args[2]);
    values[R_OFFSET_MSG_ID] = Py_NewRef(got[X_MSG_ID]);
    values[R_MQ] = Py_NewRef(args[3]);
    values[R_QUEUE_OFFSET] = PyLong_FromLongLong(queue_offset);
    values[R_TX] = Py_NewRef(got[X_TX] != NULL ? got[X_TX] : Py_None);
    values[R_REGION] = Py_NewRef(region != NULL && PyUnicode_GET_LENGTH(region) > 0 ? region : default_region);
    values[R_TRACE] = Py_NewRef(trace != NULL && PyUnicode_CompareWithASCIIString(trace, "false") == 0 ? Py_False
                                                                                                  : Py_True);
    result = values[R_QUEUE_OFFSET] != NULL ? SendResultType->tp_alloc(SendResultType, 0) : NULL;
    for (int i = 0; i < R_FIELDS; i++) {
        if (result != NULL) *(PyObject **)((char *)result + result_offset[i]) = values[i];  /* the slot was NULL */
        else Py_XDECREF(values[i]);
    }
done:
    for (int i = 0; i < X_KEYS; i++) Py_XDECREF(got[i]);
    return result;
}

static PyObject *s_comma;
static PyObject *pure_batch_results;  /* rocketq.client._sendext_py.batch_results: anything not a SendResult */

static inline PyObject *result_slot(PyObject *result, int field) {
    return *(PyObject **)((char *)result + result_offset[field]);
}

/* batch_results(result, count) -> list[SendResult] | None: see _sendext_py.batch_results */
static PyObject *batch_results(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "batch_results() takes 2 arguments (%zd given)", nargs);
    PyObject *result = args[0];
    Py_ssize_t count = PyLong_Check(args[1]) ? PyLong_AsSsize_t(args[1]) : -1;
    if (count == -1 && PyErr_Occurred()) PyErr_Clear();  /* beyond Py_ssize_t: the pure twin answers */
    if (Py_TYPE(result) != SendResultType || count < 0)
        return PyObject_Vectorcall(pure_batch_results, args, (size_t)nargs, NULL);
    for (int i = 0; i < R_FIELDS; i++)
        if (result_slot(result, i) == NULL) return PyObject_Vectorcall(pure_batch_results, args, (size_t)nargs, NULL);
    PyObject *msg_id = result_slot(result, R_MSG_ID), *offset_id = result_slot(result, R_OFFSET_MSG_ID);
    PyObject *first = result_slot(result, R_QUEUE_OFFSET);
    if (!PyUnicode_Check(msg_id) || !PyUnicode_Check(offset_id) || !PyLong_Check(first))
        return PyObject_Vectorcall(pure_batch_results, args, (size_t)nargs, NULL);
    long long first_offset;
    int overflow;
    first_offset = PyLong_AsLongLongAndOverflow(first, &overflow);
    if (overflow || (first_offset == -1 && PyErr_Occurred()) || first_offset > LLONG_MAX - count) {
        PyErr_Clear();
        return PyObject_Vectorcall(pure_batch_results, args, (size_t)nargs, NULL);
    }
    PyObject *msg_ids = NULL, *offset_ids = NULL, *out = NULL;
    if ((msg_ids = PyUnicode_Split(msg_id, s_comma, -1)) == NULL) goto done;
    if ((offset_ids = PyUnicode_Split(offset_id, s_comma, -1)) == NULL) goto done;
    if (PyList_GET_SIZE(msg_ids) != count || PyList_GET_SIZE(offset_ids) != count) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if ((out = PyList_New(count)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *one = SendResultType->tp_alloc(SendResultType, 0), *offset = PyLong_FromLongLong(first_offset + i);
        if (one == NULL || offset == NULL) {
            Py_XDECREF(one);
            Py_XDECREF(offset);
            Py_CLEAR(out);
            goto done;
        }
        for (int f = 0; f < R_FIELDS; f++) {
            PyObject *v = f == R_MSG_ID ? PyList_GET_ITEM(msg_ids, i)
                        : f == R_OFFSET_MSG_ID ? PyList_GET_ITEM(offset_ids, i)
                        : f == R_QUEUE_OFFSET ? offset : result_slot(result, f);
            *(PyObject **)((char *)one + result_offset[f]) = f == R_QUEUE_OFFSET ? v : Py_NewRef(v);
        }
        PyList_SET_ITEM(out, i, one);
    }
done:
    Py_XDECREF(msg_ids);
    Py_XDECREF(offset_ids);
    return out;
}

static PyMethodDef methods[] = {
    {"v2_ext", (PyCFunction)(void (*)(void))v2_ext, METH_FASTCALL,
     "v2_ext(group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag, born_ms, flag, props, batch, "
     "broker_name) -> dict: see _sendext_py.v2_ext"},
    {"v2_head", (PyCFunction)(void (*)(void))v2_head, METH_FASTCALL,
     "v2_head(opaque, language, version, group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag, "
     "born_ms, flag, props, broker_name, body) -> bytes: see _sendext_py.v2_head"},
    {"send_answer", (PyCFunction)(void (*)(void))send_answer, METH_FASTCALL,
     "send_answer(ext, status, uniq_id, mq) -> SendResult | None: see _sendext_py.send_answer"},
    {"batch_results", (PyCFunction)(void (*)(void))batch_results, METH_FASTCALL,
     "batch_results(result, count) -> list[SendResult] | None: see _sendext_py.batch_results"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sendext_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sendext_c(void) {
    PyObject *validators = PyImport_ImportModule("rocketq.client._validators");
    if (validators == NULL) return NULL;
    properties_to_string = PyObject_GetAttrString(validators, "properties_to_string");
    Py_DECREF(validators);
    if (properties_to_string == NULL) return NULL;
    PyObject *pure = PyImport_ImportModule("rocketq.client._sendext_py");  /* the twins' fallbacks */
    if (pure == NULL) return NULL;
    pure_v2_head = PyObject_GetAttrString(pure, "v2_head");
    pure_send_answer = PyObject_GetAttrString(pure, "send_answer");
    pure_batch_results = PyObject_GetAttrString(pure, "batch_results");
    Py_DECREF(pure);
    if (pure_v2_head == NULL || pure_send_answer == NULL || pure_batch_results == NULL) return NULL;
    PyObject *message = PyImport_ImportModule("rocketq.client.message");
    if (message == NULL) return NULL;
    SendResultType = (PyTypeObject *)PyObject_GetAttrString(message, "SendResult");
    default_region = PyObject_GetAttrString(message, "DEFAULT_REGION");
    Py_DECREF(message);
    if (SendResultType == NULL || default_region == NULL) return NULL;
    if (!PyType_Check(SendResultType)) return PyErr_Format(PyExc_TypeError, "SendResult is not a class");
    /* where each field lives in a SendResult: written directly, as make_send_result's slot setters do */
    for (int i = 0; i < R_FIELDS; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)SendResultType, RESULT_FIELDS[i]);
        if (d == NULL) return NULL;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) result_offset[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) return PyErr_Format(PyExc_TypeError, "SendResult.%s is not a __slots__ attribute", RESULT_FIELDS[i]);
    }
    for (int i = 0; i < X_KEYS; i++)
        if ((s_answer_keys[i] = PyUnicode_InternFromString(ANSWER_KEYS[i])) == NULL) return NULL;
    if ((s_queue_id_attr = PyUnicode_InternFromString("queue_id")) == NULL) return NULL;
    if ((s_comma = PyUnicode_InternFromString(",")) == NULL) return NULL;
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
