/*
** test_base_options.c: base/options.c: typed options read from JSON,
** defaults, ranges and choices, and the messages of a value out of range
** and of an unknown key.
*/
#include <string.h>

#include "check.h"
#include "base/options.h"

static void test_options(void) {
  static const char *const known[] = {"x", "n", "s", "arr", NULL};
  dprl_error err = {0};
  dprl_options o;
  const char *t = "{\"x\": 0.5, \"n\": 3, \"s\": \"b\", \"arr\": [1, 2]}";
  CHECK(dprl_options_open(&o, "f", t, strlen(t), known, &err) == DPRL_OK, "options: open");
  double x;
  int64_t n;
  int c;
  double *arr;
  static const char *const choices[] = {"a", "b", NULL};
  CHECK(dprl_opt_number(&o, "x", 1, 0, DPRL_OPEN(0, 1), &x) == 0 && x == 0.5, "options: number");
  CHECK(dprl_opt_int(&o, "n", 1, 0, DPRL_AT_LEAST(1), &n) == 0 && n == 3, "options: int");
  CHECK(dprl_opt_choice(&o, "s", choices, 0, &c) == 0 && c == 1, "options: choice");
  CHECK(dprl_opt_number_array(&o, "arr", 2, DPRL_ANY, &arr) == 0 && arr[1] == 2, "options: array");
  dprl_free(arr);
  CHECK(dprl_opt_number(&o, "missing", 0, 7, DPRL_ANY, &x) == 0 && x == 7, "options: default");
  CHECK(dprl_opt_number(&o, "x", 1, 0, DPRL_AT_LEAST(1), &x) == DPRL_EINVAL &&
            strcmp(err.msg, "f: option x must be >= 1, got 0.5") == 0,
        "options: range message");
  dprl_options_close(&o);
  dprl_error e2 = {0};
  t = "{\"y\": 1}";
  CHECK(dprl_options_open(&o, "f", t, strlen(t), known, &e2) == DPRL_EINVAL &&
            strcmp(e2.msg, "f: unknown option \"y\" (known: x, n, s, arr)") == 0,
        "options: unknown key message");
  dprl_options_close(&o);
}

int main(void) {
  test_options();
  return CHECK_DONE();
}
