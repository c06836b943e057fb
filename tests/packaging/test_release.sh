#!/bin/sh
# Release plumbing: the CHANGELOG and LICENSE, `make tag`'s refusals and
# its tag (in a scratch repository made of copies of the files it reads,
# never in this one), and the commit the Makefile compiles into
# dprl_debug() when the sources are not the top of a git checkout.
cd "$(dirname "$0")/../.."
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^#define DPRL_VERSION "\(.*\)"/\1/p' ext/dprl.h)

ok() { if [ "$1" -eq 0 ]; then echo "ok $2"; else echo "not ok $2"; [ -n "${3:-}" ] && sed 's/^/#   /' "$3"; fi; }

grep -q "^## \[$version\]" CHANGELOG.md
ok $? "CHANGELOG.md has an entry for $version"
head -1 LICENSE | grep -q "^MIT License$" && grep -q "^Copyright (c) 2026 the dprl authors$" LICENSE
ok $? "LICENSE: MIT, Copyright (c) 2026 the dprl authors"

# A scratch repository with what make tag reads.
s=$tmp/repo
mkdir -p "$s/ext" "$s/bindings/node"
cp Makefile CHANGELOG.md "$s/"
cp ext/dprl.h "$s/ext/"
cp bindings/node/package.json "$s/bindings/node/"
g() { git -C "$s" -c user.name=t -c user.email=t@example.invalid "$@"; }
g init -q && g add -A && g commit -q -m scratch
mk_tag() { # the tagger's identity from the environment: CI may have none
  GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid \
    make --no-print-directory -C "$s" tag >"$tmp/out" 2>&1
}
no_tag() { ! g rev-parse -q --verify "refs/tags/v$version" >/dev/null; }
date_it() { sed -i "s/^## \[$version\] - Unreleased/## [$version] - 2026-12-01/" "$s/CHANGELOG.md"; }

if grep -q "^## \[$version\] - Unreleased" "$s/CHANGELOG.md"; then
  ! mk_tag && grep -q "CHANGELOG.md has no dated entry" "$tmp/out" && no_tag
  ok $? "make tag refuses while CHANGELOG says $version is unreleased" "$tmp/out"
  date_it
fi
! mk_tag && grep -q "not clean" "$tmp/out" && no_tag
ok $? "make tag refuses an uncommitted change" "$tmp/out"
g commit -q -am "date $version"
sed -i "s/\"version\": \"$version\"/\"version\": \"0.0.0\"/" "$s/bindings/node/package.json"
g commit -q -am "npm behind"
! mk_tag && grep -q "package.json is not at version $version" "$tmp/out" && no_tag
ok $? "make tag refuses when the npm package has another version" "$tmp/out"
g revert --no-edit HEAD >/dev/null
mk_tag && [ "$(g cat-file -t "v$version")" = tag ] &&
  [ "$(g rev-parse "v$version^{commit}")" = "$(g rev-parse HEAD)" ]
ok $? "make tag: an annotated tag v$version on HEAD" "$tmp/out"
! mk_tag && grep -q "exists already" "$tmp/out"
ok $? "make tag never moves an existing tag" "$tmp/out"

# The commit compiled in: "unknown" when the sources are a subdirectory of
# someone else's repository (an unpacked tarball, the Python sdist).
mkdir -p "$s/vendor/dprl" && cp -r Makefile ext "$s/vendor/dprl/"
make -n --no-print-directory -C "$s/vendor/dprl" build/dprl.o 2>/dev/null |
  grep -q "DPRL_GIT_COMMIT='\"unknown\"'"
ok $? "inside another repository the commit compiled in is \"unknown\""
make -n --no-print-directory -B -C "$root" build/dprl.o 2>/dev/null |
  grep -q "DPRL_GIT_COMMIT='\"$(git rev-parse --short HEAD)\"'"
ok $? "in this checkout it is git rev-parse --short HEAD"
exit 0
