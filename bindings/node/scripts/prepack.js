// npm pack / npm publish: build dprl.so with the project's Makefile and put
// it, with the LICENSE, into the package.  Refuses when package.json's
// version is not DPRL_VERSION (ext/dprl.h).  Make's output goes to
// stderr, so npm pack's stdout stays the tarball's name.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const pkgDir = path.resolve(__dirname, '..');
const root = path.resolve(pkgDir, '..', '..');
const header = fs.readFileSync(path.join(root, 'ext', 'dprl.h'), 'utf8');
const m = /^#define DPRL_VERSION "([^"]+)"/m.exec(header);
const { version } = require(path.join(pkgDir, 'package.json'));
if (!m || m[1] !== version) {
  console.error(`prepack: package.json has version ${version}, ext/dprl.h ${m ? m[1] : 'none'}`);
  process.exit(1);
}
execFileSync('make', ['--no-print-directory', '-C', root, 'all'],
             { stdio: ['ignore', process.stderr, process.stderr] });
fs.copyFileSync(path.join(root, 'dprl.so'), path.join(pkgDir, 'dprl.so'));
fs.copyFileSync(path.join(root, 'LICENSE'), path.join(pkgDir, 'LICENSE'));
