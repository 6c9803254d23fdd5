/* A write group's SAVE_MANY call, packed as Redis reads it (`redis_writes.packed_call`): the C form
   of `hiredis.pack_command((*head, msgpack.packb(table, use_bin_type=False), *blobs))` with
   `table, blobs = redis_writes.save_arguments(writes)`, byte for byte.

   A busy worker sends such a call at almost every loop iteration, a few dozen writes in it: the
   table and the blobs' places were most of the call's cost made in Python. A group holding
   anything but the usual (a snapshot that is neither `bytes` nor a `SplitWrite`, a part that
   is not `bytes`, a deadline that is not a float) is left to the Python code: None. */

#include <stdio.h>

#include "../_msgpack_write.h"

/* A text of the table (ASCII: digits, a float's repr), as msgpack packs a str without bin
   types (no 8-bit length form). */
static int pack_text(Buffer *buffer, const char *text, Py_ssize_t size) {
    if (put_sized(buffer, size, 0xa0, 32, 0, 0xda, 0xdb) < 0) return -1;
    return put(buffer, text, size);
}

static int pack_object_text(Buffer *buffer, PyObject *text) {
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    return utf8 == NULL ? -1 : pack_text(buffer, utf8, size);
}

/* One RESP bulk string. */
static int put_bulk(Buffer *buffer, const char *data, Py_ssize_t size) {
    char header[32];
    int length = snprintf(header, sizeof header, "$%zd\r\n", size);
    if (put(buffer, header, length) < 0 || put(buffer, data, size) < 0) return -1;
    return put(buffer, "\r\n", 2);
}

/* Blobs gathered for the call: borrowed references, alive as long as the writes are. */
typedef struct {
    PyObject **items;
    Py_ssize_t count;
    Py_ssize_t room;
} Blobs;

static int add_blob(Blobs *blobs, PyObject *blob) {
    if (blobs->count == blobs->room) {
        Py_ssize_t room = blobs->room ? blobs->room * 2 : 64;
        PyObject **items = PyMem_Realloc(blobs->items, room * sizeof *items);
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        blobs->items = items;
        blobs->room = room;
    }
    blobs->items[blobs->count++] = blob;
    return 0;
}

/* Outcomes: done, failed (an error set), or not the usual: left to the Python code. */
enum { DONE = 0, FAILED = -1, UNUSUAL = -2 };

static PyObject *s_head, *s_parts, *s_tail, *s_base, *s_constant;

static int add_write(Buffer *table, Blobs *blobs, PyObject *write, PyObject *split_type) {
    if (!PyTuple_CheckExact(write) || PyTuple_GET_SIZE(write) != 3) return UNUSUAL;
    PyObject *agent_id = PyTuple_GET_ITEM(write, 0);
    PyObject *document = PyTuple_GET_ITEM(write, 1);
    PyObject *deadline = PyTuple_GET_ITEM(write, 2);
    if (!PyLong_CheckExact(agent_id)) return UNUSUAL;
    if (deadline != Py_None && !PyFloat_CheckExact(deadline)) return UNUSUAL;
    PyObject *head, *parts = NULL, *tail = NULL, *base = NULL, *constant = NULL;
    int outcome = UNUSUAL;
    if (PyBytes_CheckExact(document)) { /* a whole snapshot: a head with no parts */
        head = document;
        Py_INCREF(head);
    } else if (Py_TYPE(document) == (PyTypeObject *)split_type) {
        head = PyObject_GetAttr(document, s_head);
        parts = PyObject_GetAttr(document, s_parts);
        tail = PyObject_GetAttr(document, s_tail);
        base = PyObject_GetAttr(document, s_base);
        constant = PyObject_GetAttr(document, s_constant);
        if (!head || !parts || !tail || !base || !constant) {
            outcome = FAILED;
            goto done;
        }
    } else {
        return UNUSUAL;
    }
    if (!PyBytes_CheckExact(head)) goto done;
    Py_ssize_t sealed = 0;
    if (parts != NULL) {
        if (!PyTuple_CheckExact(parts)) goto done;
        sealed = PyTuple_GET_SIZE(parts);
        for (Py_ssize_t at = 0; at < sealed; at++)
            if (!PyBytes_CheckExact(PyTuple_GET_ITEM(parts, at))) goto done;
        if (constant != Py_None && !PyBytes_CheckExact(constant)) goto done;
        if (base != Py_None && !PyLong_CheckExact(base)) goto done;
    }
    long long at_tail = 0, first = 0, at_constant = 0;
    if (add_blob(blobs, head) < 0) goto failed;
    long long at_head = blobs->count + 3;
    int has_tail = tail != NULL && PyObject_IsTrue(tail);
    if (has_tail < 0) goto failed;
    if (has_tail && !sealed) goto done; /* a tail with no part: Python's own error */
    if (has_tail) {
        if (add_blob(blobs, PyTuple_GET_ITEM(parts, sealed - 1)) < 0) goto failed;
        sealed -= 1;
        at_tail = blobs->count + 3;
    }
    if (sealed) {
        first = blobs->count + 4;
        for (Py_ssize_t at = 0; at < sealed; at++)
            if (add_blob(blobs, PyTuple_GET_ITEM(parts, at)) < 0) goto failed;
    }
    if (constant != NULL && constant != Py_None) {
        if (add_blob(blobs, constant) < 0) goto failed;
        at_constant = blobs->count + 3;
    }
    long long from = -1; /* the stored parts kept: none replaced */
    if (base == NULL) from = 0; /* a whole snapshot replaces them all */
    else if (base != Py_None) {
        int overflow;
        from = PyLong_AsLongLongAndOverflow(base, &overflow);
        if (overflow) goto done;
        if (from == -1 && PyErr_Occurred()) goto failed;
    }
    PyObject *id_text = PyObject_Str(agent_id);
    if (id_text == NULL) goto failed;
    int packed = pack_object_text(table, id_text);
    Py_DECREF(id_text);
    if (packed < 0 || put_int(table, at_head) < 0) goto failed;
    if (deadline == Py_None) {
        if (pack_text(table, "", 0) < 0) goto failed;
    } else {
        PyObject *when = PyObject_Repr(deadline);
        if (when == NULL) goto failed;
        packed = pack_object_text(table, when);
        Py_DECREF(when);
        if (packed < 0) goto failed;
    }
    if (put_int(table, from) < 0 || put_int(table, first) < 0 || put_int(table, sealed) < 0 ||
        put_int(table, at_tail) < 0 || put_int(table, at_constant) < 0)
        goto failed;
    outcome = DONE;
    goto done;
failed:
    outcome = FAILED;
done:
    Py_XDECREF(head);
    Py_XDECREF(parts);
    Py_XDECREF(tail);
    Py_XDECREF(base);
    Py_XDECREF(constant);
    return outcome;
}

static PyObject *packed_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_CheckExact(args[0]) || !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "packed_call(head: tuple, writes, split_type)");
        return NULL;
    }
    PyObject *head = args[0], *split_type = args[2];
    PyObject *writes = PySequence_Fast(args[1], "packed_call: writes must be a sequence");
    if (writes == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(writes), heads = PyTuple_GET_SIZE(head);
    Buffer table, call;
    buffer_init(&table);
    buffer_init(&call);
    Blobs blobs = {NULL, 0, 0};
    PyObject *result = NULL;
    for (Py_ssize_t at = 0; at < heads; at++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(head, at))) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
    }
    /* The table: an array of eight values a write. */
    if (put_sized(&table, count * 8, 0x90, 16, 0, 0xdc, 0xdd) < 0) goto done;
    for (Py_ssize_t at = 0; at < count; at++) {
        int outcome = add_write(&table, &blobs, PySequence_Fast_GET_ITEM(writes, at), split_type);
        if (outcome == FAILED) goto done;
        if (outcome == UNUSUAL) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
    }
    char line[32];
    int length = snprintf(line, sizeof line, "*%zd\r\n", heads + 1 + blobs.count);
    if (put(&call, line, length) < 0) goto done;
    for (Py_ssize_t at = 0; at < heads; at++) {
        PyObject *arg = PyTuple_GET_ITEM(head, at);
        if (put_bulk(&call, PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)) < 0) goto done;
    }
    if (put_bulk(&call, table.data, table.size) < 0) goto done;
    for (Py_ssize_t at = 0; at < blobs.count; at++) {
        PyObject *blob = blobs.items[at];
        if (put_bulk(&call, PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob)) < 0) goto done;
    }
    result = buffer_bytes(&call, 0);
    goto release;
done: /* an error set, or None */
    buffer_bytes(&call, 1);
release:
    Py_DECREF(writes);
    buffer_bytes(&table, 1);
    PyMem_Free(blobs.items);
    return result;
}

static PyMethodDef methods[] = {
    {"packed_call", (PyCFunction)(void (*)(void))packed_call, METH_FASTCALL,
     "packed_call(head, writes, split_type) -> bytes | None: the SAVE_MANY call of `writes` "
     "packed for Redis, `head` its first arguments; None for a group left to Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_save_call",
    "A write group's SAVE_MANY call packed in one call (see redis_writes.packed_call).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__save_call(void) {
    s_head = PyUnicode_InternFromString("head");
    s_parts = PyUnicode_InternFromString("parts");
    s_tail = PyUnicode_InternFromString("tail");
    s_base = PyUnicode_InternFromString("base");
    s_constant = PyUnicode_InternFromString("constant");
    if (!s_head || !s_parts || !s_tail || !s_base || !s_constant) return NULL;
    return PyModule_Create(&module);
}
