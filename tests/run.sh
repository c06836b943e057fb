#!/bin/sh
# tests/run.sh: run every test against the normal build, then the packaging
# tests once, then every test against the AddressSanitizer +
# UndefinedBehaviorSanitizer build (unless DPRL_NO_SAN=1).
# Every test prints "ok ..." or "not ok ..."; a program that crashes or
# whose sanitizer reports counts as one more failure.  Ends with the line
# "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
SQLITE3=${SQLITE3:-sqlite3}
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
pass=0
fail=0

# run LABEL COMMAND...: run, echo its lines, count ok / not ok.
run() {
  label=$1
  shift
  out="$LOG/out"
  "$@" >"$out" 2>"$LOG/err"
  status=$?
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
  if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|WARNING: ThreadSanitizer' "$LOG/err"; then
    echo "[$label] not ok: sanitizer report:"
    sed -n '1,40p' "$LOG/err"
    f=$((f + 1))
  elif [ "$status" -ne 0 ]; then
    sed -n '1,20p' "$LOG/err"
  fi
  pass=$((pass + p))
  fail=$((fail + f))
}

suite() { # suite BUILD_DIR SO [env for the loader]
  dir=$1
  so=$2
  tag=$3
  for t in "$dir"/tests/test_*; do
    [ -x "$t" ] && run "$tag $(basename "$t")" "$t"
  done
  for t in tests/sql/test_*.py; do
    run "$tag $(basename "$t")" env DPRL_SO="$so" SQLITE3="$SQLITE3" $PRELOAD "$PYTHON" "$t"
  done
  for t in tests/sql/test_*.sh; do
    [ -f "$t" ] && run "$tag $(basename "$t")" env DPRL_SO="$so" SQLITE3="$SQLITE3" \
      SQL_PRELOAD="$CLI_PRELOAD" sh "$t"
  done
}

PRELOAD=""
CLI_PRELOAD=""
suite build ./dprl.so plain

# Packaging, once, against the normal build (tests/packaging/): exported
# symbols, dprl linked into a C program, the Python wheel and the npm
# package, each installed into a fresh temporary directory.
run "packaging test_embed" ./build/static/test_embed
for t in tests/packaging/test_*.sh; do
  run "packaging $(basename "$t")" env PYTHON="$PYTHON" sh "$t"
done

if [ "${DPRL_NO_SAN:-0}" != 1 ]; then
  asan=$(${CC:-cc} -print-file-name=libasan.so)
  ubsan=$(${CC:-cc} -print-file-name=libubsan.so)
  # Python itself is not built with ASan and keeps memory at exit, so leak
  # detection is off for it; the sqlite3 shell scripts run with it on.
  PRELOAD="LD_PRELOAD=$asan:$ubsan ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1"
  CLI_PRELOAD="LD_PRELOAD=$asan:$ubsan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1"
  export ASAN_OPTIONS=detect_leaks=1
  suite build/san ./build/san/dprl.so sanitized
  # ThreadSanitizer: many connections and threads at once (make tsan)
  PRELOAD=""
  [ -x build/tsan/test_threads ] && run "tsan test_threads" build/tsan/test_threads build/tsan/dprl.so
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
