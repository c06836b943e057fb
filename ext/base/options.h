/*
** options.h: the options argument of every dprl function (JSON text),
** read into typed values with one style of message:
**   "dp_lsw: option epsilon must be > 0, got -1"
**   "dp_lsw: unknown option \"epsilon_\" (known: n_states, gamma, ...)"
** Every function lists its known keys; an unknown key is an error, so a
** typo never silently falls back to a default.
*/
#ifndef DPRL_OPTIONS_H
#define DPRL_OPTIONS_H

#include <math.h>

#include "base/core.h"
#include "base/json.h"

typedef struct dprl_options {
  const char *fn; /* function name used in messages */
  dprl_json *root;
  dprl_error *err;
} dprl_options;

/* An interval for numeric options; use the DPRL_* constructors below. */
typedef struct dprl_range {
  double lo, hi;
  int lo_open, hi_open;
} dprl_range;

#define DPRL_ANY ((dprl_range){-HUGE_VAL, HUGE_VAL, 1, 1})
#define DPRL_POSITIVE ((dprl_range){0, HUGE_VAL, 1, 1})
#define DPRL_NONNEG ((dprl_range){0, HUGE_VAL, 0, 1})
#define DPRL_OPEN(a, b) ((dprl_range){(a), (b), 1, 1})
#define DPRL_CLOSED(a, b) ((dprl_range){(a), (b), 0, 0})
#define DPRL_CLOSED_OPEN(a, b) ((dprl_range){(a), (b), 0, 1})
#define DPRL_AT_LEAST(a) ((dprl_range){(a), HUGE_VAL, 0, 1})
#define DPRL_AT_MOST(b) ((dprl_range){-HUGE_VAL, (b), 1, 0})

/* Parse text as a JSON object whose keys are all in known[] (NULL-ended;
** known NULL: any key, for a caller that checks them itself).
** NULL text is an error naming the options argument. */
int dprl_options_open(dprl_options *o, const char *fn, const char *text,
                      size_t len, const char *const *known, dprl_error *err);
/* The same, the JSON parse asking cancel (may be NULL) whether to stop
** (10^7 numbers take seconds): DPRL_EINTR, "interrupted". */
int dprl_options_open_polled(dprl_options *o, const char *fn, const char *text, size_t len,
                             const char *const *known, dprl_cancel *cancel, dprl_error *err);
void dprl_options_close(dprl_options *o);

const dprl_json *dprl_opt_get(const dprl_options *o, const char *key);
int dprl_opt_has(const dprl_options *o, const char *key);

/* Each getter: absent and !required -> *out = dflt, DPRL_OK; absent and
** required -> error "option X is required"; wrong type or out of range ->
** error naming the key and the value. */
int dprl_opt_number(const dprl_options *o, const char *key, int required,
                    double dflt, dprl_range r, double *out);
int dprl_opt_int(const dprl_options *o, const char *key, int required,
                 int64_t dflt, dprl_range r, int64_t *out);
int dprl_opt_bool(const dprl_options *o, const char *key, int dflt, int *out);
/* String among choices (NULL-ended); *out = index. */
int dprl_opt_choice(const dprl_options *o, const char *key,
                    const char *const *choices, int dflt, int *out);
/* Array of exactly n numbers each in r, copied into a new array (caller
** frees with dprl_free); absent -> *out = NULL. */
int dprl_opt_number_array(const dprl_options *o, const char *key, size_t n,
                          dprl_range r, double **out);
/* An optional name (e.g. "budget"): a non-empty string without NUL,
** copied into *out (dprl_free); absent -> *out = NULL. */
int dprl_opt_name(const dprl_options *o, const char *key, char **out);
/* The public reward bounds "rmin" < "rmax": both required (never a
** default, never read from the data), with a message that says what they
** are and why they must be public. */
int dprl_opt_reward_bounds(const dprl_options *o, double *rmin, double *rmax);
/* The optional "seed": an integer in [0, 2^53 - 1] (the integers a double
** holds apart). */
int dprl_opt_seed(const dprl_options *o, int *has_seed, uint64_t *seed);

/* "must be > 0", "must be in (0, 1)", ... for messages elsewhere. */
void dprl_range_describe(dprl_range r, char *out, size_t n);
int dprl_range_contains(dprl_range r, double x);
/* A JSON value in a message: numbers as %g, strings quoted, else type. */
void dprl_json_describe(const dprl_json *v, char *out, size_t n);

#endif
