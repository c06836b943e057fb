/* ope.c: options, calibration, estimators and the JSON of dp_is_value (ope.h). */
#include "ope/ope.h"

#include <math.h>
#include <string.h>

#include "base/json.h"
#include "base/options.h"
#include "dp/accountant.h"
#include "dp/zcdp.h"

static const char *const release_names[] = {
    "gamma", "rmin", "rmax", "gmin", "gmax", "weight_max", "horizon", "epsilon", "delta",
    "weighted", "ratio_max", "diagnostics", "seed", "release", "budget", "weight_quantile",
    "weight_share", NULL};
/* The plan reads no data: no seed, release or budget; a hypothetical size. */
static const char *const plan_names[] = {
    "mechanism", "episodes", "gamma", "rmin", "rmax", "gmin", "gmax", "weight_max", "horizon",
    "epsilon", "delta", "weighted", "ratio_max", "diagnostics", "weight_quantile", "weight_share",
    NULL};

/* Bits of the grid below the noise scale: fine enough that rounding is
** negligible next to the noise, coarse enough that 2^51 grid steps hold
** the sums of about 2^29 sigma1 episodes (ALGORITHMS.md §15.3). */
#define OPE_GRID_BITS 20

/* sum_{k<H} gamma^k: the largest number of reward units a return holds. */
static double discount_sum(double gamma, int64_t h) {
  if (gamma == 1) return (double)h;
  return (1 - pow(gamma, (double)h)) / (1 - gamma);
}

/* The measured defaults of "weight_max": "auto" (§15.8, make utility). */
#define WEIGHT_QUANTILE_DEFAULT 0.75
#define WEIGHT_SHARE_DEFAULT 0.1
#define WEIGHT_TOP_LOG2 10 /* the grid's top without ratio_max: 2^10 */

/* weight_max: a number in [1, 10^12] or "auto" (the default): W chosen
** privately on the grid up to ratio_max^H (at most 2^10), or 2^10. */
static int parse_weight(dprl_ope_config *c, const dprl_options *o) {
  const dprl_json *w = dprl_opt_get(o, "weight_max");
  int is_str = w && w->type == DPRL_JSON_STRING;
  c->weight_auto = !w || (is_str && w->n == 4 && memcmp(w->str, "auto", 4) == 0);
  if (is_str && !c->weight_auto) {
    char got[64];
    dprl_json_describe(w, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option weight_max must be a number in [1, 10^12] (a public bound on "
                     "an episode's importance weight) or \"auto\" (chosen privately), got %s",
                     o->fn, got);
  }
  int rc;
  if (!c->weight_auto) {
    if (dprl_opt_has(o, "weight_quantile") || dprl_opt_has(o, "weight_share"))
      return dprl_fail(o->err, DPRL_EINVAL, "%s: options weight_quantile and weight_share "
                       "apply to \"weight_max\": \"auto\"", o->fn);
    return dprl_opt_number(o, "weight_max", 1, 0, DPRL_CLOSED(1, 1e12), &c->weight_max);
  }
  if ((rc = dprl_opt_number(o, "weight_quantile", 0, WEIGHT_QUANTILE_DEFAULT,
                            (dprl_range){0, 1, 1, 0}, &c->weight_q)) ||
      (rc = dprl_opt_number(o, "weight_share", 0, WEIGHT_SHARE_DEFAULT, DPRL_OPEN(0, 1),
                            &c->weight_share)))
    return rc;
  double lt = c->ratio_max >= 1 ? (double)c->horizon * log2(c->ratio_max) : WEIGHT_TOP_LOG2;
  c->weight_top = exp2(lt < WEIGHT_TOP_LOG2 ? lt : WEIGHT_TOP_LOG2);
  c->rho_cap = dprl_zcdp_rho_left(0, 0, 0, c->epsilon, c->delta);
  if (!(c->rho_cap > 0 && isfinite(c->rho_cap)))
    return dprl_fail(o->err, DPRL_EINVAL, "%s: epsilon = %g and delta = %g leave no rho for "
                     "\"weight_max\": \"auto\"", o->fn, c->epsilon, c->delta);
  if ((rc = dprl_gridq_init(&c->gq, c->weight_top, c->weight_q, c->weight_share * c->rho_cap,
                            o->fn, o->err)))
    return rc;
  if (!(c->gq.rho < c->rho_cap))
    return dprl_fail(o->err, DPRL_EINVAL, "%s: weight_share = %g leaves no rho for the release",
                     o->fn, c->weight_share);
  c->weight_max = c->weight_top; /* calibrated at the top: the most noise it can have */
  return DPRL_OK;
}

static int parse_all(dprl_ope_config *c, const dprl_options *o, int plan) {
  static const char *const releases[] = {"private", "diagnostic", NULL};
  static const char *const mechs[] = {"dp_is_value", NULL};
  int rc, mech = 0;
  if ((rc = dprl_opt_number(o, "gamma", 1, 0, DPRL_CLOSED(0, 1), &c->gamma)) ||
      (rc = dprl_opt_reward_bounds(o, &c->rmin, &c->rmax)) ||
      (rc = dprl_opt_int(o, "horizon", 1, 0, DPRL_CLOSED(1, 1e9), &c->horizon)) ||
      (rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon)) ||
      (rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta)) ||
      (rc = dprl_opt_bool(o, "weighted", 1, &c->weighted)) ||
      (rc = dprl_opt_number(o, "ratio_max", 0, 0, DPRL_CLOSED(1, 1e12), &c->ratio_max)) ||
      (rc = dprl_opt_number(o, "diagnostics", 0, 0, DPRL_CLOSED(0, 1), &c->diag_share)))
    return rc;
  if (plan) {
    if ((rc = dprl_opt_choice(o, "mechanism", mechs, 0, &mech)) ||
        (rc = dprl_opt_number(o, "episodes", 1, 0, DPRL_CLOSED(1, 1e15), &c->episodes)))
      return rc;
  } else if ((rc = dprl_opt_choice(o, "release", releases, 0, &c->diagnostic)) ||
             (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)) ||
             (rc = dprl_opt_name(o, "budget", &c->budget))) {
    return rc;
  }
  /* Every return lies in [gmin, gmax] by default: an episode of k <= H
  ** steps sums k discounted rewards, so the extremes are one step or H. */
  double sh = discount_sum(c->gamma, c->horizon);
  double lo = c->rmin < 0 ? c->rmin * sh : c->rmin, hi = c->rmax > 0 ? c->rmax * sh : c->rmax;
  if ((rc = dprl_opt_number(o, "gmin", 0, lo, DPRL_ANY, &c->gmin)) ||
      (rc = dprl_opt_number(o, "gmax", 0, hi, DPRL_ANY, &c->gmax)))
    return rc;
  c->range_given = dprl_opt_has(o, "gmin") && dprl_opt_has(o, "gmax");
  if ((rc = parse_weight(c, o))) return rc;
  if (!(c->gmax > c->gmin)) {
    char a[32], b[32];
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: the return range must have gmax > gmin, got [%s, %s] (options gmin "
                     "and gmax, or their defaults from rmin, rmax, gamma and horizon)",
                     o->fn, dprl_json_num(c->gmin, a, sizeof a), dprl_json_num(c->gmax, b, sizeof b));
  }
  if (!(isfinite(c->gmax - c->gmin)))
    return dprl_fail(o->err, DPRL_EINVAL, "%s: the return range [gmin, gmax] must be finite",
                     o->fn);
  return DPRL_OK;
}

int dprl_ope_config_parse(dprl_ope_config *c, const char *fn, const char *text, size_t len,
                          int plan, dprl_cancel *cancel, dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->fn = fn;
  c->episodes = -1;
  int rc = dprl_options_open_polled(&o, fn, text, len, plan ? plan_names : release_names,
                                    cancel, err);
  if (!rc) rc = parse_all(c, &o, plan);
  dprl_options_close(&o);
  if (rc) dprl_ope_config_free(c);
  return rc;
}

void dprl_ope_config_free(dprl_ope_config *c) {
  dprl_free(c->budget);
  c->budget = NULL;
}

static int calibrate_at(const dprl_ope_config *c, dprl_ope_noise *nz, dprl_error *err);

int dprl_ope_calibrate(const dprl_ope_config *c, dprl_ope_noise *nz, dprl_error *err) {
  if (c->weight_auto && c->weight_max == c->weight_top) {
    /* before the rows: every edge the histogram can pick calibrates (the
    ** scale grows with W, so the two ends suffice): no refusal after them */
    dprl_ope_config low = *c;
    low.weight_max = dprl_gridq_edge(&c->gq, 0);
    int rc = calibrate_at(&low, nz, err);
    if (rc) return rc;
  }
  return calibrate_at(c, nz, err);
}

/* sens_steps^2 / (2 s^2) within what the automatic bound leaves: rho_cap
** less the histogram's, the sum rounded up (§15.8). */
static int auto_fits(const dprl_ope_config *c, double k, uint64_t s) {
  return nextafter(c->gq.rho + dprl_zcdp_rho(k, (double)s), INFINITY) <= c->rho_cap;
}

static int calibrate_at(const dprl_ope_config *c, dprl_ope_noise *nz, dprl_error *err) {
  memset(nz, 0, sizeof *nz);
  nz->B = c->gmax - c->gmin;
  nz->c = c->gmin + nz->B / 2;
  nz->kw = nz->B / sqrt(2.0);
  nz->kn = c->weight_max * nz->B / 2;
  /* §15.7: the diagnostics' block adds at most s W^2 B^2 to the squared
  ** distance of neighbours, for both relations */
  double s2 = sqrt(c->diag_share / 2);
  nz->k2 = s2 * nz->B / c->weight_max;
  nz->kc = s2 * c->weight_max * nz->B;
  nz->dim = c->diag_share > 0 ? 5 : 3;
  nz->sens = c->weight_max * nz->B * (c->diag_share > 0 ? sqrt(1 + c->diag_share) : 1);
  nz->sigma1 = c->weight_auto ? 1 / sqrt(2 * (c->rho_cap - c->gq.rho))
                              : dprl_gdp_sigma(c->epsilon, c->delta, 1.0);
  double scale = nz->sens * nz->sigma1;
  if (!(isfinite(scale) && scale > 0x1p-900 && scale < 0x1p900))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: the noise scale %g (weight_max %g times the return range %g times "
                     "%g for epsilon %g, delta %g) is outside [2^-900, 2^900], where the noise "
                     "grid is exact; change the return range or weight_max",
                     c->fn, scale, c->weight_max, nz->B, nz->sigma1, c->epsilon, c->delta);
  nz->grid = dprl_grid_bits(scale, OPE_GRID_BITS);
  /* Rounding each of the dim entries to the grid moves it by at most half
  ** a step, so two neighbours' rounded vectors differ by at most sens +
  ** sqrt(dim) grid (ALGORITHMS.md §15.3). */
  nz->sens_steps = nz->sens / nz->grid + sqrt((double)nz->dim);
  double s = ceil(nz->sens_steps * nz->sigma1);
  if (!(s >= 1 && s <= (double)DPRL_GAUSS_STEPS_MAX))
    return dprl_fail(err, DPRL_EINVAL, "%s: the noise needs %g grid steps, outside 1..2^40",
                     c->fn, s);
  nz->steps = (uint64_t)s;
  if (c->weight_auto) { /* the smallest scale that fits; sigma1 put s within a step of it */
    while (nz->steps > 1 && auto_fits(c, nz->sens_steps, nz->steps - 1)) nz->steps--;
    while (!auto_fits(c, nz->sens_steps, nz->steps) && nz->steps < DPRL_GAUSS_STEPS_MAX)
      nz->steps++;
    if (!auto_fits(c, nz->sens_steps, nz->steps))
      return dprl_fail(err, DPRL_EINVAL, "%s: the noise needs more than 2^40 grid steps", c->fn);
  }
  nz->sigma = (double)nz->steps * nz->grid;
  nz->rho = c->weight_auto ? c->rho_cap : dprl_zcdp_rho(nz->sens_steps, (double)nz->steps);
  nz->cap = 0x1p51 * nz->grid;
  /* the largest |entry| one episode adds: max(W B/2, kw W, kn, k2 W^2, kc)
  ** = W B/sqrt(2) (s <= 1) */
  nz->episodes_max = floor(nz->cap / (c->weight_max * nz->kw));
  return DPRL_OK;
}

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void dprl_ope_episode(const dprl_ope_config *c, const dprl_ope_step *steps, size_t n,
                      double *w, double *g) {
  double log_w = 0, ret = 0, disc = 1;
  size_t h = n < (uint64_t)c->horizon ? n : (size_t)c->horizon;
  for (size_t k = 0; k < h; k++) {
    log_w += steps[k].log_ratio; /* -inf stays -inf: a step the target never takes */
    ret += disc * clampd(steps[k].reward, c->rmin, c->rmax);
    disc *= c->gamma;
  }
  *w = exp(log_w); /* +inf on overflow, 0 on underflow or -inf */
  *g = clampd(ret, c->gmin, c->gmax);
}

void dprl_ope_sums_add(const dprl_ope_config *c, const dprl_ope_noise *nz, dprl_ope_sums *s,
                       double w, double g, int clipped) {
  (void)c;
  s->S += w * (g - nz->c);
  s->T += w;
  s->n += 1;
  s->T2 += w * w;
  s->clipped += clipped;
  s->zero += w == 0;
}

void dprl_ope_vector(const dprl_ope_noise *nz, const dprl_ope_sums *s, double *v) {
  v[0] = s->S;
  v[1] = nz->kw * s->T;
  v[2] = nz->kn * s->n;
  if (nz->dim == 5) {
    v[3] = nz->k2 * s->T2;
    v[4] = nz->kc * s->clipped;
  }
}

void dprl_ope_estimate_from(const dprl_ope_config *c, const dprl_ope_noise *nz,
                            const double v[3], double sigma, dprl_ope_estimate *e) {
  double S = v[0], T = v[1] / nz->kw, n = v[2] / nz->kn;
  e->T = T;
  e->n = n;
  /* The public rule (§15.4): no estimate from a weight sum <= 0 or fewer
  ** than one episode; the value is then the centre of the range. */
  if (T > 0) {
    e->weighted = clampd(nz->c + S / T, c->gmin, c->gmax);
    double d = (e->weighted - nz->c) / nz->kw;
    e->se_weighted = sigma * sqrt(1 + d * d) / T;
  } else {
    e->weighted = nz->c;
    e->se_weighted = NAN;
  }
  if (n >= 1) {
    e->ordinary = clampd((S + nz->c * T) / n, c->gmin, c->gmax);
    double a = nz->c / nz->kw, b = e->ordinary / nz->kn;
    e->se_ordinary = sigma * sqrt(1 + a * a + b * b) / n;
  } else {
    e->ordinary = nz->c;
    e->se_ordinary = NAN;
  }
}

double dprl_ope_bias_bound(const dprl_ope_config *c, const dprl_ope_noise *nz) {
  if (!(c->ratio_max >= 1)) return NAN;
  /* w <= ratio_max^H: no weight is ever clipped */
  double log_wmax = (double)c->horizon * log(c->ratio_max);
  if (log_wmax <= log(c->weight_max)) return 0;
  /* alpha = E_b[(w - W)+] <= E_b[w^2]/(4W) <= ratio_max^H/(4W), and <= 1 */
  double alpha = exp(log_wmax - log(4 * c->weight_max));
  if (!(alpha < 1)) alpha = 1;
  if (!c->weighted) return fmax(fabs(c->gmin), fabs(c->gmax)) * alpha;
  return alpha < 0.5 ? nz->B * alpha / (1 - alpha) : nz->B;
}

void dprl_ope_put_range(const dprl_ope_config *c, dprl_buf *b) {
  dprl_json_put_key(b, "return_range");
  dprl_json_put_string(b, c->range_given ? "given" : "from rmin, rmax and horizon");
}

void dprl_ope_put_weight_auto(const dprl_ope_config *c, dprl_buf *b, int chosen) {
  dprl_json_put_key(b, "weight_from");
  dprl_json_put_string(b, c->weight_auto ? "auto" : "given");
  if (!c->weight_auto) return;
  const dprl_gridq *g = &c->gq;
  double e[DPRL_GRIDQ_EDGES_MAX];
  for (int j = 0; j < g->n; j++) e[j] = dprl_gridq_edge(g, j);
  dprl_json_put_num(b, "weight_quantile", c->weight_q);
  dprl_json_put_num(b, "weight_share", c->weight_share);
  dprl_json_put_key(b, "weight_edges");
  dprl_json_put_double_array(b, e, (size_t)g->n);
  dprl_json_put_num(b, "weight_sigma", (double)g->steps);
  dprl_json_put_num(b, "weight_rho", g->rho);
  if (!chosen) return;
  /* the noisy histogram (private output) and, from it, how often W bound */
  dprl_json_put_key(b, "weight_histogram");
  dprl_json_put_double_array(b, g->hist, (size_t)g->n);
  dprl_json_put_num(b, "weight_clipped_share", g->share);
}

static void put_est(dprl_buf *b, const char *key, double weighted, double ordinary) {
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "{\"weighted\":");
  dprl_json_put_double(b, weighted);
  dprl_buf_puts(b, ",\"ordinary\":");
  dprl_json_put_double(b, ordinary);
  dprl_buf_puts(b, "}");
}

/* §15.7: the effective sample size T^2 / T2 (in [0, n] for any weights,
** so clamped to it) and the clipped share, from the noisy vector; null
** when the noisy T, T2 or n gives none. */
static void put_diagnostics(const dprl_ope_noise *nz, const double noisy[5],
                            const dprl_ope_estimate *e, dprl_buf *b) {
  double T2 = noisy[3] / nz->k2, clipped = noisy[4] / nz->kc;
  double ess = e->T > 0 && T2 > 0 && e->n >= 1 ? clampd(e->T * e->T / T2, 0, e->n) : NAN;
  dprl_json_put_num(b, "effective_episodes", ess);
  dprl_json_put_num(b, "clipped_share", e->n >= 1 ? clampd(clipped / e->n, 0, 1) : NAN);
  dprl_json_put_num(b, "weight_square_sum", T2);
  dprl_json_put_num(b, "clipped", clipped);
  dprl_json_put_num(b, "sigma_weight_square_sum", nz->sigma / nz->k2);
  dprl_json_put_num(b, "sigma_clipped", nz->sigma / nz->kc);
}

static void put_json(const dprl_ope_config *c, const dprl_ope_noise *nz, const dprl_ope_sums *s,
                     const double noisy[5], const dprl_ope_estimate *e, dprl_buf *b) {
  dprl_buf_puts(b, "{\"mechanism\":\"dp_is_value\"");
  /* a seeded or diagnostic release is not private (ALGORITHMS.md §6) */
  dprl_buf_printf(b, ",\"private\":%s", c->diagnostic || c->has_seed ? "false" : "true");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  dprl_buf_puts(b, ",\"unit\":\"episode\"");
  dprl_buf_printf(b, ",\"estimator\":\"%s\"", c->weighted ? "weighted" : "ordinary");
  dprl_json_put_num(b, "value", c->weighted ? e->weighted : e->ordinary);
  dprl_json_put_num(b, "stderr", c->weighted ? e->se_weighted : e->se_ordinary);
  put_est(b, "values", e->weighted, e->ordinary);
  put_est(b, "stderrs", e->se_weighted, e->se_ordinary);
  dprl_json_put_num(b, "episodes", e->n);
  dprl_json_put_num(b, "weight_sum", e->T);
  dprl_json_put_num(b, "epsilon", c->epsilon);
  dprl_json_put_num(b, "delta", c->delta);
  dprl_json_put_num(b, "gamma", c->gamma);
  dprl_json_put_num(b, "rmin", c->rmin);
  dprl_json_put_num(b, "rmax", c->rmax);
  dprl_json_put_num(b, "gmin", c->gmin);
  dprl_json_put_num(b, "gmax", c->gmax);
  dprl_ope_put_range(c, b);
  dprl_json_put_int(b, "horizon", c->horizon);
  dprl_json_put_num(b, "weight_max", c->weight_max);
  dprl_ope_put_weight_auto(c, b, 1);
  /* the calibrated figure, rounding included: the one sigma and rho are of */
  dprl_json_put_num(b, "sensitivity", nz->sens_steps * nz->grid);
  dprl_json_put_num(b, "sigma", nz->sigma);
  dprl_json_put_num(b, "sigma_weight_sum", nz->sigma / nz->kw);
  dprl_json_put_num(b, "sigma_episodes", nz->sigma / nz->kn);
  dprl_json_put_num(b, "rho", nz->rho);
  dprl_json_put_num(b, "bias_bound", dprl_ope_bias_bound(c, nz));
  dprl_json_put_num(b, "episodes_max", nz->episodes_max);
  if (nz->dim == 5) {
    dprl_json_put_num(b, "diagnostics", c->diag_share);
    put_diagnostics(nz, noisy, e, b);
  }
  dprl_json_put_key(b, "released");
  dprl_json_put_double_array(b, noisy, (size_t)nz->dim);
  if (c->diagnostic) { /* exact, data-dependent: not covered by the guarantee */
    dprl_json_put_key(b, "exact");
    dprl_buf_puts(b, "{\"weighted\":");
    dprl_json_put_double(b, s->T > 0 ? nz->c + s->S / s->T : NAN);
    dprl_json_put_num(b, "ordinary", s->n > 0 ? (s->S + nz->c * s->T) / s->n : NAN);
    dprl_json_put_num(b, "episodes", s->n);
    dprl_json_put_num(b, "weight_sum", s->T);
    dprl_json_put_num(b, "weighted_return_sum", s->S + nz->c * s->T);
    dprl_json_put_num(b, "effective_episodes", s->T2 > 0 ? s->T * s->T / s->T2 : 0);
    dprl_json_put_num(b, "clipped", s->clipped);
    dprl_json_put_num(b, "zero_weight", s->zero);
    dprl_buf_puts(b, "}");
  }
  dprl_buf_puts(b, "}");
}

int dprl_ope_release(const dprl_ope_config *c, const dprl_ope_noise *nz,
                     const dprl_ope_sums *sums, dprl_rng *rng, dprl_buf *out, dprl_error *err) {
  double v[5], noisy[5];
  dprl_ope_vector(nz, sums, v);
  for (int i = 0; i < nz->dim; i++) {
    /* the public clamp (1-Lipschitz per entry: the sensitivity holds) */
    double x = clampd(v[i], -nz->cap, nz->cap);
    int rc = dprl_release_gaussian_steps(rng, x, nz->steps, nz->grid, &noisy[i], err);
    if (rc) return rc;
  }
  dprl_ope_estimate e;
  dprl_ope_estimate_from(c, nz, noisy, nz->sigma, &e);
  put_json(c, nz, sums, noisy, &e, out);
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}
