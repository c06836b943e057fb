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

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum {
  DPRL_OK = 0,
  DPRL_EINVAL = 1, /* bad input: the message says which argument and value */
  DPRL_ENOMEM = 2, /* out of memory: the glue answers SQLITE_NOMEM */
  DPRL_EINTR = 3,  /* stopped through a dprl_cancel: SQLITE_INTERRUPT */
  DPRL_EBUSY = 4   /* a lock could not be had in time: SQLITE_BUSY, retry */
};

typedef struct dprl_error {
  int code;
  char msg[512];
} dprl_error;

/* Numbers as the same bytes in any locale: every printf-style conversion
** and every strtod of dprl goes through these, which run in the "C" locale
** of the calling thread only (uselocale), whatever setlocale the host
** called, and never touch the process-wide locale. */
int dprl_snprintf(char *out, size_t n, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int dprl_vsnprintf(char *out, size_t n, const char *fmt, va_list ap);
double dprl_strtod(const char *s, char **end);

/* Caller's text in messages: the length of the valid UTF-8 sequence at s
** (of at most len bytes) and its code point, or 0 when the byte at s does
** not begin one (overlong forms, surrogates and values past U+10FFFF are
** not valid). */
size_t dprl_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp);
/* The character at s as a message shows it: 'c' for printable ASCII, U+XXXX
** for any other valid code point (a NUL, a BOM, a curly quote), \xNN for a
** byte that begins no valid sequence.  out holds at least 16 bytes. */
const char *dprl_char_shown(const unsigned char *s, size_t len, char *out);

/* Record an error (first one wins) and return its code. printf-style.
** The message is made valid UTF-8 with no control character: a byte of an
** invalid sequence, or a control character, becomes \xNN (a caller's text
** may hold anything, and a message that does not decode escapes a host's
** error handling: Python's UnicodeDecodeError). */
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
/* Overflow-checked, NOT zeroed: for arrays written in full before they are
** read (zeroing megabytes that are then overwritten costs a pass over
** memory and faults in pages that may never be used). */
void *dprl_malloc_array(size_t count, size_t size);
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
/* Room for `total` bytes in all, at once: a result whose size is known
** roughly is written without the copies of repeated doubling.  Returns 0
** when that much cannot be had (b is unchanged; appends still grow it). */
int dprl_buf_reserve(dprl_buf *b, size_t total);

/* The largest single allocation SQLite's allocator grants (sqlite3_malloc64
** refuses 0x7fffff00 bytes and more): size limits of the SQL functions
** are derived from it, so that an input too large fails with a message
** naming the limit before anything is allocated, not with "out of memory". */
#define DPRL_MAX_ALLOC ((size_t)0x7fffff00)

/* Grow n parallel arrays (element sizes sizes[i]) to nc elements each.
** On failure the arrays already grown stay grown (harmless: the caller
** keeps its old capacity) and DPRL_ENOMEM is returned. */
int dprl_grow_parallel(size_t nc, int n, void **arrays[], const size_t sizes[],
                       dprl_error *err);
/* Append " (row N of where)" to an EINVAL message, so a bad value can be
** found in the caller's rows. */
void dprl_error_at_row(dprl_error *err, const char *where, size_t row);

/* ---- cancellation ---------------------------------------------------------
** A long loop of the core asks its caller, now and then, whether to stop
** (in SQLite: sqlite3_interrupt() or a progress handler; sql_glue.h makes
** the hook).  The loop counts its work with dprl_cancel_poll, in units of
** roughly a nanosecond (an arithmetic step ~1, a random draw ~100-1000);
** every DPRL_CANCEL_EVERY units the hook's check runs.  Once it has said
** stop, every later poll fails at once, so nested loops unwind quickly.
** A NULL hook never stops.  Usage in a loop:
**   if (dprl_cancel_poll(cancel, 50, err)) return err->code;   // EINTR
*/
typedef struct dprl_cancel {
  int (*check)(void *ctx); /* nonzero: stop now */
  void *ctx;
  uint64_t spent;          /* work since the last check */
  int stopped;             /* check said stop */
} dprl_cancel;

#define DPRL_CANCEL_EVERY 65536u

/* DPRL_EINTR ("interrupted") once the hook says stop, else DPRL_OK. */
int dprl_cancel_stop(dprl_cancel *c, dprl_error *err);
static inline int dprl_cancel_poll(dprl_cancel *c, uint64_t work, dprl_error *err) {
  if (!c || (!c->stopped && (c->spent += work) < DPRL_CANCEL_EVERY)) return DPRL_OK;
  return dprl_cancel_stop(c, err);
}

/* qsort that polls c between pieces of about DPRL_SORT_PIECE elements
** (quicksort partitions above, libc qsort below), so sorting millions of
** elements can be interrupted; elements of up to 64 bytes (larger ones go
** to qsort whole).  Not stable.  DPRL_EINTR leaves base permuted. */
#define DPRL_SORT_PIECE 4096
int dprl_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
              dprl_cancel *c, dprl_error *err);

/* Fault in the whole pages of [p, p + n) at once (Linux >= 5.14:
** MADV_POPULATE_WRITE; elsewhere nothing): one call instead of a page fault
** per 4 KB when a large block is about to be filled. */
void dprl_prefault(void *p, size_t n);

/* dprl_calloc for arrays of public size that may be huge (10^7 states):
** zeroed a megabyte at a time with a poll in between, so the zeroing can be
** interrupted (a sanitizer's calloc, or a reused block, writes every byte).
** NULL with err set (out of memory, or DPRL_EINTR). */
void *dprl_calloc_polled(size_t count, size_t size, dprl_cancel *c, dprl_error *err);

#endif
