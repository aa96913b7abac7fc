/* Compiled twin of rocketq/broker/messaging/_plainsend_py.py (read its docstring): a SEND_MESSAGE_V2 request's
 * extFields straight to a plain run's message, without the header object and the Python steps between.
 *
 * py-spy put the V2 header and prepare_plain at ~19 % of the broker's main thread at 1,000 in flight. This reads
 * the letters a client sends and applies the same rules; whatever it does not take as usual (a V1 name, a number
 * that is not plain decimal text, an odd boolean, a value that is not a str) gives None, and the caller reads the
 * header the general way, which then stores the same message or answers the same error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h>

#include "../../protocol/_slots.h"
#include "../../protocol/_sendreply.h"

static PyObject *plain_properties;  /* rocketq.protocol.message.plain_properties (whichever twin runs) */
static PyObject *s_perm, *s_read_queue_nums, *s_write_queue_nums, *s_v1_names[13];
/* RemotingCommand's __slots__, read in place (a request of another type ends a stretch: the caller takes it) */
static PyTypeObject *CommandType;
enum { C_CODE, C_FLAG, C_OPAQUE, C_LANGUAGE, C_SERIALIZE, C_EXT, C_BODY, C_COUNT };
static const char *const SLOT_NAMES[C_COUNT] = {"code", "flag", "opaque", "language", "serialize_type",
                                                "ext_fields", "body"};
static PyObject *slot_names[C_COUNT];  /* interned */
static Py_ssize_t slot_offset[C_COUNT];

static inline PyObject *slot(PyObject *cmd, int i) { return *(PyObject **)((char *)cmd + slot_offset[i]); }

/* the int in slot i; -1 when it is unset, not an int or beyond 64 bits */
static int slot_int(PyObject *cmd, int i, long long *out) {
    PyObject *v = slot(cmd, i);
    if (v == NULL || !PyLong_Check(v)) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

#define SEND_MESSAGE_V2 310  /* RequestCode.SEND_MESSAGE_V2 */
#define FLAG_ONEWAY 0x2      /* protocol.command.FLAG_ONEWAY */
#define SERIALIZE_JSON 0

/* The header's fields by letter (headers._V2_KEYS); n (bname) is not a field of SendMessageRequestHeader. */
enum { A_GROUP, B_TOPIC, C_DEFAULT_TOPIC, D_QUEUE_NUMS, E_QUEUE_ID, F_SYS_FLAG, G_BORN, H_FLAG, I_PROPS, J_RECONSUME,
       K_UNIT_MODE, L_MAX_RECONSUME, M_BATCH, FIELDS };
static const char *V1_NAMES[FIELDS] = {"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
                                       "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
                                       "maxReconsumeTimes", "batch"};

/* The header's values by letter into v (borrowed str, NULL when absent); -1 when this is not ours to read (a
 * value not a str, a key not a str, or a letter absent while its V1 name is there: the header reads that one).
 * One pass over the dict in its order instead of a lookup per letter; V1 names are looked up only when the dict
 * has keys other than single letters. */
static int fields_of(PyObject *ext, PyObject **v) {
    for (int i = 0; i < FIELDS; i++) v[i] = NULL;
    int other_keys = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(ext, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) return -1;
        if (PyUnicode_GET_LENGTH(key) != 1 || PyUnicode_KIND(key) != PyUnicode_1BYTE_KIND) {
            other_keys = 1;
            continue;
        }
        Py_UCS1 letter = PyUnicode_1BYTE_DATA(key)[0];
        if (letter < 'a' || letter >= 'a' + FIELDS || value == Py_None) continue;  /* n (bname), or no value */
        if (!PyUnicode_CheckExact(value)) return -1;
        v[letter - 'a'] = value;
    }
    if (other_keys) {
        for (int i = 0; i < FIELDS; i++) {
            if (v[i] != NULL) continue;
            PyObject *alt = PyDict_GetItemWithError(ext, s_v1_names[i]);
            if (alt == NULL && PyErr_Occurred()) return -1;
            if (alt != NULL && alt != Py_None) return -1;
        }
    }
    return 0;
}

/* An optional '-' and 1 to 18 ASCII digits, within [lo, hi]; -1 for anything else (the general way decides). */
static int plain_int(PyObject *raw, long long lo, long long hi, long long *out) {
    if (!PyUnicode_IS_ASCII(raw)) return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(raw);
    const unsigned char *p = PyUnicode_1BYTE_DATA(raw);
    int negative = n > 0 && p[0] == '-';
    Py_ssize_t i = negative;
    if (n - i < 1 || n - i > 18) return -1;
    long long v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    v = negative ? -v : v;
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* 1 for "true", 0 for "false" or absent (empty reads as absent), -1 for anything else */
static int plain_bool(PyObject *raw) {
    if (raw == NULL || PyUnicode_GET_LENGTH(raw) == 0) return 0;
    if (PyUnicode_CompareWithASCIIString(raw, "true") == 0) return 1;
    if (PyUnicode_CompareWithASCIIString(raw, "false") == 0) return 0;
    return -1;
}

static long long int_attr(PyObject *obj, PyObject *name, int *ok) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) { PyErr_Clear(); *ok = 0; return 0; }
    long long r = PyLong_Check(v) ? PyLong_AsLongLong(v) : -1;
    Py_DECREF(v);
    if (r == -1 && PyErr_Occurred()) { PyErr_Clear(); *ok = 0; }
    return r;
}

#define GIVE_UP() do { Py_RETURN_NONE; } while (0)
#define I32_MIN (-2147483648LL)
#define I32_MAX 2147483647LL

/* A topic config's three numbers, read once per stretch: the config object is held (so its address cannot be
 * reused for another one), and the broker replaces a topic's config, it never changes one in place. */
typedef struct { PyObject *config; long long perm, read_queues, write_queues; } topic_numbers;

static int numbers_of(PyObject *tc, topic_numbers *cache) {
    if (cache->config == tc) return 0;
    int ok = 1;
    long long perm = int_attr(tc, s_perm, &ok);
    long long rq = int_attr(tc, s_read_queue_nums, &ok), wq = int_attr(tc, s_write_queue_nums, &ok);
    if (!ok) return -1;
    Py_XSETREF(cache->config, Py_NewRef(tc));
    cache->perm = perm;
    cache->read_queues = rq;
    cache->write_queues = wq;
    return 0;
}

/* plain_send_v2(ext, body, born_host, rules): see _plainsend_py.plain_send_v2. */
static PyObject *read_plain(PyObject *ext, PyObject *body, PyObject *born_host, PyObject *rules,
                            topic_numbers *numbers) {
    if (!PyTuple_CheckExact(rules) || PyTuple_GET_SIZE(rules) != 9 || plain_properties == NULL)
        return PyErr_Format(PyExc_TypeError, "plain_send_v2: rules must be the 9-tuple of _plainsend_py.PlainRules");
    if (!PyDict_CheckExact(ext) || !PyBytes_CheckExact(body)) GIVE_UP();
    PyObject *plain_topics = PyTuple_GET_ITEM(rules, 0), *topic_table = PyTuple_GET_ITEM(rules, 1);
    PyObject *waits = PyTuple_GET_ITEM(rules, 3);
    long long max_body = PyLong_AsLongLong(PyTuple_GET_ITEM(rules, 2));
    long long tx_mask = PyLong_AsLongLong(PyTuple_GET_ITEM(rules, 7));
    long long perm_write = PyLong_AsLongLong(PyTuple_GET_ITEM(rules, 8));
    if (PyErr_Occurred() || !PyAnySet_Check(plain_topics) || !PyDict_Check(topic_table)) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError, "plain_send_v2: bad rules");
    }
    PyObject *v[FIELDS];
    if (fields_of(ext, v) < 0) {
        PyErr_Clear();
        GIVE_UP();
    }
    /* required (HeaderError when missing; a number also when empty) */
    if (v[A_GROUP] == NULL || v[B_TOPIC] == NULL || v[C_DEFAULT_TOPIC] == NULL) GIVE_UP();
    long long queue_nums, queue_id, sys_flag, born, flag, reconsume = 0, max_reconsume;
    if (v[D_QUEUE_NUMS] == NULL || plain_int(v[D_QUEUE_NUMS], I32_MIN, I32_MAX, &queue_nums) < 0) GIVE_UP();
    if (v[E_QUEUE_ID] == NULL || plain_int(v[E_QUEUE_ID], I32_MIN, I32_MAX, &queue_id) < 0) GIVE_UP();
    if (v[F_SYS_FLAG] == NULL || plain_int(v[F_SYS_FLAG], I32_MIN, I32_MAX, &sys_flag) < 0) GIVE_UP();
    if (v[G_BORN] == NULL || plain_int(v[G_BORN], LLONG_MIN, LLONG_MAX, &born) < 0) GIVE_UP();
    if (v[H_FLAG] == NULL || plain_int(v[H_FLAG], I32_MIN, I32_MAX, &flag) < 0) GIVE_UP();
    /* optional */
    if (v[J_RECONSUME] != NULL && PyUnicode_GET_LENGTH(v[J_RECONSUME]) > 0
        && plain_int(v[J_RECONSUME], I32_MIN, I32_MAX, &reconsume) < 0)
        GIVE_UP();
    if (v[L_MAX_RECONSUME] != NULL && PyUnicode_GET_LENGTH(v[L_MAX_RECONSUME]) > 0
        && plain_int(v[L_MAX_RECONSUME], I32_MIN, I32_MAX, &max_reconsume) < 0)
        GIVE_UP();
    if (plain_bool(v[K_UNIT_MODE]) < 0 || plain_bool(v[M_BATCH]) != 0) GIVE_UP();  /* a batch goes the general way */
    /* the rules of _plainsend_py.plain_message, in its order */
    PyObject *topic = v[B_TOPIC];
    int in = PySet_Contains(plain_topics, topic);
    if (in <= 0) {
        PyErr_Clear();
        GIVE_UP();
    }
    if (sys_flag & tx_mask) GIVE_UP();
    PyObject *tc = PyDict_GetItemWithError(topic_table, topic);  /* borrowed */
    if (tc == NULL) {
        PyErr_Clear();
        GIVE_UP();
    }
    if (numbers_of(tc, numbers) < 0) GIVE_UP();
    long long rq = numbers->read_queues, wq = numbers->write_queues;
    if (!(numbers->perm & perm_write) || queue_id < 0 || queue_id >= (rq > wq ? rq : wq)) GIVE_UP();
    if (PyBytes_GET_SIZE(body) > max_body) GIVE_UP();
    PyObject *text = v[I_PROPS], *empty = NULL;
    if (text == NULL) {  /* header.properties or "" */
        empty = PyUnicode_New(0, 0);
        if (empty == NULL) return NULL;
        text = empty;
    }
    if (waits != Py_None) {
        PyObject *r = PyObject_CallOneArg(waits, text);
        int fine = r == NULL ? -1 : PyObject_IsTrue(r);
        Py_XDECREF(r);
        if (fine <= 0) {
            Py_XDECREF(empty);
            if (fine < 0) return NULL;
            GIVE_UP();
        }
    }
    PyObject *pargs[4] = {text, PyTuple_GET_ITEM(rules, 4), PyTuple_GET_ITEM(rules, 5), PyTuple_GET_ITEM(rules, 6)};
    PyObject *plain = PyObject_Vectorcall(plain_properties, pargs, 4, NULL);
    Py_XDECREF(empty);
    if (plain == NULL) return NULL;
    if (plain == Py_None || !PyTuple_CheckExact(plain) || PyTuple_GET_SIZE(plain) != 4) {
        Py_DECREF(plain);
        GIVE_UP();
    }
    PyObject *out = PyTuple_New(12);
    if (out == NULL) {
        Py_DECREF(plain);
        return NULL;
    }
    PyObject *items[12] = {
        Py_NewRef(topic), PyLong_FromLongLong(queue_id), Py_NewRef(body), Py_NewRef(PyTuple_GET_ITEM(plain, 0)),
        PyLong_FromLongLong(flag), PyLong_FromLongLong(sys_flag), PyLong_FromLongLong(born), Py_NewRef(born_host),
        PyLong_FromLongLong(reconsume), Py_NewRef(PyTuple_GET_ITEM(plain, 1)), Py_NewRef(PyTuple_GET_ITEM(plain, 2)),
        Py_NewRef(PyTuple_GET_ITEM(plain, 3)),
    };
    Py_DECREF(plain);
    int failed = 0;
    for (int i = 0; i < 12; i++) {
        if (items[i] == NULL) failed = 1;
        PyTuple_SET_ITEM(out, i, items[i]);  /* a NULL slot is fine for the DECREF below */
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *plain_send_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "plain_send_v2() takes 4 arguments (%zd given)", nargs);
    topic_numbers numbers = {NULL, 0, 0, 0};
    PyObject *message = read_plain(args[0], args[1], args[2], args[3], &numbers);
    Py_XDECREF(numbers.config);
    return message;
}

/* plain_sends_v2(cmds, start, born_host, rules, run): see _plainsend_py.plain_sends_v2. One call per stretch of
 * a connection's sends instead of a Python loop turn and a call per send. */
static PyObject *plain_sends_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) return PyErr_Format(PyExc_TypeError, "plain_sends_v2() takes 5 arguments (%zd given)", nargs);
    PyObject *cmds = args[0], *born_host = args[2], *rules = args[3], *run = args[4];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(cmds) || !PyList_CheckExact(run) || i < 0)
        return PyErr_Format(PyExc_TypeError, "plain_sends_v2: cmds and run must be lists, start not negative");
    topic_numbers numbers = {NULL, 0, 0, 0};
    for (; i < PyList_GET_SIZE(cmds); i++) {
        PyObject *cmd = PyList_GET_ITEM(cmds, i);
        long long code;
        if (Py_TYPE(cmd) != CommandType || slot_int(cmd, C_CODE, &code) < 0 || code != SEND_MESSAGE_V2) break;
        PyObject *ext = slot(cmd, C_EXT), *body = slot(cmd, C_BODY);
        if (ext == NULL || body == NULL) break;
        Py_INCREF(ext);  /* held through the call: the rules' callbacks run Python */
        Py_INCREF(body);
        PyObject *message = read_plain(ext, body, born_host, rules, &numbers);
        Py_DECREF(ext);
        Py_DECREF(body);
        if (message == NULL) {  /* the caller reads this one alone, and logs what went wrong */
            PyErr_Clear();
            break;
        }
        int appended = message == Py_None ? 1 : PyList_Append(run, message);
        Py_DECREF(message);
        if (message == Py_None) break;
        if (appended < 0) {
            Py_XDECREF(numbers.config);
            return NULL;
        }
    }
    Py_XDECREF(numbers.config);
    return PyLong_FromSsize_t(i);
}

static int utf8_of(PyObject *s, const char **out, Py_ssize_t *n) {
    if (!PyUnicode_Check(s)) return -1;
    *out = PyUnicode_AsUTF8AndSize(s, n);
    return *out == NULL ? -1 : 0;
}

/* plain_answers(senders, run, results, start, msg_id_prefix, version, region, trace_on): see
 * _plainsend_py.plain_answers. The frames are written one after another into one buffer: no bytes object, no
 * list slot and no call per answer. Anything not plain here (an int beyond 64 bits, an odd type) ends the stretch;
 * the caller answers that send alone, which gives the same bytes. */
static PyObject *plain_answers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) return PyErr_Format(PyExc_TypeError, "plain_answers() takes 8 arguments (%zd given)", nargs);
    PyObject *senders = args[0], *run = args[1], *results = args[2];
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(senders) || !PyList_CheckExact(run) || !PyList_CheckExact(results) || start < 0)
        return PyErr_Format(PyExc_TypeError, "plain_answers: senders, run and results must be lists");
    Py_ssize_t n = PyList_GET_SIZE(senders);
    if (PyList_GET_SIZE(run) != n || PyList_GET_SIZE(results) != n)
        return PyErr_Format(PyExc_ValueError, "plain_answers: senders, run and results differ in length");
    const char *prefix_s, *region_s, *trace_s;
    Py_ssize_t prefix_n, region_n, trace_n;
    int overflow;
    long long version = PyLong_AsLongLongAndOverflow(args[5], &overflow);
    if (utf8_of(args[4], &prefix_s, &prefix_n) < 0 || utf8_of(args[6], &region_s, &region_n) < 0
        || utf8_of(args[7], &trace_s, &trace_n) < 0 || overflow || PyErr_Occurred()) {
        PyErr_Clear();
        return Py_BuildValue("(yn)", "", start);  /* each send alone: encode_send_reply decides */
    }
    size_t room = send_reply_room(prefix_n, region_n, trace_n), used = 0;
    PyObject *first_conn = NULL;
    long long first_code = 0;
    Py_ssize_t i = start;
    for (; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(senders, i), *result = PyList_GET_ITEM(results, i);
        PyObject *message = PyList_GET_ITEM(run, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyTuple_CheckExact(result)
            || PyTuple_GET_SIZE(result) != 3 || !PyTuple_CheckExact(message) || PyTuple_GET_SIZE(message) < 2)
            break;
        PyObject *conn = PyTuple_GET_ITEM(pair, 0), *cmd = PyTuple_GET_ITEM(pair, 1);
        long long code, flag, serialize, opaque;
        if (Py_TYPE(cmd) != CommandType || slot_int(cmd, C_CODE, &code) < 0 || slot_int(cmd, C_FLAG, &flag) < 0
            || slot_int(cmd, C_SERIALIZE, &serialize) < 0 || slot_int(cmd, C_OPAQUE, &opaque) < 0
            || flag & FLAG_ONEWAY)
            break;
        if (i == start) {
            first_conn = conn;
            first_code = code;
        } else if (conn != first_conn || code != first_code) {
            break;
        }
        if (serialize != SERIALIZE_JSON) {  /* a RocketMQ-serialized request: a JSON answer for C++ clients only */
            PyObject *language = slot(cmd, C_LANGUAGE);
            if (language == NULL || !PyUnicode_Check(language) || PyUnicode_CompareWithASCIIString(language, "CPP"))
                break;
        }
        long long phys = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(result, 0), &overflow);
        int o2, o3;
        long long queue_offset = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(result, 1), &o2);
        long long queue_id = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(message, 1), &o3);
        if (overflow || o2 || o3 || PyErr_Occurred() || phys < 0) {
            PyErr_Clear();
            break;
        }
        if (scratch_reserve(used + room) < 0) return PyErr_NoMemory();
        used = (size_t)(put_send_reply(scratch + used, opaque, version, prefix_s, prefix_n, phys, queue_id,
                                       queue_offset, region_s, region_n, trace_s, trace_n) - scratch);
    }
    PyObject *frames = PyBytes_FromStringAndSize(scratch, (Py_ssize_t)used);
    if (frames == NULL) return NULL;
    PyObject *out = Py_BuildValue("(Nn)", frames, i);
    return out;
}

static PyMethodDef methods[] = {
    {"plain_send_v2", (PyCFunction)(void (*)(void))plain_send_v2, METH_FASTCALL,
     "plain_send_v2(ext, body, born_host, rules) -> PlainMessage | None: see _plainsend_py.plain_send_v2"},
    {"plain_sends_v2", (PyCFunction)(void (*)(void))plain_sends_v2, METH_FASTCALL,
     "plain_sends_v2(cmds, start, born_host, rules, run) -> int: see _plainsend_py.plain_sends_v2"},
    {"plain_answers", (PyCFunction)(void (*)(void))plain_answers, METH_FASTCALL,
     "plain_answers(senders, run, results, start, msg_id_prefix, version, region, trace_on) -> (bytes, int): "
     "see _plainsend_py.plain_answers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plainsend_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__plainsend_c(void) {
    PyObject *message = PyImport_ImportModule("rocketq.protocol.message");
    if (message == NULL) return NULL;
    plain_properties = PyObject_GetAttrString(message, "plain_properties");
    Py_DECREF(message);
    if (plain_properties == NULL) return NULL;
    s_perm = PyUnicode_InternFromString("perm");
    s_read_queue_nums = PyUnicode_InternFromString("read_queue_nums");
    s_write_queue_nums = PyUnicode_InternFromString("write_queue_nums");
    if (s_perm == NULL || s_read_queue_nums == NULL || s_write_queue_nums == NULL) return NULL;
    PyObject *command = PyImport_ImportModule("rocketq.protocol.command");
    if (command == NULL) return NULL;
    CommandType = (PyTypeObject *)PyObject_GetAttrString(command, "RemotingCommand");
    Py_DECREF(command);
    if (CommandType == NULL) return NULL;
    if (intern_names(SLOT_NAMES, C_COUNT, slot_names) < 0
        || slot_offsets(CommandType, slot_names, C_COUNT, slot_offset) < 0)
        return NULL;
    if (intern_names(V1_NAMES, FIELDS, s_v1_names) < 0) return NULL;
    return PyModule_Create(&module);
}
