/* linalg.c: LAPACKE wrappers (see linalg.h). */
#include "base/linalg.h"

#include <lapacke.h>
#include <string.h>

/* OpenBLAS exposes its build description; declared here so the core needs
** no OpenBLAS header. */
extern char *openblas_get_config(void);

static int lapack_fail(dprl_error *err, const char *routine, lapack_int info) {
  if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
    return dprl_nomem(err);
  return dprl_fail(err, DPRL_EINVAL, "%s failed (info %d)", routine, (int)info);
}

int dprl_singular_values(const double *a, int64_t n, int64_t d, double *sv,
                         dprl_error *err) {
  double *copy = dprl_malloc((size_t)(n * d) * sizeof *copy);
  if (!copy) return dprl_nomem(err);
  memcpy(copy, a, (size_t)(n * d) * sizeof *copy);
  lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'N', (lapack_int)n,
                                   (lapack_int)d, copy, (lapack_int)d, sv, NULL,
                                   1, NULL, (lapack_int)d); /* LAPACKE checks ldvt >= d */
  dprl_free(copy);
  return info ? lapack_fail(err, "dgesdd", info) : DPRL_OK;
}

int dprl_least_squares(const double *a, int64_t n, int64_t d, const double *y,
                       double *x, dprl_error *err) {
  double *A = dprl_malloc((size_t)(n * d) * sizeof *A);
  double *b = dprl_malloc((size_t)n * sizeof *b);
  int rc = DPRL_OK;
  if (!A || !b) {
    rc = dprl_nomem(err);
  } else {
    memcpy(A, a, (size_t)(n * d) * sizeof *A);
    memcpy(b, y, (size_t)n * sizeof *b);
    lapack_int info = LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', (lapack_int)n,
                                    (lapack_int)d, 1, A, (lapack_int)d, b, 1);
    if (info) rc = lapack_fail(err, "dgels", info);
    else memcpy(x, b, (size_t)d * sizeof *x);
  }
  dprl_free(A);
  dprl_free(b);
  return rc;
}

int dprl_solve(double *a, int64_t n, double *b, int64_t nrhs, dprl_error *err) {
  lapack_int *piv = dprl_malloc_array((size_t)n, sizeof *piv);
  if (!piv) return dprl_nomem(err);
  lapack_int info = LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)nrhs, a,
                                  (lapack_int)n, piv, b, (lapack_int)nrhs);
  dprl_free(piv);
  return info ? lapack_fail(err, "dgesv", info) : DPRL_OK;
}

const char *dprl_linalg_backend(void) { return openblas_get_config(); }

int dprl_spd_inverse(double *a, int64_t d, dprl_error *err) {
  lapack_int n = (lapack_int)d;
  lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, a, n);
  if (info == 0) info = LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', n, a, n);
  if (info != 0) return lapack_fail(err, "dpotrf/dpotri", info);
  for (int64_t i = 0; i < d; i++)
    for (int64_t j = 0; j < i; j++) a[i * d + j] = a[j * d + i];
  return DPRL_OK;
}
