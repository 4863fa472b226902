/*
 * ledger._native: the bundle hash v1 (docs/bundle-hash.md) of a directory on
 * disk, computed in C on all cores.
 *
 * Why: hashing 10,000 small files is syscall-bound, and CPython adds ~15 us of
 * interpreter work per file on top of the kernel's.  This module walks and
 * hashes with the GIL released, one worker thread per core, each taking whole
 * top-level subtrees (a brain's skills/ has one per skill).
 *
 * It is an accelerator, not a second authority.  It handles the common case
 * only: ASCII names, regular files, directories.  Anything the reference
 * implementation (ledger.merkle) might refuse or treat specially (a non-ASCII
 * name, a case-fold collision, a symlink, a special file, an empty directory,
 * a file that grew while read, any I/O error) makes hash_dir() return None,
 * and the caller reruns the reference, which raises its usual error.  So the
 * two can only differ in speed; tests/test_native.py holds them to it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blake3.h"

#define DIGEST 32
#define KIND_FILE 1
#define KIND_EXEC 2
#define KIND_DIR 3
#define MAX_NAME 255
#define READ_BUF (1u << 20)
#define MAX_THREADS 8
#define MAX_PATH_BYTES 4000 /* docs/bundle-hash.md: a longer bundle path is refused by the reference */

/* Outcomes of a walk.  FALLBACK means "ask the reference", never "wrong". */
enum { OK = 0, FALLBACK = 1, NOMEM = 2 };

typedef struct {
    char *name; /* NUL-terminated, ASCII */
    size_t len;
    uint8_t kind;
    uint8_t digest[DIGEST];
} entry_t;

typedef struct {
    entry_t *items;
    size_t len, cap;
} entries_t;

static const uint8_t LEAF = 0x00, NODE = 0x01, CONTENT = 0x02;

static int push(entries_t *v, const char *name, size_t len, uint8_t kind) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        entry_t *items = realloc(v->items, cap * sizeof *items);
        if (!items) return NOMEM;
        v->items = items;
        v->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return NOMEM;
    memcpy(copy, name, len + 1);
    v->items[v->len++] = (entry_t){.name = copy, .len = len, .kind = kind};
    return OK;
}

static void release(entries_t *v) {
    for (size_t i = 0; i < v->len; i++) free(v->items[i].name);
    free(v->items);
    *v = (entries_t){0};
}

/* Byte order of the names: for ASCII this is code-point order, as the spec sorts. */
static int by_name(const void *a, const void *b) {
    return strcmp(((const entry_t *)a)->name, ((const entry_t *)b)->name);
}

static int by_folded(const void *a, const void *b) {
    return strcasecmp(*(char *const *)a, *(char *const *)b);
}

/* The reference refuses names that collide case-insensitively; for ASCII its
 * fold is lower-casing.  Without an upper-case letter no two names can fold
 * together, which is the common case and costs nothing. */
static int folds_collide(const entries_t *v, int any_upper) {
    if (!any_upper || v->len < 2) return 0;
    char **names = malloc(v->len * sizeof *names);
    if (!names) return 1; /* let the reference decide */
    for (size_t i = 0; i < v->len; i++) names[i] = v->items[i].name;
    qsort(names, v->len, sizeof *names, by_folded);
    int hit = 0;
    for (size_t i = 1; i < v->len && !hit; i++) hit = strcasecmp(names[i - 1], names[i]) == 0;
    free(names);
    return hit;
}

/* L = H(0x00 || kind || u16be(len(name)) || name || child) */
static void leaf(const entry_t *e, uint8_t out[DIGEST]) {
    uint8_t head[4] = {LEAF, e->kind, (uint8_t)(e->len >> 8), (uint8_t)e->len};
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, head, sizeof head);
    blake3_hasher_update(&h, e->name, e->len);
    blake3_hasher_update(&h, e->digest, DIGEST);
    blake3_hasher_finalize(&h, out, DIGEST);
}

/* The RFC 6962-shaped root of a sorted directory: pair left to right, promote
 * an odd last node unchanged.  An empty list is H("") (only the bundle root
 * may be empty). */
static int dir_root(entries_t *v, uint8_t out[DIGEST]) {
    if (v->len == 0) {
        blake3_hasher h;
        blake3_hasher_init(&h);
        blake3_hasher_finalize(&h, out, DIGEST);
        return OK;
    }
    uint8_t(*level)[DIGEST] = malloc(v->len * DIGEST);
    if (!level) return NOMEM;
    for (size_t i = 0; i < v->len; i++) leaf(&v->items[i], level[i]);
    for (size_t n = v->len; n > 1; n = (n + 1) / 2) {
        for (size_t i = 0; i + 1 < n; i += 2) {
            blake3_hasher h;
            blake3_hasher_init(&h);
            blake3_hasher_update(&h, &NODE, 1);
            blake3_hasher_update(&h, level[i], 2 * DIGEST);
            blake3_hasher_finalize(&h, level[i / 2], DIGEST);
        }
        if (n % 2) memcpy(level[n / 2], level[n - 1], DIGEST);
    }
    memcpy(out, level[0], DIGEST);
    free(level);
    return OK;
}

/* C(file) = H(0x02 || bytes), read exactly as the reference does: up to the
 * size fstat reported, and refused (FALLBACK) if the file is not regular or
 * grew meanwhile.  Asking for one byte more than the size detects growth in
 * the same read; a short read at the expected size is end of file. */
static int hash_file(int dfd, const char *name, uint8_t *buf, uint8_t *kind, uint8_t out[DIGEST]) {
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return FALLBACK;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return FALLBACK;
    }
    *kind = (st.st_mode & S_IXUSR) ? KIND_EXEC : KIND_FILE;
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, &CONTENT, 1);
    uint64_t size = (uint64_t)st.st_size, total = 0;
    for (;;) {
        uint64_t left = size - total + 1;
        size_t want = left < READ_BUF ? (size_t)left : READ_BUF;
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || total + (uint64_t)n > size) {
            close(fd);
            return FALLBACK;
        }
        if (n == 0) break;
        blake3_hasher_update(&h, buf, (size_t)n);
        total += (uint64_t)n;
        if ((size_t)n < want && total == size) break;
    }
    close(fd);
    blake3_hasher_finalize(&h, out, DIGEST);
    return OK;
}

/* Reads one directory's entries as (name, d_type).  On Linux it calls
 * getdents64 directly: fdopendir() costs an fstat and an fcntl per directory,
 * a fifth of all system calls on a brain of one-file skills. */
#ifdef __linux__
#include <sys/syscall.h>
struct dirent64_raw {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
typedef struct {
    int fd;
    long pos, end;
    char buf[32768] __attribute__((aligned(8)));
} reader_t;

static int reader_open(reader_t *r, int fd) {
    r->fd = fd;
    r->pos = r->end = 0;
    return OK;
}

/* 1: an entry; 0: the end; -1: an error. */
static int reader_next(reader_t *r, const char **name, unsigned char *type) {
    if (r->pos >= r->end) {
        long n;
        do n = syscall(SYS_getdents64, r->fd, r->buf, sizeof r->buf);
        while (n < 0 && errno == EINTR);
        if (n <= 0) return n == 0 ? 0 : -1;
        r->pos = 0;
        r->end = n;
    }
    struct dirent64_raw *e = (struct dirent64_raw *)(r->buf + r->pos);
    r->pos += e->d_reclen;
    *name = e->d_name;
    *type = e->d_type;
    return 1;
}

static void reader_close(reader_t *r) { (void)r; }
#else
typedef struct {
    DIR *d;
} reader_t;

static int reader_open(reader_t *r, int fd) {
    int copy = dup(fd);
    r->d = copy < 0 ? NULL : fdopendir(copy);
    if (!r->d) {
        if (copy >= 0) close(copy);
        return FALLBACK;
    }
    return OK;
}

static int reader_next(reader_t *r, const char **name, unsigned char *type) {
    errno = 0;
    struct dirent *e = readdir(r->d);
    if (!e) return errno ? -1 : 0;
    *name = e->d_name;
    *type = e->d_type;
    return 1;
}

static void reader_close(reader_t *r) { closedir(r->d); }
#endif

/* List the directory open at dfd into v.  Non-ASCII or over-long names, ".git"
 * in any case, symlinks and special files are FALLBACK. */
static int list_dir(int dfd, entries_t *v, int *any_upper) {
    reader_t *r = malloc(sizeof *r);
    if (!r) return NOMEM;
    int rc = reader_open(r, dfd);
    if (rc != OK) {
        free(r);
        return rc;
    }
    const char *name;
    unsigned char type;
    int more;
    while (rc == OK && (more = reader_next(r, &name, &type)) != 0) {
        if (more < 0) {
            rc = FALLBACK;
            break;
        }
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        size_t len = 0;
        for (; name[len] && rc == OK; len++) {
            unsigned char c = (unsigned char)name[len];
            if (c >= 0x80) rc = FALLBACK;
            if (c >= 'A' && c <= 'Z') *any_upper = 1;
        }
        if (len > MAX_NAME) rc = FALLBACK;
        if (len == 4 && strncasecmp(name, ".git", 4) == 0) rc = FALLBACK; /* refused by the reference */
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (rc == OK && type != DT_DIR && type != DT_REG) rc = FALLBACK;
        if (rc == OK) rc = push(v, name, len, type == DT_DIR ? KIND_DIR : KIND_FILE);
    }
    reader_close(r);
    free(r);
    return rc;
}

static int hash_entry(int dfd, entry_t *e, size_t plen, uint8_t *buf);

/* Open and list one directory, refusing up front what the reference would
 * refuse of its names, so a bad tree costs no hashing. */
static int open_listed(int dfd, const char *path, int is_root, int *fd_out, entries_t *v) {
    int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return FALLBACK;
    int any_upper = 0;
    int rc = list_dir(fd, v, &any_upper);
    if (rc == OK && v->len == 0 && !is_root) rc = FALLBACK; /* empty directories are refused */
    if (rc == OK && folds_collide(v, any_upper)) rc = FALLBACK;
    if (rc == OK)
        *fd_out = fd;
    else
        close(fd);
    return rc;
}

/* The digest of a directory whose entries are hashed: sort, then root.  Releases v. */
static int seal(entries_t *v, int rc, uint8_t out[DIGEST]) {
    if (rc == OK) {
        qsort(v->items, v->len, sizeof *v->items, by_name);
        rc = dir_root(v, out);
    }
    release(v);
    return rc;
}

/* plen: the byte length of this directory's bundle path ("a/b"). */
static int hash_subdir(int dfd, const char *name, size_t plen, uint8_t *buf, uint8_t out[DIGEST]) {
    entries_t v = {0};
    int fd;
    int rc = open_listed(dfd, name, 0, &fd, &v);
    if (rc == OK) {
        for (size_t i = 0; rc == OK && i < v.len; i++) rc = hash_entry(fd, &v.items[i], plen + 1 + v.items[i].len, buf);
        close(fd);
    }
    return seal(&v, rc, out);
}

static int hash_entry(int dfd, entry_t *e, size_t plen, uint8_t *buf) {
    if (plen > MAX_PATH_BYTES) return FALLBACK;
    if (e->kind == KIND_DIR) return hash_subdir(dfd, e->name, plen, buf, e->digest);
    return hash_file(dfd, e->name, buf, &e->kind, e->digest);
}

/* Work sharing over the bundle root's entries: each worker claims the next
 * index and hashes that whole subtree; the first failure stops the others. */
typedef struct {
    int dfd;
    entries_t *v;
    atomic_size_t next;
    atomic_int rc;
} job_t;

static void *worker(void *arg) {
    job_t *job = arg;
    uint8_t *buf = malloc(READ_BUF);
    if (!buf) {
        atomic_store(&job->rc, NOMEM);
        return NULL;
    }
    for (;;) {
        if (atomic_load(&job->rc) != OK) break;
        size_t i = atomic_fetch_add(&job->next, 1);
        if (i >= job->v->len) break;
        int rc = hash_entry(job->dfd, &job->v->items[i], job->v->items[i].len, buf);
        if (rc != OK) {
            int expected = OK;
            atomic_compare_exchange_strong(&job->rc, &expected, rc);
        }
    }
    free(buf);
    return NULL;
}

static int hash_root(const char *path, int threads, uint8_t out[DIGEST]) {
    entries_t v = {0};
    int fd;
    int rc = open_listed(AT_FDCWD, path, 1, &fd, &v);
    if (rc == OK) {
        job_t job = {.dfd = fd, .v = &v};
        atomic_init(&job.next, 0);
        atomic_init(&job.rc, OK);
        if ((size_t)threads > v.len) threads = (int)v.len;
        pthread_t tids[MAX_THREADS];
        int started = 0;
        for (; started < threads - 1; started++)
            if (pthread_create(&tids[started], NULL, worker, &job) != 0) break;
        worker(&job); /* this thread works too */
        for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
        rc = atomic_load(&job.rc);
        close(fd);
    }
    return seal(&v, rc, out);
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

PyDoc_STRVAR(hash_dir_doc,
             "hash_dir(path, threads=0) -> bytes | None\n\n"
             "The 32-byte bundle root of the directory at path, or None when the tree\n"
             "needs the reference implementation (ledger.merkle) to hash or refuse it.\n"
             "threads=0 uses one worker per online CPU (at most 8).");

static PyObject *hash_dir(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"path", "threads", NULL};
    PyObject *path = NULL;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|i", keywords, PyUnicode_FSConverter, &path, &threads))
        return NULL;
    if (threads < 0 || threads > MAX_THREADS) {
        Py_DECREF(path);
        return PyErr_Format(PyExc_ValueError, "threads must be 0 (auto) to %d", MAX_THREADS);
    }
    if (threads == 0) threads = default_threads();
    uint8_t out[DIGEST];
    int rc;
    const char *raw = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = hash_root(raw, threads, out);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc == NOMEM) return PyErr_NoMemory();
    if (rc != OK) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)out, DIGEST);
}

PyDoc_STRVAR(stat_keys_doc,
             "stat_keys(base, names, groups) -> list[str | None]\n\n"
             "For each skill names[i], the stat-cache key of the paths groups[i] under\n"
             "base/names[i] (\"\" is the skill directory itself): the first 16 bytes, in hex,\n"
             "of BLAKE3 over each path's lstat (mode, ino, size, mtime_ns, ctime_ns) as\n"
             "native int64s, exactly as ledger.statcache computes it; None where an lstat\n"
             "fails.  The lstats run with the GIL released on several threads, as git's\n"
             "preloaded index does: on a cold or networked file system they dominate.");

typedef struct {
    char **paths;      /* every path, group after group */
    Py_ssize_t *start; /* group g is paths[start[g] .. start[g + 1]) */
    Py_ssize_t groups;
    uint8_t *keys;     /* 16 bytes a group */
    uint8_t *ok;
    int dirfd;         /* base, opened once: each fstatat resolves two or three names, not the whole path */
    atomic_long next;
} stat_job;

static void *stat_worker(void *arg) {
    stat_job *job = arg;
    for (;;) {
        long g0 = atomic_fetch_add(&job->next, 256);
        if (g0 >= job->groups) return NULL;
        long g1 = g0 + 256 < job->groups ? g0 + 256 : job->groups;
        for (long g = g0; g < g1; g++) {
            blake3_hasher h;
            blake3_hasher_init(&h);
            job->ok[g] = 1;
            for (Py_ssize_t i = job->start[g]; i < job->start[g + 1]; i++) {
                struct stat st;
                if (fstatat(job->dirfd, job->paths[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    job->ok[g] = 0;
                    break;
                }
                int64_t f[5] = {
                    (int64_t)st.st_mode,
                    (int64_t)st.st_ino,
                    S_ISDIR(st.st_mode) ? 0 : (int64_t)st.st_size,
                    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                    (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
                };
                blake3_hasher_update(&h, f, sizeof f);
            }
            blake3_hasher_finalize(&h, job->keys + 16 * g, 16);
        }
    }
}

static void free_paths(char **paths, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static PyObject *stat_keys(PyObject *self, PyObject *args) {
    PyObject *basebytes = NULL, *names, *groups, *out = NULL;
    if (!PyArg_ParseTuple(args, "O&O!O!", PyUnicode_FSConverter, &basebytes, &PyList_Type, &names, &PyList_Type,
                          &groups))
        return NULL;
    const char *base = PyBytes_AS_STRING(basebytes);
    Py_ssize_t n = PyList_GET_SIZE(names), total = 0, filled = 0;
    stat_job job = {.groups = n};
    if (PyList_GET_SIZE(groups) != n) {
        PyErr_SetString(PyExc_ValueError, "names and groups differ in length");
        goto done;
    }
    for (Py_ssize_t g = 0; g < n; g++) {
        PyObject *group = PyList_GET_ITEM(groups, g);
        if (!PyUnicode_Check(PyList_GET_ITEM(names, g)) || !PyList_Check(group)) {
            PyErr_SetString(PyExc_TypeError, "names must be str and groups lists of str");
            goto done;
        }
        total += PyList_GET_SIZE(group);
    }
    job.paths = calloc(total ? total : 1, sizeof(char *));
    job.start = malloc((n + 1) * sizeof(Py_ssize_t));
    job.keys = malloc(n ? 16 * n : 1);
    job.ok = malloc(n ? n : 1);
    if (!job.paths || !job.start || !job.keys || !job.ok) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t g = 0; g < n; g++) {
        const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(names, g));
        PyObject *group = PyList_GET_ITEM(groups, g);
        if (!name) goto done;
        job.start[g] = filled;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(group); i++) {
            PyObject *item = PyList_GET_ITEM(group, i);
            const char *rel = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
            if (!rel) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "groups must hold str");
                goto done;
            }
            size_t len = strlen(name) + strlen(rel) + 2;
            char *path = malloc(len);
            if (!path) {
                PyErr_NoMemory();
                goto done;
            }
            snprintf(path, len, rel[0] ? "%s/%s" : "%s%s", name, rel);
            job.paths[filled++] = path;
        }
    }
    job.start[n] = filled;
    atomic_init(&job.next, 0);
    job.dirfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (job.dirfd < 0) {
        memset(job.ok, 0, n ? n : 1);  /* no base: every key is None */
        job.groups = 0;
    }
    Py_BEGIN_ALLOW_THREADS
    int threads = n < 512 ? 1 : default_threads();
    pthread_t tids[MAX_THREADS];
    int started = 0;
    while (started < threads - 1 && pthread_create(&tids[started], NULL, stat_worker, &job) == 0) started++;
    stat_worker(&job);
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    Py_END_ALLOW_THREADS
    if (job.dirfd >= 0) close(job.dirfd);
    out = PyList_New(n);
    for (Py_ssize_t g = 0; out && g < n; g++) {
        PyObject *key;
        if (job.ok[g]) {
            char hex[33];
            for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", job.keys[16 * g + i]);
            key = PyUnicode_FromStringAndSize(hex, 32);
            if (!key) Py_CLEAR(out);
        } else {
            key = Py_NewRef(Py_None);
        }
        if (out) PyList_SET_ITEM(out, g, key);
    }
done:
    if (job.paths) free_paths(job.paths, filled);
    free(job.start);
    free(job.keys);
    free(job.ok);
    Py_DECREF(basebytes);
    return out;
}

static PyMethodDef methods[] = {
    {"hash_dir", (PyCFunction)(void (*)(void))hash_dir, METH_VARARGS | METH_KEYWORDS, hash_dir_doc},
    {"stat_keys", stat_keys, METH_VARARGS, stat_keys_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ledger._native",
    .m_doc = "Native bundle hash v1 over a directory on disk (see ledger.merkle.hash_path).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "VERSION", "blake3-tree-v1") < 0 ||
        PyModule_AddStringConstant(m, "BLAKE3_VERSION", blake3_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
