/*
** test_base_json.c: base/json.c and json_number.c: objects, arrays,
** numbers and escapes parsed, malformed texts refused, doubles written in
** their shortest round-trip form; the number reader against strtod on
** 300,000 forms and the halfway cases, and compact arrays of numbers.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "base/json.h"

static void test_json(void) {
  dprl_error err = {0};
  const char *t = "{\"a\": [1, 2.5, -3e2], \"b\": \"x\\u00e9\\n\", \"c\": {\"d\": null}, "
                  "\"e\": true}";
  dprl_json *v = dprl_json_parse(t, strlen(t), &err);
  CHECK(v && v->type == DPRL_JSON_OBJECT && v->n == 4, "json: object parsed");
  const dprl_json *a = dprl_json_get(v, "a");
  CHECK(a && a->n == 3 && a->items[2]->num == -300 && a->items[0]->is_integer &&
            !a->items[1]->is_integer,
        "json: numbers");
  CHECK(strcmp(dprl_json_get(v, "b")->str, "x\xc3\xa9\n") == 0, "json: escapes decoded");
  CHECK(dprl_json_get(dprl_json_get(v, "c"), "d")->type == DPRL_JSON_NULL, "json: nesting");
  dprl_json_free(v);
  static const char *bad[] = {"{", "{\"a\" 1}", "[1,]", "01", "{\"a\":1} x", "\"\\q\"",
                              "{\"a\":1,\"a\":2}", "nul", "[1 2]", "\"\\ud800\"", "1.", NULL};
  for (int i = 0; bad[i]; i++) {
    dprl_error e = {0};
    dprl_json *x = dprl_json_parse(bad[i], strlen(bad[i]), &e);
    char name[80];
    snprintf(name, sizeof name, "json: rejects %s", bad[i]);
    CHECK(!x && e.code == DPRL_EINVAL && e.msg[0], name);
    dprl_json_free(x);
  }
  dprl_buf b = {0};
  dprl_json_put_double(&b, 0.1);
  dprl_buf_puts(&b, " ");
  dprl_json_put_double(&b, 1.0 / 3.0);
  dprl_buf_puts(&b, " ");
  dprl_json_put_double(&b, NAN);
  CHECK(strcmp(b.data, "0.1 0.3333333333333333 null") == 0, "json: shortest round-trip doubles");
  dprl_buf_free(&b);
}

/* ---- the number reader and compact arrays -------------------------------------- */

static void test_numbers(void) {
  static const char *fmt[] = {"%.*g", "%.*e", "%.*f"};
  char buf[96], arr[112];
  size_t n = 0, bad = 0;
  dprl_error err = {0};
  for (int it = 0; it < 300000; it++) {
    double x;
    int kind = it % 4, prec = 1 + (int)(lcg_unit() * 19), f = (int)(lcg_unit() * 3);
    if (kind == 0) x = (lcg_unit() - 0.5) * pow(10, 40 * lcg_unit() - 20);
    else if (kind == 1) x = floor(lcg_unit() * 9007199254740992.0) * pow(2, -(int)(lcg_unit() * 80));
    else if (kind == 2) x = floor((lcg_unit() - 0.5) * 2e6) * pow(10, -(int)(lcg_unit() * 30));
    else x = 1e15 * lcg_unit() + lcg_unit();
    if (f == 2) prec = (int)(lcg_unit() * 25);
    if (f == 2 && fabs(x) > 1e20) f = 0;
    int len = snprintf(buf, sizeof buf, fmt[f], prec, x);
    if (len >= 60 || buf[len - 1] == '.' || strchr(buf, 'n')) continue;
    snprintf(arr, sizeof arr, "[%s]", buf);
    dprl_json *j = dprl_json_parse_compact(arr, strlen(arr), NULL, &err);
    if (!j) { /* forms that are not JSON ("1.e5") */
      dprl_error_clear(&err);
      continue;
    }
    double want = strtod(buf, NULL);
    n++;
    if (memcmp(&want, &j->nums[0], sizeof want)) {
      if (bad++ < 5) printf("#   %s read as %.17g, strtod %.17g\n", buf, j->nums[0], want);
    }
    dprl_json_free(j);
  }
  CHECK(bad == 0 && n > 250000, LABEL("numbers: %zu forms read exactly as strtod reads them", n));
  static const char *edge[] = {"9007199254740993", "9007199254740995", "0.30000000000000004",
                               "1e-27", "9999999999999999999e-27", "18446744073709551616",
                               "1.7976931348623157e308", "4.9406564584124654e-324", "-0",
                               "123456789012345678.9", "2.2250738585072014e-308", "1E+2"};
  int ok = 1;
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    snprintf(arr, sizeof arr, "[%s]", edge[i]);
    dprl_json *j = dprl_json_parse_compact(arr, strlen(arr), NULL, &err);
    double want = strtod(edge[i], NULL);
    if (!j || memcmp(&want, &j->nums[0], sizeof want)) ok = 0, printf("#   %s\n", edge[i]);
    dprl_json_free(j);
  }
  CHECK(ok, "numbers: halfway cases, 20 digits, extremes, -0 as strtod");
  const char *mixed = "{\"a\": [[1, 2.5], [3]], \"b\": [1, \"x\", [2]], \"c\": 7}";
  dprl_json *j = dprl_json_parse_compact(mixed, strlen(mixed), NULL, &err);
  const dprl_json *a = dprl_json_get(j, "a"), *b = dprl_json_get(j, "b");
  CHECK(j && a->items && a->items[0]->nums && a->items[0]->n == 2 && a->items[0]->nums[1] == 2.5 &&
            a->items[1]->nums[0] == 3,
        "compact: arrays of numbers are stored as nums");
  CHECK(j && b->items && b->n == 3 && !b->nums && b->items[1]->type == DPRL_JSON_STRING &&
            b->items[0]->is_integer && b->items[2]->nums[0] == 2,
        "compact: a mixed array is read as nodes");
  dprl_json_free(j);
  j = dprl_json_parse_compact("[1, 2", 5, NULL, &err);
  CHECK(!j && strstr(err.msg, "malformed JSON"), LABEL("compact: unterminated: %s", err.msg));
  dprl_error_clear(&err);
  j = dprl_json_parse_compact("[1, 01]", 7, NULL, &err);
  CHECK(!j && strstr(err.msg, "expected ',' or ']'"), LABEL("compact: 01 refused: %s", err.msg));
  dprl_error_clear(&err);
}

int main(void) {
  test_json();
  test_numbers();
  return CHECK_DONE();
}
