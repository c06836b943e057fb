/* print.c: fingerprints of units' content and a set of them (print.h). */
#include "rows/print.h"

uint64_t dprl_print_steps_from(uint64_t h, const dprl_step *steps, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h = dprl_print_int(h, steps[i].t);
    h = dprl_print_word(h, steps[i].state);
    h = dprl_print_double(h, steps[i].reward);
  }
  return h;
}

uint64_t dprl_print_steps(const dprl_step *steps, size_t n) {
  return dprl_print_steps_from(dprl_print_start(n), steps, n);
}

static int set_grow(dprl_print_set *s) {
  size_t ns = s->n_slots ? s->n_slots * 2 : 1024;
  uint64_t *slot = dprl_calloc(ns, sizeof *slot);
  if (!slot) return 0;
  for (size_t i = 0; i < s->n_slots; i++) {
    uint64_t p = s->slot[i];
    if (!p) continue;
    size_t j = p & (ns - 1);
    while (slot[j]) j = (j + 1) & (ns - 1);
    slot[j] = p;
  }
  dprl_free(s->slot);
  s->slot = slot;
  s->n_slots = ns;
  return 1;
}

int dprl_print_set_add(dprl_print_set *s, uint64_t p, dprl_error *err) {
  if (!p) {
    s->has_zero = 1;
    return DPRL_OK;
  }
  if ((s->n + 1) * 2 > s->n_slots && !set_grow(s)) return dprl_nomem(err);
  size_t i = p & (s->n_slots - 1);
  for (; s->slot[i]; i = (i + 1) & (s->n_slots - 1))
    if (s->slot[i] == p) return DPRL_OK;
  s->slot[i] = p;
  s->n++;
  return DPRL_OK;
}

int dprl_print_set_has(const dprl_print_set *s, uint64_t p) {
  if (!p) return s->has_zero;
  if (!s->n_slots) return 0;
  for (size_t i = p & (s->n_slots - 1); s->slot[i]; i = (i + 1) & (s->n_slots - 1))
    if (s->slot[i] == p) return 1;
  return 0;
}

void dprl_print_set_free(dprl_print_set *s) {
  dprl_free(s->slot);
  memset(s, 0, sizeof *s);
}
