#!/bin/sh
# samples/paper/run.sh: Balle, Gomrokchi & Precup (ICML 2016), section 6, on
# the chain, end to end (also: make -C samples/paper).  Builds ../../dprl.so
# and chain.c, runs the experiment in JOBS parallel shards of the runs, then
# writes into out/:
#   rmse.csv, rmse.png      RMSE against V vs batch size, tabular | pairs
#   beats_zero.csv          per method, the smallest batch size from which
#                           its mean RMSE stays below that of the estimate
#                           V = 0, and of V = 1/2 (mid of the range [0, 1])
#   lambda.csv, lambda.png  RMSE vs lambda for LSL / DP-LSL (tabular)
#   values.csv              V(s) from the Bellman equation
#   raw_*.csv               one row per run, before averaging
#   runtime.txt             wall-clock time and steps simulated
# Knobs (environment or make variables), defaults in brackets:
#   JOBS [2] RUNS [20] SIZES [100,...,1000000] LAMBDA_C [100]
#   SWEEP_SIZES [10000,100000; none: no sweep] LAMBDAS [10,...,1000000]
#   START [uniform|first]
#   OUT [samples/paper/out]
# awk, printf and gnuplot write and read numbers in the "C" locale,
# whatever locale the caller runs in.
export LC_ALL=C
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$here/out}
JOBS=${JOBS:-2}
RUNS=${RUNS:-20}
SIZES=${SIZES:-100,316,1000,3162,10000,31623,100000,316228,1000000}
LAMBDA_C=${LAMBDA_C:-100}
SWEEP_SIZES=${SWEEP_SIZES:-10000,100000}
LAMBDAS=${LAMBDAS:-10,100,1000,3162,10000,31623,100000,1000000}
START=${START:-uniform}
CC=${CC:-cc}

for tool in "$CC" gnuplot awk; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "run.sh: $tool not found (Debian: apt-get install -y gcc gnuplot-nox)" >&2
    exit 1
  }
done
mkdir -p "$out"
make -C "$root" --no-print-directory dprl.so
"$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Wshadow -o "$out/chain" \
  "$here/chain.c" -lsqlite3 -lm
"$out/chain" -V > "$out/values.csv"

t0=$(date +%s)
echo "run.sh: $RUNS runs x batch sizes $SIZES, lambda sweep at $SWEEP_SIZES, $JOBS jobs"
pids=""
i=0
while [ "$i" -lt "$JOBS" ]; do
  a=$((i * RUNS / JOBS))
  b=$(((i + 1) * RUNS / JOBS))
  if [ "$a" -lt "$b" ]; then
    (
      "$out/chain" -e "$root/dprl.so" -r "$a:$b" -m "$SIZES" -c "$LAMBDA_C" \
        -s "$START" > "$out/raw_batch.$i.csv"
      if [ "$SWEEP_SIZES" != none ]; then
        "$out/chain" -e "$root/dprl.so" -r "$a:$b" -m "$SWEEP_SIZES" -L "$LAMBDAS" \
          -s "$START" > "$out/raw_lambda.$i.csv"
      fi
    ) 2> "$out/log.$i.txt" &
    pids="$pids $!"
  fi
  i=$((i + 1))
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
if [ "$fail" != 0 ]; then
  cat "$out"/log.*.txt >&2
  echo "run.sh: a shard failed" >&2
  exit 1
fi
t1=$(date +%s)

# Mean, sample standard deviation and standard error over the runs, per
# (features, method, batch size, lambda).
summarise() {
  echo "features,method,episodes,rmse_mean,rmse_std,runs,rmse_se,sigma_mean,lambda"
  awk -F, '{ k = $1 FS $2 FS $3 FS $7; n[k]++; s[k] += $5; q[k] += $5 * $5; sg[k] += $6 }
    END { for (k in n) {
      split(k, f, FS); mu = s[k] / n[k]
      v = n[k] > 1 ? (q[k] - n[k] * mu * mu) / (n[k] - 1) : 0; if (v < 0) v = 0
      printf "%s,%s,%s,%.6g,%.6g,%d,%.6g,%.6g,%.6g\n", f[1], f[2], f[3], mu, sqrt(v),
             n[k], sqrt(v / n[k]), sg[k] / n[k], f[4] } }' "$@" |
    LC_ALL=C sort -t, -k1,1 -k2,2 -k3,3n -k9,9g
}
cat "$out"/raw_batch.*.csv > "$out/raw_batch.csv"
summarise "$out/raw_batch.csv" > "$out/rmse.csv"
sweep=0
rm -f "$out/raw_lambda.csv" "$out/lambda.csv" "$out/lambda.png"
if [ "$SWEEP_SIZES" != none ]; then
  sweep=1
  cat "$out"/raw_lambda.*.csv > "$out/raw_lambda.csv"
  summarise "$out/raw_lambda.csv" > "$out/lambda.csv"
fi
rm -f "$out"/raw_batch.*.csv "$out"/raw_lambda.*.csv

# Two data-free estimates as reference lines: V = 0 (its error is the RMS
# of V) and V = 1/2, the middle of the public range [0, fmax = 1] to which
# the releases are clamped (pure noise, clamped to [0, 1], scores about 0.55:
# between the two).
zero=$(awk -F, '{ s += $2 * $2; n++ } END { printf "%.6g", sqrt(s / n) }' "$out/values.csv")
mid=$(awk -F, '{ s += ($2 - 0.5) ^ 2; n++ } END { printf "%.6g", sqrt(s / n) }' "$out/values.csv")

# Per (features, method): the smallest batch size m from which the mean RMSE
# is below that of V = 0 (of V = 1/2) at m and at every larger size ("none"
# if it is not below at the largest), and the mean RMSE at the largest size.
{
  echo "features,method,beats_zero_from,beats_half_from,largest_m,rmse_at_largest"
  awk -F, -v zero="$zero" -v mid="$mid" 'NR > 1 { k = $1 FS $2
      if (!(k in last)) { z[k] = h[k] = "none"; order[++nk] = k }
      last[k] = $3; r[k] = $4
      if ($4 < zero) { if (z[k] == "none") z[k] = $3 } else z[k] = "none"
      if ($4 < mid) { if (h[k] == "none") h[k] = $3 } else h[k] = "none" }
    END { for (i = 1; i <= nk; i++) { k = order[i]
      printf "%s,%s,%s,%s,%.6g\n", k, z[k], h[k], last[k], r[k] } }' "$out/rmse.csv"
} > "$out/beats_zero.csv"
gnuplot -e "dir='$out'; zero=$zero; mid=$mid; runs=$RUNS; sweep=$sweep" "$here/plot.gp"

{
  echo "wall-clock seconds for the runs (excluding builds and plots): $((t1 - t0))"
  echo "jobs: $JOBS, runs: $RUNS, sizes: $SIZES, lambda = $LAMBDA_C*sqrt(m), start: $START"
  [ "$sweep" = 1 ] && echo "lambda sweep at $SWEEP_SIZES: $LAMBDAS"
  cat "$out"/log.*.txt
} > "$out/runtime.txt"
rm -f "$out"/log.*.txt
cat "$out/runtime.txt"
echo "run.sh: wrote $out/rmse.csv $out/rmse.png $out/beats_zero.csv$([ $sweep = 1 ] && echo " $out/lambda.csv $out/lambda.png")"
