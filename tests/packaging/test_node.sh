#!/bin/sh
# The npm package (bindings/node), as a user gets it: `npm pack` (its
# prepack script builds dprl.so with make), then `npm install` of the
# tarball into a fresh project, offline, and tests/packaging/use_node.js run
# there: better-sqlite3 for real, node:sqlite for real where Node has it and
# through a mock of its API otherwise.  better-sqlite3 is built once from
# source by `make node-deps` into build/node-deps (make test does it).
cd "$(dirname "$0")/../.."
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^#define DPRL_VERSION "\(.*\)"/\1/p' ext/dprl.h)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "not ok node and npm are installed"
  exit 0
fi
pkgver=$(node -p "require('./bindings/node/package.json').version")
[ "$pkgver" = "$version" ] && echo "ok package.json's version is DPRL_VERSION ($version)" ||
  echo "not ok package.json's version $pkgver is DPRL_VERSION $version"

(cd bindings/node && npm pack --pack-destination "$tmp" >"$tmp/pack.log" 2>&1)
tgz=$tmp/dprl-$version.tgz
if [ -f "$tgz" ]; then echo "ok npm pack: dprl-$version.tgz"; else
  echo "not ok npm pack: dprl-$version.tgz"; tail -15 "$tmp/pack.log" | sed 's/^/#   /'; exit 0
fi
tar -tzf "$tgz" | sort >"$tmp/list"
want="package/LICENSE package/README.md package/dprl.so package/index.d.ts package/index.js package/index.mjs package/package.json"
[ "$(tr '\n' ' ' <"$tmp/list")" = "$want " ] && echo "ok the tarball holds exactly: $want" ||
  { echo "not ok the tarball holds exactly: $want"; sed 's/^/#   /' "$tmp/list"; }

mkdir "$tmp/proj"
echo '{"name": "try-dprl", "version": "1.0.0", "private": true}' >"$tmp/proj/package.json"
(cd "$tmp/proj" && npm install --offline --no-audit --no-fund "$tgz" >"$tmp/install.log" 2>&1)
[ $? -eq 0 ] && [ -f "$tmp/proj/node_modules/dprl/dprl.so" ] &&
  echo "ok npm install --offline of the tarball into a fresh project" ||
  { echo "not ok npm install --offline of the tarball into a fresh project"; tail -15 "$tmp/install.log" | sed 's/^/#   /'; }

cp tests/packaging/use_node.js "$tmp/proj/"
(cd "$tmp/proj" && NODE_PATH="$root/build/node-deps/node_modules" node use_node.js "$version" "$commit")
exit 0
