/*
** test_rows_made_with.c: rows/made_with.c, what statistics were made
** with: checked on texts written here by hand and by its writer.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rows/made_with.h"

/* made_with: what the writer writes reads back as the same parameters;
** each parameter changed by one ulp is refused with a message naming it. */
static void test_made_with(void) {
  dprl_return_rule r = {0.9, -0.5, 1.0, -5.000000000000001, 10.000000000000002, 0, 0, 3};
  dprl_buf b = {0};
  dprl_error err = {0};
  int64_t k = -1;
  dprl_made_with_write(&b, &r, 12, "dprl", "9.9.9");
  dprl_buf_puts(&b, "");
  CHECK(b.data && !strcmp(b.data, "{\"gamma\":0.9,\"rmin\":-0.5,\"rmax\":1,"
                          "\"fmin\":-5.000000000000001,\"fmax\":10.000000000000002,"
                          "\"n_states\":12,\"max_states\":3,\"dialect\":\"dprl\","
                          "\"version\":\"9.9.9\"}"),
        "made_with: the documented keys, in order, doubles in shortest exact form");
  CHECK(dprl_made_with_check(b.data, b.len, &r, 12, "f", NULL, &k, &err) == DPRL_OK && k == 3,
        "made_with: its own text passes and gives the bound");
  /* the same parameters printed as another engine prints them */
  const char *pg = "{\"gamma\":0.90000000000000002,\"rmin\":-0.5,\"rmax\":1.0,"
                   "\"fmin\":-5.0000000000000009,\"fmax\":1.0000000000000002E1,\"n_states\":12,"
                   "\"max_states\":3,\"dialect\":\"sqlite\",\"version\":\"0\"}";
  CHECK(dprl_made_with_check(pg, strlen(pg), &r, 12, "f", NULL, &k, &err) == DPRL_OK,
        "made_with: 17 digits, 1.0 and an exponent read as the same doubles");
  double *field[] = {&r.gamma, &r.rmin, &r.rmax, &r.fmin, &r.fmax};
  const char *name[] = {"gamma", "rmin", "rmax", "fmin", "fmax"};
  for (int i = 0; i < 5; i++) {
    double keep = *field[i];
    *field[i] = nextafter(keep, 100.0);
    dprl_error_clear(&err);
    int rc = dprl_made_with_check(b.data, b.len, &r, 12, "f", "buckets 4..7", &k, &err);
    char want[64];
    snprintf(want, sizeof want, "were made with %s = ", name[i]);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, want) && strstr(err.msg, "buckets 4..7") &&
              strstr(err.msg, "dialect dprl"),
          "made_with: a parameter one ulp off is refused, naming it and the shard");
    *field[i] = keep;
  }
  dprl_error_clear(&err);
  CHECK(dprl_made_with_check(b.data, b.len, &r, 13, "f", NULL, &k, &err) == DPRL_EINVAL &&
            strstr(err.msg, "n_states = 12, but option n_states = 13"),
        "made_with: another n_states is refused");
  static const char *const bad[] = {
      "[1]", "{\"gamma\":0.9}", "{\"gamma\":0.9,\"rmin\":-0.5,\"rmax\":1,"
      "\"fmin\":-5.000000000000001,\"fmax\":10.000000000000002,\"n_states\":12,"
      "\"max_states\":2.5,\"dialect\":\"x\",\"version\":\"0\"}",
      "{\"gamma\":0.9,\"rmin\":-0.5,\"rmax\":1,\"fmin\":-5.000000000000001,"
      "\"fmax\":10.000000000000002,\"n_states\":12,\"max_states\":null,\"dialect\":1,"
      "\"version\":\"0\"}",
      "{\"lambda\":1}", "{\"gamma\":"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    dprl_error_clear(&err);
    CHECK(dprl_made_with_check(bad[i], strlen(bad[i]), &r, 12, "f", NULL, &k, &err) ==
              DPRL_EINVAL && strstr(err.msg, "made_with"),
          "made_with: not an object, a key missing or unknown, a bad bound or dialect: refused");
  }
  const char *none = "{\"gamma\":0.9,\"rmin\":-0.5,\"rmax\":1,\"fmin\":-5.000000000000001,"
                     "\"fmax\":10.000000000000002,\"n_states\":12,\"max_states\":null,"
                     "\"dialect\":\"x\",\"version\":\"0\"}";
  dprl_error_clear(&err);
  CHECK(dprl_made_with_check(none, strlen(none), &r, 12, "f", "buckets 0..3", &k, &err) ==
                DPRL_EINVAL &&
            strstr(err.msg, "buckets 0..3 (made_with, dialect x) were made with max_states = "
                            "null (no bound), but option max_states = 3"),
        "made_with: no bound where the option has one is refused, naming the shard");
  r.max_states = 0;
  dprl_error_clear(&err);
  CHECK(dprl_made_with_check(none, strlen(none), &r, 12, "f", NULL, &k, &err) == DPRL_OK &&
            k == 0, "made_with: max_states null is no bound, as the option");
  dprl_error_clear(&err);
  CHECK(dprl_made_with_check(b.data, b.len, &r, 12, "f", NULL, &k, &err) == DPRL_EINVAL &&
            strstr(err.msg, "max_states = 3, but option max_states = none"),
        "made_with: a bound where the option has none is refused");
  /* the caller's key and dialect in messages: bounded, printable */
  const char *odd = "{\"gamma\":0.8,\"rmin\":-0.5,\"rmax\":1,\"fmin\":-5.000000000000001,"
                    "\"fmax\":10.000000000000002,\"n_states\":12,\"max_states\":null,"
                    "\"dialect\":\"a\\\"b\\nccccccccccccccccccccccccccccccccccccccccccc\","
                    "\"version\":\"0\"}";
  dprl_error_clear(&err);
  CHECK(dprl_made_with_check(odd, strlen(odd), &r, 12, "f", NULL, &k, &err) == DPRL_EINVAL &&
            strstr(err.msg, "dialect a?b?cccccccccccccccccccc...) were made with gamma = 0.8"),
        "made_with: a dialect in a message is cut and shown printable");
  dprl_free(b.data);
}

int main(void) {
  test_made_with();
  return CHECK_DONE();
}
