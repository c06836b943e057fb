/* test_rows_print.c: the prints of units' content (rows/print.h) and the key
** index's kinds and prints (rows/steps.h). */
#include <string.h>

#include "check.h"
#include "rows/print.h"
#include "rows/steps.h"

static void test_steps_print(void) {
  dprl_step a[3] = {{0, 1.0, 0, 2}, {1, 0.0, 0, 1}, {5, 0.25, 0, 0}};
  dprl_step b[3];
  memcpy(b, a, sizeof a);
  b[1].reward = -0.0;
  b[0].episode = 7; /* the episode's dense index is no content */
  CHECK(dprl_print_steps(a, 3) == dprl_print_steps(b, 3), "-0.0 and 0.0, any index: one print");
  b[1].reward = 0x1p-1074;
  CHECK(dprl_print_steps(a, 3) != dprl_print_steps(b, 3), "the smallest reward apart: apart");
  memcpy(b, a, sizeof a);
  b[2].t = 6;
  CHECK(dprl_print_steps(a, 3) != dprl_print_steps(b, 3), "another t: another print");
  b[2].t = 5, b[2].state = 1;
  CHECK(dprl_print_steps(a, 3) != dprl_print_steps(b, 3), "another state: another print");
  CHECK(dprl_print_steps(a, 2) != dprl_print_steps(a, 3), "a prefix: another print");
  dprl_step z = {0, 0.0, 0, 0};
  CHECK(dprl_print_steps(&z, 1) != dprl_print_steps(&z, 0), "one zero step is not no step");
  uint64_t p = dprl_print_steps(a, 1), q = dprl_print_steps(a + 1, 1);
  CHECK(dprl_print_end(dprl_print_add(dprl_print_add(0, p), q), 2) ==
            dprl_print_end(dprl_print_add(dprl_print_add(0, q), p), 2),
        "a multiset of prints: the order does not count");
  CHECK(dprl_print_end(dprl_print_add(dprl_print_add(0, p), p), 2) !=
            dprl_print_end(dprl_print_add(dprl_print_add(0, p), q), 2),
        "a multiset of prints: its members do");
}

/* 2^16 distinct one-step episodes: no two prints alike, every one found. */
static void test_print_set(void) {
  dprl_print_set s;
  memset(&s, 0, sizeof s);
  dprl_error err = {0};
  int ok = 1;
  for (int64_t i = 0; i < 65536 && ok; i++) {
    dprl_step st = {i, (double)(i % 3), 0, (uint32_t)(i % 5)};
    uint64_t p = dprl_print_steps(&st, 1);
    ok = !dprl_print_set_has(&s, p) && dprl_print_set_add(&s, p, &err) == DPRL_OK &&
         dprl_print_set_has(&s, p);
  }
  CHECK(ok && s.n == 65536, "2^16 prints: all distinct, all found after growing");
  CHECK(!dprl_print_set_has(&s, 0) && dprl_print_set_add(&s, 0, &err) == DPRL_OK &&
            dprl_print_set_has(&s, 0) && dprl_print_set_add(&s, 5, &err) == DPRL_OK &&
            dprl_print_set_add(&s, 5, &err) == DPRL_OK && s.n == 65537,
        "print 0 is a member like any other; adding twice keeps one");
  dprl_print_set_free(&s);
}

static void test_index_prints(void) {
  dprl_episode_index x;
  memset(&x, 0, sizeof x);
  dprl_error err = {0};
  uint32_t id;
  CHECK(dprl_key_kinds(&x) == 0, "an empty index holds no kind of key");
  dprl_key k = {0, 7, NULL, 0}, t = {1, 0, "7", 1};
  dprl_key_intern(&x, &k, &id, &err);
  CHECK(dprl_key_kinds(&x) == DPRL_KEY_INT && x.print == NULL, "integer keys, no prints yet");
  CHECK(dprl_key_set_print(&x, id, 42, &err) == DPRL_OK && x.print[id] == 42, "a print beside 7");
  int ok = 1;
  for (int64_t i = 0; i < 5000 && ok; i++) { /* the prints grow with the keys */
    dprl_key ki = {0, 1000000 + i * 7919, NULL, 0};
    ok = dprl_key_intern(&x, &ki, &id, &err) == DPRL_OK &&
         dprl_key_set_print(&x, id, (uint64_t)i + 100, &err) == DPRL_OK;
  }
  CHECK(ok && x.print[0] == 42 && x.print[5000] == 5099, "prints kept as the index grows");
  dprl_key_intern(&x, &t, &id, &err);
  CHECK(dprl_key_kinds(&x) == (DPRL_KEY_INT | DPRL_KEY_TEXT) && x.print[id] == 0,
        "7 and '7': both kinds; the new entry's print unset");
  dprl_key_index_free(&x);
}

int main(void) {
  test_steps_print();
  test_print_set();
  test_index_prints();
  return CHECK_DONE();
}
