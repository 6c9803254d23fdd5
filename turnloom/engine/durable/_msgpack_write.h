/* msgpack written into a growing buffer: what the package's two C extensions share
   (`_packed_pieces.c`, `store/_save_call.c`). */

#ifndef TURNLOOM_MSGPACK_WRITE_H
#define TURNLOOM_MSGPACK_WRITE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Bytes written so far: in the buffer itself up to 512, then on the heap. */
typedef struct {
    char *data;
    Py_ssize_t size;
    Py_ssize_t room;
    char inline_room[512];
} Buffer;

static void buffer_init(Buffer *buffer) {
    buffer->data = buffer->inline_room;
    buffer->size = 0;
    buffer->room = sizeof buffer->inline_room;
}

/* The buffer's bytes, or NULL (`failed`, an error set); its memory let go either way. */
static PyObject *buffer_bytes(Buffer *buffer, int failed) {
    PyObject *bytes = failed ? NULL : PyBytes_FromStringAndSize(buffer->data, buffer->size);
    if (buffer->data != buffer->inline_room) PyMem_Free(buffer->data);
    return bytes;
}

static int grow(Buffer *buffer, Py_ssize_t more) {
    Py_ssize_t room = buffer->room * 2;
    while (room < buffer->size + more) room *= 2;
    char *data;
    if (buffer->data == buffer->inline_room) {
        data = PyMem_Malloc(room);
        if (data != NULL) memcpy(data, buffer->data, buffer->size);
    } else {
        data = PyMem_Realloc(buffer->data, room);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buffer->data = data;
    buffer->room = room;
    return 0;
}

static inline int put(Buffer *buffer, const void *bytes, Py_ssize_t size) {
    if (buffer->size + size > buffer->room && grow(buffer, size) < 0) return -1;
    memcpy(buffer->data + buffer->size, bytes, size);
    buffer->size += size;
    return 0;
}

/* A marker byte then `width` bytes of `value`, big-endian (width 0: the marker alone). */
static inline int put_head(Buffer *buffer, unsigned char marker, uint64_t value, int width) {
    unsigned char bytes[9];
    bytes[0] = marker;
    for (int at = 0; at < width; at++) bytes[width - at] = (unsigned char)(value >> (8 * at));
    return put(buffer, bytes, 1 + width);
}

/* A length-prefixed header: the fix form below `fix_below`, else the 8-bit form (if any:
   `marker8` nonzero), the 16-bit or the 32-bit one. */
static inline int put_sized(Buffer *buffer, Py_ssize_t size, unsigned char fix,
                            Py_ssize_t fix_below, unsigned char marker8, unsigned char marker16,
                            unsigned char marker32) {
    if (size < fix_below) return put_head(buffer, (unsigned char)(fix | size), 0, 0);
    if (marker8 && size < 0x100) return put_head(buffer, marker8, (uint64_t)size, 1);
    if (size < 0x10000) return put_head(buffer, marker16, (uint64_t)size, 2);
    return put_head(buffer, marker32, (uint64_t)size, 4);
}

/* An int as msgpack packs it: a positive one as unsigned, the smallest form that holds it. */
static int put_int(Buffer *buffer, long long number) {
    if (number > 0) {
        uint64_t positive = (uint64_t)number;
        if (positive < 0x80) return put_head(buffer, (unsigned char)positive, 0, 0);
        if (positive < 0x100) return put_head(buffer, 0xcc, positive, 1);
        if (positive < 0x10000) return put_head(buffer, 0xcd, positive, 2);
        if (positive < 0x100000000ULL) return put_head(buffer, 0xce, positive, 4);
        return put_head(buffer, 0xcf, positive, 8);
    }
    if (number >= -32) return put_head(buffer, (unsigned char)(int8_t)number, 0, 0);
    if (number >= -128) return put_head(buffer, 0xd0, (uint64_t)number, 1);
    if (number >= -32768) return put_head(buffer, 0xd1, (uint64_t)number, 2);
    if (number >= -2147483648LL) return put_head(buffer, 0xd2, (uint64_t)number, 4);
    return put_head(buffer, 0xd3, (uint64_t)number, 8);
}

#endif
