#!/bin/sh
# dprl.so exports exactly one symbol, its entry point: everything else is
# compiled with -fvisibility=hidden (the Makefile) and only
# sqlite3_dprl_init is marked visible (ext/dprl.c).  Without that, ~150
# internal functions (dprl_json_*, dprl_noise_*, ...) were exported and
# could clash with another library's symbols in the same process.
cd "$(dirname "$0")/../.."
so=${DPRL_SO:-./dprl.so}
syms=$(nm -D --defined-only "$so" | awk 'NF == 3 {print $3}' | sort)
if [ "$syms" = "sqlite3_dprl_init" ]; then
  echo "ok $so exports only sqlite3_dprl_init"
else
  echo "not ok $so exports only sqlite3_dprl_init"
  echo "# exported: $(echo "$syms" | wc -l) symbols:"
  echo "$syms" | head -20 | sed 's/^/#   /'
fi
# ... and still everything works through it: the library's own calls are
# resolved inside it (no undefined dprl_ symbol left for the loader).
undef=$(nm -D --undefined-only "$so" | grep -c ' dprl_')
if [ "$undef" -eq 0 ]; then
  echo "ok $so leaves no dprl_ symbol to the dynamic loader"
else
  echo "not ok $so leaves no dprl_ symbol to the dynamic loader ($undef)"
fi
