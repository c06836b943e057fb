/*
** strtod_c.c: LD_PRELOAD'ed by tests/sql/test_locale.py so that the host's
** SQLite reads numbers in the "C" locale.  Debian 12's SQLite 3.40 reads
** the reals of JSON text (json_extract, json_each) with the C library's
** strtod, so in a German host json_extract('{"a":0.5}', '$.a') is 0: a
** defect of that SQLite, not of dprl, which the test takes out of the way
** to compare every example of REFERENCE.md.  dprl itself never calls
** strtod (tests/sql/test_layers.py), so this cannot hide a defect of its.
*/
#define _GNU_SOURCE
#include <locale.h>
#include <stdlib.h>

double strtod(const char *s, char **end) {
  static locale_t c;
  if (!c) c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  return strtod_l(s, end, c);
}
