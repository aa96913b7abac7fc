/* A stored send's JSON answer frame, written in place: what the frame codec's encode_send_reply returns for one
 * answer and what the broker's plain-send twin writes for a run of them (one buffer, no bytes per answer).
 * Byte for byte what _framecodec_py.encode_send_reply gives for the same values. */
#ifndef ROCKETQ_SENDREPLY_H
#define ROCKETQ_SENDREPLY_H

#include "_jsonwrite.h"

/* The most one answer takes: the length words, the fixed text (~200 bytes), five 20-digit numbers, 16 hex
 * digits and the three strings at their widest escaping. */
static inline size_t send_reply_room(Py_ssize_t prefix_n, Py_ssize_t region_n, Py_ssize_t trace_n) {
    return 8 + 256 + 5 * 24 + str_room(prefix_n) + str_room(region_n) + str_room(trace_n);
}

/* Writes the frame at `o` (its length words included) and returns its end; phys must not be negative. */
static inline char *put_send_reply(char *o, long long opaque, long long version, const char *prefix_s,
                                   Py_ssize_t prefix_n, long long phys, long long queue_id, long long queue_offset,
                                   const char *region_s, Py_ssize_t region_n, const char *trace_s,
                                   Py_ssize_t trace_n) {
    static const char hex[] = "0123456789ABCDEF";
    char *frame = o;
    o += 8;
    o = LIT(o, "{\"code\":0,\"extFields\":{\"msgId\":");
    o = put_str(o, prefix_s, prefix_n) - 1;  /* reopen the string: the offset's 16 hex digits follow */
    for (int shift = 60; shift >= 0; shift -= 4) *o++ = hex[(phys >> shift) & 0xF];
    o = LIT(o, "\",\"queueId\":\"");
    o = put_int(o, queue_id);
    o = LIT(o, "\",\"queueOffset\":\"");
    o = put_int(o, queue_offset);
    o = LIT(o, "\",\"MSG_REGION\":");
    o = put_str(o, region_s, region_n);
    o = LIT(o, ",\"TRACE_ON\":");
    o = put_str(o, trace_s, trace_n);
    o = LIT(o, "},\"flag\":1,\"language\":\"JAVA\",\"opaque\":");
    o = put_int(o, opaque);
    o = LIT(o, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    o = put_int(o, version);
    *o++ = '}';
    uint32_t header_len = (uint32_t)(o - frame - 8);
    put32(frame, 4 + header_len);
    put32(frame + 4, header_len);
    return o;
}

#endif
