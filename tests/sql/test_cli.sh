#!/bin/sh
# The sqlite3 shell runs tests/sql/cli.sql; its output (stdout and stderr)
# must equal tests/sql/cli.expected.  Under the sanitizer build SQL_PRELOAD
# preloads ASan with leak detection on.
cd "$(dirname "$0")/../.."
so=${DPRL_SO:-./dprl.so}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$so" "$dir/dprl.so"
sed "s|^\.load \./dprl|.load $dir/dprl|" tests/sql/cli.sql > "$dir/cli.sql"
env $SQL_PRELOAD ${SQLITE3:-sqlite3} :memory: < "$dir/cli.sql" > "$dir/out" 2>&1
status=$?
grep -v "Sanitizer\|^==\|^    #\|^SUMMARY\|^$" "$dir/out" | sed "s|$dir|DIR|g" > "$dir/got"
if diff -u tests/sql/cli.expected "$dir/got" > "$dir/diff"; then
  echo "ok sqlite3 shell: tests/sql/cli.sql output as expected"
else
  echo "not ok sqlite3 shell: tests/sql/cli.sql output differs"
  sed 's/^/# /' "$dir/diff"
fi
if grep -q "Sanitizer" "$dir/out"; then
  echo "not ok sqlite3 shell: sanitizer report"
  sed -n '1,30p' "$dir/out" | sed 's/^/# /'
  cat "$dir/out" >&2
else
  echo "ok sqlite3 shell: no sanitizer report (leak detection on under the sanitizer build)"
fi
[ $status -le 1 ] || echo "not ok sqlite3 shell exited with $status"
