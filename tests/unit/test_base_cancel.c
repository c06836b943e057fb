/*
** test_base_cancel.c: the cancellation hook of base/core.h
** (dprl_cancel_poll) and the interruptible sort (dprl_sort) against libc's
** qsort.  No SQLite: tests/sql/test_q.py and test_robustness.py check the
** SQLite side (sqlite3_interrupt, progress handlers).
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "base/core.h"

static void test_poll(void) {
  counter n;
  dprl_cancel k = make_cancel(&n, 0);
  dprl_error err = {0};
  int rc = 0;
  for (uint64_t i = 0; i < 3 * (uint64_t)DPRL_CANCEL_EVERY + 5; i++)
    rc |= dprl_cancel_poll(&k, 1, &err);
  CHECK(rc == 0 && n.calls == 3, "poll: the check runs once per DPRL_CANCEL_EVERY units of work");
  rc = dprl_cancel_poll(&k, 10 * (uint64_t)DPRL_CANCEL_EVERY, &err);
  CHECK(rc == 0 && n.calls == 4, "poll: a large piece of work checks at once");
  n.stop_at = 5;
  for (uint64_t i = 0; i < 2 * (uint64_t)DPRL_CANCEL_EVERY && !rc; i++)
    rc = dprl_cancel_poll(&k, 1, &err);
  CHECK(rc == DPRL_EINTR && err.code == DPRL_EINTR && strcmp(err.msg, "interrupted") == 0,
        "poll: stop -> DPRL_EINTR, \"interrupted\"");
  dprl_error e2 = {0};
  CHECK(dprl_cancel_poll(&k, 1, &e2) == DPRL_EINTR && n.calls == 5,
        "poll: once stopped, every poll fails at once without asking again");
  dprl_error e3 = {0};
  CHECK(dprl_cancel_poll(NULL, UINT64_MAX, &e3) == DPRL_OK && e3.code == 0,
        "poll: a NULL hook never stops");
}

static int dbl_cmp(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* 16-byte elements: a key x and a payload g. */
typedef struct point16 {
  double x, g;
} point16;

static int pt_cmp(const void *pa, const void *pb) { /* by x only: ties stay */
  const point16 *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

static int pt_full_cmp(const void *pa, const void *pb) {
  const point16 *a = pa, *b = pb;
  int c = pt_cmp(pa, pb);
  return c ? c : (a->g > b->g) - (a->g < b->g);
}

/* dprl_sort of x[0, n) against libc's qsort of a copy. */
static void sort_case(const char *what, double *x, size_t n) {
  double *want = malloc((n ? n : 1) * sizeof *want);
  memcpy(want, x, n * sizeof *x);
  qsort(want, n, sizeof *want, dbl_cmp);
  counter c;
  dprl_cancel k = make_cancel(&c, 0);
  dprl_error err = {0};
  int rc = dprl_sort(x, n, sizeof *x, dbl_cmp, &k, &err);
  CHECK(rc == 0 && memcmp(x, want, n * sizeof *x) == 0, LABEL("sort: %s (n = %zu)", what, n));
  free(want);
}

static void test_sort(void) {
  enum { N = 300000 };
  double *x = malloc(N * sizeof *x);
  for (size_t i = 0; i < N; i++) x[i] = (double)lcg_next();
  sort_case("random doubles", x, N);
  sort_case("already sorted", x, N);
  for (size_t i = 0; i < N / 2; i++) {
    double t = x[i];
    x[i] = x[N - 1 - i];
    x[N - 1 - i] = t;
  }
  sort_case("reversed", x, N);
  for (size_t i = 0; i < N; i++) x[i] = (double)(lcg_next() % 10);
  sort_case("ten distinct values", x, N);
  for (size_t i = 0; i < N; i++) x[i] = 0.5;
  sort_case("all equal", x, N);
  for (size_t i = 0; i < N; i++) x[i] = (double)(i < N / 2 ? i : N - i); /* organ pipe */
  sort_case("organ pipe", x, N);
  for (size_t i = 0; i < 100; i++) x[i] = (double)(lcg_next() % 1000);
  sort_case("small (libc qsort only)", x, 100);
  sort_case("empty", x, 0);
  free(x);
  /* 16-byte elements with ties on the key: sorted by key, same multiset. */
  point16 *p = malloc(N * sizeof *p), *q = malloc(N * sizeof *q);
  for (size_t i = 0; i < N; i++) p[i] = (point16){(double)(lcg_next() % 5000), (double)i};
  memcpy(q, p, N * sizeof *p);
  dprl_error err = {0};
  int rc = dprl_sort(p, N, sizeof *p, pt_cmp, NULL, &err), ordered = 1;
  for (size_t i = 1; i < N; i++) ordered &= p[i - 1].x <= p[i].x;
  qsort(p, N, sizeof *p, pt_full_cmp);
  qsort(q, N, sizeof *q, pt_full_cmp);
  CHECK(rc == 0 && ordered && memcmp(p, q, N * sizeof *p) == 0,
        "sort: 16-byte points with ties, ordered by key, nothing lost");
  free(p);
  free(q);
}

static void test_sort_interrupted(void) {
  enum { N = 400000 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (size_t i = 0; i < N; i++) x[i] = y[i] = (double)lcg_next();
  counter c;
  dprl_cancel k = make_cancel(&c, 2);
  dprl_error err = {0};
  int rc = dprl_sort(x, N, sizeof *x, dbl_cmp, &k, &err);
  CHECK(rc == DPRL_EINTR && c.calls == 2, "sort: stops at the check that says stop");
  qsort(x, N, sizeof *x, dbl_cmp);
  qsort(y, N, sizeof *y, dbl_cmp);
  CHECK(memcmp(x, y, N * sizeof *x) == 0, "sort: an interrupted sort leaves a permutation");
  free(x);
  free(y);
}

int main(void) {
  test_poll();
  test_sort();
  test_sort_interrupted();
  return CHECK_DONE();
}
