/*
** json.h: a small strict JSON reader (RFC 8259) for the options argument,
** and helpers to write JSON results into a dprl_buf.
**
** The reader builds a tree owned by one dprl_json_doc; every node lives
** until dprl_json_free.  Duplicate object keys are an error (an option
** given twice is ambiguous).
*/
#ifndef DPRL_JSON_H
#define DPRL_JSON_H

#include "base/core.h"

typedef enum {
  DPRL_JSON_NULL,
  DPRL_JSON_FALSE,
  DPRL_JSON_TRUE,
  DPRL_JSON_NUMBER,
  DPRL_JSON_STRING,
  DPRL_JSON_ARRAY,
  DPRL_JSON_OBJECT
} dprl_json_type;

typedef struct dprl_json dprl_json;
struct dprl_json {
  dprl_json_type type;
  double num;        /* NUMBER */
  int is_integer;    /* NUMBER written without fraction or exponent */
  char *str;         /* STRING (NUL-terminated, escapes decoded) */
  size_t n;          /* ARRAY/OBJECT element count, STRING length */
  dprl_json **items; /* ARRAY/OBJECT values (NULL for an array read as nums) */
  double *nums;      /* ARRAY of numbers only, from dprl_json_parse_compact: n values */
  char **keys;       /* OBJECT keys */
};

/* Parse text[0..len).  On failure returns NULL with err set ("malformed
** JSON at offset 12: expected ':'"). */
dprl_json *dprl_json_parse(const char *text, size_t len, dprl_error *err);
/* The same, asking cancel (may be NULL) between the items of arrays and
** objects: DPRL_EINTR, "interrupted". */
dprl_json *dprl_json_parse_polled(const char *text, size_t len, dprl_cancel *cancel,
                                  dprl_error *err);
/* The same, but an array whose items are all numbers is stored as
** nums[n] with items NULL (a model of 10^7 numbers: one allocation per
** array instead of a node per number).  Only code that reads nums may
** take such a tree. */
dprl_json *dprl_json_parse_compact(const char *text, size_t len, dprl_cancel *cancel,
                                   dprl_error *err);
void dprl_json_free(dprl_json *v);

/* Member of an object, or NULL. */
const dprl_json *dprl_json_get(const dprl_json *obj, const char *key);
const char *dprl_json_type_name(dprl_json_type t);

/* The parser's number reader (json_number.c): the JSON number at
** s[0..len), s[0] a '-' or a digit.  Returns its length and sets *out
** (exactly what strtod gives) and *integer (no fraction or exponent); 0 when
** malformed, with *expected ("expected a digit") and the offset *at.  A
** number of 64 characters or more has *out = 0 (the parser refuses it). */
size_t dprl_json_scan_number(const char *s, size_t len, double *out, int *integer,
                             const char **expected, size_t *at);

/* Writing: strings escaped; doubles in shortest round-trip form ("%.17g"
** trimmed); non-finite numbers become null. */
void dprl_json_put_string(dprl_buf *b, const char *s);
void dprl_json_put_double(dprl_buf *b, double x);
/* v written back as JSON (numbers as dprl_json_put_double writes them);
** the members of a top-level object named in skip (NULL-ended, or NULL)
** are left out.  Asks cancel (may be NULL) between items: DPRL_EINTR
** leaves a partial text in b. */
int dprl_json_write(dprl_buf *b, const dprl_json *v, const char *const *skip,
                    dprl_cancel *cancel, dprl_error *err);
void dprl_json_put_double_array(dprl_buf *b, const double *x, size_t n);
/* The same, asking cancel (may be NULL) whether to stop every few
** thousand numbers (10^7 of them take seconds): DPRL_EINTR leaves a
** partial array in b. */
int dprl_json_put_double_array_polled(dprl_buf *b, const double *x, size_t n,
                                      dprl_cancel *cancel, dprl_error *err);
void dprl_json_put_int_array(dprl_buf *b, const int64_t *x, size_t n);

/* x in the shortest of %.15g/%.16g/%.17g that reads back exactly (what
** dprl_json_put_double writes), into buf[n] (32 bytes are enough); returns
** buf.  For messages too: "got 0.1", never "got 0.10000000000000001". */
const char *dprl_json_num(double x, char *buf, size_t n);
/* Members after the first of an object: ,"k": then the value. */
void dprl_json_put_key(dprl_buf *b, const char *k);
void dprl_json_put_num(dprl_buf *b, const char *k, double x);
void dprl_json_put_int(dprl_buf *b, const char *k, int64_t x);

#endif
