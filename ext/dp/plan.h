/*
** plan.h: what a planned release would cost and whether it can answer,
** before any epsilon is spent (plain C, no SQLite; ALGORITHMS.md section
** 12.2).  Every mechanism's plan fills one from its options alone (public
** parameters and hypothetical sizes, never the data); the study plan
** (study/) composes them against a budget under its accountant.
*/
#ifndef DPRL_PLAN_H
#define DPRL_PLAN_H

typedef struct dprl_plan_cost {
  const char *mechanism; /* the SQL function, e.g. "dp_lsw" */
  const char *unit;      /* its unit of privacy: "episode", "expert", "reward function",
                          ** "unit reward change" */
  double epsilon, delta; /* what the release states, as its ledger row records them */
  int gaussian;          /* charged as rho-zCDP by the zCDP accountant (section 12.1) */
  double rho;
  int per_group;  /* 1: a GROUP BY of k groups costs k releases (section 12: the
                  ** groups do not partition its unit); 0: one release */
  int useful;     /* 0: at the planned sizes the release returns nothing useful */
  char why[240];  /* when !useful: why, naming the public sizes and options */
} dprl_plan_cost;

#endif
