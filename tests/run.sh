#!/bin/sh
# tests/run.sh: run every test against the normal build, then the packaging
# tests once, then every test against the AddressSanitizer +
# UndefinedBehaviorSanitizer build (unless DPRL_NO_SAN=1).
# Every test prints "ok ..." or "not ok ..."; a program that crashes or
# whose sanitizer reports counts as one more failure.  Ends with the line
# "N passed, M failed", after the ten slowest test files.
#   JOBS=N  test files run at once (default: the number of CPUs)
#   T=WORD  only the test files whose name contains WORD (make check T=mdp)
#   DPRL_NO_SAN=1, DPRL_NO_PACKAGING=1  leave out those parts (make check)
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
SQLITE3=${SQLITE3:-sqlite3}
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
pass=0
fail=0

JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
T=${T:-}
mkdir -p "$LOG/jobs"
njob=0

# job LABEL COMMAND...: queue a test file (COMMAND is shell text, run by sh).
job() {
  case "$1" in *"$T"*) ;; *) return 0 ;; esac
  njob=$((njob + 1))
  n=$(printf '%04d' "$njob")
  printf '%s\n' "$1" >"$LOG/jobs/$n.label"
  shift
  printf '%s\n' "$*" >"$LOG/jobs/$n.sh"
}

# report JOB: echo its lines, count ok / not ok (a crash, a non-zero exit
# without a "not ok", or a sanitizer report counts as one more failure).
report() {
  label=$(cat "$1.label")
  out="$1.out"
  status=$(cat "$1.status")
  p=$(grep -c '^ok' "$out")
  f=$(grep -c '^not ok' "$out")
  echo "[$label] $p ok, $f not ok"
  # each failure with the diagnostic lines (#) that follow it
  awk -v l="[$label]" '/^not ok/ {show = 1; print l, $0; next}
                       /^#/ && show {print l, $0; next} {show = 0}' "$out"
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "[$label] not ok: exited with status $status"
    f=1
  fi
  if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|WARNING: ThreadSanitizer' "$1.err"; then
    echo "[$label] not ok: sanitizer report:"
    sed -n '1,40p' "$1.err"
    f=$((f + 1))
  elif [ "$status" -ne 0 ]; then
    sed -n '1,20p' "$1.err"
  fi
  pass=$((pass + p))
  fail=$((fail + f))
}

# run the queued jobs, JOBS at a time, the slowest of the last run first
# (build/test-times; a job not timed yet counts as slowest), so that no long
# file starts last; then report them in order
TIMES=build/test-times
run_jobs() {
  [ "$njob" -gt 0 ] || return 0
  for j in "$LOG"/jobs/*.sh; do
    s=$(awk -v l="$(cat "${j%.sh}.label")" '$0 ~ / / { t = $1; sub(/^[^ ]+ /, ""); if ($0 == l) print t }' \
      "$TIMES" 2>/dev/null | tail -1)
    echo "${s:-99999} $j"
  done | sort -rn -k1,1 | cut -d' ' -f2- | xargs -P "$JOBS" -n 1 sh tests/run_job.sh
  for j in "$LOG"/jobs/*.sh; do
    report "${j%.sh}"
    printf '%s %s\n' "$(cat "${j%.sh}.time")" "$(cat "${j%.sh}.label")" >>"$LOG/times"
    rm -f "$j"
  done
}

suite() { # suite BUILD_DIR SO [env for the loader]
  dir=$1
  so=$2
  tag=$3
  # the C programs that have a source (not the binary of a renamed test)
  for t in "$dir"/tests/test_*; do
    n=$(basename "$t")
    [ -f "tests/unit/$n.c" ] || [ -f "tests/host/$n.c" ] || [ -f "tests/fuzz/fuzz_${n#test_fuzz_}.c" ] ||
      continue
    [ -x "$t" ] && job "$tag $n" "$t"
  done
  for t in tests/sql/test_*.py; do
    job "$tag $(basename "$t")" env DPRL_SO="$so" SQLITE3="$SQLITE3" $PRELOAD "$PYTHON" "$t"
  done
  for t in tests/sql/test_*.sh; do
    [ -f "$t" ] && job "$tag $(basename "$t")" env DPRL_SO="$so" SQLITE3="$SQLITE3" \
      SQL_PRELOAD="\"$CLI_PRELOAD\"" sh "$t"
  done
}

PRELOAD=""
CLI_PRELOAD=""
suite build ./dprl.so plain

# Packaging, once, against the normal build (tests/packaging/): exported
# symbols, dprl linked into a C program, the Python wheel and the npm
# package, each installed into a fresh temporary directory.
if [ "${DPRL_NO_PACKAGING:-0}" != 1 ]; then
  job "packaging test_embed" ./build/static/test_embed
  for t in tests/packaging/test_*.sh; do
    job "packaging $(basename "$t")" env PYTHON="$PYTHON" sh "$t"
  done
fi

if [ "${DPRL_NO_SAN:-0}" != 1 ]; then
  asan=$(${CC:-cc} -print-file-name=libasan.so)
  ubsan=$(${CC:-cc} -print-file-name=libubsan.so)
  # Python itself is not built with ASan and keeps memory at exit, so leak
  # detection is off for it; the sqlite3 shell scripts run with it on.
  PRELOAD="LD_PRELOAD=$asan:$ubsan ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1"
  CLI_PRELOAD="LD_PRELOAD=$asan:$ubsan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1"
  export ASAN_OPTIONS=detect_leaks=1
  # the statistical tests take fewer draws there (tests/sql/harness.py: sized)
  PRELOAD="$PRELOAD DPRL_TEST_SIZES=small"
  suite build/san ./build/san/dprl.so sanitized
  # ThreadSanitizer: many connections and threads at once (make tsan)
  PRELOAD=""
  [ -x build/tsan/test_threads ] && job "tsan test_threads" build/tsan/test_threads build/tsan/dprl.so
fi

run_jobs
if [ -s "$LOG/times" ]; then
  # keep this run's times for the next run's order (other labels stay)
  mkdir -p build && { cat "$TIMES" 2>/dev/null; cat "$LOG/times"; } |
    awk '{ t = $1; sub(/^[^ ]+ /, ""); last[$0] = t } END { for (l in last) print last[l], l }' \
    >"$TIMES.new" && mv "$TIMES.new" "$TIMES"
  echo "slowest test files (wall seconds, $JOBS at a time):"
  sort -rn "$LOG/times" | head -10 | sed 's/^/  /'
fi
[ "$njob" -gt 0 ] || echo "no test file matches T=$T"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
