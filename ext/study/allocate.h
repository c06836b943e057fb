/*
** allocate.h: a study's budget divided among its releases by shares
** (ALGORITHMS.md §12.3).  Inside study/ only.
**
** With "allocate": true, dp_plan chooses every release's epsilon and
** delta: each release says its "share" (default 1) and none says its
** epsilon or delta.  Under basic composition a release of share w (of W in
** all) gets w/W of what the budget has left, of both epsilon and delta.
** Under zCDP the releases that are not Gaussian get w/W of the epsilon
** left, as their ledger adds it, and w/W of half the delta left (all of it
** when every release is of that kind); the Gaussian ones share the rho the
** budget can still take after them (dprl_zcdp_rho_left) by their shares,
** and each gets the largest epsilon, at the budget's delta (or a smaller
** one where even a tiny epsilon costs more), whose planned rho is within
** its part (the mechanism's own calibration, grid rounding included).  A release charged k times (per_group, "groups": k) gets
** 1/k of its part for each charge.  The allocated study then fits: every
** part is rounded down.
*/
#ifndef DPRL_STUDY_ALLOCATE_H
#define DPRL_STUDY_ALLOCATE_H

#include "base/json.h"
#include "base/options.h"
#include "dp/plan.h"
#include "dp/zcdp.h"

/* Plan release i's opts (its options with epsilon and delta set) into
** cost; used to learn each release's kind and its rho at a given epsilon. */
typedef int (*dprl_alloc_plan_fn)(void *ctx, size_t i, const dprl_json *opts,
                                  dprl_plan_cost *cost, dprl_error *err);

/* The releases of rel (a JSON array of dp_plan options with shares) with
** their epsilon and delta chosen against spent: n new option trees into
** *trees (free each with dprl_json_free, the array with dprl_free).
** A release of another unit than the budget's is refused.  Errors name
** the release and the option. */
int dprl_study_allocate(const char *fn, const dprl_json *rel, const dprl_spent *spent,
                        const char *unit, dprl_alloc_plan_fn plan, void *ctx,
                        dprl_cancel *cancel, dprl_json ***trees, dprl_error *err);

#endif
