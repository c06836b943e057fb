# dprl: differentially private RL evaluation inside SQLite.
#
#   make          build ./dprl.so (checks the Debian dependencies first)
#   make demo     install what is missing, build, run a sample end to end
#   make test     install what is missing, run every test, then again under
#                 AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench    benchmark against a bare scan and plain SQL
#   make test-engines  the per-engine SQL of sql/ on SQLite, PostgreSQL and
#                 DuckDB (installs them), and the postgres_fdw demo
#   make scale-out-demo  a release from two PostgreSQL shards (postgres_fdw)
#   make install  install dprl.so where `.load dprl` finds it
#
# Core modules (plain C, no SQLite) are ext/*.c except the glue: dprl.c and
# sql_*.c.  Unit tests link the core only.

CC      ?= cc
PYTHON  ?= /usr/bin/python3
SQLITE3 ?= sqlite3
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
BLAS_INC = -I/usr/include/x86_64-linux-gnu/openblas-pthread
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC $(WARN) $(BLAS_INC) $(CFLAGS)
LIBS     = -llapacke -lopenblas -lm

# Sanitizer build (a separate tree under build/san).
SAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined

# `.load dprl` asks the dynamic loader for "dprl.so" by name: it must be in
# a directory the loader searches without ldconfig, the multiarch libdir.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR  ?= /usr/lib/$(MULTIARCH)

DEB_PKGS = libsqlite3-dev sqlite3 liblapacke-dev libopenblas-dev python3 gnuplot-nox

GLUE_SRC  = $(wildcard ext/sql_*.c) ext/dprl.c
CORE_SRC  = $(filter-out $(GLUE_SRC),$(wildcard ext/*.c))
HDRS      = $(wildcard ext/*.h)
UNIT_SRC  = $(wildcard tests/unit/test_*.c)

B ?= build
CORE_OBJ  = $(patsubst ext/%.c,$(B)/%.o,$(CORE_SRC))
GLUE_OBJ  = $(patsubst ext/%.c,$(B)/%.o,$(GLUE_SRC))
UNIT_BIN  = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))

.PHONY: all check-deps deps demo test test-fast test-san unit bench install \
        uninstall clean samples paper paper-full engines-deps pg-deps duckdb-deps \
        test-engines scale-out-demo
.DEFAULT_GOAL := all

all: check-deps dprl.so

# `make` only checks; `make deps` (run by demo and test) installs with apt-get.
check-deps:
	@missing=""; \
	for h in sqlite3.h lapacke.h; do \
	  echo "#include <$$h>" | $(CC) $(BLAS_INC) -E -x c - >/dev/null 2>&1 || missing="$$missing $$h"; \
	done; \
	[ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || \
	  ls /usr/lib/*/libopenblas.so >/dev/null 2>&1 || missing="$$missing libopenblas"; \
	if [ -n "$$missing" ]; then \
	  echo "dprl: missing$$missing."; \
	  echo "Install the dependencies with:"; \
	  echo "  apt-get install -y $(DEB_PKGS)"; \
	  echo "(or run 'make deps' as root, which does exactly that)"; \
	  exit 1; \
	fi

deps:
	@need=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || need="$$need $$p"; \
	done; \
	if [ -n "$$need" ]; then \
	  echo "dprl: installing$$need"; \
	  if [ "$$(id -u)" != 0 ]; then echo "dprl: run as root, or: sudo apt-get install -y$$need"; exit 1; fi; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need) >/dev/null || exit 1; \
	fi

dprl.so: $(CORE_OBJ) $(GLUE_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS) $(LDFLAGS)

$(B)/%.o: ext/%.c $(HDRS) | $(B)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/unit/%.c tests/unit/check.h $(CORE_OBJ) | $(B)/tests
	$(CC) $(ALL_CFLAGS) -Iext -o $@ $< $(CORE_OBJ) $(LIBS) $(LDFLAGS)

$(B) $(B)/tests:
	mkdir -p $@

unit: $(UNIT_BIN)

# The whole suite: unit tests and SQL tests against this build, then the same
# against a sanitizer build.  tests/run.sh prints the "N passed, M failed".
test: deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so unit
	@$(MAKE) --no-print-directory B=build/san CFLAGS="$(SAN_FLAGS)" \
	  LDFLAGS="-fsanitize=address,undefined" build/san/dprl.so unit-san
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) sh tests/run.sh

# Only the normal build (quicker while developing).
test-fast: check-deps dprl.so unit
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) DPRL_NO_SAN=1 sh tests/run.sh

# Other engines (README "Scaling out").  PostgreSQL from Debian; DuckDB from
# npm (@duckdb/node-api, pinned) into build/engines/duckdb.  Each fails
# loudly when it cannot install: the engine tests never skip an engine.
PG_PKGS      = postgresql postgresql-contrib
DUCKDB_NODE  = 1.5.6-r.1
DUCKDB_DIR   = build/engines/duckdb

engines-deps: pg-deps duckdb-deps

pg-deps:
	@need=""; for p in $(PG_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || need="$$need $$p"; \
	done; \
	if [ -n "$$need" ]; then \
	  echo "dprl: installing$$need"; \
	  if [ "$$(id -u)" != 0 ]; then echo "dprl: cannot install PostgreSQL: run as root, or: sudo apt-get install -y$$need"; exit 1; fi; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need) >/dev/null \
	    || { echo "dprl: FAILED to install PostgreSQL (apt-get install$$need)"; exit 1; }; \
	fi; \
	ls /usr/lib/postgresql/*/lib/postgres_fdw.so >/dev/null 2>&1 \
	  || { echo "dprl: FAILED: PostgreSQL has no postgres_fdw (package postgresql-contrib)"; exit 1; }

duckdb-deps:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "dprl: installing nodejs npm"; \
	  [ "$$(id -u)" = 0 ] || { echo "dprl: cannot install Node.js: run as root, or: sudo apt-get install -y nodejs npm"; exit 1; }; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null \
	    || { echo "dprl: FAILED to install Node.js (apt-get install nodejs npm)"; exit 1; }; \
	fi
	@grep -qs '"version": "$(DUCKDB_NODE)"' $(DUCKDB_DIR)/node_modules/@duckdb/node-api/package.json || { \
	  echo "dprl: installing @duckdb/node-api@$(DUCKDB_NODE) into $(DUCKDB_DIR)"; \
	  mkdir -p $(DUCKDB_DIR) && cd $(DUCKDB_DIR) && \
	  npm install --no-audit --no-fund --loglevel=error @duckdb/node-api@$(DUCKDB_NODE) >/dev/null \
	    || { echo "dprl: FAILED to install DuckDB (npm install @duckdb/node-api@$(DUCKDB_NODE))"; exit 1; }; }

# Ends with its own "N passed, M failed".
test-engines: deps engines-deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@PYTHON=$(PYTHON) SQLITE3=$(SQLITE3) DUCKDB_NODE_DIR=$(CURDIR)/$(DUCKDB_DIR) sh tests/engines/run.sh

scale-out-demo: deps pg-deps
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory dprl.so
	@sh sql/scale_out_pg.sh

build/san/dprl.so: $(CORE_OBJ) $(GLUE_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS) $(LDFLAGS)

unit-san: $(UNIT_BIN)

bench: deps check-deps dprl.so $(B)/dprl_bench
	@$(B)/dprl_bench

$(B)/dprl_bench: tests/bench/bench.c tests/bench/bench_q.c | $(B)
	$(CC) $(ALL_CFLAGS) -o $@ $< -lsqlite3 -lm

demo: deps
	@$(MAKE) --no-print-directory dprl.so
	@cd samples && $(SQLITE3) -bail :memory: < demo.sql

# Balle et al. section 6 on the chain (samples/paper/README.md): up to 10^5
# episodes in about 3 minutes on 2 cores; paper-full goes to 10^6 (~15 min).
paper: deps
	@$(MAKE) --no-print-directory dprl.so
	@$(MAKE) --no-print-directory -C samples/paper quick

paper-full: deps
	@$(MAKE) --no-print-directory dprl.so
	@$(MAKE) --no-print-directory -C samples/paper

install: all
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0644 dprl.so $(DESTDIR)$(LIBDIR)/dprl.so
	@echo "installed $(DESTDIR)$(LIBDIR)/dprl.so: '.load dprl' now works from any directory"
	@echo "(SQLite tries the name as given, then with .so; entry point sqlite3_dprl_init)"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/dprl.so

clean:
	rm -rf build dprl.so
