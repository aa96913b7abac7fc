/* What the compiled twins that write RocketMQ's JSON headers share (the frame codec and the producer's send
 * head): a growable scratch buffer, text as orjson escapes it, literals and the frame's big-endian length words.
 * Static: each module that includes this keeps its own copy (and its own scratch), none exports a symbol. */
#ifndef ROCKETQ_JSONWRITE_H
#define ROCKETQ_JSONWRITE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static char *scratch;  /* the text being written or unescaped (the GIL serialises every use) */
static size_t scratch_size;

static inline int scratch_reserve(size_t need) {
    if (need <= scratch_size) return 0;
    size_t size = scratch_size ? scratch_size : 4096;
    while (size < need) size *= 2;
    char *grown = PyMem_Realloc(scratch, size);
    if (grown == NULL) return -1;
    scratch = grown;
    scratch_size = size;
    return 0;
}

/* Room for a str's text as orjson writes it: each byte becomes at most 6 ("\u00XX"), plus quotes. */
static inline size_t str_room(Py_ssize_t utf8_len) { return (size_t)utf8_len * 6 + 2; }

/* UTF-8 text as orjson escapes it inside a JSON string, without the quotes: '"', '\\' and the C0 controls */
static inline char *put_text(char *o, const char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') { *o++ = (char)ch; continue; }
        *o++ = '\\';
        switch (ch) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\t': *o++ = 't'; break;
        case '\n': *o++ = 'n'; break;
        case '\f': *o++ = 'f'; break;
        case '\r': *o++ = 'r'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = hex[ch >> 4]; *o++ = hex[ch & 0xF];
        }
    }
    return o;
}

/* a JSON string of the UTF-8 text */
static inline char *put_str(char *o, const char *s, Py_ssize_t n) {
    *o++ = '"';
    o = put_text(o, s, n);
    *o++ = '"';
    return o;
}

static inline char *put_lit(char *o, const char *lit, size_t n) {
    memcpy(o, lit, n);
    return o + n;
}
#define LIT(o, text) put_lit(o, text, sizeof(text) - 1)

/* a long long's decimal text (by hand: snprintf cost more than the rest of a header) */
static inline char *put_int(char *o, long long x) {
    char tmp[24];
    int n = 0;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (x < 0) *o++ = '-';
    while (n) *o++ = tmp[--n];
    return o;
}

static inline void put32(char *p, uint32_t v) {
    p[0] = (char)(v >> 24); p[1] = (char)(v >> 16); p[2] = (char)(v >> 8); p[3] = (char)v;
}

#endif
