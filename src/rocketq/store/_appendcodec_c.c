/* Compiled twin of rocketq/store/_appendcodec_py.py (read that file for the specification).
 *
 * Profiling the broker under batch sends put ~65 % of its time in turning a SEND_BATCH_MESSAGE body into
 * commit-log records (decode, properties, CRC, record writes, consume-queue units, index hashes), spread over
 * dozens of small Python steps per message. This module does those steps for a whole batch in one call.
 * Same arguments, results, bytes written and errors as the pure twin; tests run both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#include "_storecodec.h"

/* One item of a batch body. */
typedef struct {
    int32_t flag;
    Py_ssize_t body_pos, body_len, props_pos, props_len;
    int sep;                 /* a 0x02 goes between the item's and the batch's properties */
    int64_t tags_code;
    Py_ssize_t first_hash, n_hashes;  /* this item's index-key hashes in the shared hash array */
} item_t;

/* Index-key hashes of a whole batch (a message has its UNIQ_KEY and any number of KEYS). */
typedef struct { uint32_t *v; Py_ssize_t n, cap; } hashes_t;

static int hashes_push(hashes_t *hs, uint32_t h) {
    if (hs->n == hs->cap) {
        Py_ssize_t cap = hs->cap ? hs->cap * 2 : 64;
        uint32_t *v = PyMem_Realloc(hs->v, sizeof(uint32_t) * (size_t)cap);
        if (v == NULL) { PyErr_NoMemory(); return -1; }
        hs->v = v;
        hs->cap = cap;
    }
    hs->v[hs->n++] = h;
    return 0;
}

/* Walk the items: count them, or fill `items` (may be NULL). -1 with ValueError if malformed. */
static Py_ssize_t walk_items(const unsigned char *b, Py_ssize_t end, item_t *items) {
    Py_ssize_t pos = 0, n = 0;
    while (pos < end) {
        if (pos + 22 > end) {
            PyErr_Format(PyExc_ValueError, "malformed batch body: item at %zd is truncated", pos);
            return -1;
        }
        int32_t total = get32(b + pos), body_len = get32(b + pos + 16);
        if (total < 22 || pos + total > end || body_len < 0 || (int64_t)20 + body_len + 2 > total) {
            PyErr_Format(PyExc_ValueError, "malformed batch body: item at %zd has bad sizes (total %d, body %d)",
                         pos, (int)total, (int)body_len);
            return -1;
        }
        Py_ssize_t p = pos + 20 + body_len;
        int16_t props_len = get16(b + p);
        if (props_len < 0 || p + 2 + props_len != pos + total) {
            PyErr_Format(PyExc_ValueError,
                         "malformed batch body: item at %zd: properties length %d does not end it", pos, (int)props_len);
            return -1;
        }
        if (items != NULL) {
            item_t *it = &items[n];
            it->flag = get32(b + pos + 12);
            it->body_pos = pos + 20;
            it->body_len = body_len;
            it->props_pos = p + 2;
            it->props_len = props_len;
        }
        n++;
        pos += total;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "malformed batch body: empty batch");
        return -1;
    }
    return n;
}

static inline int needs_sep(const unsigned char *b, Py_ssize_t props_pos, Py_ssize_t props_len, Py_ssize_t extra_len) {
    return props_len > 0 && extra_len > 0 && b[props_pos + props_len - 1] != 2;
}

/* Java String.hashCode (mod 2**32) continued from `h` over the UTF-16 units of UTF-8 text; strict UTF-8
 * as Python's decoder (no overlongs, no surrogates, nothing past U+10FFFF). -1 if invalid. */
static int java_hash_utf8(const unsigned char *s, Py_ssize_t n, uint32_t *h_io) {
    uint32_t h = *h_io;
    Py_ssize_t i = 0;
    while (i < n) {
        uint32_t c = s[i];
        if (c < 0x80) { h = h * 31u + c; i++; continue; }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return -1;
        if (i + len > n) return -1;
        for (int k = 1; k < len; k++) {
            uint32_t cc = s[i + k];
            if ((cc & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return -1;
        if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return -1;
        h = java_hash_step(h, cp);
        i += len;
    }
    *h_io = h;
    return 0;
}

/* A property value found in the item's or the batch's properties: the last occurrence wins. */
typedef struct { const unsigned char *p; Py_ssize_t n; } span_t;

static void lookup(const unsigned char *s, Py_ssize_t n, span_t *tags, span_t *keys, span_t *uniq) {
    Py_ssize_t i = 0;
    while (i <= n) {
        Py_ssize_t j = i;
        while (j < n && s[j] != 2) j++;
        /* piece s[i, j) */
        Py_ssize_t k = i;
        while (k < j && s[k] != 1) k++;
        if (k < j && k > i && j - k - 1 > 0) {
            const unsigned char *name = s + i, *value = s + k + 1;
            Py_ssize_t nl = k - i, vl = j - k - 1;
            if (nl == 4 && memcmp(name, "TAGS", 4) == 0) { tags->p = value; tags->n = vl; }
            else if (nl == 4 && memcmp(name, "KEYS", 4) == 0) { keys->p = value; keys->n = vl; }
            else if (nl == 8 && memcmp(name, "UNIQ_KEY", 8) == 0) { uniq->p = value; uniq->n = vl; }
        }
        i = j + 1;
    }
}

static PyObject *utf8_error(void) {
    PyErr_SetString(PyExc_ValueError, "properties are not valid UTF-8");
    return NULL;
}

/* Resolve tags code and index hashes of one item. The record's properties are the item's [+ 0x02] + extra;
 * since a separator always splits the two, the parts are looked up one after the other (later wins).
 * Returns -1 for invalid UTF-8 (no exception set), -2 with an exception set. */
static int resolve(item_t *it, const unsigned char *b, const unsigned char *extra, Py_ssize_t extra_len,
                   long long prefix_hash, hashes_t *hs) {
    span_t tags = {NULL, 0}, keys = {NULL, 0}, uniq = {NULL, 0};
    it->sep = needs_sep(b, it->props_pos, it->props_len, extra_len);
    lookup(b + it->props_pos, it->props_len, &tags, &keys, &uniq);
    lookup(extra, extra_len, &tags, &keys, &uniq);
    it->tags_code = 0;
    if (tags.n > 0) {
        uint32_t h = 0;
        if (java_hash_utf8(tags.p, tags.n, &h) < 0) return -1;
        it->tags_code = (int32_t)h;
    }
    it->first_hash = hs->n;
    if (prefix_hash >= 0) {
        if (uniq.n > 0) {
            uint32_t h = (uint32_t)prefix_hash;
            if (java_hash_utf8(uniq.p, uniq.n, &h) < 0) return -1;
            if (hashes_push(hs, index_hash(h)) < 0) return -2;
        }
        Py_ssize_t i = 0;
        while (i < keys.n) {
            Py_ssize_t j = i;
            while (j < keys.n && keys.p[j] != ' ') j++;
            if (j > i) {
                uint32_t h = (uint32_t)prefix_hash;
                if (java_hash_utf8(keys.p + i, j - i, &h) < 0) return -1;
                if (hashes_push(hs, index_hash(h)) < 0) return -2;
            }
            i = j + 1;
        }
    }
    it->n_hashes = hs->n - it->first_hash;
    return 0;
}

static PyObject *measure_batch(PyObject *self, PyObject *args) {
    Py_buffer body, extra;
    Py_ssize_t fixed_size, topic_tail_len;
    if (!PyArg_ParseTuple(args, "y*y*nn:measure_batch", &body, &extra, &fixed_size, &topic_tail_len)) return NULL;
    const unsigned char *b = body.buf;
    PyObject *result = NULL;
    Py_ssize_t n = walk_items(b, body.len, NULL);
    if (n < 0) goto done;
    item_t *items = PyMem_Malloc(sizeof(item_t) * (size_t)n);
    if (items == NULL) { PyErr_NoMemory(); goto done; }
    walk_items(b, body.len, items);
    long long total = 0;
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        item_t *it = &items[i];
        Py_ssize_t pl = it->props_len + extra.len + needs_sep(b, it->props_pos, it->props_len, extra.len);
        total += fixed_size + it->body_len + topic_tail_len + 2 + pl;
        if (pl > longest) longest = pl;
    }
    PyMem_Free(items);
    result = Py_BuildValue("nLn", n, total, longest);
done:
    PyBuffer_Release(&body);
    PyBuffer_Release(&extra);
    return result;
}

static const char HEX[] = "0123456789ABCDEF";

static PyObject *write_batch(PyObject *self, PyObject *args) {
    Py_buffer mm, body, extra, topic_tail, born_b, store_b;
    Py_ssize_t pos;
    int queue_id, sys_flag, reconsume_times;
    long long born_ts, store_ts, queue_offset, phys_base, prefix_hash;
    if (!PyArg_ParseTuple(args, "w*ny*y*y*iiLy*Ly*iLLL:write_batch", &mm, &pos, &body, &extra, &topic_tail,
                          &queue_id, &sys_flag, &born_ts, &born_b, &store_ts, &store_b, &reconsume_times,
                          &queue_offset, &phys_base, &prefix_hash))
        return NULL;
    PyObject *result = NULL, *units = NULL, *tags_list = NULL, *index_list = NULL, *ids = NULL;
    item_t *items = NULL;
    hashes_t hs = {NULL, 0, 0};
    const unsigned char *b = body.buf;
    Py_ssize_t n = walk_items(b, body.len, NULL);
    if (n < 0) goto done;
    items = PyMem_Malloc(sizeof(item_t) * (size_t)n);
    if (items == NULL) { PyErr_NoMemory(); goto done; }
    walk_items(b, body.len, items);
    long long total = 0;
    Py_ssize_t fixed = 72 + born_b.len + store_b.len;
    for (Py_ssize_t i = 0; i < n; i++) {  /* everything is checked before anything is written */
        int rc = resolve(&items[i], b, extra.buf, extra.len, prefix_hash, &hs);
        if (rc == -1) { utf8_error(); goto done; }
        if (rc < 0) goto done;
        total += fixed + items[i].body_len + topic_tail.len + 2 + items[i].props_len + items[i].sep + extra.len;
    }
    if (pos < 0 || pos + total > mm.len || topic_tail.len < 1 || (born_b.len != 8 && born_b.len != 20)
        || (store_b.len != 8 && store_b.len != 20)) {
        PyErr_SetString(PyExc_ValueError, "write_batch: records do not fit or bad host/topic encodings");
        goto done;
    }
    /* the results first (they can fail on memory), then the writes (they cannot) */
    Py_ssize_t id_len = (store_b.len + 8) * 2;
    units = PyBytes_FromStringAndSize(NULL, n * 20);
    tags_list = PyList_New(n);
    index_list = PyList_New(hs.n * 2);
    ids = PyUnicode_New(n * id_len + (n - 1), 127);
    if (units == NULL || tags_list == NULL || index_list == NULL || ids == NULL) goto done;
    unsigned char *u = (unsigned char *)PyBytes_AS_STRING(units);
    Py_UCS1 *idp = PyUnicode_1BYTE_DATA(ids);
    const unsigned char *sb = store_b.buf;
    Py_ssize_t p0 = pos, k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        item_t *it = &items[i];
        long long phys = phys_base + p0;
        int32_t size = (int32_t)(fixed + it->body_len + topic_tail.len + 2 + it->props_len + it->sep + extra.len);
        PyObject *t = PyLong_FromLongLong(it->tags_code);
        if (t == NULL) goto done;
        PyList_SET_ITEM(tags_list, i, t);
        for (Py_ssize_t h = it->first_hash; h < it->first_hash + it->n_hashes; h++) {
            PyObject *hv = PyLong_FromUnsignedLong(hs.v[h]);
            if (hv == NULL) goto done;
            PyList_SET_ITEM(index_list, k++, hv);
            PyObject *pv = PyLong_FromLongLong(phys);
            if (pv == NULL) goto done;
            PyList_SET_ITEM(index_list, k++, pv);
        }
        put64(u, (uint64_t)phys); put32(u + 8, (uint32_t)size); put64(u + 12, (uint64_t)it->tags_code); u += 20;
        if (i > 0) *idp++ = ',';
        for (Py_ssize_t j = 0; j < store_b.len; j++) { *idp++ = HEX[sb[j] >> 4]; *idp++ = HEX[sb[j] & 15]; }
        for (int j = 56; j >= 0; j -= 8) {
            unsigned v = (unsigned)((uint64_t)phys >> j) & 0xFF;
            *idp++ = HEX[v >> 4]; *idp++ = HEX[v & 15];
        }
        p0 += size;
    }
    unsigned char *base = mm.buf;
    Py_ssize_t start = pos;
    int32_t first_size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        item_t *it = &items[i];
        unsigned char *r = base + pos;
        Py_ssize_t props_total = it->props_len + it->sep + extra.len;
        int32_t size = (int32_t)(fixed + it->body_len + topic_tail.len + 2 + props_total);
        const unsigned char *bodyp = b + it->body_pos;
        uint32_t crc = body_crc(NULL, bodyp, it->body_len);
        put32(r + 4, MESSAGE_MAGIC);
        put32(r + 8, crc);
        put32(r + 12, (uint32_t)queue_id);
        put32(r + 16, (uint32_t)it->flag);
        put64(r + 20, (uint64_t)(queue_offset + i));
        put64(r + 28, (uint64_t)(phys_base + pos));
        put32(r + 36, (uint32_t)sys_flag);
        put64(r + 40, (uint64_t)born_ts);
        unsigned char *p = r + 48;
        memcpy(p, born_b.buf, born_b.len); p += born_b.len;
        put64(p, (uint64_t)store_ts); p += 8;
        memcpy(p, store_b.buf, store_b.len); p += store_b.len;
        put32(p, (uint32_t)reconsume_times); p += 4;
        put64(p, 0); p += 8;
        put32(p, (uint32_t)it->body_len); p += 4;
        memcpy(p, bodyp, it->body_len); p += it->body_len;
        memcpy(p, topic_tail.buf, topic_tail.len); p += topic_tail.len;
        p[0] = (unsigned char)(props_total >> 8); p[1] = (unsigned char)props_total; p += 2;
        memcpy(p, b + it->props_pos, it->props_len); p += it->props_len;
        if (it->sep) *p++ = 2;
        memcpy(p, extra.buf, extra.len);
        if (i == 0) first_size = size;
        else put32(r, (uint32_t)size);
        pos += size;
    }
    /* the whole batch becomes visible to recovery at once: its first TOTALSIZE goes last */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    put32(base + start, (uint32_t)first_size);
    result = Py_BuildValue("nOOOO", pos, units, tags_list, index_list, ids);
done:
    Py_XDECREF(units); Py_XDECREF(tags_list); Py_XDECREF(index_list); Py_XDECREF(ids);
    PyMem_Free(items);
    PyMem_Free(hs.v);
    PyBuffer_Release(&mm); PyBuffer_Release(&body); PyBuffer_Release(&extra); PyBuffer_Release(&topic_tail);
    PyBuffer_Release(&born_b); PyBuffer_Release(&store_b);
    return result;
}

static PyObject *py_java_hash_utf8(PyObject *self, PyObject *args) {
    Py_buffer raw;
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "y*|K:java_hash_utf8", &raw, &seed)) return NULL;
    uint32_t h = (uint32_t)seed;
    int rc = java_hash_utf8(raw.buf, raw.len, &h);
    PyBuffer_Release(&raw);
    if (rc < 0) return utf8_error();
    return PyLong_FromUnsignedLong(h);
}

/* Pre-fault pages of a shared file mapping for writing, with the GIL released (the writer keeps running).
 * Appending into pages never touched costs a page fault per 4 KiB inside the append (measured 2-4 us per
 * KiB message); populating ahead in bulk costs ~0.3 us per KiB and happens on another thread. Returns False
 * if the kernel lacks MADV_POPULATE_WRITE (Linux < 5.14); the data is never modified. */
static PyObject *populate_write(PyObject *self, PyObject *args) {
    Py_buffer mm;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "w*nn:populate_write", &mm, &start, &length)) return NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    Py_ssize_t lo = start - start % page, hi = start + length;
    if (hi > mm.len) hi = mm.len;
    int rc = 0, err = 0;
    if (lo >= 0 && hi > lo) {
        Py_BEGIN_ALLOW_THREADS
        rc = madvise((char *)mm.buf + lo, (size_t)(hi - lo), MADV_POPULATE_WRITE);
        err = errno;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&mm);
    if (rc != 0) {
        if (err == EINVAL) Py_RETURN_FALSE;
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_TRUE;
}

/* ------------------------------------------------------------------------------------ fast_args
 * The per-message functions (write_record, index_entries) take their arguments by METH_FASTCALL and convert
 * them here: PyArg_ParseTuple's format walk and the argument tuple cost about as much as writing a small
 * record. Same conversions and exception types as the PyArg codes they replace ("n", "i", "L", "K", "y*",
 * "w*"). */

static int fast_nargs(const char *fn, Py_ssize_t nargs, Py_ssize_t want) {
    if (nargs == want) return 1;
    PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd arguments (%zd given)", fn, want, nargs);
    return 0;
}

/* One integer argument: its position, its PyArg code ('n' Py_ssize_t, 'i' int, 'L' long long), where to. */
typedef struct { int at; char code; void *out; } int_arg_t;

static int fast_ints(PyObject *const *args, const int_arg_t *spec) {
    for (; spec->at >= 0; spec++) {
        PyObject *o = args[spec->at];  /* a float raises TypeError in the conversions, as with PyArg */
        if (spec->code == 'n') {
            Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
            if (v == -1 && PyErr_Occurred()) return 0;
            *(Py_ssize_t *)spec->out = v;
        } else if (spec->code == 'i') {
            long v = PyLong_AsLong(o);
            if (v == -1 && PyErr_Occurred()) return 0;
            if (v > INT_MAX || v < INT_MIN) {
                PyErr_SetString(PyExc_OverflowError, "signed integer is out of range for a C int");
                return 0;
            }
            *(int *)spec->out = (int)v;
        } else {
            long long v = PyLong_AsLongLong(o);
            if (v == -1 && PyErr_Occurred()) return 0;
            *(long long *)spec->out = v;
        }
    }
    return 1;
}

/* A read-only bytes-like argument ("y*"): bytes are read in place (no buffer export: the append path passes
 * bytes), any other contiguous buffer is exported and released by bytes_release; str is refused as PyArg
 * refuses it. */
typedef struct { const unsigned char *p; Py_ssize_t n; Py_buffer view; int exported; } bytes_arg_t;

static int fast_bytes(const char *fn, PyObject *o, int at, bytes_arg_t *a) {
    a->exported = 0;
    if (PyBytes_CheckExact(o)) {
        a->p = (const unsigned char *)PyBytes_AS_STRING(o);
        a->n = PyBytes_GET_SIZE(o);
        return 0;
    }
    if (PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s() argument %d must be bytes-like, not str", fn, at + 1);
        return -1;
    }
    if (PyObject_GetBuffer(o, &a->view, PyBUF_SIMPLE) < 0) return -1;
    a->exported = 1;
    a->p = a->view.buf;
    a->n = a->view.len;
    return 0;
}

static void bytes_release(bytes_arg_t *a) {
    if (a->exported) PyBuffer_Release(&a->view);
    a->exported = 0;
}

/* ------------------------------------------------------------------------------------------ index */

/* index_entries(prefix_hash, phys, uniq_key, keys) -> [hash, phys, ...] for UNIQ_KEY and each of KEYS.
 * Called once per message: arguments are taken by FASTCALL (see fast_args). */
static PyObject *index_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!fast_nargs("index_entries", nargs, 4)) return NULL;
    unsigned long long prefix = PyLong_AsUnsignedLongLongMask(args[0]);  /* as PyArg's "K" */
    if (prefix == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    long long phys = PyLong_AsLongLong(args[1]);
    if (phys == -1 && PyErr_Occurred()) return NULL;
    PyObject *uniq = args[2], *keys = args[3];
    if ((uniq != Py_None && !PyUnicode_Check(uniq)) || (keys != Py_None && !PyUnicode_Check(keys))) {
        PyErr_SetString(PyExc_TypeError, "index_entries: keys must be str or None");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (append_key_entries(out, (uint32_t)prefix, uniq, keys, phys) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* IndexFile._resolve_slot: a slot may name an entry at or past `limit` after a crash; follow its chain. */
static int32_t resolve_slot(const unsigned char *entries, int32_t index_num, int32_t value, int32_t limit) {
    while (value >= limit && value > 0) {
        int32_t prev = value < index_num ? get32(entries + (Py_ssize_t)value * 20 + 16) : 0;
        value = (prev >= 0 && prev < value) ? prev : 0;
    }
    return (value > 0 && value < limit) ? value : 0;
}

/* index_put_many(mm, slot_num, index_num, count, slot_count, begin_ts, begin_phy, end_ts, end_phy,
 *                entries, start, store_ts) -> (next, count, slot_count, begin_ts, begin_phy, end_ts, end_phy)
 * IndexFile.put_key for entries[start:] ([hash, phys, ...]) until the file is full; per key the same writes
 * in the same order: entry, header, slot (a slot never names an entry the header does not count). */
static PyObject *index_put_many(PyObject *self, PyObject *args) {
    Py_buffer mm;
    int slot_num, index_num, count, slot_count;
    long long begin_ts, begin_phy, end_ts, end_phy, store_ts;
    PyObject *entries;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "w*iiiiLLLLO!nL:index_put_many", &mm, &slot_num, &index_num, &count, &slot_count,
                          &begin_ts, &begin_phy, &end_ts, &end_phy, &PyList_Type, &entries, &start, &store_ts))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(entries);
    Py_ssize_t need = 40 + (Py_ssize_t)slot_num * 4 + (Py_ssize_t)index_num * 20;
    if (slot_num <= 0 || index_num <= 0 || mm.len < need || start < 0 || (n - start) % 2 != 0) {
        PyErr_SetString(PyExc_ValueError, "index_put_many: bad file geometry or entries");
        goto done;
    }
    unsigned char *base = mm.buf, *entries_base = base + 40 + (Py_ssize_t)slot_num * 4;
    Py_ssize_t i = start;
    for (; i < n && count < index_num; i += 2) {
        long long h = PyLong_AsLongLong(PyList_GET_ITEM(entries, i));
        long long phys = PyLong_AsLongLong(PyList_GET_ITEM(entries, i + 1));
        if ((h == -1 || phys == -1) && PyErr_Occurred()) goto done;
        if (h < 0 || h > 0x7FFFFFFFLL) { PyErr_SetString(PyExc_ValueError, "index hash out of range"); goto done; }
        unsigned char *slot = base + 40 + (Py_ssize_t)(h % slot_num) * 4;
        int32_t slot_value = get32(slot);
        if (slot_value < 0 || slot_value >= count)
            slot_value = slot_value > 0 ? resolve_slot(entries_base, index_num, slot_value, count) : 0;
        long long diff = 0;
        if (begin_ts > 0) {
            long long d = store_ts - begin_ts;
            diff = d < 0 ? 0 : d / 1000;
            if (diff > 0x7FFFFFFFLL) diff = 0x7FFFFFFFLL;
        }
        unsigned char *e = entries_base + (Py_ssize_t)count * 20;
        put32(e, (uint32_t)h); put64(e + 4, (uint64_t)phys); put32(e + 12, (uint32_t)diff);
        put32(e + 16, (uint32_t)slot_value);
        if (count <= 1) { begin_phy = phys; begin_ts = store_ts; }
        if (slot_value == 0) slot_count++;
        int32_t this_entry = count;
        count++;
        end_phy = phys;
        end_ts = store_ts;
        put64(base, (uint64_t)begin_ts); put64(base + 8, (uint64_t)end_ts); put64(base + 16, (uint64_t)begin_phy);
        put64(base + 24, (uint64_t)end_phy); put32(base + 32, (uint32_t)slot_count); put32(base + 36, (uint32_t)count);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        put32(slot, (uint32_t)this_entry);
    }
    result = Py_BuildValue("niiLLLL", i, count, slot_count, begin_ts, begin_phy, end_ts, end_phy);
done:
    PyBuffer_Release(&mm);
    return result;
}

/* write_record(mm, pos, body, topic_tail, props, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_b,
 *              store_ts, store_b, reconsume_times, prepared_offset) -> record size
 * One message as a commit-log record at `pos`, body CRC computed here, TOTALSIZE written last. Called once per
 * message: its 16 arguments are taken by FASTCALL (see fast_args). */
static PyObject *write_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer mm;
    bytes_arg_t body, topic_tail, props, born_b, store_b;
    Py_ssize_t pos;
    int queue_id, flag, sys_flag, reconsume_times;
    long long queue_offset, phys, born_ts, store_ts, prepared;
    if (!fast_nargs("write_record", nargs, 16)) return NULL;
    if (!fast_ints(args, (const int_arg_t[]){
            {1, 'n', &pos}, {5, 'i', &queue_id}, {6, 'i', &flag}, {7, 'L', &queue_offset}, {8, 'L', &phys},
            {9, 'i', &sys_flag}, {10, 'L', &born_ts}, {12, 'L', &store_ts}, {14, 'i', &reconsume_times},
            {15, 'L', &prepared}, {-1, 0, NULL}}))
        return NULL;
    bytes_arg_t *bufs[] = {&body, &topic_tail, &props, &born_b, &store_b};
    const int at[] = {2, 3, 4, 11, 13};
    for (int i = 0; i < 5; i++) {
        if (fast_bytes("write_record", args[at[i]], at[i], bufs[i]) < 0) {
            while (i-- > 0) bytes_release(bufs[i]);
            return NULL;
        }
    }
    PyObject *result = NULL;
    if (PyObject_GetBuffer(args[0], &mm, PyBUF_WRITABLE) < 0) {  /* as PyArg's "w*": TypeError */
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "write_record() argument 1 must be read-write bytes-like, not %.50s",
                     Py_TYPE(args[0])->tp_name);
        goto release_args;
    }
    Py_ssize_t size = 72 + born_b.n + store_b.n + body.n + topic_tail.n + 2 + props.n;
    if (pos < 0 || pos + size > mm.len || props.n > 32767 || body.n > 0x7FFFFFFF || topic_tail.n < 1
        || (born_b.n != 8 && born_b.n != 20) || (store_b.n != 8 && store_b.n != 20)) {
        PyErr_SetString(PyExc_ValueError, "write_record: record does not fit or bad field lengths");
        goto done;
    }
    uint32_t crc = body_crc(PyBytes_CheckExact(args[2]) ? args[2] : NULL, body.p, body.n);
    put_record((unsigned char *)mm.buf + pos, size, crc, body.p, body.n, topic_tail.p, topic_tail.n, props.p, props.n,
               queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_b.p, born_b.n, store_ts, store_b.p,
               store_b.n, reconsume_times, prepared);
    result = PyLong_FromSsize_t(size);
done:
    PyBuffer_Release(&mm);
release_args:
    for (int i = 0; i < 5; i++) bytes_release(bufs[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"write_record", (PyCFunction)(void (*)(void))write_record, METH_FASTCALL,
     "one message as a commit-log record, TOTALSIZE last"},
    {"index_entries", (PyCFunction)(void (*)(void))index_entries, METH_FASTCALL,
     "index entries [hash, phys, ...] of a message's keys"},
    {"index_put_many", index_put_many, METH_VARARGS, "IndexFile.put_key for many entries"},
    {"populate_write", populate_write, METH_VARARGS, "pre-fault mapped pages for writing (GIL released)"},
    {"measure_batch", measure_batch, METH_VARARGS, "(messages, bytes of all records, longest properties)"},
    {"write_batch", write_batch, METH_VARARGS, "write a batch body's records into a mapped file"},
    {"java_hash_utf8", py_java_hash_utf8, METH_VARARGS, "Java String.hashCode of UTF-8 text, continued from seed"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_appendcodec_c", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__appendcodec_c(void) {
    storecodec_init_crc();
    return PyModule_Create(&module);
}
