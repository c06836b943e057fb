/*
** q_options.h: the options of dp_q_calibrate, dp_q_noise and dp_q_learn
** (JSON text -> typed settings), read once here for the three functions,
** plus the checks of a state and an action they share.  Plain C: the SQL
** glue (sql_q_*.c) hands over the options text and gets the settings or a
** message naming the option and the value:
**
**   SELECT dp_q_calibrate('{"epsilon": 1, "delta": 1e-5, "T": 5000,
**                           "B": 64, "lr": 3e-4, "rmin": 0, "rmax": 1, "k": 60, "K": 21}');
**   -- epsilon, delta, T, B, lr, k, K -> dprl_q_read_privacy -> dprl_q_cal
**
** Calibration: q_calibrate.h (Theorem 5); the approximator and its L:
** q_learn.h.
*/
#ifndef DPRL_Q_OPTIONS_H
#define DPRL_Q_OPTIONS_H

#include <stdint.h>

#include "base/core.h"
#include "base/options.h"
#include "dp/plan.h"
#include "q_learning/q_calibrate.h"
#include "q_learning/q_learn.h"

/* ---- size limits ------------------------------------------------------------
** Checked when the options (or the rows) are read, before anything of
** that size is allocated; each message names the option, its value and
** the limit.  Memory limits come from DPRL_MAX_ALLOC (core.h), the
** largest single allocation. */
#define DPRL_Q_MAX_K 100000           /* features per action */
#define DPRL_Q_MAX_STEPS 1000000000   /* T, and J */
/* B <= T <= 2^30: dp_q_learn's floating-point bound (ALGORITHMS.md §10,
** DPRL_Q_FP_SLACK) sums at most 2^30 rewards per update. */
_Static_assert(DPRL_Q_MAX_STEPS <= (1 << 30), "B must stay <= 2^30");
#define DPRL_Q_NOISE_MAX_ACTIONS 1000000
#define DPRL_Q_LEARN_MAX_ACTIONS 1024
/* dp_q_learn's result holds n_actions * K numbers of at most 24 characters
** (-1.2345678901234567e-308) and a comma each, 3 bytes per action, and at
** most DPRL_Q_RESULT_FIXED bytes more; it must fit in SQLite's length
** limit and in a buffer of one allocation (doubling from 256 bytes: at
** most 2^30 bytes, so 2^30 - 1 characters). */
#define DPRL_Q_BYTES_PER_NUMBER 25
#define DPRL_Q_RESULT_FIXED 4096
#define DPRL_Q_MAX_RESULT 1073741823
/* dp_q_learn keeps the transitions (4 arrays of 8 bytes each) and, when it
** presamples the paths, sorts 2 states per transition (16 bytes each with
** their index, and as many in the merged path): 32 bytes a transition in
** one allocation. */
#define DPRL_Q_MAX_TRANSITIONS (DPRL_MAX_ALLOC / 32)
/* dp_q_noise returns its rows through sql_tvf.c's buffer, 32 bytes a row
** (4 columns of 8) in one allocation whose capacity doubles from 256 rows:
** 2^25 rows need 2^30 bytes; 2^25 + 1 would need 2^31. */
#define DPRL_Q_NOISE_MAX_POINTS ((size_t)1 << 25)
/* Stored points of one action that dp_q_noise loads (16 bytes each, merged
** with up to DPRL_Q_NOISE_MAX_POINTS new ones in one allocation). */
#define DPRL_Q_PATH_MAX_POINTS ((size_t)1 << 26)

/* "tent", "rbf" (indexed by dprl_qfeat_kind), NULL-ended. */
extern const char *const dprl_q_feature_names[];
/* The option "neighbours": "range", "unit" (indexed by dprl_q_neighbours). */
extern const char *const dprl_q_neighbour_names[];

/* The calibration inputs shared by the three functions, and the result. */
typedef struct dprl_q_cal {
  int64_t T, B, J;
  double epsilon, delta, lr, k, L;
  int acc;                 /* dprl_q_accountant */
  int nb;                  /* dprl_q_neighbours: the relation the release covers */
  int L_computed;          /* L from the approximator (K, features, rmin, rmax) */
  dprl_q_features feat;    /* the approximator, when known */
  double rmin, rmax;
  dprl_q_calib_out out;
} dprl_q_cal;

/* T, B <= T, J (default floor(T/B): a fresh path every batch). */
int dprl_q_read_schedule(const dprl_options *o, dprl_q_cal *c);
/* features, K, rmin, rmax (lo, hi are read by the caller if it has them). */
int dprl_q_read_approximator(const dprl_options *o, int K_required, dprl_q_cal *c);
/* epsilon, delta, the schedule, lr, k, accountant, and L: given, or (learn,
** or K given) computed from the approximator as dp_q_learn does. */
int dprl_q_read_privacy(const dprl_options *o, int learn, dprl_q_cal *c);
/* lo, hi (default [0, 1]), hi > lo. */
int dprl_q_read_interval(const dprl_options *o, double *lo, double *hi);
/* sigma, beta from Theorem 5; refused when delta_total >= 1. */
int dprl_q_cal_run(const char *fn, dprl_q_cal *c, dprl_error *err);
/* J >= T/B: a fresh path every batch (what the accountants compose). */
int dprl_q_fresh_paths(const dprl_q_cal *c);
extern const char *const dprl_q_reuse_note; /* says J < T/B is not covered */
/* ,"sigma":...,"beta":...: the calibration and its public inputs. */
void dprl_q_put_calibration(dprl_buf *b, const dprl_q_cal *c);
/* The unit of privacy a release under relation nb protects, as the ledger
** records it: "reward function" (range) or "unit reward change" (unit);
** a budget of one refuses a release of the other. */
const char *dprl_q_unit(int nb);
/* ,"unit":...,"neighbours":...,"relation":...: what the release protects. */
void dprl_q_put_relation(dprl_buf *b, int nb);
/* ,"T":...,"B":...,"J":...,"lr":... */
void dprl_q_put_schedule(dprl_buf *b, int64_t T, int64_t B, int64_t J, double lr);
/* ,"k":...,"L":...,"v":...,"C":...,"mu":...,"margin":... (part of the above). */
void dprl_q_put_constants(dprl_buf *b, const dprl_q_cal *c);

/* "<what> must be in [lo, hi] = [0, 1], got 1.5" */
int dprl_q_check_state(double s, double lo, double hi, const char *what,
                       dprl_error *err);
/* "<what> must be in 0..n_actions-1 = 0..1, got 2" */
int dprl_q_check_action(int64_t a, int64_t n_actions, const char *what,
                        dprl_error *err);

/* ---- dp_q_calibrate ------------------------------------------------------- */

int dprl_q_calibrate_options(const char *text, size_t len, dprl_q_cal *c,
                             dprl_error *err);

/* ---- dp_q_noise ----------------------------------------------------------- */

typedef struct dprl_q_noise_cfg {
  int64_t n_actions;
  double lo, hi;
  double sigma, beta, grid;
  dprl_q_cal cal;
  char *path; /* the "path" option as given, or NULL (dprl_malloc'd) */
  int has_seed;
  uint64_t seed;
  char *budget; /* a privacy ledger to charge, or NULL (dprl_malloc'd) */
} dprl_q_noise_cfg;

/* sigma and beta given, or calibrated (never with accountant "paper"). */
int dprl_q_noise_options(const char *text, size_t len, dprl_q_noise_cfg *c,
                         dprl_error *err);
/* The same from options already open (dp_plan reads them under its name,
** with its own keys). */
int dprl_q_noise_read(const dprl_options *o, dprl_q_noise_cfg *c);
void dprl_q_noise_cfg_free(dprl_q_noise_cfg *c);

/* ---- dp_q_learn ----------------------------------------------------------- */

typedef struct dprl_q_learn_cfg {
  dprl_q_learn_opts lo;
  dprl_q_cal cal;
  dprl_q_theta_noise th; /* the noise that makes theta private */
  int explicit_sigma;    /* sigma given: no calibration, not private */
  int has_seed;
  uint64_t seed;
  char *budget;          /* a privacy ledger to charge, or NULL */
} dprl_q_learn_cfg;
void dprl_q_learn_cfg_free(dprl_q_learn_cfg *c);

/* max_result: the longest text SQLite accepts as the result (its
** SQLITE_LIMIT_LENGTH); n_actions * K must fit in it. */
int dprl_q_learn_options(const char *text, size_t len, int64_t max_result,
                         dprl_q_learn_cfg *c, dprl_error *err);
/* The same from options already open (as dprl_q_noise_read). */
int dprl_q_learn_read(const dprl_options *o, int64_t max_result, dprl_q_learn_cfg *c);

/* ---- dp_plan (plan.c) ----------------------------------------------------- */

/* dp_plan of dp_q_learn and dp_q_noise (study.h's dprl_plan_fn), named by
** the option "mechanism": the calibration the release would use, its noise
** against the signal the rewards can carry (ALGORITHMS.md section 8.2), as
** JSON into out, and what the release would cost into cost. */
int dprl_q_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

#endif
