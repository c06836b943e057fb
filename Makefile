# dprl: differentially private RL evaluation inside SQLite.
#
#   make          build ./dprl.so (checks the Debian dependencies first)
#   make demo     install what is missing, build, run a sample end to end
#   make clinical the clinical sample: a simulator, its log, exact and private values
#   make test     install what is missing, run every test, then again under
#                 AddressSanitizer + UndefinedBehaviorSanitizer
#   make check    the quick tier: the plain build's tests in parallel (T=mdp
#                 only those whose name contains mdp)
#   make bench    benchmark against a bare scan and plain SQL
#   make utility  error of private values against the exact ones (seeded)
#   make fuzz     libFuzzer on every harness, FUZZ_SECONDS each (default 60)
#   make test-engines  the per-engine SQL of sql/ on SQLite, PostgreSQL,
#                 DuckDB, ClickHouse and Spark SQL through DuckDB (installs
#                 them), both scale-out demos, and the mutations of sql/src
#   make test-clients  the analysts' clients of docs/clients.md (R, pandas,
#                 SQLAlchemy, sqlite-utils, litecli: installs them), each
#                 study of the guide run as written
#   make scale-out-demo  a release from two PostgreSQL shards (postgres_fdw;
#                 COPIES=30 for 10^7 steps)
#   make scale-out-ch    a release from 10^7 steps on 3 ClickHouse nodes, timed
#   make install  install dprl.so where `.load dprl` finds it
#   make wheel    the Python package, dist/dprl-VERSION-py3-none-linux_x86_64.whl
#   make static   ./libdprl.a (-DSQLITE_CORE) for embedding in a program
#   make tag      tag the release v$(VERSION) (clean tree, CHANGELOG entry)
#   make docs     REFERENCE.md from docs/reference.in.md, every example run
#
# ext/ has one folder per layer or mechanism (ARCHITECTURE.md): base/, dp/,
# rows/, policy_eval/, prefix_stable/, q_learning/, mdp/, ope/, expert/, study/, sqlite/, and the entry
# point dprl.c.  The core (plain C, no SQLite) is every ext/*/*.c but the
# glue, sql_*.c; unit tests link the core only.

CC      ?= cc
PYTHON  ?= /usr/bin/python3
SQLITE3 ?= sqlite3
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
BLAS_INC = -I/usr/include/x86_64-linux-gnu/openblas-pthread
# -fvisibility=hidden: dprl.so exports only sqlite3_dprl_init (ext/dprl.c
# marks it visible; tests/packaging/test_symbols.sh checks with nm).
EXT_INC   = -Iext
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(WARN) $(BLAS_INC) $(EXT_INC) $(CFLAGS)
LIBS     = -llapacke -lopenblas -lm

# Sanitizer build (a separate tree under build/san).
SAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined

# `.load dprl` asks the dynamic loader for "dprl.so" by name: it must be in
# a directory the loader searches without ldconfig, the multiarch libdir.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR  ?= /usr/lib/$(MULTIARCH)

# The version, from ext/dprl.h (the one place it is written).
VERSION := $(shell sed -n 's/^\#define DPRL_VERSION "\(.*\)"/\1/p' ext/dprl.h)
# The commit dprl_debug() reports: HEAD of this checkout, "unknown" outside
# git (or when this directory is not the top of the repository it is in).
GIT_COMMIT := $(shell [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && \
                git rev-parse --short HEAD 2>/dev/null || echo unknown)

# What each target needs is installed by scripts/install-deps.sh (the one
# place that calls apt-get and npm): make deps runs its group "base".
INSTALL = sh scripts/install-deps.sh

GLUE_SRC  = $(wildcard ext/*/sql_*.c) ext/dprl.c
CORE_SRC  = $(filter-out $(GLUE_SRC),$(wildcard ext/*/*.c))
UNIT_SRC  = $(wildcard tests/unit/test_*.c)

B ?= build
CORE_OBJ  = $(patsubst ext/%.c,$(B)/%.o,$(CORE_SRC))
GLUE_OBJ  = $(patsubst ext/%.c,$(B)/%.o,$(GLUE_SRC))
UNIT_BIN  = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
HOST_BIN  = $(patsubst tests/host/%.c,$(B)/tests/%,$(wildcard tests/host/test_*.c))
# Fuzz harnesses: replayed over their committed corpus by `make test`
# (gcc, plain and sanitized), fuzzed by `make fuzz` (clang + libFuzzer).
FUZZ_NAMES = options noise sql
FUZZ_REPLAY = $(patsubst %,$(B)/tests/test_fuzz_%,$(FUZZ_NAMES))

.PHONY: all check check-deps deps demo clinical test test-fast test-san unit bench utility fuzz tsan install \
        uninstall clean samples paper paper-full static tag wheel node-deps FORCE docs \
        engines-deps pg-deps duckdb-deps clickhouse-deps test-engines test-clients scale-out-demo \
        scale-out-ch
.DEFAULT_GOAL := all

all: check-deps dprl.so

# `make` only checks; `make deps` (run by demo and test) installs.
check-deps:
	@missing=""; \
	for h in sqlite3.h lapacke.h; do \
	  echo "#include <$$h>" | $(CC) $(BLAS_INC) -E -x c - >/dev/null 2>&1 || missing="$$missing $$h"; \
	done; \
	[ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || \
	  ls /usr/lib/*/libopenblas.so >/dev/null 2>&1 || missing="$$missing libopenblas"; \
	if [ -n "$$missing" ]; then \
	  echo "dprl: missing$$missing."; \
	  echo "Install the dependencies, as root, with: make deps"; \
	  echo "(scripts/install-deps.sh base: Debian's libsqlite3-dev sqlite3 liblapacke-dev libopenblas-dev)"; \
	  exit 1; \
	fi

deps:
	@$(INSTALL) base

dprl.so: $(CORE_OBJ) $(GLUE_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS) $(LDFLAGS)

# -MMD -MP: each object depends on the headers it includes (its .d file),
# so a header change rebuilds only the objects that include it (an object
# without its .d, from before, is rebuilt once).
$(B)/%.o: ext/%.c $(B)/%.d | $(B)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP $(COMMIT_DEF) -c -o $@ $<
DEPS = $(patsubst ext/%.c,$(B)/%.d,$(CORE_SRC) $(GLUE_SRC)) \
       $(patsubst ext/%.c,build/static/%.d,$(CORE_SRC) $(GLUE_SRC))
$(DEPS): ;
-include $(wildcard $(DEPS))

# dprl_debug() names the commit: dprl.o (of every build tree) is compiled
# with it and rebuilt when build/commit, rewritten only on change, changes.
build/commit: FORCE
	@mkdir -p build; echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(B)/dprl.o build/static/dprl.o: build/commit
%/dprl.o: COMMIT_DEF = -DDPRL_GIT_COMMIT='"$(GIT_COMMIT)"'
FORCE:

# Embedding (docs/bindings.md, "Embedding in C"): the same sources compiled with
# -DSQLITE_CORE into ./libdprl.a, to link into a program with its own
# SQLite and register with sqlite3_auto_extension (ext/dprl.h).
STATIC_OBJ = $(patsubst ext/%.c,build/static/%.o,$(CORE_SRC) $(GLUE_SRC))
static: check-deps libdprl.a

libdprl.a: $(STATIC_OBJ)
	rm -f $@
	ar rcs $@ $^

build/static/%.o: ext/%.c build/static/%.d | build/static
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -DSQLITE_CORE $(COMMIT_DEF) -c -o $@ $<

build/static:
	mkdir -p $@

# The embedding test (make test runs it): auto_extension, then a release.
build/static/test_embed: tests/packaging/test_embed.c tests/unit/check.h ext/dprl.h libdprl.a
	$(CC) $(ALL_CFLAGS) -Iext -Itests/unit -DWANT_VERSION='"$(VERSION)"' -o $@ $< \
	  libdprl.a -lsqlite3 $(LIBS) $(LDFLAGS)

# A unit test is tests/unit/test_<folder>_<topic>.c, named for the ext/
# folder it tests; it links that folder's core and the folders it may
# include (ARCHITECTURE.md): a call from one mechanism into another fails
# to build.
core_objs = $(patsubst ext/%.c,$(B)/%.o,$(filter-out $(GLUE_SRC),$(foreach d,$(1),$(wildcard ext/$(d)/*.c))))
MECHANISMS = policy_eval prefix_stable q_learning mdp ope expert
LINK_base  = base
LINK_dp    = base dp
LINK_rows  = base rows
$(foreach m,$(MECHANISMS),$(eval LINK_$(m) = base dp rows $(m)))
LINK_study = base dp rows $(MECHANISMS) study
unit_folder = $(firstword $(foreach d,base dp rows $(MECHANISMS) study,$(if $(filter test_$(d)_%,$(1)),$(d))))
unit_link = $(LINK_$(call unit_folder,$(1)))
# The fuzz harnesses' replay binaries (tests/fuzz).
LINK_test_fuzz_noise   = base dp rows policy_eval q_learning
LINK_test_fuzz_options = base dp rows policy_eval prefix_stable q_learning mdp ope expert study
LINK_test_fuzz_sql     = base
UNIT_H = $(wildcard tests/unit/*.h)
.SECONDEXPANSION:
$(B)/tests/%: tests/unit/%.c $(UNIT_H) $$(call core_objs,$$(call unit_link,$$*)) | $(B)/tests
	$(if $(call unit_link,$*),,$(error Makefile: tests/unit/$*.c is not named test_<folder>_<topic>.c for a folder of ext/))
	$(CC) $(ALL_CFLAGS) -o $@ $< $(call core_objs,$(call unit_link,$*)) $(LIBS) $(LDFLAGS)

$(B) $(B)/tests:
	mkdir -p $@

unit: $(UNIT_BIN) $(FUZZ_REPLAY) $(HOST_BIN) $(B)/tests/libstrtod_c.so

# Host tests (tests/host): a C program that embeds SQLite as an application
# would and loads the dprl.so of the same build.
$(B)/tests/test_%: tests/host/test_%.c tests/unit/check.h | $(B)/tests
	$(CC) $(ALL_CFLAGS) -Itests/unit \
	  -DDPRL_SO_PATH='"$(if $(filter build,$(B)),./dprl.so,$(B)/dprl.so)"' \
	  -o $@ $< -lsqlite3 $(LDFLAGS)

# tests/sql/test_locale.py preloads it into a Python that localises.
$(B)/tests/libstrtod_c.so: tests/host/strtod_c.c | $(B)/tests
	$(CC) -O2 -fPIC -shared -o $@ $<

# The replay binary of harness X runs LLVMFuzzerTestOneInput over
# tests/fuzz/corpus/X; fuzz_sql loads the dprl.so of the same build.
$(B)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $$(call core_objs,$$(LINK_test_fuzz_$$*)) | $(B)/tests
	$(CC) $(ALL_CFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/$*"' \
	  -DDPRL_SO_PATH='"$(if $(filter build,$(B)),./dprl.so,$(B)/dprl.so)"' \
	  -o $@ $< tests/fuzz/replay.c $(call core_objs,$(LINK_test_fuzz_$*)) $(LIBS) -lsqlite3 $(LDFLAGS)

# The whole suite: unit tests and SQL tests against this build, then the same
# against a sanitizer build.  tests/run.sh prints the "N passed, M failed".
test: deps
	@$(MAKE) --no-print-directory check-deps node-deps
	@$(MAKE) --no-print-directory dprl.so unit build/static/test_embed build/dprl_bench
	@$(MAKE) --no-print-directory B=build/san CFLAGS="$(SAN_FLAGS)" \
	  LDFLAGS="-fsanitize=address,undefined" build/san/dprl.so unit-san
	@$(MAKE) --no-print-directory tsan
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) sh tests/run.sh

# The quick tier: every unit and SQL test of the normal build, JOBS test
# files at once (default: every CPU), T=WORD only the files whose name
# contains WORD (make check T=mdp); no sanitizers, no packaging.
check: check-deps dprl.so unit build/dprl_bench
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) DPRL_NO_SAN=1 DPRL_NO_PACKAGING=1 T=$(T) sh tests/run.sh

# The normal build with the packaging tests.
test-fast: check-deps node-deps dprl.so unit build/static/test_embed build/dprl_bench
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) DPRL_NO_SAN=1 T=$(T) sh tests/run.sh

# Other engines (docs/scaling-out.md): PostgreSQL and ClickHouse from
# Debian, DuckDB from npm (@duckdb/node-api, pinned) into
# build/engines/duckdb.  Each fails loudly when it cannot install: the
# engine tests never skip an engine.
DUCKDB_NODE  = 1.5.6-r.1
DUCKDB_DIR   = build/engines/duckdb

engines-deps: pg-deps duckdb-deps clickhouse-deps

# ClickHouse from Debian (clickhouse-server and clickhouse-client, 18.16).
clickhouse-deps:
	@$(INSTALL) clickhouse

pg-deps:
	@$(INSTALL) pg

duckdb-deps:
	@DUCKDB_NODE=$(DUCKDB_NODE) $(INSTALL) duckdb

# Ends with its own "N passed, M failed".
test-engines: deps engines-deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) DUCKDB_NODE_DIR=$(CURDIR)/$(DUCKDB_DIR) sh tests/engines/run.sh

# The analysts' clients (docs/clients.md), from Debian (scripts/install-deps.sh
# clients): tests/clients/test_clients.py runs every study of the guide as
# written against ./dprl.so.  Ends with its own "N passed, M failed".
test-clients: deps
	@$(INSTALL) clients
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@DPRL_SO=./dprl.so PYTHON=$(PYTHON) $(PYTHON) tests/clients/test_clients.py

scale-out-demo: deps pg-deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@sh sql/scale_out_pg.sh

# 10^7 steps over 3 local ClickHouse servers (sql/scale_out_ch.sh): each
# node's statistics timed, merged, released in SQLite, checked against dprl.
scale-out-ch: deps clickhouse-deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@sh sql/scale_out_ch.sh

build/san/dprl.so: $(CORE_OBJ) $(GLUE_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS) $(LDFLAGS)

unit-san: $(UNIT_BIN) $(FUZZ_REPLAY) $(HOST_BIN) $(B)/tests/libstrtod_c.so

bench: deps check-deps duckdb-deps dprl.so $(B)/dprl_bench
	@DUCKDB_NODE_DIR=$(CURDIR)/$(DUCKDB_DIR) $(B)/dprl_bench

# Utility: the error of private values against exact ones, per mechanism
# (tests/utility/utility.py: dp_lsw/dp_lsl on the ICU sample and the
# paper's chain, dp_prefix_stable, a study's charges, dp_mdp off-policy,
# dp_expert_policy on the clinical sample, dp_mdp at clinical scale on
# samples/icu_model: 1,440 states, 8 actions, and over 48 groups of its
# states), then the consensus vote state
# by state against its plan (tests/utility/expert.py), and what the reward
# relation allows on the paper's Q-learning task against dp_q_learn
# (tests/utility/q_impossibility.py), and dp_mdp's privately chosen clip
# against fixed ones on three tasks (tests/utility/clip_auto.py, about
# 3 minutes) and count_floor on the same tasks (tests/utility/floors.py,
# about 5 minutes), and the coverage of dp_mdp_value's interval on the same
# tasks at 1,000 to 20,000 patients (tests/utility/intervals.py, about
# 10 minutes), and dp_mdp_plan's pessimistic plans against the optimum and
# the log (tests/utility/pessimism.py, about 5 minutes), and the task suite:
# five tasks, 1,000 to 20,000 patients, epsilon 1 and 3, 20 logs each,
# every default against the best hindsight clip, the interval's coverage,
# the plans and dp_is_value (tests/utility/suite.py, about an hour on 2
# cores; its figure in build/task-suite.svg).  icu_model about half a
# minute (sparse releases).
utility: deps check-deps dprl.so
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/utility.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/expert.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/q_impossibility.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/clip_auto.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/floors.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/intervals.py
	@DPRL_SO=./dprl.so $(PYTHON) tests/utility/pessimism.py
	@mkdir -p $(B) && DPRL_SO=./dprl.so $(PYTHON) tests/utility/suite.py --svg $(B)/task-suite.svg

# libFuzzer (clang, Debian's libclang-rt): a separate instrumented tree in
# build/fuzz; each harness runs FUZZ_SECONDS on a working copy of its
# corpus.  A crash leaves its input in build/fuzz/crash-X-*: fix the bug,
# then add the input to tests/fuzz/corpus/X so make test replays it.
FUZZ_SECONDS ?= 60
FUZZ_CC = clang
FUZZ_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
             -fno-sanitize-recover=undefined
fuzz: deps
	@$(INSTALL) fuzz
	@$(MAKE) --no-print-directory B=build/fuzz CC=$(FUZZ_CC) \
	  CFLAGS="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" LDFLAGS="-fsanitize=address,undefined" build/fuzz/dprl.so
	@for h in $(FUZZ_NAMES); do \
	  $(FUZZ_CC) -std=c11 -D_GNU_SOURCE $(BLAS_INC) $(EXT_INC) $(FUZZ_FLAGS) -fsanitize=fuzzer \
	    -DDPRL_SO_PATH='"build/fuzz/dprl.so"' -o build/fuzz/fuzz_$$h tests/fuzz/fuzz_$$h.c \
	    $(filter-out build/fuzz/dprl.o build/fuzz/sql_%,$(patsubst ext/%.c,build/fuzz/%.o,$(CORE_SRC))) \
	    $(LIBS) -lsqlite3 || exit 1; \
	done
	@fail=0; for h in $(FUZZ_NAMES); do \
	  mkdir -p build/fuzz/work_$$h; \
	  echo "== fuzz_$$h: $(FUZZ_SECONDS) s"; \
	  build/fuzz/fuzz_$$h build/fuzz/work_$$h tests/fuzz/corpus/$$h -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=20 -rss_limit_mb=4096 -artifact_prefix=build/fuzz/crash-$$h- -print_final_stats=1 \
	    > build/fuzz/log_$$h.txt 2>&1 || { fail=1; tail -40 build/fuzz/log_$$h.txt; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build/fuzz/log_$$h.txt; \
	done; exit $$fail

# ThreadSanitizer: dprl.so and a threaded C test in build/tsan (make test).
TSAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=thread
tsan:
	@$(MAKE) --no-print-directory B=build/tsan CFLAGS="$(TSAN_FLAGS)" LDFLAGS="-fsanitize=thread" \
	  build/tsan/dprl.so build/tsan/test_threads

build/tsan/test_threads: tests/threads/test_threads.c
	$(CC) $(TSAN_FLAGS) -o $@ $< -lsqlite3 -lpthread

build/tsan/dprl.so build/fuzz/dprl.so: $(CORE_OBJ) $(GLUE_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS) $(LDFLAGS)

$(B)/dprl_bench: tests/bench/bench.c tests/bench/bench_q.c tests/bench/bench_mdp.c tests/bench/bench_mdp_eval.c | $(B)
	$(CC) $(ALL_CFLAGS) -o $@ $< -lsqlite3 -lm

demo: deps
	@$(MAKE) --no-print-directory dprl.so
	@cd samples && $(SQLITE3) -bail :memory: < demo.sql

# samples/clinical/README.md: the ICU simulator, the clinicians' log, the
# rules' exact values and their private estimates, with a plot (a minute).
clinical: deps
	@$(MAKE) --no-print-directory dprl.so
	@$(PYTHON) samples/clinical/run.py --so ./dprl.so

# Balle et al. section 6 on the chain (samples/paper/README.md): up to 10^5
# episodes in a few minutes on 2 cores; paper-full goes to 10^6 (15-40 min, with load).
paper: deps
	@$(MAKE) --no-print-directory dprl.so
	@$(MAKE) --no-print-directory -C samples/paper quick

paper-full: deps
	@$(MAKE) --no-print-directory dprl.so
	@$(MAKE) --no-print-directory -C samples/paper

# better-sqlite3 for the npm package's test (tests/packaging/test_node.sh),
# built once from source into build/node-deps (scripts/install-deps.sh node).
NODEDIR ?= /usr
BETTER_SQLITE3 ?= better-sqlite3@12.11.1
NODE_DEPS = build/node-deps/node_modules/better-sqlite3/build/Release/better_sqlite3.node
node-deps: $(NODE_DEPS)
$(NODE_DEPS):
	@NODEDIR=$(NODEDIR) BETTER_SQLITE3=$(BETTER_SQLITE3) $(INSTALL) node

# The Python package (bindings/python, docs/bindings.md, "Python") into dist/, offline:
# Debian's python3-build, python3-setuptools and python3-wheel, no build
# isolation (which would download setuptools).
wheel: all
	$(PYTHON) -m build --wheel --no-isolation --outdir dist bindings/python

# make tag: an annotated tag v$(VERSION) on HEAD, only from a clean tree
# whose CHANGELOG.md has a dated entry "## [$(VERSION)] - YYYY-MM-DD" and
# whose npm package has the same version; never moves an existing tag.
# Push it with: git push origin v$(VERSION)
tag:
	@[ -n "$(VERSION)" ] || { echo "make tag: no DPRL_VERSION in ext/dprl.h"; exit 1; }
	@[ -z "$$(git status --porcelain)" ] || \
	  { echo "make tag: the tree is not clean (git status); commit or stash first"; exit 1; }
	@grep -Eq '^## \[$(subst .,\.,$(VERSION))\] - [0-9]{4}-[0-9]{2}-[0-9]{2}' CHANGELOG.md || \
	  { echo "make tag: CHANGELOG.md has no dated entry '## [$(VERSION)] - YYYY-MM-DD'"; exit 1; }
	@grep -q '"version": "$(VERSION)"' bindings/node/package.json || \
	  { echo "make tag: bindings/node/package.json is not at version $(VERSION)"; exit 1; }
	@! git rev-parse -q --verify "refs/tags/v$(VERSION)" >/dev/null || \
	  { echo "make tag: v$(VERSION) exists already"; exit 1; }
	git tag -a "v$(VERSION)" -m "dprl $(VERSION)"
	@echo "tagged v$(VERSION); push it with: git push origin v$(VERSION)"

# REFERENCE.md: docs/gen_reference.py runs every example, error, option
# and key table of docs/reference.in.md against ./dprl.so and pastes the
# results in; tests/sql/test_reference.py (make test) fails when the
# committed file differs from what it writes.
docs: all
	$(PYTHON) docs/gen_reference.py --so ./dprl.so --out REFERENCE.md

install: all
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0644 dprl.so $(DESTDIR)$(LIBDIR)/dprl.so
	@echo "installed $(DESTDIR)$(LIBDIR)/dprl.so: '.load dprl' now works from any directory"
	@echo "(SQLite tries the name as given, then with .so; entry point sqlite3_dprl_init)"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/dprl.so

clean:
	rm -rf build dprl.so libdprl.a dist bindings/python/build bindings/python/dprl.egg-info
