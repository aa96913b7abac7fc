/* Compiled twin of rocketq/protocol/_framecodec_py.py (read that file for the specification).
 *
 * Profiling the broker under pipelined sends put about a fifth of its time in turning received bytes into
 * RemotingCommands (the JSON header through orjson into a dict, then field checks, then the dataclass), and the
 * client spent as much on the answers. This parses the JSON header shape every RocketMQ peer sends
 * (integers for code/opaque/flag/version, strings for language/remark and every extFields value) straight into
 * the slots of a new RemotingCommand, and writes a JSON header the way orjson would (same bytes).
 *
 * Anything outside that shape — a ROCKETMQ binary header, a number or boolean in extFields, a float, a nested
 * value, invalid JSON or UTF-8, an unusual type on the way out — goes to the pure-Python functions, which give
 * the exact result or error; so both twins always agree, and this file needs no error texts of its own except
 * the frame-length one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>

#include "_slots.h"
#include "_sendreply.h"

static PyObject *ProtocolError;     /* rocketq.errors.ProtocolError */
static PyTypeObject *CommandType;   /* rocketq.protocol.command.RemotingCommand */
static PyObject *py_decode_frame;   /* rocketq.protocol.command.decode_frame: every frame we do not take */
static PyObject *py_encode_head;    /* rocketq.protocol._framecodec_py.encode_head: every command we do not take */
static PyObject *py_encode_send_reply;  /* rocketq.protocol._framecodec_py.encode_send_reply: odd arguments */
static PyObject *py_request_run_end;    /* rocketq.protocol._framecodec_py.request_run_end: odd commands */

enum { F_CODE, F_OPAQUE, F_FLAG, F_LANGUAGE, F_VERSION, F_REMARK, F_EXT, F_BODY, F_SERIALIZE, F_COUNT };
static const char *const FIELD_NAMES[F_COUNT] = {
    "code", "opaque", "flag", "language", "version", "remark", "ext_fields", "body", "serialize_type",
};
static PyObject *field_names[F_COUNT];  /* interned */
static Py_ssize_t field_offset[F_COUNT];

static inline PyObject *get_slot(PyObject *obj, int field) {
    return *(PyObject **)((char *)obj + field_offset[field]);
}
static inline void set_slot(PyObject *obj, int field, PyObject *value /* stolen */) {
    PyObject **slot = (PyObject **)((char *)obj + field_offset[field]);
    Py_XSETREF(*slot, value);
}

/* ------------------------------------------------------------------------------------------- short strings */

/* Header keys and most values (extFields keys, topic, group, language, small numbers as text) repeat from frame
 * to frame: a small direct-mapped cache hands out the same str object instead of decoding a new one. */
#define CACHE_SLOTS 1024
#define CACHE_MAXLEN 48
typedef struct { Py_ssize_t len; PyObject *str; char raw[CACHE_MAXLEN]; } cache_entry;
static cache_entry str_cache[CACHE_SLOTS];

static PyObject *short_str(const char *p, Py_ssize_t n) {
    /* one ASCII character (the V2 extFields keys): CPython's own singletons, no hashing here */
    if (n == 1 && (unsigned char)p[0] < 0x80) return PyUnicode_DecodeUTF8(p, 1, NULL);
    if (n > CACHE_MAXLEN) return PyUnicode_DecodeUTF8(p, n, NULL);
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    cache_entry *e = &str_cache[h & (CACHE_SLOTS - 1)];
    if (e->str != NULL && e->len == n && memcmp(e->raw, p, (size_t)n) == 0) return Py_NewRef(e->str);
    PyObject *s = PyUnicode_DecodeUTF8(p, n, NULL);
    if (s == NULL) return NULL;
    memcpy(e->raw, p, (size_t)n);
    e->len = n;
    Py_XSETREF(e->str, Py_NewRef(s));
    return s;
}

/* --------------------------------------------------------------------------------------------- JSON input */

/* The parsers return NULL (or -1) for "not taken here": any Python error they caused is cleared by the caller,
 * and the frame goes to decode_frame, which decides. */
typedef struct { const char *p, *end; } cursor;

static inline void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* Nonzero when one of the 8 bytes of w is '"', '\\' or a control character: the bytes a JSON string's scan stops
 * at (exact for "any": the classic has-zero-byte test on w ^ '"', w ^ '\\', and has-less-than 0x20 on w). */
static inline uint64_t stop_bytes(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    return (((quote - ones) & ~quote) | ((slash - ones) & ~slash) | ((w - ones * 0x20) & ~w)) & highs;
}

/* A JSON string at c->p (on its opening quote) → str; `cache`: through the short-string cache. */
static PyObject *parse_string(cursor *c, int cache) {
    const char *s = ++c->p, *q = s, *end = c->end;
    while (end - q >= 8) {  /* eight plain bytes at a time; the byte loop below finds the one that stopped it */
        uint64_t w;
        memcpy(&w, q, 8);
        if (stop_bytes(w)) break;
        q += 8;
    }
    while (q < end) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '"') {
            c->p = q + 1;
            return cache ? short_str(s, q - s) : PyUnicode_DecodeUTF8(s, q - s, NULL);
        }
        if (ch == '\\') break;
        if (ch < 0x20) return NULL;
        q++;
    }
    if (q >= end) return NULL;
    /* With escapes: the unescaped text is never longer than the escaped one. */
    if (scratch_reserve((size_t)(end - s)) < 0) return NULL;
    char *out = scratch;
    memcpy(out, s, (size_t)(q - s));
    out += q - s;
    while (q < end) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '"') {
            c->p = q + 1;
            return cache ? short_str(scratch, out - scratch) : PyUnicode_DecodeUTF8(scratch, out - scratch, NULL);
        }
        if (ch < 0x20) return NULL;
        if (ch != '\\') { *out++ = (char)ch; q++; continue; }
        if (end - q < 2) return NULL;
        char esc = q[1];
        q += 2;
        switch (esc) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '/': *out++ = '/'; break;
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (end - q < 4 || hex4(q, &cp) < 0) return NULL;
            q += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL;  /* a lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (end - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                    return NULL;
                q += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) *out++ = (char)cp;
            else if (cp < 0x800) { *out++ = (char)(0xC0 | (cp >> 6)); *out++ = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                *out++ = (char)(0xE0 | (cp >> 12));
                *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *out++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *out++ = (char)(0xF0 | (cp >> 18));
                *out++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *out++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return NULL;
        }
    }
    return NULL;  /* no closing quote */
}

static inline int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* A JSON integer within int32 (no fraction, no exponent). */
static int parse_int32(cursor *c, long *out) {
    const char *p = c->p, *end = c->end;
    int neg = 0;
    if (p < end && *p == '-') { neg = 1; p++; }
    if (p >= end || !is_digit(*p)) return -1;
    if (*p == '0' && p + 1 < end && is_digit(p[1])) return -1;
    int64_t v = 0;
    int digits = 0;
    while (p < end && is_digit(*p)) {
        if (++digits > 10) return -1;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
    if (neg) v = -v;
    if (v < INT32_MIN || v > INT32_MAX) return -1;
    *out = (long)v;
    c->p = p;
    return 0;
}

/* Skip any JSON number (its full grammar). */
static int skip_number(cursor *c) {
    const char *p = c->p, *end = c->end;
    if (p < end && *p == '-') p++;
    if (p >= end || !is_digit(*p)) return -1;
    if (*p == '0') p++;
    else while (p < end && is_digit(*p)) p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) p++;
    }
    c->p = p;
    return 0;
}

static int literal(cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
    c->p += n;
    return 0;
}

/* A member we do not keep: any scalar (validated, then dropped). */
static int skip_scalar(cursor *c) {
    if (c->p >= c->end) return -1;
    switch (*c->p) {
    case '"': {
        PyObject *s = parse_string(c, 0);
        if (s == NULL) return -1;
        Py_DECREF(s);
        return 0;
    }
    case 't': return literal(c, "true");
    case 'f': return literal(c, "false");
    case 'n': return literal(c, "null");
    default: return skip_number(c);
    }
}

/* extFields: null, or an object whose values are all strings (anything else: decode_frame coerces it). */
static PyObject *parse_ext(cursor *c) {
    if (c->p < c->end && *c->p == 'n') return literal(c, "null") < 0 ? NULL : PyDict_New();
    if (c->p >= c->end || *c->p != '{') return NULL;
    c->p++;
    PyObject *ext = PyDict_New();
    if (ext == NULL) return NULL;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return ext; }
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"') goto fail;
        PyObject *key = parse_string(c, 1);
        if (key == NULL) goto fail;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') { Py_DECREF(key); goto fail; }
        c->p++;
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"') { Py_DECREF(key); goto fail; }
        PyObject *value = parse_string(c, 1);
        if (value == NULL) { Py_DECREF(key); goto fail; }
        int rc = PyDict_SetItem(ext, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) goto fail;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        if (c->p < c->end && *c->p == '}') { c->p++; return ext; }
        goto fail;
    }
fail:
    Py_DECREF(ext);
    return NULL;
}

#define KEY_IS(lit) (klen == (Py_ssize_t)sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0)

/* A frame with a JSON header of the usual shape → a new RemotingCommand; NULL: not taken (error cleared). */
static PyObject *fast_command(const char *header, Py_ssize_t header_len, const char *body, Py_ssize_t body_len) {
    cursor c = {header, header + header_len};
    long code = 0, opaque = 0, flag = 0, version = 0;
    int have_code = 0;
    PyObject *language = NULL, *remark = NULL, *ext = NULL, *cmd = NULL;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') goto out;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') { c.p++; goto members_done; }
    for (;;) {
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '"') goto out;
        /* Keys we act on have no escapes; an escaped key is compared after unescaping, by decode_frame. */
        const char *k = c.p + 1, *kq = memchr(k, '"', (size_t)(c.end - k));
        if (kq == NULL || memchr(k, '\\', (size_t)(kq - k)) != NULL) goto out;
        Py_ssize_t klen = kq - k;
        for (Py_ssize_t i = 0; i < klen; i++) if ((unsigned char)k[i] < 0x20) goto out;
        c.p = kq + 1;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':') goto out;
        c.p++;
        skip_ws(&c);
        if (KEY_IS("code")) { if (parse_int32(&c, &code) < 0) goto out; have_code = 1; }
        else if (KEY_IS("opaque")) { if (parse_int32(&c, &opaque) < 0) goto out; }
        else if (KEY_IS("flag")) { if (parse_int32(&c, &flag) < 0) goto out; }
        else if (KEY_IS("version")) { if (parse_int32(&c, &version) < 0) goto out; }
        else if (KEY_IS("language")) {
            if (c.p >= c.end || *c.p != '"') goto out;
            Py_XSETREF(language, parse_string(&c, 1));
            if (language == NULL) goto out;
        } else if (KEY_IS("remark")) {
            if (c.p < c.end && *c.p == 'n') {
                if (literal(&c, "null") < 0) goto out;
                Py_CLEAR(remark);
            } else {
                if (c.p >= c.end || *c.p != '"') goto out;
                Py_XSETREF(remark, parse_string(&c, 0));
                if (remark == NULL) goto out;
            }
        } else if (KEY_IS("extFields")) {
            Py_XSETREF(ext, parse_ext(&c));
            if (ext == NULL) goto out;
        } else if (KEY_IS("serializeTypeCurrentRPC")) {
            if (skip_scalar(&c) < 0) goto out;
        } else {
            /* Anything else a peer adds: ignored, as decode_frame does, if it is
             * a scalar (a nested value: let decode_frame look at it). The key must still be valid UTF-8. */
            PyObject *name = PyUnicode_DecodeUTF8(k, klen, NULL);
            if (name == NULL) goto out;
            Py_DECREF(name);
            if (skip_scalar(&c) < 0) goto out;
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') { c.p++; continue; }
        if (c.p < c.end && *c.p == '}') { c.p++; break; }
        goto out;
    }
members_done:
    skip_ws(&c);
    if (c.p != c.end || !have_code) goto out;
    cmd = CommandType->tp_alloc(CommandType, 0);
    if (cmd == NULL) goto out;
    set_slot(cmd, F_CODE, PyLong_FromLong(code));
    set_slot(cmd, F_OPAQUE, PyLong_FromLong(opaque));
    set_slot(cmd, F_FLAG, PyLong_FromLong(flag));
    set_slot(cmd, F_LANGUAGE, language != NULL ? Py_NewRef(language) : PyUnicode_FromString("JAVA"));
    set_slot(cmd, F_VERSION, PyLong_FromLong(version));
    set_slot(cmd, F_REMARK, remark != NULL ? Py_NewRef(remark) : Py_NewRef(Py_None));
    set_slot(cmd, F_EXT, ext != NULL ? Py_NewRef(ext) : PyDict_New());
    set_slot(cmd, F_BODY, PyBytes_FromStringAndSize(body, body_len));
    set_slot(cmd, F_SERIALIZE, PyLong_FromLong(0));
    for (int i = 0; i < F_COUNT; i++) {
        if (get_slot(cmd, i) == NULL) { Py_CLEAR(cmd); break; }  /* an allocation failed */
    }
out:
    Py_XDECREF(language);
    Py_XDECREF(remark);
    Py_XDECREF(ext);
    if (cmd == NULL) PyErr_Clear();
    return cmd;
}

static inline int32_t get32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* Frames given to decode_frame and commands given to the pure encode_head: tests check the usual ones are not. */
static unsigned long long frames_handed_over, heads_handed_over;

/* One frame (without its length word) → command: ours if it has the usual JSON shape, else decode_frame's. */
static PyObject *decode_one(const unsigned char *frame, Py_ssize_t length) {
    uint32_t word = (uint32_t)get32(frame);
    Py_ssize_t header_len = (Py_ssize_t)(word & 0xFFFFFF);
    if ((word >> 24) == 0 && header_len <= length - 4) {
        PyObject *cmd = fast_command((const char *)frame + 4, header_len, (const char *)frame + 4 + header_len,
                                     length - 4 - header_len);
        if (cmd != NULL) return cmd;
    }
    frames_handed_over++;
    PyObject *copy = PyBytes_FromStringAndSize((const char *)frame, length);
    if (copy == NULL) return NULL;
    PyObject *cmd = PyObject_CallOneArg(py_decode_frame, copy);
    Py_DECREF(copy);
    return cmd;
}

static PyObject *decode_frames(PyObject *self, PyObject *args) {
    PyObject *buf_obj;
    Py_ssize_t max_frame_size;
    if (!PyArg_ParseTuple(args, "On:decode_frames", &buf_obj, &max_frame_size)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf_obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t size = view.len, pos = 0;
    PyObject *error = NULL, *result = NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto done;
    while (size - pos >= 4) {
        int32_t length = get32(buf + pos);
        if (length < 4 || length > max_frame_size) {
            PyObject *text = PyUnicode_FromFormat("frame length %d outside [4, %zd]", (int)length, max_frame_size);
            error = text != NULL ? PyObject_CallOneArg(ProtocolError, text) : NULL;
            Py_XDECREF(text);
            if (error == NULL) goto fail;
            break;
        }
        if (size - pos - 4 < length) break;
        PyObject *cmd = decode_one(buf + pos + 4, length);
        if (cmd == NULL) {
            if (!PyErr_ExceptionMatches(ProtocolError)) goto fail;
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (tb != NULL) PyException_SetTraceback(value, tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            error = value;
            break;
        }
        int rc = PyList_Append(out, cmd);
        Py_DECREF(cmd);
        if (rc < 0) goto fail;
        pos += 4 + (Py_ssize_t)length;
    }
    result = Py_BuildValue("(OnO)", out, pos, error != NULL ? error : Py_None);
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_XDECREF(out);
    Py_XDECREF(error);
    PyBuffer_Release(&view);
    return result;
}

/* request_run_end(commands, start): see rocketq.protocol._framecodec_py. The fields are read in place; a command
 * of another type, or a flag that is not an int, goes to the pure twin from there. */
static PyObject *request_run_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "request_run_end() takes 2 arguments (%zd given)", nargs);
    PyObject *commands = args[0];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(commands) || start < 0 || start >= PyList_GET_SIZE(commands)
        || Py_TYPE(PyList_GET_ITEM(commands, start)) != CommandType)
        return PyObject_Vectorcall(py_request_run_end, args, 2, NULL);
    PyObject *first = PyList_GET_ITEM(commands, start);
    PyObject *code = get_slot(first, F_CODE), *language = get_slot(first, F_LANGUAGE);
    if (code == NULL || language == NULL) return PyObject_Vectorcall(py_request_run_end, args, 2, NULL);
    Py_INCREF(code);  /* held: the comparisons may run Python */
    Py_INCREF(language);
    Py_ssize_t i = start + 1;
    PyObject *result = NULL;
    for (; i < PyList_GET_SIZE(commands); i++) {
        PyObject *cmd = PyList_GET_ITEM(commands, i);
        PyObject *flag = Py_TYPE(cmd) == CommandType ? get_slot(cmd, F_FLAG) : NULL;
        if (flag == NULL || !PyLong_CheckExact(flag)) {  /* the rest as the pure twin reads it */
            PyObject *at = PyLong_FromSsize_t(i - 1), *rest[2] = {commands, at};
            result = at == NULL ? NULL : PyObject_Vectorcall(py_request_run_end, rest, 2, NULL);
            Py_XDECREF(at);
            goto done;
        }
        PyObject *c = get_slot(cmd, F_CODE), *l = get_slot(cmd, F_LANGUAGE);
        if (c == NULL || l == NULL) {  /* unset: reading it raises, as in the pure twin */
            PyErr_SetString(PyExc_AttributeError, "RemotingCommand field unset");
            goto done;
        }
        int same = c == code ? 1 : PyObject_RichCompareBool(c, code, Py_EQ);
        if (same == 1) same = l == language ? 1 : PyObject_RichCompareBool(l, language, Py_EQ);
        if (same < 0) goto done;
        if (!same) break;
        long f = PyLong_AsLong(flag);
        if (f == -1 && PyErr_Occurred()) goto done;
        if (f & 1) break;  /* FLAG_RESPONSE */
    }
    result = PyLong_FromSsize_t(i);
done:
    Py_DECREF(code);
    Py_DECREF(language);
    return result;
}

static PyObject *handed_over_count(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(KK)", frames_handed_over, heads_handed_over);
}

/* -------------------------------------------------------------------------------------------- JSON output */

/* An int member as orjson writes it (an int subclass such as RequestCode as its value); -1 when it is not an
 * int within int64, or is a bool (the pure path decides). */
static int int_text(PyObject *v, char *buf, int *len) {
    if (!PyLong_Check(v) || PyBool_Check(v)) return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    *len = (int)(put_int(buf, x) - buf);
    return 0;
}

static PyObject *fallback_head(PyObject *cmd) {
    PyErr_Clear();
    heads_handed_over++;
    return PyObject_CallOneArg(py_encode_head, cmd);
}

static PyObject *encode_head(PyObject *self, PyObject *cmd) {
    if (Py_TYPE(cmd) != CommandType) return fallback_head(cmd);
    for (int i = 0; i < F_COUNT; i++) if (get_slot(cmd, i) == NULL) return fallback_head(cmd);
    PyObject *serialize = get_slot(cmd, F_SERIALIZE);
    if (!PyLong_CheckExact(serialize) || PyLong_AsLong(serialize) != 0) return fallback_head(cmd);
    char code[24], flag[24], opaque[24], version[24];
    int code_n, flag_n, opaque_n, version_n;
    if (int_text(get_slot(cmd, F_CODE), code, &code_n) < 0 || int_text(get_slot(cmd, F_FLAG), flag, &flag_n) < 0
        || int_text(get_slot(cmd, F_OPAQUE), opaque, &opaque_n) < 0
        || int_text(get_slot(cmd, F_VERSION), version, &version_n) < 0)
        return fallback_head(cmd);
    PyObject *language = get_slot(cmd, F_LANGUAGE), *remark = get_slot(cmd, F_REMARK);
    PyObject *ext = get_slot(cmd, F_EXT), *body = get_slot(cmd, F_BODY);
    /* str subclasses are written as their text by orjson too */
    if (!PyUnicode_Check(language) || (remark != Py_None && !PyUnicode_Check(remark))
        || !PyDict_CheckExact(ext))
        return fallback_head(cmd);
    Py_ssize_t body_len;
    if (PyBytes_CheckExact(body)) body_len = PyBytes_GET_SIZE(body);
    else if ((body_len = PyObject_Length(body)) < 0) return fallback_head(cmd);

    /* Size first (the UTF-8 of every str is cached in the str object), then write. */
    Py_ssize_t language_n, remark_n = 0;
    const char *language_s = PyUnicode_AsUTF8AndSize(language, &language_n), *remark_s = NULL;
    if (language_s == NULL) return fallback_head(cmd);
    if (remark != Py_None && (remark_s = PyUnicode_AsUTF8AndSize(remark, &remark_n)) == NULL)
        return fallback_head(cmd);
    size_t room = 8 + 128 + (size_t)(code_n + flag_n + opaque_n + version_n) + str_room(language_n)
                  + (remark_s ? str_room(remark_n) + 16 : 0);
    Py_ssize_t i = 0;
    PyObject *key, *value;
    while (PyDict_Next(ext, &i, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(value)) return fallback_head(cmd);
        Py_ssize_t kn, vn;
        if (PyUnicode_AsUTF8AndSize(key, &kn) == NULL || PyUnicode_AsUTF8AndSize(value, &vn) == NULL)
            return fallback_head(cmd);
        room += str_room(kn) + str_room(vn) + 2;
    }
    if (scratch_reserve(room) < 0) return PyErr_NoMemory();
    char *o = scratch + 8;
    o = put_lit(o, "{\"code\":", 8);
    o = put_lit(o, code, (size_t)code_n);
    o = put_lit(o, ",\"extFields\":{", 14);
    int first = 1;
    i = 0;
    while (PyDict_Next(ext, &i, &key, &value)) {
        Py_ssize_t kn, vn;
        const char *ks = PyUnicode_AsUTF8AndSize(key, &kn), *vs = PyUnicode_AsUTF8AndSize(value, &vn);
        if (!first) *o++ = ',';
        first = 0;
        o = put_str(o, ks, kn);
        *o++ = ':';
        o = put_str(o, vs, vn);
    }
    o = put_lit(o, "},\"flag\":", 9);
    o = put_lit(o, flag, (size_t)flag_n);
    o = put_lit(o, ",\"language\":", 12);
    o = put_str(o, language_s, language_n);
    o = put_lit(o, ",\"opaque\":", 10);
    o = put_lit(o, opaque, (size_t)opaque_n);
    o = put_lit(o, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":", 44);
    o = put_lit(o, version, (size_t)version_n);
    if (remark_s != NULL) {
        o = put_lit(o, ",\"remark\":", 10);
        o = put_str(o, remark_s, remark_n);
    }
    *o++ = '}';
    Py_ssize_t header_len = (o - scratch) - 8;
    if (header_len > 0xFFFFFF || 4 + header_len + body_len > (Py_ssize_t)UINT32_MAX) return fallback_head(cmd);
    put32(scratch, (uint32_t)(4 + header_len + body_len));
    put32(scratch + 4, (uint32_t)header_len);
    return PyBytes_FromStringAndSize(scratch, 8 + header_len);
}

/* encode_send_reply(opaque, version, msg_id_prefix, phys, queue_id, queue_offset, region, trace_on): the head of a
 * stored send's JSON answer, byte for byte what encode_head gives for it (see _framecodec_py), without building
 * the command and its extFields dict first — the broker answers every plain send so. */
static PyObject *encode_send_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) return PyErr_Format(PyExc_TypeError, "encode_send_reply() takes 8 arguments (%zd given)", nargs);
    long long v[6];  /* opaque, version, -, phys, queue_id, queue_offset */
    static const int ints[5] = {0, 1, 3, 4, 5};
    for (int k = 0; k < 5; k++) {
        PyObject *x = args[ints[k]];
        int overflow;
        if (!PyLong_Check(x) || PyBool_Check(x)) goto pure;
        v[ints[k]] = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow || (v[ints[k]] == -1 && PyErr_Occurred())) goto pure;
    }
    if (v[3] < 0) goto pure;
    Py_ssize_t prefix_n, region_n, trace_n;
    const char *prefix_s = NULL, *region_s = NULL, *trace_s = NULL;
    if (!PyUnicode_Check(args[2]) || !PyUnicode_Check(args[6]) || !PyUnicode_Check(args[7])
        || (prefix_s = PyUnicode_AsUTF8AndSize(args[2], &prefix_n)) == NULL
        || (region_s = PyUnicode_AsUTF8AndSize(args[6], &region_n)) == NULL
        || (trace_s = PyUnicode_AsUTF8AndSize(args[7], &trace_n)) == NULL)
        goto pure;
    if (scratch_reserve(send_reply_room(prefix_n, region_n, trace_n)) < 0) return PyErr_NoMemory();
    char *end = put_send_reply(scratch, v[0], v[1], prefix_s, prefix_n, v[3], v[4], v[5], region_s, region_n,
                               trace_s, trace_n);
    return PyBytes_FromStringAndSize(scratch, end - scratch);
pure:
    PyErr_Clear();
    heads_handed_over++;
    return PyObject_Vectorcall(py_encode_send_reply, args, (size_t)nargs, NULL);
}

/* --------------------------------------------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"decode_frames", decode_frames, METH_VARARGS,
     "decode_frames(buf, max_frame_size) -> (commands, consumed, error): see rocketq.protocol._framecodec_py"},
    {"encode_head", encode_head, METH_O, "encode_head(cmd) -> bytes: see rocketq.protocol._framecodec_py"},
    {"encode_send_reply", (PyCFunction)(void (*)(void))encode_send_reply, METH_FASTCALL,
     "encode_send_reply(opaque, version, msg_id_prefix, phys, queue_id, queue_offset, region, trace_on) -> bytes"},
    {"request_run_end", (PyCFunction)(void (*)(void))request_run_end, METH_FASTCALL,
     "request_run_end(commands, start) -> int: see rocketq.protocol._framecodec_py"},
    {"handed_over", handed_over_count, METH_NOARGS, "handed_over() -> (frames, heads): how many went to the pure path so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_framecodec_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__framecodec_c(void) {
    ProtocolError = import_attr("rocketq.errors", "ProtocolError");
    if (ProtocolError == NULL) return NULL;
    CommandType = (PyTypeObject *)import_attr("rocketq.protocol.command", "RemotingCommand");
    if (CommandType == NULL) return NULL;
    if (!PyType_Check(CommandType)) {
        PyErr_SetString(PyExc_TypeError, "RemotingCommand is not a class");
        return NULL;
    }
    py_decode_frame = import_attr("rocketq.protocol.command", "decode_frame");
    if (py_decode_frame == NULL) return NULL;
    py_encode_head = import_attr("rocketq.protocol._framecodec_py", "encode_head");
    if (py_encode_head == NULL) return NULL;
    py_encode_send_reply = import_attr("rocketq.protocol._framecodec_py", "encode_send_reply");
    if (py_encode_send_reply == NULL) return NULL;
    py_request_run_end = import_attr("rocketq.protocol._framecodec_py", "request_run_end");
    if (py_request_run_end == NULL) return NULL;
    /* Where each field lives in a RemotingCommand: written and read directly. */
    if (intern_names(FIELD_NAMES, F_COUNT, field_names) < 0
        || slot_offsets(CommandType, field_names, F_COUNT, field_offset) < 0)
        return NULL;
    return PyModule_Create(&module);
}
