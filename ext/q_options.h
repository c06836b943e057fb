/*
** q_options.h: the options of dp_q_calibrate, dp_q_noise and dp_q_learn
** (JSON text -> typed settings), read once here for the three functions,
** plus the checks of a state and an action they share.  Plain C: the SQL
** glue (sql_q_*.c) hands over the options text and gets the settings or a
** message naming the option and the value:
**
**   SELECT dp_q_calibrate('{"epsilon": 1, "delta": 1e-5, "T": 5000,
**                           "B": 64, "lr": 3e-4, "k": 60, "K": 21}');
**   -- epsilon, delta, T, B, lr, k, K -> dprl_q_read_privacy -> dprl_q_cal
**
** Calibration: q_calibrate.h (Theorem 5); the approximator and its L:
** q_learn.h.
*/
#ifndef DPRL_Q_OPTIONS_H
#define DPRL_Q_OPTIONS_H

#include <stdint.h>

#include "core.h"
#include "options.h"
#include "q_calibrate.h"
#include "q_learn.h"

#define DPRL_Q_MAX_K 100000           /* features per action */
#define DPRL_Q_NOISE_MAX_ACTIONS 1000000
#define DPRL_Q_LEARN_MAX_ACTIONS 1024

/* "tent", "rbf" (indexed by dprl_qfeat_kind), NULL-ended. */
extern const char *const dprl_q_feature_names[];

/* The calibration inputs shared by the three functions, and the result. */
typedef struct dprl_q_cal {
  int64_t T, B, J;
  double epsilon, delta, lr, k, L;
  int acc;                 /* dprl_q_accountant */
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
} dprl_q_noise_cfg;

/* sigma and beta given, or calibrated (never with accountant "paper"). */
int dprl_q_noise_options(const char *text, size_t len, dprl_q_noise_cfg *c,
                         dprl_error *err);
void dprl_q_noise_cfg_free(dprl_q_noise_cfg *c);

/* ---- dp_q_learn ----------------------------------------------------------- */

typedef struct dprl_q_learn_cfg {
  dprl_q_learn_opts lo;
  dprl_q_cal cal;
  dprl_q_theta_noise th; /* the noise that makes theta private */
  int explicit_sigma;    /* sigma given: no calibration, not private */
  int has_seed;
  uint64_t seed;
} dprl_q_learn_cfg;

int dprl_q_learn_options(const char *text, size_t len, dprl_q_learn_cfg *c,
                         dprl_error *err);

#endif
