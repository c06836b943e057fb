/* core.c: errors, allocation hooks and the growable buffer (see core.h). */
#include "base/core.h"

#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *libc_alloc(size_t n) { return malloc(n); }
static void *libc_resize(void *p, size_t n) { return realloc(p, n); }
static void libc_release(void *p) { free(p); }

static dprl_allocator g_alloc = {libc_alloc, libc_resize, libc_release};

void dprl_set_allocator(const dprl_allocator *a) { g_alloc = *a; }

void *dprl_malloc(size_t n) { return g_alloc.alloc(n ? n : 1); }

void *dprl_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = dprl_malloc(count * size);
  if (p) memset(p, 0, count * size > 0 ? count * size : 1);
  return p;
}

void *dprl_malloc_array(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  return dprl_malloc(count * size);
}

void dprl_prefault(void *p, size_t n) {
#ifdef MADV_POPULATE_WRITE
  uintptr_t page = 4096, lo = ((uintptr_t)p + page - 1) & ~(page - 1),
            hi = ((uintptr_t)p + n) & ~(page - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)n;
#endif
}

void *dprl_calloc_polled(size_t count, size_t size, dprl_cancel *c, dprl_error *err) {
  enum { CHUNK = 1 << 20 };
  if (size && count > SIZE_MAX / size) {
    dprl_nomem(err);
    return NULL;
  }
  size_t n = count * size;
  char *p = dprl_malloc(n ? n : 1);
  if (!p) {
    dprl_nomem(err);
    return NULL;
  }
  for (size_t at = 0; at < n; at += CHUNK) {
    /* a megabyte of fresh pages: ~250 page faults, ~50 us (2^15 units) */
    if (dprl_cancel_poll(c, 1u << 15, err)) {
      dprl_free(p);
      return NULL;
    }
    memset(p + at, 0, n - at < CHUNK ? n - at : CHUNK);
  }
  return p;
}

void *dprl_realloc(void *p, size_t n) { return g_alloc.resize(p, n ? n : 1); }

void dprl_free(void *p) {
  if (p) g_alloc.release(p);
}

/* ---- numbers in the "C" locale ------------------------------------------ */

static locale_t g_c_locale;
static pthread_once_t g_c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void) { g_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

/* The "C" locale object, made once: glibc returns its static one, so this
** cannot fail there; elsewhere a failed newlocale leaves the thread's
** locale in use. */
static locale_t c_locale(void) {
  pthread_once(&g_c_locale_once, c_locale_init);
  return g_c_locale;
}

int dprl_vsnprintf(char *out, size_t n, const char *fmt, va_list ap) {
  locale_t c = c_locale(), old = c ? uselocale(c) : (locale_t)0;
  int r = vsnprintf(out, n, fmt, ap);
  if (c) uselocale(old);
  return r;
}

int dprl_snprintf(char *out, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = dprl_vsnprintf(out, n, fmt, ap);
  va_end(ap);
  return r;
}

double dprl_strtod(const char *s, char **end) {
  locale_t c = c_locale();
  return c ? strtod_l(s, end, c) : strtod(s, end);
}

/* ---- caller's text in messages ---------------------------------------- */

size_t dprl_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp) {
  if (!len) return 0;
  unsigned c = s[0];
  size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
           : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (!n || n > len) return 0;
  uint32_t v = n == 1 ? c : c & (0x7F >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3F);
  }
  static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < least[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

const char *dprl_char_shown(const unsigned char *s, size_t len, char *out) {
  uint32_t cp = 0;
  size_t n = dprl_utf8_seq(s, len, &cp);
  if (n == 1 && cp >= 0x20 && cp < 0x7F) dprl_snprintf(out, 16, "'%c'", (char)cp);
  else if (n) dprl_snprintf(out, 16, "U+%04X", (unsigned)cp);
  else dprl_snprintf(out, 16, "\\x%02X", len ? s[0] : 0);
  return out;
}

/* msg (capacity n) rewritten as valid UTF-8 without control characters:
** each other byte becomes \xNN, and what no longer fits is cut at a
** character's boundary. */
static void text_valid(char *msg, size_t n) {
  char in[sizeof ((dprl_error *)0)->msg];
  size_t len = strlen(msg), o = 0;
  if (len >= sizeof in || n > sizeof in) return;
  memcpy(in, msg, len + 1);
  for (size_t i = 0; i < len;) {
    uint32_t cp = 0;
    size_t k = dprl_utf8_seq((const unsigned char *)in + i, len - i, &cp);
    int bad = !k || cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
    size_t w = bad ? 4 : k;
    if (o + w + 1 > n) break;
    if (bad) {
      dprl_snprintf(msg + o, 5, "\\x%02X", (unsigned char)in[i]);
      k = k ? k : 1;
    } else {
      memcpy(msg + o, in + i, k);
    }
    o += w;
    i += k;
  }
  msg[o] = 0;
}

int dprl_fail(dprl_error *err, int code, const char *fmt, ...) {
  if (err && err->code == DPRL_OK) {
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    dprl_vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    text_valid(err->msg, sizeof err->msg);
  }
  return err ? err->code : code;
}

int dprl_nomem(dprl_error *err) {
  return dprl_fail(err, DPRL_ENOMEM, "out of memory");
}

void dprl_error_clear(dprl_error *err) {
  err->code = DPRL_OK;
  err->msg[0] = 0;
}

static int buf_reserve(dprl_buf *b, size_t extra) {
  if (b->oom) return 0;
  if (b->len + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = dprl_realloc(b->data, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

int dprl_buf_reserve(dprl_buf *b, size_t total) {
  if (b->oom || total < b->cap) return !b->oom;
  char *p = dprl_realloc(b->data, total + 1);
  if (!p) return 0;
  b->data = p;
  b->cap = total + 1;
  return 1;
}

void dprl_buf_append(dprl_buf *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void dprl_buf_puts(dprl_buf *b, const char *s) { dprl_buf_append(b, s, strlen(s)); }

void dprl_buf_printf(dprl_buf *b, const char *fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = dprl_vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    dprl_buf_append(b, small, (size_t)n);
    return;
  }
  if (!buf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  dprl_vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void dprl_buf_free(dprl_buf *b) {
  dprl_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
}

/* ---- helpers shared by the modules ------------------------------------- */

int dprl_grow_parallel(size_t nc, int n, void **arrays[], const size_t sizes[],
                       dprl_error *err) {
  for (int i = 0; i < n; i++) {
    if (sizes[i] && nc > SIZE_MAX / sizes[i]) return dprl_nomem(err);
    void *p = dprl_realloc(*arrays[i], nc * sizes[i]);
    if (!p) return dprl_nomem(err);
    *arrays[i] = p;
  }
  return DPRL_OK;
}

void dprl_error_at_row(dprl_error *err, const char *where, size_t row) {
  char tail[64];
  if (err->code != DPRL_EINVAL) return;
  snprintf(tail, sizeof tail, " (row %zu of %s)", row, where);
  if (strlen(err->msg) + strlen(tail) < sizeof err->msg) strcat(err->msg, tail);
}

/* ---- cancellation ------------------------------------------------------ */

int dprl_cancel_stop(dprl_cancel *c, dprl_error *err) {
  if (!c->stopped) {
    c->spent = 0;
    if (!c->check || !c->check(c->ctx)) return DPRL_OK;
    c->stopped = 1;
  }
  return dprl_fail(err, DPRL_EINTR, "interrupted");
}

static void swap_elems(char *a, char *b, size_t size) {
  char t[64];
  memcpy(t, a, size);
  memcpy(a, b, size);
  memcpy(b, t, size);
}

/* Hoare partition of base[0, n), n >= 3, around the median of the first,
** middle and last elements: returns k, 0 < k < n, with base[0, k) <= pivot
** <= base[k, n). */
static size_t partition(char *base, size_t n, size_t size,
                        int (*cmp)(const void *, const void *)) {
  char *lo = base, *mid = base + n / 2 * size, *hi = base + (n - 1) * size, pivot[64];
  if (cmp(mid, lo) < 0) swap_elems(mid, lo, size);
  if (cmp(hi, lo) < 0) swap_elems(hi, lo, size);
  if (cmp(hi, mid) < 0) swap_elems(hi, mid, size);
  memcpy(pivot, mid, size);
  size_t i = 0, j = n - 1;
  for (;;) {
    while (cmp(base + i * size, pivot) < 0) i++;
    while (cmp(base + j * size, pivot) > 0) j--;
    if (i >= j) return j + 1;
    swap_elems(base + i * size, base + j * size, size);
    i++;
    j--;
  }
}

int dprl_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
              dprl_cancel *c, dprl_error *err) {
  struct piece {
    char *b;
    size_t n;
    int depth;
  } stack[64];
  int top = 0, limit = 2;
  for (size_t k = n; k > 1; k /= 2) limit += 2; /* introsort's 2 log2 n */
  if (size > 64 || n <= DPRL_SORT_PIECE) {
    if (n > 1) qsort(base, n, size, cmp);
    return dprl_cancel_poll(c, 30 * (uint64_t)n, err);
  }
  stack[top++] = (struct piece){base, n, 0};
  while (top) {
    struct piece p = stack[--top];
    /* Keep the larger part, continue with the smaller (at most half): the
    ** stack stays below log2 n entries. */
    while (p.n > DPRL_SORT_PIECE && p.depth < limit) {
      if (dprl_cancel_poll(c, 10 * (uint64_t)p.n, err)) return err->code;
      size_t k = partition(p.b, p.n, size, cmp);
      struct piece left = {p.b, k, p.depth + 1}, right = {p.b + k * size, p.n - k, p.depth + 1};
      int right_larger = right.n >= left.n;
      stack[top++] = right_larger ? right : left;
      p = right_larger ? left : right;
    }
    /* A small piece, or too many unbalanced splits: libc's sort. */
    if (p.n > 1) qsort(p.b, p.n, size, cmp);
    if (dprl_cancel_poll(c, 30 * (uint64_t)p.n, err)) return err->code;
  }
  return DPRL_OK;
}
