# gpuadmit: one non-recursive Makefile.
#   make            optimised build: build/release/gpuadmit
#   make asan       AddressSanitizer + UndefinedBehaviorSanitizer build: build/san/gpuadmit
#   make check      installs missing packages, then unit and end-to-end tests, plain and sanitized
#   make run        installs missing packages, builds, makes dev certificates, serves on :8443
#                   with the seed 000 snapshot as its cluster view
#   make valgrind   unit tests under valgrind
#   make fmt-check  clang-format conformance;  make lint  cppcheck
#   make fuzz       libFuzzer targets (tests/fuzz), FUZZ_SECONDS each;  make fuzz-check  short pass
#   make soak       SOAK_SECONDS of mixed load and chaos, then SOAK_VALGRIND_SECONDS under valgrind
#   make mutation   each one-line bug in tests/mutation/mutants.txt must fail its test command
#                   (MUTANTS="ID ..." for some); about 3 minutes, not part of check
.DEFAULT_GOAL := all
SHELL := /bin/bash

PKG_CONFIG ?= pkg-config
# V=1 shows the full compiler command lines
Q := $(if $(V),,@)
CC ?= cc
PKGS := libmicrohttpd gnutls yyjson yaml-0.1 openssl libcurl
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Evaluated lazily, so that "make check" can install the packages before pkg-config is asked.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS))

WARN := -Wall -Wextra -Wformat=2 -Wvla -Wshadow -Wstrict-prototypes -Werror
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -MMD -MP $(WARN) -iquote build
RELEASE_CFLAGS := -O2 -g
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDLIBS_EXTRA := -lpthread

# webhook/ holds the request path and the base modules, its folders the families
# (docs/architecture.md)
SRC := $(wildcard webhook/*.c webhook/*/*.c)
LIB_SRC := $(filter-out webhook/cli/main.c,$(SRC))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_NAMES := $(notdir $(UNIT_SRC:.c=))

# $(call variant,NAME,CFLAGS): objects, binary and unit tests of one build variant.
define variant
$(1)_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(SRC))
$(1)_LIB_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(LIB_SRC))
$(1)_UNIT := $$(addprefix build/$(1)/tests/,$$(UNIT_NAMES))

build/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	@echo "  CC [$(1)] $$<"
	$$(Q)$$(CC) $$(BASE_CFLAGS) $(2) $$(PKG_CFLAGS) -iquote webhook -c $$< -o $$@

build/$(1)/gpuadmit: $$($(1)_OBJ)
	@echo "  LD [$(1)] $$@"
	$$(Q)$$(CC) $(2) $$^ -o $$@ $$(PKG_LIBS) $$(LDLIBS_EXTRA)

build/$(1)/tests/test_%: build/$(1)/tests/unit/test_%.o $$($(1)_LIB_OBJ)
	@mkdir -p $$(@D)
	@echo "  LD [$(1)] $$@"
	$$(Q)$$(CC) $(2) $$^ -o $$@ $$(PKG_LIBS) $$(LDLIBS_EXTRA)

-include $$(patsubst %.o,%.d,$$($(1)_OBJ))
-include $$(patsubst %,build/$(1)/tests/unit/%.d,$$(UNIT_NAMES))
endef

# The version lives in a generated header that is rewritten only when it changes, so that a new
# commit rebuilds main.c and nothing else.
build/version.h: FORCE
	@mkdir -p build
	@echo '#define GPUADMIT_VERSION "$(VERSION)"' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
# phony, or .SECONDARY below would keep it from ever being remade
.PHONY: FORCE
FORCE:
build/release/webhook/cli/main.o build/san/webhook/cli/main.o: build/version.h

$(eval $(call variant,release,$(RELEASE_CFLAGS)))
$(eval $(call variant,san,$(SAN_CFLAGS)))
.SECONDARY:

.PHONY: all asan deps check check-run unit unit-san e2e e2e-san run valgrind fmt fmt-check lint clean

all: build/release/gpuadmit
asan: build/san/gpuadmit

deps:
	@scripts/install-deps.sh

SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp

unit: $(release_UNIT)
	@tests/run-tests.sh $(release_UNIT)

unit-san: $(san_UNIT)
	@$(SAN_ENV) tests/run-tests.sh $(san_UNIT)

E2E := $(sort $(wildcard tests/e2e/test_*.py))
# Debian's interpreter, with Debian's python3-jsonschema: not whatever python3 is first in PATH
PYTHON := /usr/bin/python3

e2e: build/release/gpuadmit
	@for t in $(E2E); do GPUADMIT_BIN=build/release/gpuadmit $(PYTHON) $$t || exit 1; done

e2e-san: build/san/gpuadmit
	@for t in $(E2E); do \
		$(SAN_ENV) GPUADMIT_BIN=build/san/gpuadmit GPUADMIT_SLOW=1 $(PYTHON) $$t || exit 1; done

check: deps
	@$(MAKE) --no-print-directory check-run

check-run: all asan $(release_UNIT) $(san_UNIT)
	@tests/run-suites.sh "unit" "$(MAKE) --no-print-directory unit" \
	                     "unit (sanitizers)" "$(MAKE) --no-print-directory unit-san" \
	                     "e2e" "$(MAKE) --no-print-directory e2e" \
	                     "e2e (sanitizers)" "$(MAKE) --no-print-directory e2e-san" \
	                     "manifests" "$(MAKE) --no-print-directory manifests-check" \
	                     "policy" "$(MAKE) --no-print-directory policy-test" \
	                     "fuzz (short)" "$(MAKE) --no-print-directory fuzz-check FUZZ_CHECK_SECONDS=10" \
	                     "image" "$(MAKE) --no-print-directory image-check-if-root" \
	                     "unit (valgrind)" "$(MAKE) --no-print-directory valgrind"

# make policy-test: the policy's test suites under rules/ (rules/tests/*.yaml), run by gpuadmit
# test (rules/tests/README.md). GPUADMIT_BIN picks another build, e.g. build/san/gpuadmit.
.PHONY: policy-test
policy-test: build/release/gpuadmit
	@$${GPUADMIT_BIN:-build/release/gpuadmit} test rules/

# make run's cluster view: seed 000 as a real apiserver listed it (make cluster-capture), and
# the AdmissionReview that apiserver sent for the seed's benchmark ReplicaSet
RUN_SNAPSHOT := tests/data/snapshots/seed-000.json
RUN_REVIEW := tests/data/review-stall-replicaset.json

run: deps
	@$(MAKE) --no-print-directory all
	@# reused while it covers the names and has a day left; otherwise made anew
	@build/release/gpuadmit certs --check --out certs/dev --dns localhost --ip 127.0.0.1 \
		--min-days 1 >/dev/null 2>&1 || build/release/gpuadmit certs --force --out certs/dev \
		--dns localhost --ip 127.0.0.1 --ip ::1 >/dev/null
	@echo
	@echo "Try it (in another terminal): a GPU pod, patched; the seed's 8-replica benchmark"
	@echo "ReplicaSet, admitted with the capacity warning (4 of the snapshot's 16 GPUs are free)"
	@echo "  curl -sS --cacert $(CURDIR)/certs/dev/ca.crt -H 'Content-Type: application/json' --data @$(CURDIR)/tests/data/review-pod.json https://127.0.0.1:8443/mutate"
	@echo "  curl -sS --cacert $(CURDIR)/certs/dev/ca.crt -H 'Content-Type: application/json' --data @$(CURDIR)/$(RUN_REVIEW) https://127.0.0.1:8443/validate"
	@echo
	exec build/release/gpuadmit serve --listen 127.0.0.1:8443 --tls-cert certs/dev/tls.crt \
		--tls-key certs/dev/tls.key --rules rules --cluster-snapshot $(RUN_SNAPSHOT)

valgrind: $(release_UNIT)
	@for t in $(release_UNIT); do \
		valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect $$t || exit 1; \
	done

FMT_FILES = webhook/*.c webhook/*.h webhook/*/*.c webhook/*/*.h tests/unit/*.c tests/unit/*.h \
	tests/fuzz/*.c tests/fuzz/*.h tests/bench/*.c

fmt:
	clang-format -i $(FMT_FILES)

fmt-check:
	clang-format --dry-run --Werror $(FMT_FILES)

# One preprocessor configuration (--max-configs=1): the others cppcheck would try come from
# yyjson.h's #ifdefs, not ours, and made a run last ten times as long. The null checks cppcheck
# calls redundant inside yyjson.h's own inline functions are yyjson's, not ours.
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--max-configs=1 --suppress=toomanyconfigs \
		--suppress='nullPointerRedundantCheck:*/yyjson.h' \
		--suppress=missingIncludeSystem --library=gnu \
		--include=$$($(PKG_CONFIG) --variable=includedir yyjson)/yyjson.h \
		-Iwebhook webhook tests/unit tests/bench/bench_view.c

# make bench (tests/bench/run.py, README "Performance"): gpuadmit against nginx and a Node.js
# webhook over TLS (wrk), handshakes, decode+evaluate+encode in process and memory; then the
# cluster view's benchmark (tests/bench/README.md; BENCH_VIEW=0 skips it, BENCH_ARGS="--scale 0.1
# --reps 3" shrinks it). BENCH_QUICK=1 for a short run. Installs wrk, nginx and node if missing;
# not part of check.
.PHONY: bench bench-deps
BENCH_PACKAGES := wrk nginx-light nodejs valgrind
BENCH_VIEW ?= 1
build/release/tests/bench/bench_view: tests/bench/bench_view.c $(release_LIB_OBJ)
	@mkdir -p $(@D)
	@echo "  CC+LD [release] $@"
	$(Q)$(CC) $(BASE_CFLAGS) $(RELEASE_CFLAGS) $(PKG_CFLAGS) -iquote webhook \
		$(filter %.c %.o,$^) -o $@ $(PKG_LIBS) $(LDLIBS_EXTRA)

build/release/tests/bench/bench_codec: tests/bench/bench_codec.c $(release_LIB_OBJ)
	@mkdir -p $(@D)
	@echo "  CC+LD [release] $@"
	$(Q)$(CC) $(BASE_CFLAGS) $(RELEASE_CFLAGS) $(PKG_CFLAGS) -iquote webhook \
		$(filter %.c %.o,$^) -o $@ $(PKG_LIBS) $(LDLIBS_EXTRA)

build/release/tests/bench/handshake build/release/tests/bench/overload: \
		build/release/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	@echo "  CC+LD [release] $@"
	$(Q)$(CC) $(BASE_CFLAGS) $(RELEASE_CFLAGS) $$($(PKG_CONFIG) --cflags openssl) $< -o $@ \
		$$($(PKG_CONFIG) --libs openssl) $(LDLIBS_EXTRA)

-include build/release/tests/bench/bench_view.d build/release/tests/bench/bench_codec.d \
	build/release/tests/bench/handshake.d build/release/tests/bench/overload.d

bench-deps:
	@scripts/install-deps.sh $(BENCH_PACKAGES)

bench: deps bench-deps
	@$(MAKE) --no-print-directory build/release/gpuadmit build/release/tests/bench/bench_codec \
		build/release/tests/bench/handshake build/release/tests/bench/overload $(if $(filter 0,$(BENCH_VIEW)),,build/release/tests/bench/bench_view)
	@$(PYTHON) tests/bench/run.py build/release
	@if [[ "$(BENCH_VIEW)" != 0 ]]; then echo; echo "Cluster view (tests/bench/README.md):"; \
		build/release/tests/bench/bench_view $(BENCH_ARGS); fi

# the control plane's daemons first: their PID files are under build/cluster
clean:
	@[[ ! -d build/cluster ]] || scripts/cluster.sh down
	rm -rf build

# ---------------------------------------------------------------------------------------------
# Deployment manifests (manifests/README.md). Rendering needs kubectl (its built-in kustomize).
#   make manifests [OVERLAY=audit|enforce|cert-manager|cert-manager-enforce|PATH] [CERTS_DIR=DIR]
#                  [NAMESPACE=NS] [IMAGE_NAME=NAME IMAGE_TAG=TAG]
#       writes build/manifests/$(OVERLAY).yaml (for a PATH, its last part). OVERLAY may be the
#       folder of any kustomization built on manifests/. NAMESPACE moves every reference to the
#       webhook's namespace (manifests/namespace/). An overlay with the static-CA placeholder
#       (audit, enforce) gets the caBundle and the TLS Secret from $(CERTS_DIR), made when a
#       file is missing, so its output holds a private key and is written mode 0600.
#   make manifests-check    tests/manifests/test_manifests.py: schemas, routes, lock-out, CEL
#   make manifests-golden   rewrites tests/manifests/rendered/ from kubectl kustomize
.PHONY: manifests manifests-check manifests-golden
OVERLAY ?= audit
CERTS_DIR ?= certs/cluster
NAMESPACE ?= gpuadmit-system
# the image make image builds (docker.io/library/gpuadmit:VERSION); set both for your registry
IMAGE_NAME ?= gpuadmit
IMAGE_TAG ?= $(VERSION)
KUBECTL ?= kubectl
MANIFEST_OVERLAYS := $(notdir $(wildcard manifests/overlays/*))
# Writes ca.crt, ca.key, tls.crt and tls.key for the Service gpuadmit.$$ns.svc (ns: the
# namespace the rendering gives it):
MANIFESTS_CERTS = build/release/gpuadmit certs --service gpuadmit --namespace $$ns \
	--out $(CERTS_DIR) >/dev/null

manifests:
	@set -euo pipefail; \
	case " $(MANIFEST_OVERLAYS) " in *" $(OVERLAY) "*) dir=manifests/overlays/$(OVERLAY);; \
	  *) dir=$(OVERLAY); [[ -f $$dir/kustomization.yaml || -f $$dir/Kustomization ]] || { \
	    echo "OVERLAY=$(OVERLAY): expected one of: $(MANIFEST_OVERLAYS), or a kustomization's folder" >&2; \
	    exit 2; };; esac; \
	mkdir -p build/manifests; \
	out=build/manifests/$$(basename "$$dir").yaml; raw=$$(mktemp); trap 'rm -f "$$raw" "$$out.tmp"' EXIT; \
	KUBECTL=$(KUBECTL) scripts/manifests-render.sh "$$dir" $(NAMESPACE) $(IMAGE_NAME) "$(IMAGE_TAG)" \
	  > "$$raw"; \
	ns=$$($(PYTHON) scripts/manifests-fill.py --namespace-of < "$$raw") || exit 2; \
	if $(PYTHON) scripts/manifests-fill.py --needs-certs < "$$raw"; then \
	  $(MAKE) --no-print-directory all >/dev/null; \
	  for f in ca.crt ca.key tls.crt tls.key; do \
	    [[ -s $(CERTS_DIR)/$$f ]] || { $(MANIFESTS_CERTS); break; }; done; \
	  build/release/gpuadmit certs --check --service gpuadmit --namespace $$ns \
	    --out $(CERTS_DIR) --min-days 1 >/dev/null || { echo "$(CERTS_DIR) holds no valid \
	certificate for gpuadmit.$$ns.svc (see gpuadmit certs --check); remove it, or set \
	CERTS_DIR to another folder" >&2; exit 2; }; \
	  secret=" (with the TLS Secret: it holds the private key, mode 0600)"; \
	else secret=""; fi; \
	(umask 077; $(PYTHON) scripts/manifests-fill.py $(CERTS_DIR) < "$$raw" > "$$out.tmp"); \
	mv -f "$$out.tmp" "$$out"; \
	echo "wrote $$out$$secret"; \
	echo "apply it with:  kubectl apply -f $$out"

manifests-check: build/release/gpuadmit
	@GPUADMIT_BIN=$${GPUADMIT_BIN:-build/release/gpuadmit} KUBECTL=$(KUBECTL) \
		$(PYTHON) tests/manifests/test_manifests.py

# make chart-check: tests/chart/test_chart.py on the Helm chart charts/gpuadmit: helm lint, each
# overlay's values render the overlay's objects, and every rendering (certificate sources, a
# renamed namespace, policy, monitoring) goes through the manifests checks. helm is built once
# from its Go module (scripts/helm-binary.sh, a few minutes cold). Not part of check; CI runs it
# after check (.ci/run).
.PHONY: chart-check
chart-check: build/release/gpuadmit
	@scripts/helm-binary.sh >/dev/null
	@GPUADMIT_BIN=$${GPUADMIT_BIN:-build/release/gpuadmit} $(PYTHON) tests/chart/test_chart.py

manifests-golden:
	@mkdir -p tests/manifests/rendered
	@for o in $(MANIFEST_OVERLAYS); do \
		$(KUBECTL) kustomize manifests/overlays/$$o > tests/manifests/rendered/$$o.yaml || exit 1; \
		echo "wrote tests/manifests/rendered/$$o.yaml"; done

# make image: the container image as an OCI archive, build/image/gpuadmit-VERSION.oci.tar, built
# offline from this system's Debian packages with umoci (image/README.md). make image-check runs
# the image's files in a chroot as uid 65532 and checks its config; it needs root, and make
# check runs it when it is root. Their tools are installed here, not by deps.
.PHONY: image image-deps image-check image-check-if-root
IMAGE_PACKAGES := umoci ca-certificates
IMAGE_CHECK_PACKAGES := skopeo
IMAGE_ARCHIVE := build/image/gpuadmit-$(VERSION).oci.tar

image-deps:
	@scripts/install-deps.sh $(IMAGE_PACKAGES)

image: deps image-deps
	@$(MAKE) --no-print-directory all
	@VERSION=$(VERSION) image/build-oci.sh build/release/gpuadmit build/image

image-check: image
	@scripts/install-deps.sh $(IMAGE_CHECK_PACKAGES)
	@VERSION=$(VERSION) $(PYTHON) image/check-image.py $(IMAGE_ARCHIVE)

# make tls-audit: testssl.sh against a server with certificates from gpuadmit certs; passes with
# nothing rated HIGH or CRITICAL but the revocation check a private CA always fails, TLS 1.2
# and 1.3 only, and forward secrecy (tests/tls/audit.py). About a minute; not part of check,
# CI runs it after check (.ci/run).
.PHONY: tls-audit
tls-audit: deps build/release/gpuadmit
	@scripts/install-deps.sh testssl.sh
	@GPUADMIT_BIN=build/release/gpuadmit $(PYTHON) tests/tls/audit.py

# make mutation (tests/mutation/run.py, docs/development.md "Mutation"): every mutant of
# tests/mutation/mutants.txt applied in turn to a scratch copy of the tree (build/mutation/tree,
# removed afterwards), built and tested there; the last line is "N killed, M survived", and a
# survivor, a broken mutant or a command that fails without a mutant fails the target. The
# release objects built here first are copied, so that each mutant costs one compile.
.PHONY: mutation
MUTANTS ?=
mutation: build/release/gpuadmit $(release_UNIT)
	@$(PYTHON) tests/mutation/run.py $(MUTANTS)

# make soak (tests/soak/soak.py, docs/development.md "Soak"): the release build serving a
# simulated API server (--kubeconfig) under mixed load for SOAK_SECONDS, while rule files, certificate and watches are
# broken and replaced; passes on no failed valid request, no restart, resident memory growth
# under 5 % after warm-up, descriptors back to their start. Then SOAK_VALGRIND_SECONDS of the
# same, lighter, under valgrind (no error, no definite or indirect leak). About 12 minutes at
# the defaults; not part of check. Installs valgrind if missing.
.PHONY: soak
SOAK_SECONDS ?= 600
SOAK_VALGRIND_SECONDS ?= 60
soak: deps
	@scripts/install-deps.sh valgrind
	@$(MAKE) --no-print-directory build/release/gpuadmit
	@start=$$(date +%s); rc=0; \
	GPUADMIT_BIN=build/release/gpuadmit $(PYTHON) tests/soak/soak.py \
		--seconds $(SOAK_SECONDS) || rc=1; \
	GPUADMIT_BIN=build/release/gpuadmit $(PYTHON) tests/soak/soak.py --valgrind \
		--seconds $(SOAK_VALGRIND_SECONDS) || rc=1; \
	echo "make soak: $$(( $$(date +%s) - start )) s in all: $$( ((rc)) && echo FAIL || echo PASS)"; \
	exit $$rc

# make check runs the image check where it can: chroot and setuid need root (CI runs as root)
image-check-if-root:
	@if [[ $$(id -u) -eq 0 ]]; then $(MAKE) --no-print-directory image-check; \
	else echo "image: not checked: make image-check needs root (chroot, uid 65532)"; fi

# ---------------------------------------------------------------------------------------------
# Fuzzing (docs/development.md "Fuzzing"): libFuzzer targets in tests/fuzz, built with clang,
# ASan and UBSan.
#   make fuzz [FUZZ_SECONDS=300] [FUZZ_TARGETS="review rules"]   each target for FUZZ_SECONDS;
#       new corpus in build/fuzz/corpus/TARGET, crashes in build/fuzz/findings/TARGET; with -j2
#       two targets run at once
#   make fuzz-check [FUZZ_CHECK_SECONDS=15]   every committed regression input, then each target
#       briefly from the committed corpus (adds nothing to build/fuzz/corpus)
.PHONY: fuzz fuzz-build fuzz-check
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_CHECK_SECONDS ?= 15
FUZZ_TARGETS ?= review rules watch snapshot kubeconfig bypass json plugin_config
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link
# the HTTP server and certificate maker are not linked: no target reaches them (and clang's
# -Wformat-nonliteral objects to libmicrohttpd's log callback, which gcc accepts)
fuzz_LIB_OBJ := $(patsubst %.c,build/fuzz/%.o,$(filter-out webhook/server.c webhook/tls/certgen.c,$(LIB_SRC)))
fuzz_SUPPORT_OBJ := build/fuzz/tests/fuzz/fuzz_support.o build/fuzz/tests/fuzz/oracle.o
FUZZ_BINS := $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))

build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC [fuzz] $<"
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -iquote webhook -iquote tests/fuzz \
		-c $< -o $@

# the tree's location, so that a fuzzer finds rules/default.yaml from any folder
build/fuzz/tests/fuzz/fuzz_support.o: FUZZ_CFLAGS += -DFUZZ_SRCDIR='"$(CURDIR)"'

define fuzz_target
build/fuzz/fuzz_$(1): build/fuzz/tests/fuzz/fuzz_$(1).o $$(fuzz_SUPPORT_OBJ) $$(fuzz_LIB_OBJ)
	@echo "  LD [fuzz] $$@"
	$$(Q)$$(FUZZ_CC) -fsanitize=fuzzer $$(FUZZ_SAN) $$^ -o $$@ $$(PKG_LIBS) $$(LDLIBS_EXTRA)
-include build/fuzz/tests/fuzz/fuzz_$(1).d
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t))))
-include $(patsubst %.o,%.d,$(fuzz_LIB_OBJ) $(fuzz_SUPPORT_OBJ))

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@$(MAKE) --no-print-directory $(addprefix fuzz-run-,$(FUZZ_TARGETS))

fuzz-run-%:
	@tests/fuzz/run.sh $* $(FUZZ_SECONDS)

fuzz-check: fuzz-build
	@rc=0; for t in $(FUZZ_TARGETS); do \
		tests/fuzz/run.sh $$t $(FUZZ_CHECK_SECONDS) check || rc=1; done; exit $$rc

# ---------------------------------------------------------------------------------------------
# A real control plane on loopback (README "On a real control plane", scripts/cluster.sh):
#   make k8s-binaries   builds kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
#                       at the release tests/cluster/k8s/go.mod names, and fetches etcd (or
#                       builds it, tests/cluster/etcd, when Debian's package cannot be had), into
#                       ~/.cache/gpuadmit/ (once per version; a cold build takes many minutes)
#   make cluster        etcd, apiserver, controller-manager, scheduler, fake GPU nodes (seed 000)
#                       and gpuadmit (enforce overlay), all under build/cluster/; prints KUBECONFIG
#   make cluster-down   stops every process it started, by recorded PID
#   make cluster-test   the scenarios of tests/cluster/test_cluster.py (below)
#   make cluster-capture  rewrites the test data captured from a fresh make cluster
#                       (scripts/cluster-capture.py: tests/data/snapshots/seed-000.json,
#                       idle.json and seed-000-pending.json,
#                       tests/data/review-stall-replicaset.json), then stops it;
#                       CAPTURE="FILE..." rewrites only these
.PHONY: k8s-binaries cluster cluster-down cluster-capture
k8s-binaries:
	@scripts/k8s-binaries.sh >/dev/null

cluster: deps all
	@scripts/cluster.sh up

cluster-down:
	@scripts/cluster.sh down

# from a cold control plane, like cluster-test: what it writes must not depend on what ran before
cluster-capture: deps all
	@scripts/cluster.sh down
	@rm -rf build/cluster
	@$(PYTHON) scripts/cluster-capture.py $(CAPTURE); rc=$$?; scripts/cluster.sh down; exit $$rc

# make cluster-test: tests/cluster/test_cluster.py against the real binary on a cold control
# plane (build/cluster/ is wiped first, the binaries come from the cache); stops it at the end
# unless KEEP_CLUSTER=1.
.PHONY: cluster-test
cluster-test: deps all
	@$(PYTHON) tests/cluster/test_cluster.py
