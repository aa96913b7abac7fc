/* Compiled fast path of rocketq.client._accumulator.ProduceAccumulator.gather (that method is the specification
 * and the pure twin; rocketq.client.gathering chooses).
 *
 * Profiling auto-batched sends put ~2 us of the client's ~15 us per message in gather. This does the common case
 * in one C call, reading and writing the slots of the accumulator, its accumulation, the message and the new
 * future in place: a plain Message (str topic, bytes body, dict properties) whose topic already passed the
 * producer's check, no property that keeps it out of a batch, metrics off, and an accumulation already open for
 * its key. Everything else (the first message of an accumulation, a message that fails its check, a message Java
 * sends directly, metrics on, other types, counts that are not small ints) goes to the method itself, so the two
 * cannot disagree there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../protocol/_slots.h"

static PyObject *py_gather;          /* ProduceAccumulator.gather: every case this path does not take */
static PyTypeObject *accumulator_type, *accumulation_type, *message_type, *future_type;
static PyObject *sendable_topics;    /* rocketq.client._validators._SENDABLE_TOPICS: topics that passed the check */
static PyObject *direct_properties;  /* rocketq.client._accumulator._DIRECT_PROPERTIES */
static PyObject *retry_prefix, *s_wait, *s_tags, *s_false, *s_max_message_size, *loop_kwnames;

#define FIELDS(type, ...) static const char *const type##_NAMES[] = {__VA_ARGS__};
enum { A_HELD, A_TOTAL, A_MAX, A_OPEN, A_OWNER, A_COUNT };
FIELDS(A, "held_bytes", "total_batch_max_bytes", "batch_max_bytes", "_open", "_owner")
enum { C_MESSAGES, C_FUTURES, C_SIZE, C_COUNT };
FIELDS(C, "messages", "futures", "size")
enum { M_TOPIC, M_BODY, M_PROPERTIES, M_COUNT };
FIELDS(M, "topic", "body", "properties")
enum { F_OWNER, F_ON_SUCCESS, F_ON_EXCEPTION, F_METER, F_COUNT };
FIELDS(F, "_owner", "_on_success", "_on_exception", "_meter")
static Py_ssize_t a_off[A_COUNT], c_off[C_COUNT], m_off[M_COUNT], f_off[F_COUNT];

/* obj's slot at offset, borrowed; NULL when unset. */
#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* A slot holding an int, as a C value; -1 for an unset slot, another type or a value beyond Py_ssize_t. */
static Py_ssize_t count_of(PyObject *v) {
    if (v == NULL || !PyLong_CheckExact(v)) return -1;
    Py_ssize_t n = PyLong_AsSsize_t(v);
    if (n == -1) PyErr_Clear();
    return n;
}

/* Store n in obj's slot at offset; -1 with an error set. */
static int set_count(PyObject *obj, Py_ssize_t offset, Py_ssize_t n) {
    PyObject *v = PyLong_FromSsize_t(n);
    if (v == NULL) return -1;
    Py_XSETREF(SLOT(obj, offset), v);
    return 0;
}

/* The open accumulation for the message's key, borrowed (held by the accumulator's dict while this runs, which
 * calls no Python code before using it); NULL with no error when there is none or the case is the method's. */
static PyObject *open_accumulation(PyObject *acc, PyObject *topic, PyObject *props, PyObject *mq,
                                   PyObject *asynchronous) {
    PyObject *open = SLOT(acc, a_off[A_OPEN]);
    if (open == NULL || !PyDict_CheckExact(open)) return NULL;
    PyObject *wait_text = PyDict_GetItemWithError(props, s_wait);
    if (wait_text != NULL && !PyUnicode_CheckExact(wait_text)) return NULL;
    int wait = wait_text == NULL || PyUnicode_Compare(wait_text, s_false) != 0;
    PyObject *tags = PyDict_GetItemWithError(props, s_tags);
    if (PyErr_Occurred()) return NULL;
    if (tags != NULL && !PyUnicode_CheckExact(tags)) return NULL;
    PyObject *key = PyTuple_Pack(5, topic, mq, wait ? Py_True : Py_False, tags ? tags : Py_None, asynchronous);
    if (key == NULL) return NULL;
    PyObject *found = PyDict_GetItemWithError(open, key);
    Py_DECREF(key);
    if (found != NULL && Py_TYPE(found) != accumulation_type) return NULL;
    return found;
}

/* 1: this path takes the send (topic, props, body borrowed); 0: the method's; -1: error. */
static int plain_send(PyObject *acc, PyObject *msg, PyObject *metrics, PyObject **topic, PyObject **props,
                      PyObject **body) {
    if (metrics != Py_None || Py_TYPE(msg) != message_type || Py_TYPE(acc) != accumulator_type) return 0;
    *topic = SLOT(msg, m_off[M_TOPIC]);
    *props = SLOT(msg, m_off[M_PROPERTIES]);
    *body = SLOT(msg, m_off[M_BODY]);
    if (*topic == NULL || *props == NULL || *body == NULL || !PyUnicode_CheckExact(*topic)
        || !PyDict_CheckExact(*props) || !PyBytes_CheckExact(*body) || PyBytes_GET_SIZE(*body) == 0)
        return 0;
    int known = PySet_Contains(sendable_topics, *topic);
    if (known <= 0) return known;
    Py_ssize_t retry = PyUnicode_Tailmatch(*topic, retry_prefix, 0, PY_SSIZE_T_MAX, -1);
    if (retry != 0) return retry < 0 ? -1 : 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(*props, &pos, &k, &v)) {
        int direct = PySet_Contains(direct_properties, k);
        if (direct != 0) return direct < 0 ? -1 : 0;
    }
    Py_ssize_t held = count_of(SLOT(acc, a_off[A_HELD])), total = count_of(SLOT(acc, a_off[A_TOTAL]));
    if (held < 0 || total < 0 || held >= total) return 0;
    PyObject *owner = SLOT(acc, a_off[A_OWNER]);
    if (owner == NULL) return 0;
    PyObject *max_size = PyObject_GetAttr(owner, s_max_message_size);
    if (max_size == NULL) return -1;
    Py_ssize_t limit = count_of(max_size);
    Py_DECREF(max_size);
    return limit >= 0 && PyBytes_GET_SIZE(*body) <= limit;
}

/* The send joins accumulation: its future made, both appended, the bytes counted, the batch sent if full. */
static PyObject *join(PyObject *acc, PyObject *accumulation, PyObject *msg, PyObject *body, PyObject *on_success,
                      PyObject *on_exception, PyObject *loop) {
    PyObject *messages = SLOT(accumulation, c_off[C_MESSAGES]), *futures = SLOT(accumulation, c_off[C_FUTURES]);
    Py_ssize_t size = count_of(SLOT(accumulation, c_off[C_SIZE]));
    Py_ssize_t held = count_of(SLOT(acc, a_off[A_HELD])), limit = count_of(SLOT(acc, a_off[A_MAX]));
    if (messages == NULL || futures == NULL || !PyList_CheckExact(messages) || !PyList_CheckExact(futures)
        || size < 0 || held < 0 || limit < 0)
        return NULL; /* no error: the method's */
    Py_INCREF(accumulation); /* held across the future's making, the appends and the flush */
    PyObject *fut = PyObject_Vectorcall((PyObject *)future_type, &loop, 0, loop_kwnames);
    if (fut == NULL) {
        Py_DECREF(accumulation);
        return NULL;
    }
    if (Py_TYPE(fut) != future_type) {
        PyErr_SetString(PyExc_TypeError, "SendFuture(loop=...) made another type");
        goto fail;
    }
    PyObject *owner = SLOT(acc, a_off[A_OWNER]);
    Py_XSETREF(SLOT(fut, f_off[F_OWNER]), Py_NewRef(owner));
    Py_XSETREF(SLOT(fut, f_off[F_ON_SUCCESS]), Py_NewRef(on_success));
    Py_XSETREF(SLOT(fut, f_off[F_ON_EXCEPTION]), Py_NewRef(on_exception));
    Py_XSETREF(SLOT(fut, f_off[F_METER]), Py_NewRef(Py_None));
    Py_ssize_t n = PyBytes_GET_SIZE(body);
    if (PyList_Append(messages, msg) < 0 || PyList_Append(futures, fut) < 0
        || set_count(accumulation, c_off[C_SIZE], size + n) < 0 || set_count(acc, a_off[A_HELD], held + n) < 0)
        goto fail;
    if (size + n > limit) {
        PyObject *r = PyObject_CallMethod(acc, "_flush", "O", accumulation);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(accumulation);
    return fut;
fail:
    Py_DECREF(accumulation);
    Py_DECREF(fut);
    return NULL;
}

/* gather(accumulator, msg, mq, on_success, on_exception, loop, metrics, asynchronous): ProduceAccumulator.gather */
static PyObject *gather(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs == 8) {
        PyObject *acc = args[0], *msg = args[1], *topic, *props, *body;
        int plain = plain_send(acc, msg, args[6], &topic, &props, &body);
        if (plain < 0) return NULL;
        if (plain) {
            PyObject *accumulation = open_accumulation(acc, topic, props, args[2], args[7]);
            if (accumulation == NULL && PyErr_Occurred()) return NULL;
            if (accumulation != NULL) {
                PyObject *fut = join(acc, accumulation, msg, body, args[3], args[4], args[5]);
                if (fut != NULL || PyErr_Occurred()) return fut;
            }
        }
    }
    return PyObject_Vectorcall(py_gather, args, (size_t)nargs, NULL);
}

static PyMethodDef methods[] = {
    {"gather", (PyCFunction)(void (*)(void))gather, METH_FASTCALL,
     "gather(accumulator, msg, mq, on_success, on_exception, loop, metrics, asynchronous): "
     "rocketq.client._accumulator.ProduceAccumulator.gather"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gather_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

/* offsets[i] of names[i] in type's slots; 0, or -1 with the error set. */
static int offsets_of(PyTypeObject *type, const char *const *names, int count, Py_ssize_t *offsets) {
    PyObject *interned[8];
    if (count > 8 || intern_names(names, count, interned) < 0) return -1;
    int rc = slot_offsets(type, interned, count, offsets);
    for (int i = 0; i < count; i++) Py_DECREF(interned[i]);
    return rc;
}

static PyTypeObject *import_type(const char *module_name, const char *attr) {
    PyObject *t = import_attr(module_name, attr);
    if (t != NULL && !PyType_Check(t)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a class", module_name, attr);
        Py_CLEAR(t);
    }
    return (PyTypeObject *)t;
}

PyMODINIT_FUNC PyInit__gather_c(void) {
    accumulator_type = import_type("rocketq.client._accumulator", "ProduceAccumulator");
    accumulation_type = import_type("rocketq.client._accumulator", "_Accumulation");
    message_type = import_type("rocketq.client.message", "Message");
    future_type = import_type("rocketq.client._async_send", "SendFuture");
    if (accumulator_type == NULL || accumulation_type == NULL || message_type == NULL || future_type == NULL)
        return NULL;
    py_gather = PyObject_GetAttrString((PyObject *)accumulator_type, "gather");
    sendable_topics = import_attr("rocketq.client._validators", "_SENDABLE_TOPICS");
    direct_properties = import_attr("rocketq.client._accumulator", "_DIRECT_PROPERTIES");
    if (py_gather == NULL || sendable_topics == NULL || direct_properties == NULL) return NULL;
    if (!PySet_Check(sendable_topics) || !PyAnySet_Check(direct_properties)) {
        PyErr_SetString(PyExc_TypeError, "rocketq.client._gather_c: unexpected types at import");
        return NULL;
    }
    if (offsets_of(accumulator_type, A_NAMES, A_COUNT, a_off) < 0
        || offsets_of(accumulation_type, C_NAMES, C_COUNT, c_off) < 0
        || offsets_of(message_type, M_NAMES, M_COUNT, m_off) < 0 || offsets_of(future_type, F_NAMES, F_COUNT, f_off) < 0)
        return NULL;
    retry_prefix = PyUnicode_InternFromString("%RETRY%");
    s_wait = PyUnicode_InternFromString("WAIT");
    s_tags = PyUnicode_InternFromString("TAGS");
    s_false = PyUnicode_InternFromString("false");
    s_max_message_size = PyUnicode_InternFromString("max_message_size");
    PyObject *loop_name = PyUnicode_InternFromString("loop");
    if (retry_prefix == NULL || s_wait == NULL || s_tags == NULL || s_false == NULL || s_max_message_size == NULL
        || loop_name == NULL)
        return NULL;
    loop_kwnames = PyTuple_Pack(1, loop_name);
    Py_DECREF(loop_name);
    if (loop_kwnames == NULL) return NULL;
    return PyModule_Create(&module);
}
