# kvfs build. `make` builds ./kvfs; `make test` installs missing Debian
# packages, builds, and runs every pass of the unit tests and the bats suites
# (on the optimized, ASan+UBSan and ThreadSanitizer builds, LMDB and etcd).
# `make stress` kills the daemon STRESS_KILLS times (default 200) under writes
# and checks the store after each kill, then flips DAMAGE_FLIPS (200) bits of
# a store's keys, then runs the tables' model test MODEL_SEEDS (20) times with
# fresh seeds, MODEL_STEPS (300) steps each; `make fuzz` runs each libFuzzer
# target for FUZZ_SECONDS (default 60). CI (.ci/run) runs test and a short fuzz.

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
BIN     ?= kvfs
PKGS    := fuse3 lmdb

CC      ?= cc
comma   := ,
WARN    := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes \
           -Wwrite-strings -Wvla -Wshadow
OPT     ?= -O2 -g
SANITIZE ?=
# UBSan's checks trap (an illegal instruction) rather than call libubsan:
# GCC links that as a shared runtime of its own beside libasan, and its
# 6 MB of writable data is scanned by LeakSanitizer at every exit, which
# was most of an ASan kvfs start (20 `kvfs get` runs: 2.15 s of CPU with
# it, 1.24 s without). ASan reports the trap with its stack, file:line
# first (ASAN_OPTIONS handle_sigill=1: scripts/run-tests.sh), in place of
# libubsan's sentence naming the kind of UB. UBSAN_TRAP=0 keeps libubsan's
# reports (make fuzz: clang's runtime is one static library, and libFuzzer
# saves the input that broke).
UBSAN_TRAP ?= 1
ifneq ($(SANITIZE),)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
ifneq ($(filter undefined,$(subst $(comma), ,$(SANITIZE))),)
ifeq ($(UBSAN_TRAP),1)
OPT     += -fsanitize-undefined-trap-on-error
endif
endif
endif

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# The etcd backend (store/etcd/, docs/ETCD.md) speaks etcd's JSON gateway
# through its client library (lib/etcd/) with libcurl and cJSON (Debian:
# libcurl4-openssl-dev, libcjson-dev for the headers). kvfs itself does
# not link them: lib/etcd/etcd_dl.c loads them with
# dlopen when an etcd store is opened, so an LMDB user's every `kvfs` start
# does not load libcurl's thirty libraries. The etcd test programs link them.
ETCD_LIBS = $(shell pkg-config --libs libcurl libcjson 2>/dev/null || echo -lcurl -lcjson)
CPPFLAGS += -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I. -DKVFS_ETCD
CFLAGS   += -std=c11 $(WARN) $(OPT) $(PKG_CFLAGS)
LDFLAGS  += $(OPT)
LDLIBS   += $(PKG_LIBS) -ldl -lpthread

# The flags a build directory's objects were compiled with, rewritten when
# they change (git's GIT-CFLAGS): objects left by other flags are rebuilt,
# never linked with these (libubsan's calls cannot link without libubsan).
BUILD_FLAGS := $(BUILD)/.flags
# The rule below is the first in the file: without this, a bare `make`
# would only rewrite that file.
.DEFAULT_GOAL := all
$(BUILD_FLAGS): FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' | cmp -s - $@ || \
		echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' >$@
.PHONY: FORCE

# store/ is the seam, each backend in a folder of its own; lib/etcd/ is
# the etcd client library the etcd backend is built on (it includes no
# store/ header), linked wherever store/ is.
STORE_SRC := $(wildcard store/*.c store/lmdb/*.c store/etcd/*.c lib/etcd/*.c)
MODEL_SRC := $(wildcard model/*/*.c)
FS_SRC    := $(wildcard fs/*.c)
CLI_SRC   := $(wildcard cli/*.c)

STORE_OBJ := $(STORE_SRC:%.c=$(BUILD)/%.o)
MODEL_OBJ := $(MODEL_SRC:%.c=$(BUILD)/%.o)
FS_OBJ    := $(FS_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)

# Unit tests: tests/unit/test_store_*.c link the store layer only,
# tests/unit/test_model_*.c link model and store. A program of several
# files is test_X.c (its main and fixtures) and its parts test_X_*.c, which
# are no programs of their own: test_store_lmdb, and the etcd ones below.
UNIT_LMDB_PARTS := $(wildcard tests/unit/test_store_lmdb_*.c)
UNIT_STORE := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(filter-out $(UNIT_LMDB_PARTS),$(wildcard tests/unit/test_store*.c)))
UNIT_MODEL := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_model*.c))

.PHONY: all store model unit floor test test-nocache test-etcd test-partition asan tsan coverage install uninstall clean deps bench bench-read bench-write bench-etcd bench-meta demo
all: $(BIN)

$(BIN): $(CLI_OBJ) $(FS_OBJ) $(MODEL_OBJ) $(STORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

store: $(STORE_OBJ)
model: $(MODEL_OBJ) $(STORE_OBJ)

$(BUILD)/%.o: %.c $(wildcard */*.h */*/*.h) $(BUILD_FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_store%: tests/unit/test_store%.c tests/unit/unit.h $(STORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) $(STORE_OBJ) $(LDLIBS)
# its parts, linked in by the rule above
$(BUILD)/tests/test_store_lmdb: $(UNIT_LMDB_PARTS) tests/unit/test_store_lmdb.h

$(BUILD)/tests/test_model%: tests/unit/test_model%.c tests/unit/unit.h tests/unit/unit_model.h $(MODEL_OBJ) $(STORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(MODEL_OBJ) $(STORE_OBJ) $(LDLIBS)

unit: $(UNIT_STORE) $(UNIT_MODEL)

# The benchmarks' floor (scripts/fuse-floor.c): a FUSE file system that
# answers the same requests and keeps nothing, to show what the round trips
# cost by themselves; it links fs/uring.c alone for -o io_uring. Built by
# make test too, so that it keeps compiling.
floor: $(BUILD)/fuse-floor
$(BUILD)/fuse-floor: scripts/fuse-floor.c fs/uring.c fs/uring_int.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ scripts/fuse-floor.c fs/uring.c $(PKG_LIBS) -lpthread

deps:
	@bash scripts/deps.sh

# The whole suite, every pass of scripts/test-all.sh (tests/README.md: what
# each pass runs, on which build and why): the optimized build, the
# ASan+UBSan build and the ThreadSanitizer build, on LMDB and on a 3-member
# etcd cluster, each pass with its wall time, one summary line at the end.
# The three builds compile on every CPU (a plain `make test` would give
# each one, 100 s of a 25-minute budget on two).
SAN_ASAN := BUILD=build-asan BIN=build-asan/kvfs SANITIZE=address,undefined
SAN_TSAN := BUILD=build-tsan BIN=build-tsan/kvfs SANITIZE=thread
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SUBMAKE := $(MAKE) --no-print-directory -j$(BUILD_JOBS)
test: deps
	@$(SUBMAKE) all unit floor etcd-store-test etcd-client-test
	@$(SUBMAKE) $(SAN_ASAN) all unit etcd-store-test etcd-client-test
	@$(SUBMAKE) $(SAN_TSAN) all
	@bash scripts/test-all.sh

# One pass at a time. test-nocache: the mount suites with the kernel's name
# and attribute caches off (-o entry_timeout=0,attr_timeout=0) on the
# optimized build (make test runs them so under TSan).
test-nocache: deps
	@$(SUBMAKE) all
	@bash scripts/test-all.sh nocache

# The suites tagged backends with every store on a 3-member etcd cluster
# (scripts/test-etcd.sh starts and stops it; LMDB-only tests skip, saying why).
test-etcd: deps
	@$(SUBMAKE) all etcd-store-test etcd-client-test
	@bash scripts/test-all.sh etcd

# The partition suite alone (tests/90-etcd-partition.bats; make test runs
# it beside the asan pass): three etcd members and two kvfs hosts as network
# namespaces (scripts/netns-cluster.sh, root), cut, split and slowed while
# both hosts write; a checker compares every acknowledged write with the store.
test-partition: deps
	@$(SUBMAKE) all
	@bash scripts/test-all.sh partition

# The sanitizer builds live entirely in build-asan/ and build-tsan/. A
# "WARNING: ThreadSanitizer" line in a daemon's log fails the test
# (tests/test_helper/common.bash); tests/tsan.supp names the reports judged
# false, each with the reason (TSAN_OPTIONS: scripts/run-tests.sh).
asan: deps
	@$(SUBMAKE) $(SAN_ASAN) all unit etcd-store-test etcd-client-test
	@bash scripts/test-all.sh asan

tsan: deps
	@$(SUBMAKE) $(SAN_TSAN) all
	@bash scripts/test-all.sh tsan

# Which lines of fs/, model/, store/ and lib/ each bats file of the asan
# pass reaches, on a gcc --coverage build of its own (build-cov/, in no
# other target), and which files that pass leaves to the plain pass as the
# others reach all their lines (tag "covered": scripts/coverage-by-file.sh,
# tests/README.md). Rerun it when tests change.
COV_BUILD := BUILD=build-cov BIN=build-cov/kvfs OPT='-O0 -g --coverage'
coverage: deps
	@$(SUBMAKE) $(COV_BUILD) all unit
	@bash scripts/coverage-by-file.sh

# As root it also runs `make install` (so the README's `kvfs` commands work);
# KEEP=1 keeps the demo store mounted.
demo:
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' bash scripts/demo.sh

# kvfs beside tmpfs, the floor (over /dev/fuse and io_uring), mergerfs and
# bindfs on writes and reads, one table of ratios to tmpfs and one CSV (root;
# installs mergerfs and bindfs when missing). docs/SPEED.md, "Beside other
# FUSE file systems".
bench: all floor
	@KVFS_FLOOR=$(CURDIR)/$(BUILD)/fuse-floor bash scripts/bench.sh

# The etcd backend's store-level workloads beside LMDB's (a cluster of its own).
bench-etcd: etcd-store-test
	@bash scripts/bench-etcd.sh

# mdtest-style metadata rates (scripts/bench-meta.sh): P processes create,
# stat and remove N files on tmpfs, LMDB mounts and an etcd mount (a 3-member
# cluster of its own). Its worker, scripts/bench-meta.c, is built here.
bench-meta: all $(BUILD)/bench-meta
	@KVFS_META_BIN=$(CURDIR)/$(BUILD)/bench-meta bash scripts/bench-meta.sh
$(BUILD)/bench-meta: scripts/bench-meta.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<

# The read workloads against tmpfs (without KVFS_BENCH_WRITE=0,
# scripts/bench-read.sh runs bench-write.sh after them: one table of both).
bench-read: all
	@KVFS_BENCH_WRITE=0 bash scripts/bench-read.sh

# Write workloads (restores, documents, parallel writers); root, the store on disk.
bench-write: all floor
	@KVFS_FLOOR=$(CURDIR)/$(BUILD)/fuse-floor bash scripts/bench-write.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)/sbin
	install -m 0755 kvfs $(DESTDIR)$(PREFIX)/bin/kvfs
	install -m 0755 scripts/mount.kvfs $(DESTDIR)/sbin/mount.kvfs
	ln -sf mount.kvfs $(DESTDIR)/sbin/mount.fuse.kvfs	# mount -t fuse.kvfs looks for this name
	install -m 0644 docs/kvfs.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvfs.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/kvfs $(DESTDIR)$(PREFIX)/share/man/man1/kvfs.1 \
	      $(DESTDIR)/sbin/mount.kvfs $(DESTDIR)/sbin/mount.fuse.kvfs

clean:
	rm -rf build build-asan build-tsan build-cov kvfs

# ---- crash probe and fuzzing (tests/60-crash.bats runs a few kills) ----
# `make stress` kills the daemon STRESS_KILLS times (scripts/stress-crash.sh),
# then flips DAMAGE_FLIPS random bits in a store's keys (scripts/damage-probe.sh:
# the mount, ls and export must equal the undamaged store's or fail, never hang),
# then runs scripts/model-tables.py (random writes to tables through a mount and
# the CLI against its oracle) MODEL_SEEDS times with fresh seeds, MODEL_STEPS
# steps each, in a fresh store each, and stops at the first failure with its seed;
# `make fuzz` builds the libFuzzer targets tests/fuzz/fuzz_*.c with clang in
# build-fuzz/ and runs each for FUZZ_SECONDS on its corpus (scripts/run-fuzz.sh).
STRESS_KILLS ?= 200
DAMAGE_FLIPS ?= 200
MODEL_SEEDS ?= 20
MODEL_STEPS ?= 300
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
.PHONY: stress fuzz fuzz-build fuzz-clean

stress: deps
	@$(MAKE) --no-print-directory all
	@KVFS_BIN=$(CURDIR)/$(BIN) bash scripts/stress-crash.sh $(STRESS_KILLS)
	@KVFS_BIN=$(CURDIR)/$(BIN) bash scripts/damage-probe.sh -n $(DAMAGE_FLIPS)
	@for i in $$(seq $(MODEL_SEEDS)); do d=$$(mktemp -d) && \
		scripts/model-tables.py $(CURDIR)/$(BIN) $$d/store $$d/mnt --mount --steps $(MODEL_STEPS) || \
		{ echo "make stress: model-tables failed (the seed is above; store and log kept in $$d)"; exit 1; }; \
		rm -rf $$d; done

fuzz: deps
	@$(SUBMAKE) CC=clang BUILD=build-fuzz UBSAN_TRAP=0 \
		SANITIZE=fuzzer-no-link,address,undefined fuzz-build
	@bash scripts/run-fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_store.h $(MODEL_OBJ) $(STORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -fsanitize=fuzzer,address,undefined \
		-o $@ $< $(MODEL_OBJ) $(STORE_OBJ) $(LDLIBS)

clean: fuzz-clean
fuzz-clean:
	rm -rf build-fuzz

# ---- the etcd backend (docs/ETCD.md) ----
# Its test programs need a live cluster, so they live in $(BUILD)/etcd/, out
# of the unit programs' way: `make etcd-client-test` (the gateway client),
# run by tests/80-etcd-client.bats, and `make etcd-store-test` (the backend's
# operations), run by tests/82-etcd-store.bats; each starts a cluster
# (scripts/etcd-cluster.sh).
ETCD_TEST := $(BUILD)/etcd/test_etcd_client
.PHONY: etcd-client-test
etcd-client-test: $(ETCD_TEST)

ETCD_CLIENT_SRC := $(wildcard lib/etcd/*.c)
ETCD_TEST_SRC := tests/unit/test_etcd_client.c $(wildcard tests/unit/test_etcd_client_*.c) tests/unit/etcd_tool.c
$(ETCD_TEST): $(ETCD_TEST_SRC) tests/unit/etcd_test.h tests/unit/unit.h \
		$(ETCD_CLIENT_SRC) $(wildcard lib/etcd/*.h) store/etcd/etcd_buf.c store/etcd/etcd_buf.h \
		$(BUILD_FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(ETCD_TEST_SRC) \
		store/etcd/etcd_buf.c $(ETCD_CLIENT_SRC) $(ETCD_LIBS) -ldl -lpthread

ETCD_STORE_TEST := $(BUILD)/etcd/test_etcd_store
.PHONY: etcd-store-test
etcd-store-test: $(ETCD_STORE_TEST)

$(ETCD_STORE_TEST): tests/unit/test_etcd_store.c $(wildcard tests/unit/test_etcd_store_*.c) \
		tests/unit/test_etcd_store.h tests/unit/unit.h $(STORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) $(STORE_OBJ) $(LDLIBS)
