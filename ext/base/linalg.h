/*
** linalg.h: the few dense linear-algebra operations dprl needs, as thin
** wrappers over LAPACKE (row-major).  Only a general feature matrix takes
** these paths; tabular and aggregated features have closed forms.
*/
#ifndef DPRL_LINALG_H
#define DPRL_LINALG_H

#include "base/core.h"

/* Singular values (descending) of the n x d row-major matrix a, into
** sv[min(n,d)].  a is not modified. (dgesdd, values only) */
int dprl_singular_values(const double *a, int64_t n, int64_t d, double *sv,
                         dprl_error *err);

/* Least squares min ||a x - y||_2 for n x d a of full column rank, n >= d,
** by Householder QR (dgels).  x has d entries.  a and y are not modified. */
int dprl_least_squares(const double *a, int64_t n, int64_t d, const double *y,
                       double *x, dprl_error *err);

/* Inverse of the d x d symmetric positive definite a, in place (dpotrf +
** dpotri, both triangles filled).  Used for planning from public inputs. */
int dprl_spd_inverse(double *a, int64_t d, dprl_error *err);

/* Solve a x = b for the n x n row-major a (LU with partial pivoting,
** dgesv): b (n x nrhs, row-major) becomes x and a its factors.  An exactly
** singular a is DPRL_EINVAL. */
int dprl_solve(double *a, int64_t n, double *b, int64_t nrhs, dprl_error *err);

/* Name of the LAPACK/BLAS in use, for dprl_debug(). */
const char *dprl_linalg_backend(void);

#endif
