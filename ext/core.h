/*
** core.h: what every module of the numerical core shares, and nothing of
** SQLite.  The core is plain C over arrays; it reports failure through a
** dprl_error (a code and a message naming the argument and the value) and
** allocates through three hooks that the SQLite glue points at
** sqlite3_malloc64/sqlite3_realloc64/sqlite3_free when the extension loads
** (unit tests keep the libc defaults).
*/
#ifndef DPRL_CORE_H
#define DPRL_CORE_H

#include <stddef.h>
#include <stdint.h>

enum {
  DPRL_OK = 0,
  DPRL_EINVAL = 1, /* bad input: the message says which argument and value */
  DPRL_ENOMEM = 2  /* out of memory: the glue answers SQLITE_NOMEM */
};

typedef struct dprl_error {
  int code;
  char msg[512];
} dprl_error;

/* Record an error (first one wins) and return its code. printf-style. */
int dprl_fail(dprl_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int dprl_nomem(dprl_error *err);
void dprl_error_clear(dprl_error *err);

/* Allocation hooks (default: malloc/realloc/free). */
typedef struct dprl_allocator {
  void *(*alloc)(size_t n);
  void *(*resize)(void *p, size_t n);
  void (*release)(void *p);
} dprl_allocator;
void dprl_set_allocator(const dprl_allocator *a);
void *dprl_malloc(size_t n);
void *dprl_calloc(size_t count, size_t size); /* zeroed, overflow-checked */
void *dprl_realloc(void *p, size_t n);
void dprl_free(void *p);

/* Growable byte buffer with a sticky out-of-memory flag. */
typedef struct dprl_buf {
  char *data;
  size_t len, cap;
  int oom;
} dprl_buf;
void dprl_buf_append(dprl_buf *b, const char *s, size_t n);
void dprl_buf_puts(dprl_buf *b, const char *s);
void dprl_buf_printf(dprl_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void dprl_buf_free(dprl_buf *b);

/* Grow n parallel arrays (element sizes sizes[i]) to nc elements each.
** On failure the arrays already grown stay grown (harmless: the caller
** keeps its old capacity) and DPRL_ENOMEM is returned. */
int dprl_grow_parallel(size_t nc, int n, void **arrays[], const size_t sizes[],
                       dprl_error *err);
/* Append " (row N of where)" to an EINVAL message, so a bad value can be
** found in the caller's rows. */
void dprl_error_at_row(dprl_error *err, const char *where, size_t row);

#endif
