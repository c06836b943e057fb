/*
** test_base_json.c: base/json.c: objects, arrays, numbers and escapes
** parsed, malformed texts refused, doubles written in their shortest
** round-trip form.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
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

int main(void) {
  test_json();
  return CHECK_DONE();
}
