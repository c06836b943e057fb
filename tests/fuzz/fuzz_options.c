/*
** fuzz_options.c: the JSON reader and the options of every function's
** core parser (dp_lsw, dp_lsl, both forms, dp_plan of one release and of
** a study; the prefix and Q-learning options through their own readers).  The input is the
** options text.  Allocations above 64 MB fail (the ENOMEM paths are part
** of what is fuzzed), so n_states = 2^27 is exercised without the memory.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/options.h"
#include "policy_eval/policy_eval.h"
#include "study/study.h"

static void *cap_alloc(size_t n) { return n > ((size_t)64 << 20) ? NULL : malloc(n); }
static void *cap_resize(void *p, size_t n) {
  return n > ((size_t)64 << 20) ? NULL : realloc(p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const dprl_allocator a = {cap_alloc, cap_resize, free};
  dprl_set_allocator(&a);
  const char *text = (const char *)data;
  dprl_error err = {0};
  dprl_json *v = dprl_json_parse(text, size, &err);
  if (v) {
    char d[64];
    dprl_json_describe(v, d, sizeof d);
    dprl_json_free(v);
  }
  {
    dprl_buf b = {0};
    dprl_error e = {0};
    dprl_plan(text, size, 1000000000, NULL, &b, &e);
    dprl_buf_free(&b);
  }
  for (int form = 0; form < 5; form++) {
    dprl_pe_config c;
    dprl_error e = {0};
    if (form == 4) {
      int64_t *visits = NULL;
      if (dprl_pe_plan_parse(&c, text, size, &visits, 1000000000, NULL, &e) == DPRL_OK) {
        dprl_buf b = {0};
        dprl_pe_plan(&c, visits, &b, &e);
        dprl_buf_free(&b);
        dprl_pe_config_free(&c);
        free(visits);
      }
      continue;
    }
    if (dprl_pe_config_parse(&c, form & 1 ? DPRL_LSL : DPRL_LSW, "f", text, size, form >> 1,
                             1000000000, NULL, &e) == DPRL_OK)
      dprl_pe_config_free(&c);
  }
  return 0;
}
