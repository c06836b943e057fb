/*
** mdp_eval.h: evaluating and planning on a released MDP model
** (dp_mdp_value, dp_mdp_plan; ALGORITHMS.md §14).  Deterministic
** post-processing of a dp_mdp release: no data is read and no budget
** spent.  The error bars resample the release's public noise from a
** seeded stream (dp/noise.c, DPRL_STREAM_MDP_BOOTSTRAP).
*/
#ifndef DPRL_MDP_EVAL_H
#define DPRL_MDP_EVAL_H

#include "base/core.h"
#include "mdp/model.h"

/* Values are solved exactly (an LU factorisation of I - gamma P_pi) up to
** this many states; above it, by value iteration to the tolerance. */
#define DPRL_MDPV_DIRECT_MAX 2048
#define DPRL_MDPV_BOOTSTRAP 200      /* default number of bootstrap draws */
#define DPRL_MDPV_BOOTSTRAP_MAX 100000
#define DPRL_MDPV_LEVEL 0.95         /* default confidence level of the interval */
/* default count_floor of a clipped release, in noise sds (ALGORITHMS.md 14.1, make utility) */
#define DPRL_MDPV_FLOOR_SIGMAS 3
#define DPRL_MDPV_TOLERANCE 1e-9     /* default tolerance, relative to max|r| / (1 - gamma) */
#define DPRL_MDPV_TIE 1e-12          /* Q values this close (relative) are tied */
/* The most value-iteration sweeps: a gamma that can need more (about
** 20 / (1 - gamma) at the default tolerance) is refused. */
#define DPRL_MDPV_SWEEPS_MAX 1e8

typedef struct dprl_mdpv_opts {
  double gamma;          /* the model's, or option gamma */
  int64_t horizon;       /* option horizon: H steps; 0 = discounted, infinite */
  dprl_mdpv_est_opts est;
  int64_t bootstrap;     /* draws; 0: no error bar */
  int interval;          /* 1: the log bootstrap's interval (mdp_interval.h); 0: none */
  double level;          /* its confidence level */
  double pessimism;      /* dp_mdp_plan: the lower bound's confidence level; 0: plain plan */
  uint64_t seed;         /* the bootstrap's seeded stream */
  double tolerance;      /* bound on the error of every value (iterative solves) */
} dprl_mdpv_opts;

/* The options of dp_mdp_value (plan = 0) or dp_mdp_plan (plan = 1) for
** model m ("{}" when the call has none; NULL is an error).  fn names the
** function in messages. */
int dprl_mdpv_options(const char *fn, const char *text, size_t len, int plan,
                      const dprl_mdpv_model *m, dprl_mdpv_opts *o, dprl_error *err);

/* The JSON results of dp_mdp_value and dp_mdp_plan, appended to out. */
int dprl_mdpv_value(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                    const dprl_mdpv_policies *p, dprl_buf *out, dprl_cancel *cancel,
                    dprl_error *err);
int dprl_mdpv_plan(const dprl_mdpv_model *m, const dprl_mdpv_opts *o, dprl_buf *out,
                   dprl_cancel *cancel, dprl_error *err);
/* dp_mdp_plan with o->pessimism (mdp_pessimism.c, ALGORITHMS.md §14.3). */
int dprl_mdpv_plan_pessimistic(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                               dprl_buf *out, dprl_cancel *cancel, dprl_error *err);
/* The keys every result of dp_mdp_value and dp_mdp_plan shares. */
void dprl_mdpv_put_common(dprl_buf *b, const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                          const dprl_mdpv_est *e, const char *method);

/* ---- the solvers (exposed for the unit tests) ------------------------------ */

typedef struct dprl_mdpv_work {
  int64_t S, A;
  double *mat;  /* S x S: I - gamma P_pi (direct solves only, allocated on first use) */
  double *v2;   /* S */
  int32_t *act; /* S */
} dprl_mdpv_work;
int dprl_mdpv_work_init(dprl_mdpv_work *w, int64_t S, int64_t A, dprl_error *err);
void dprl_mdpv_work_free(dprl_mdpv_work *w);

/* How a solve went: "direct", "iteration" or "backward induction"; the
** proven bound on max_s |V(s) - V_exact(s)|, rounding included, V_exact
** the exact-arithmetic value on the model of ALGORITHMS.md §14.1;
** sweeps or policy-iteration steps. */
typedef struct dprl_mdpv_solved {
  const char *method;
  double bound;
  int64_t iterations;
} dprl_mdpv_solved;

/* V[S] = V^pi on e: discounted (o->horizon 0, gamma < 1) or over
** o->horizon steps. */
int dprl_mdpv_evaluate_policy(const dprl_mdpv_est *e, const dprl_mdpv_opts *o,
                              const dprl_mdpv_policy *pi, dprl_mdpv_work *w, double *V,
                              dprl_mdpv_solved *how, dprl_cancel *cancel, dprl_error *err);
/* The same for pi[S*A] = pi(a|s). */
int dprl_mdpv_evaluate(const dprl_mdpv_est *e, const dprl_mdpv_opts *o, const double *pi,
                       dprl_mdpv_work *w, double *V, dprl_mdpv_solved *how,
                       dprl_cancel *cancel, dprl_error *err);
/* The optimal Q[S*A], V[S] = max_a Q and the greedy policy[S] (ties, within
** DPRL_MDPV_TIE of the value scale, to the lowest action).  With a horizon,
** Q and the policy are those of the first of the H steps. */
int dprl_mdpv_optimize(const dprl_mdpv_est *e, const dprl_mdpv_opts *o, dprl_mdpv_work *w,
                       double *Q, double *V, int32_t *policy, dprl_mdpv_solved *how,
                       dprl_cancel *cancel, dprl_error *err);

#endif
