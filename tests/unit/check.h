/*
** check.h: the unit-test harness.  Each CHECK prints one line "ok ..." or
** "not ok ..." (the runner counts them into the final "N passed, M failed");
** a test program exits non-zero if any check failed.
*/
#ifndef DPRL_CHECK_H
#define DPRL_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int check_failed_count = 0;
static int check_passed_count = 0;

static inline int check_report(int ok, const char *file, int line,
                               const char *what) {
  if (ok) {
    check_passed_count++;
    printf("ok %s\n", what);
  } else {
    check_failed_count++;
    printf("not ok %s (%s:%d)\n", what, file, line);
  }
  fflush(stdout);
  return ok;
}

#define CHECK(cond, what) check_report((cond) ? 1 : 0, __FILE__, __LINE__, what)

/* A check's label formatted as printf does, in a buffer the next LABEL
** reuses: CHECK(ok, LABEL("release %d", i)). */
__attribute__((format(printf, 1, 2))) static inline const char *check_label(const char *fmt,
                                                                            ...) {
  static char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  return line;
}
#define LABEL(...) check_label(__VA_ARGS__)

/* |a-b| <= tol, printing both values on failure. */
#define CHECK_NEAR(a, b, tol, what)                                          \
  do {                                                                       \
    double check_a_ = (a), check_b_ = (b);                                   \
    if (!check_report(fabs(check_a_ - check_b_) <= (tol), __FILE__, __LINE__, \
                      what))                                                 \
      printf("#   got %.17g, want %.17g (tol %g)\n", check_a_, check_b_,     \
             (double)(tol));                                                 \
  } while (0)

/* Relative closeness for quantities of any scale. */
#define CHECK_REL(a, b, rel, what)                                            \
  do {                                                                        \
    double check_a_ = (a), check_b_ = (b);                                    \
    double check_s_ = fabs(check_b_) > 1e-300 ? fabs(check_b_) : 1.0;         \
    if (!check_report(fabs(check_a_ - check_b_) <= (rel) * check_s_,           \
                      __FILE__, __LINE__, what))                              \
      printf("#   got %.17g, want %.17g (rel %g)\n", check_a_, check_b_,      \
             (double)(rel));                                                  \
  } while (0)

#define CHECK_DONE() (check_failed_count ? 1 : 0)

#endif
