/*
 * bot.collectors._statm: the collector's hot loop, one /proc/<pid>/statm per process, in C.
 *
 * Optional. bot/collectors/procfs.py's rank_by_statm uses it when it was built (make setup,
 * the collector image's `native` stage: python -m bot.collectors.native) and reads the same
 * files the same way in Python otherwise; tests/collectors/test_native_statm.py checks that
 * both give the same answer on generated trees. Issue #25: at 2,000 processes this loop was
 * most of what the Job's run spent above CPython's floor.
 *
 * rank(base: bytes, page_size: int) -> (ranked, denied, others)
 *   base      the /proc folder as bytes, ending in "/"
 *   ranked    [(resident bytes, pid)] for every name of ASCII digits whose statm was read;
 *             resident is the second whitespace-separated field times page_size, or 0 when
 *             that field is missing or not ASCII digits (bytes.split() and bytes.isdigit())
 *   denied    [pid] whose statm open or read was refused (EACCES, EPERM)
 *   others    [name] of every name with a byte over 0x7f, left to the caller (the Python
 *             loop decides whether its text is decimal, as str.isdecimal does)
 * A name that vanished (ENOENT, ESRCH) or failed otherwise is skipped, as is every other
 * ASCII name. OSError as posix.listdir raises it when the folder cannot be listed. The
 * system calls of each process run without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATM_READ 256 /* one short line: a single read, as the Python loop reads */
#define FAST_DIGITS 12 /* below 10**12 pages times any page size fits in 64 bits */

static int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* An int from ASCII digits [s, s + n), n > 0, as int(bytes) reads them. */
static PyObject *digits_to_long(const char *s, size_t n) {
    if (n <= 18) {
        unsigned long long v = 0;
        for (size_t i = 0; i < n; i++) v = v * 10 + (unsigned long long)(s[i] - '0');
        return PyLong_FromUnsignedLongLong(v);
    }
    char *text = PyMem_Malloc(n + 1);
    if (text == NULL) return PyErr_NoMemory();
    memcpy(text, s, n);
    text[n] = '\0';
    PyObject *v = PyLong_FromString(text, NULL, 10);
    PyMem_Free(text);
    return v;
}

/* The resident bytes of a statm line, as the Python loop computes them. */
static PyObject *resident(const char *buf, size_t len, PyObject *page_size) {
    size_t i = 0;
    while (i < len && is_space((unsigned char)buf[i])) i++;
    while (i < len && !is_space((unsigned char)buf[i])) i++; /* size */
    while (i < len && is_space((unsigned char)buf[i])) i++;
    size_t start = i;
    while (i < len && !is_space((unsigned char)buf[i])) i++; /* resident */
    size_t n = i - start;
    if (n == 0) return PyLong_FromLong(0);
    for (size_t k = start; k < i; k++)
        if (buf[k] < '0' || buf[k] > '9') return PyLong_FromLong(0);
    if (n <= FAST_DIGITS) {
        long long page = PyLong_AsLongLong(page_size);
        if (page >= 0 && page <= (1LL << 20)) {
            unsigned long long v = 0;
            for (size_t k = start; k < i; k++) v = v * 10 + (unsigned long long)(buf[k] - '0');
            return PyLong_FromUnsignedLongLong(v * (unsigned long long)page);
        }
        PyErr_Clear();
    }
    PyObject *pages = digits_to_long(buf + start, n);
    if (pages == NULL) return NULL;
    PyObject *bytes = PyNumber_Multiply(pages, page_size);
    Py_DECREF(pages);
    return bytes;
}

/* Appends a new reference and drops it; -1 on failure. */
static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *rank(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *base_obj, *page_size;
    if (!PyArg_ParseTuple(args, "O!O!:rank", &PyBytes_Type, &base_obj, &PyLong_Type, &page_size))
        return NULL;
    const char *base = PyBytes_AS_STRING(base_obj);
    if (strlen(base) != (size_t)PyBytes_GET_SIZE(base_obj)) {
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return NULL;
    }
    char path[256 + sizeof "/statm"]; /* NAME/statm: a name is at most 255 bytes */

    PyObject *ranked = PyList_New(0), *denied = PyList_New(0), *others = PyList_New(0);
    DIR *dir = NULL;
    if (ranked == NULL || denied == NULL || others == NULL) goto fail;

    Py_BEGIN_ALLOW_THREADS
    dir = opendir(base);
    Py_END_ALLOW_THREADS
    if (dir == NULL) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, base_obj);
        goto fail;
    }
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (entry == NULL) {
            if (errno != 0) {
                PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, base_obj);
                goto fail;
            }
            break;
        }
        const char *name = entry->d_name;
        size_t nlen = strlen(name);
        int digits = nlen > 0, ascii = 1;
        for (size_t k = 0; k < nlen; k++) {
            unsigned char c = (unsigned char)name[k];
            if (c > 0x7f) ascii = 0;
            if (c < '0' || c > '9') digits = 0;
        }
        if (!ascii) {
            if (append_new(others, PyBytes_FromStringAndSize(name, (Py_ssize_t)nlen)) < 0)
                goto fail;
            continue;
        }
        if (!digits) continue;
        memcpy(path, name, nlen); /* relative to the listed folder: a shorter path walk */
        memcpy(path + nlen, "/statm", sizeof "/statm");
        char buf[STATM_READ];
        ssize_t got = -1;
        int err = 0;
        Py_BEGIN_ALLOW_THREADS
        int fd;
        do {
            fd = openat(dirfd(dir), path, O_RDONLY | O_CLOEXEC);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            err = errno;
        } else {
            do {
                got = read(fd, buf, sizeof buf);
            } while (got < 0 && errno == EINTR);
            if (got < 0) err = errno;
            close(fd);
        }
        Py_END_ALLOW_THREADS
        if (err == EACCES || err == EPERM) {
            if (append_new(denied, digits_to_long(name, nlen)) < 0) goto fail;
            continue;
        }
        if (err != 0) continue; /* exited mid-scan (ENOENT, ESRCH), or unreadable: skipped */
        PyObject *rss = resident(buf, (size_t)got, page_size);
        if (rss == NULL) goto fail;
        PyObject *pid = digits_to_long(name, nlen);
        if (pid == NULL) {
            Py_DECREF(rss);
            goto fail;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(rss);
            Py_DECREF(pid);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, rss);
        PyTuple_SET_ITEM(pair, 1, pid);
        if (append_new(ranked, pair) < 0) goto fail;
    }
    closedir(dir);
    return Py_BuildValue("(NNN)", ranked, denied, others);

fail:
    if (dir != NULL) closedir(dir);
    Py_XDECREF(ranked);
    Py_XDECREF(denied);
    Py_XDECREF(others);
    return NULL;
}

static PyMethodDef methods[] = {
    {"rank", rank, METH_VARARGS,
     "rank(base, page_size) -> (ranked, denied, others): every /proc/<pid>/statm under base."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_statm", "The collector's statm loop in C (procfs.rank_by_statm).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statm(void) { return PyModule_Create(&module); }
