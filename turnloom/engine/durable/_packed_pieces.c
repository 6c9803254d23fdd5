/* A durable agent's snapshot pieces joined in one call (`pieces.join_packed`): the C form of

       b"".join(item if type(item) is bytes else Packer(use_bin_type=True).pack(item)
                for item in items)

   byte for byte. Every durable agent's rest packs its snapshot's head from a dozen such items
   (pieces packed before, and the few values that changed), and doing it in one call instead
   of a msgpack call, a slice and a join per value is most of what packing it costs.

   Only the plain types are packed here (None, bool, int, float, str, bytes, list, tuple and
   dict, each of exactly that type); an item holding anything else (a subclass, an int out of
   64 bits, a lone surrogate, nesting past msgpack's limit) is packed again whole by the
   Python packer given to `set_fallback`, so its bytes or its error are that packer's own. */

#include "_msgpack_write.h"

/* msgpack's own nesting limit (`Packer`'s DEFAULT_RECURSE_LIMIT): deeper, the item is the
   Python packer's, which raises its own error. */
#define NEST_LIMIT 511

static PyObject *fallback = NULL; /* msgpack.Packer(use_bin_type=True).pack */

/* Outcomes of packing a value: packed, failed (an error is set), or not a plain value (the
   item goes to the Python packer, no error set). */
enum { PACKED = 0, FAILED = -1, NOT_PLAIN = -2 };

static int pack_int(Buffer *buffer, PyObject *value) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow) return NOT_PLAIN; /* past 63 bits: uint64 or too large, the packer's */
    if (number == -1 && PyErr_Occurred()) return FAILED;
    return put_int(buffer, number);
}

static int pack_value(Buffer *buffer, PyObject *value, int depth) {
    if (depth > NEST_LIMIT) return NOT_PLAIN;
    if (value == Py_None) return put_head(buffer, 0xc0, 0, 0);
    if (value == Py_True) return put_head(buffer, 0xc3, 0, 0);
    if (value == Py_False) return put_head(buffer, 0xc2, 0, 0);
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyUnicode_Type) {
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(value, &size);
        if (text == NULL) { /* a lone surrogate: the packer's own error */
            PyErr_Clear();
            return NOT_PLAIN;
        }
        if (size > 0xffffffffLL) return NOT_PLAIN;
        if (put_sized(buffer, size, 0xa0, 32, 0xd9, 0xda, 0xdb) < 0) return FAILED;
        return put(buffer, text, size);
    }
    if (type == &PyLong_Type) return pack_int(buffer, value);
    if (type == &PyFloat_Type) {
        double number = PyFloat_AS_DOUBLE(value);
        uint64_t bits;
        memcpy(&bits, &number, sizeof bits);
        return put_head(buffer, 0xcb, bits, 8);
    }
    if (type == &PyDict_Type) {
        Py_ssize_t size = PyDict_GET_SIZE(value), at = 0;
        if (size > 0xffffffffLL) return NOT_PLAIN;
        if (put_sized(buffer, size, 0x80, 16, 0, 0xde, 0xdf) < 0) return FAILED;
        PyObject *key, *item;
        while (PyDict_Next(value, &at, &key, &item)) {
            int done = pack_value(buffer, key, depth + 1);
            if (done == PACKED) done = pack_value(buffer, item, depth + 1);
            if (done != PACKED) return done;
        }
        return PACKED;
    }
    if (type == &PyList_Type || type == &PyTuple_Type) {
        int list = type == &PyList_Type;
        Py_ssize_t size = list ? PyList_GET_SIZE(value) : PyTuple_GET_SIZE(value);
        if (size > 0xffffffffLL) return NOT_PLAIN;
        if (put_sized(buffer, size, 0x90, 16, 0, 0xdc, 0xdd) < 0) return FAILED;
        for (Py_ssize_t at = 0; at < size; at++) {
            PyObject *item = list ? PyList_GET_ITEM(value, at) : PyTuple_GET_ITEM(value, at);
            int done = pack_value(buffer, item, depth + 1);
            if (done != PACKED) return done;
        }
        return PACKED;
    }
    if (type == &PyBytes_Type) {
        Py_ssize_t size = PyBytes_GET_SIZE(value);
        if (size > 0xffffffffLL) return NOT_PLAIN;
        if (put_sized(buffer, size, 0, 0, 0xc4, 0xc5, 0xc6) < 0) return FAILED;
        return put(buffer, PyBytes_AS_STRING(value), size);
    }
    return NOT_PLAIN;
}

static PyObject *join_packed(PyObject *module, PyObject *items) {
    if (!PyTuple_CheckExact(items)) {
        PyErr_Format(PyExc_TypeError, "join_packed takes a tuple, not %.100s",
                     Py_TYPE(items)->tp_name);
        return NULL;
    }
    Buffer buffer;
    buffer_init(&buffer);
    int failed = 0;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    for (Py_ssize_t at = 0; at < count && !failed; at++) {
        PyObject *item = PyTuple_GET_ITEM(items, at);
        if (Py_TYPE(item) == &PyBytes_Type) { /* a piece packed before */
            failed = put(&buffer, PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item)) < 0;
            continue;
        }
        Py_ssize_t start = buffer.size;
        int packed = pack_value(&buffer, item, 0);
        if (packed != NOT_PLAIN) {
            failed = packed == FAILED;
            continue;
        }
        buffer.size = start;
        if (fallback == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "join_packed: no fallback packer set");
            failed = 1;
            continue;
        }
        PyObject *bytes = PyObject_CallOneArg(fallback, item);
        if (bytes == NULL || !PyBytes_Check(bytes)) {
            if (bytes != NULL)
                PyErr_SetString(PyExc_TypeError, "join_packed: the fallback packer gave no bytes");
            Py_XDECREF(bytes);
            failed = 1;
            continue;
        }
        failed = put(&buffer, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes)) < 0;
        Py_DECREF(bytes);
    }
    return buffer_bytes(&buffer, failed);
}

static PyObject *set_fallback(PyObject *module, PyObject *pack) {
    if (!PyCallable_Check(pack)) {
        PyErr_SetString(PyExc_TypeError, "set_fallback takes a callable");
        return NULL;
    }
    Py_INCREF(pack);
    Py_XSETREF(fallback, pack);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"join_packed", join_packed, METH_O,
     "join_packed(items) -> bytes: each item of the tuple packed as msgpack (str as str, bytes "
     "nested in a value as bin), a bytes item copied as it is, back to back."},
    {"set_fallback", set_fallback, METH_O,
     "set_fallback(pack): the packer of an item that is not plain values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_packed_pieces",
    "A snapshot's pieces joined in one call (see turnloom.engine.durable.pieces).", -1, methods,
};

PyMODINIT_FUNC PyInit__packed_pieces(void) { return PyModule_Create(&module); }
