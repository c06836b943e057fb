/*
** fuzz_noise.c: the samplers and calibrations with arbitrary parameters:
** discrete Gaussian and Laplace scales, grid releases of arbitrary
** values, the Ornstein-Uhlenbeck path at arbitrary points, the Q-learning
** and statistics calibrations.  The input bytes are read as parameters.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "q_learning/gp_path.h"
#include "dp/noise.h"
#include "q_learning/q_calibrate.h"
#include "policy_eval/stats_perturb.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static uint64_t u64(reader *r) {
  uint64_t x = 0;
  size_t k = r->n < 8 ? r->n : 8;
  memcpy(&x, r->p, k);
  r->p += k;
  r->n -= k;
  return x;
}

static double f64(reader *r) {
  uint64_t x = u64(r);
  double d;
  memcpy(&d, &x, sizeof d);
  return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  dprl_rng rng;
  dprl_error err = {0};
  dprl_rng_init_seeded(&rng, u64(&r), u64(&r));
  uint64_t s = u64(&r) % (1u << 20) + 1, t = u64(&r) % (1u << 20) + 1;
  (void)dprl_discrete_gaussian(&rng, s);
  (void)dprl_discrete_laplace(&rng, t);
  double value = f64(&r), scale = f64(&r), g = dprl_grid_for(fabs(f64(&r)));
  double out;
  dprl_release_gaussian(&rng, value, scale, g, &out, &err);
  dprl_release_laplace(&rng, value, scale, g, &out, &err);
  dprl_release_gaussian_steps(&rng, value, u64(&r) % ((uint64_t)1 << 41), g, &out, &err);
  /* the path: sigma, beta, then up to 64 points in [0, 1] */
  double sigma = fabs(f64(&r)), beta = fabs(f64(&r));
  if (isfinite(sigma) && sigma > 1e-300 && sigma < 1e300 && isfinite(beta) && beta < 1e300) {
    dprl_gp_path *p = dprl_gp_path_create(sigma, beta, dprl_grid_for(sigma), &err);
    if (p) {
      double xs[64], vals[64];
      size_t n = 0;
      while (n < 64 && r.n >= 2) {
        xs[n++] = (double)(r.p[0] | r.p[1] << 8) / 65535.0;
        r.p += 2;
        r.n -= 2;
      }
      if (n) dprl_gp_path_sample_batch(p, &rng, xs, n, vals, &err);
      dprl_gp_path_free(p);
    }
  }
  dprl_q_calib_in in = {f64(&r), f64(&r), (double)(u64(&r) % 100000), (double)(u64(&r) % 1000),
                        f64(&r), f64(&r), f64(&r), (double)(u64(&r) % 1000),
                        (dprl_q_accountant)(u64(&r) % 4)};
  dprl_q_calib_out qo;
  dprl_error e2 = {0};
  dprl_q_calibrate(&in, &qo, &e2);
  dprl_sp_params sp = {f64(&r), f64(&r), f64(&r), f64(&r), (int64_t)(u64(&r) % 1000000),
                       (int64_t)(u64(&r) % 100), (int64_t)(u64(&r) % ((uint64_t)1 << 50))};
  dprl_sp_noise nz;
  dprl_error e3 = {0};
  dprl_sp_calibrate(&sp, &nz, &e3);
  dprl_rng_wipe(&rng);
  return 0;
}
