/*
** clip_auto.c: dp_mdp's "clip": "auto" (ALGORITHMS.md §13.6).
**
** Before the release, each episode's contribution norm falls in one bin
** of a public grid of clips, edges top 2^((j + 1 - K) / 4), j < K, top the
** bound the horizon sets; the K bin counts get discrete Gaussian noise
** (one episode moves one count: l2 sensitivity 1 added or removed, sqrt 2
** replaced), and C is the edge where the noisy share of episodes above it
** first falls to 1 - clip_quantile.  The histogram takes gq.rho of the
** release's rho_cap (the largest rho that converts to its epsilon and
** delta), the release the rest: one rho_cap-zCDP release by adaptive
** composition, charged rho_cap whatever C is.
*/
#include <math.h>
#include <string.h>

#include "dp/zcdp.h"
#include "mdp/internal.h"

/* The quantile and share: the measured defaults (§13.6, make utility). */
#define QUANTILE_DEFAULT 0.5
#define SHARE_DEFAULT 0.1

double dprl_mdp_auto_edge(const dprl_mdp_config *c, int j) { return dprl_gridq_edge(&c->gq, j); }

int dprl_mdp_auto_options(dprl_mdp_config *c, const dprl_options *o) {
  if (!c->clip_auto) {
    if (dprl_opt_has(o, "clip_quantile") || dprl_opt_has(o, "clip_share"))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: options clip_quantile and clip_share apply to \"clip\": \"auto\"",
                       o->fn);
    return DPRL_OK;
  }
  if (!c->horizon)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option clip \"auto\" needs option horizon: its grid of clips runs up "
                     "to the bound the horizon sets on one episode's contribution", o->fn);
  double q;
  int rc = dprl_opt_number(o, "clip_quantile", 0, QUANTILE_DEFAULT, (dprl_range){0, 1, 1, 0}, &q);
  if (!rc) rc = dprl_opt_number(o, "clip_share", 0, SHARE_DEFAULT, DPRL_OPEN(0, 1), &c->clip_share);
  if (rc) return rc;
  double H = (double)c->horizon, top = c->sparse ? sqrt(1 + 3 * H * H) : sqrt(1 + 2 * H * H);
  c->rho_cap = dprl_zcdp_rho_left(0, 0, 0, c->epsilon, c->sparse ? c->delta / 2 : c->delta);
  double want = c->clip_share * c->rho_cap;
  if (!(c->rho_cap > 0 && isfinite(c->rho_cap) && ceil(1 / sqrt(want)) <= (double)DPRL_GAUSS_STEPS_MAX))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: epsilon = %g, delta = %g and clip_share = %g give no noise scale for "
                     "the histogram of \"clip\": \"auto\" within the exact sampler's range",
                     o->fn, c->epsilon, c->delta, c->clip_share);
  /* the horizon's bound keeps the grid within DPRL_MDP_EDGES_MAX edges: H <= 2^40 */
  if ((rc = dprl_gridq_init(&c->gq, top, q, want, o->fn, o->err))) return rc;
  if (!(c->gq.rho < c->rho_cap))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: clip_share = %g leaves no rho for the release", o->fn, c->clip_share);
  return DPRL_OK;
}

int dprl_mdp_auto_bin(const dprl_mdp_config *c, double norm) { return dprl_gridq_bin(&c->gq, norm); }

int dprl_mdp_auto_choose(dprl_mdp_config *c, const int64_t *bins, dprl_error *err) {
  dprl_rng rng;
  int rc;
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, DPRL_STREAM_MDP | 1);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  c->clip = dprl_gridq_choose(&c->gq, bins, &rng);
  dprl_rng_wipe(&rng);
  return dprl_mdp_calibrate(c, err);
}

/* The calibration at the grid's smallest edge, checked from the options
** alone, so that no C the histogram can pick fails (§13.6). */
int dprl_mdp_auto_check(const dprl_mdp_config *c, dprl_error *err) {
  dprl_mdp_config low = *c;
  low.clip = dprl_mdp_auto_edge(c, 0);
  return dprl_mdp_calibrate(&low, err);
}
