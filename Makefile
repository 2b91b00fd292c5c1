# nudge — `make help` lists the targets, from the `## target:` comments below.
SHELL := bash
GO ?= go
KUBE_VERSION := v1.36.3
# Where the control-plane binaries are cached: outside the repository, shared
# by every clone on the machine.
KUBE_BINS_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nudge/kube-bins/$(KUBE_VERSION)
export NUDGE_KUBE_BINS := $(KUBE_BINS_DIR)

BIN := bin
# controller-gen, pinned, run from the Go module proxy (see `make generate`).
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
# The version stamped into the binary (nudge version, the start log line,
# nudge_build_info); the Dockerfile takes it as ARG VERSION.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X nudge.dev/nudge/internal/version.stamped=$(VERSION)

.PHONY: all help build test kube-bins demo bench vet clean generate generate-check fuzz soak

all: build

## help: list the targets, each with what it does (these `## target:` comments).
help:
	@awk '/^## [a-z-]+: / { i = index($$0, ": "); printf "%-15s%s\n", substr($$0, 4, i - 4), substr($$0, i + 2); next } \
	  /^## / { printf "%-15s%s\n", "", substr($$0, 4) }' $(MAKEFILE_LIST)

## build: bin/nudge as the image builds it (Dockerfile): static, no cgo,
## stripped, stamped with $(VERSION); the benchmark measures this binary.
## bin/kubectl-nudge is the same binary under the kubectl plugin's name (a
## hard link): put it on your PATH for `kubectl nudge`.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/nudge ./cmd/nudge
	ln -f $(BIN)/nudge $(BIN)/kubectl-nudge

## kube-bins: build kube-apiserver, kube-controller-manager, kube-scheduler,
## kubectl (v1.36.3), etcd (v3.6.16) and kwok (v0.8.0), pinned in
## hack/kube/go.mod, from the Go module proxy into
## ~/.cache/nudge/kube-bins/v1.36.3 (or $KUBE_BINS_DIR); a no-op when they
## are there. The first build takes about 7 minutes on 2 idle cores.
kube-bins:
	hack/kube-bins.sh $(KUBE_BINS_DIR)

## vet: go vet and staticcheck (pinned, built from the Go module proxy), the
## same of hack/release's module, and actionlint (pinned) on .github/workflows.
vet:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	cd hack/release && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

## generate: the API's deepcopy code and CRD (api/ → zz_generated.deepcopy.go,
## charts/nudge/crds/, config/crd/) with controller-gen.
generate:
	hack/generate.sh "$(CONTROLLER_GEN)"

## generate-check: fails when the generated files differ from what `make
## generate` writes now (run `make generate`).
generate-check:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	hack/generate.sh "$(CONTROLLER_GEN)" "$$tmp" && \
	for f in api/v1alpha1/zz_generated.deepcopy.go charts/nudge/crds config/crd; do \
	  diff -r "$$tmp/$$f" "$$f" >/dev/null || { echo "$$f differs from what make generate writes: run make generate" >&2; exit 1; }; \
	done

## test: every test — unit, integration (apiserver mode), end to end (cluster
## mode), the alerts' promtool tests (test/alerts) and the dashboard's
## (test/monitoring), the image `make image` writes (test/image), and the
## release tools of hack/release. Two packages run at once (-p 2), each on
## planes of its own: the tests wait on their planes far more than they
## compute, so a package takes about the time it takes alone.
test: generate-check kube-bins helm promtool prometheus flux certmanager vet image
	$(GO) test -count=1 -timeout 45m -p 2 -parallel 8 ./...
	cd hack/release && $(GO) test -count=1 ./...

## fuzz: run every fuzz target (func FuzzXxx in a _test.go: the annotation,
## applied-state, pod-spec and flag parsers) for FUZZTIME each, one after the other (go test fuzzes one target per run). A failing
## input is written to the package's testdata/fuzz/FuzzXxx/: commit it with
## the fix, and make test replays it. FUZZ_FLAGS adds go test flags, e.g.
## FUZZ_FLAGS=-parallel=1 on a busy machine.
FUZZTIME ?= 30s
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
	    echo "== $$dir $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $(FUZZ_FLAGS) $$dir; \
	  done; \
	done

## demo: a local plane with nudge, a Deployment rolled when its ConfigMap
## changes, narrated; stays up until Ctrl-C (see the README).
# Built, then run, rather than `go run`: go run exits 1 on Ctrl-C even when
# the demo stopped everything and exited 0.
demo: kube-bins build
	$(GO) build -o $(BIN)/demo ./hack/demo
	$(BIN)/demo -nudge $(BIN)/nudge

## bench: measure nudge at the default scale (see docs/performance.md), and
## against the floor controllers in the same run (scenario floor): a
## markdown table on stdout, $(BIN)/bench.json and $(BIN)/bench.md; add flags
## with BENCH_FLAGS, e.g. BENCH_FLAGS=-scale-run.
bench: kube-bins build
	$(GO) build -o $(BIN)/bench ./hack/bench
	$(GO) build -o $(BIN)/bench-floor ./hack/bench/floor
	$(BIN)/bench -json $(BIN)/bench.json -md $(BIN)/bench.md $(BENCH_FLAGS)

## soak: run bin/nudge for DURATION (default 30m) under the model-based
## test's random sequences (test/model: SOAK_WORLDS namespaces at once, 20
## steps a second in all, every step checked against the model); fails on a
## rollout the model does not expect, or when nudge's RSS or goroutines grow
## more than 5 % after the first 5 minutes (see docs/performance.md).
## SOAK_FLAGS adds flags, e.g. SOAK_FLAGS='-soak-rate=0 -soak-heap=/tmp'.
DURATION ?= 30m
SOAK_WORLDS ?= 8
soak: kube-bins build
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./test/model \
	  -soak=$(DURATION) -soak-worlds=$(SOAK_WORLDS) -nudge-bin=$(CURDIR)/$(BIN)/nudge $(SOAK_FLAGS)

## clean: remove bin/.
clean:
	rm -rf $(BIN)

.PHONY: helm manifests chart-test promtool dashboard alerts-test

## promtool: build promtool, pinned in hack/promtool/go.mod, into
## $(KUBE_BINS_DIR); a no-op when that version is there. test/alerts runs
## it on charts/nudge/files/alerts.yaml.
promtool:
	hack/prometheus.sh $(KUBE_BINS_DIR) promtool

.PHONY: prometheus
## prometheus: build the Prometheus server (no web UI), of the module and
## version hack/promtool/go.mod pins, into $(KUBE_BINS_DIR); a no-op when
## that version is there. test/prometheus runs it against a running nudge.
prometheus:
	hack/prometheus.sh $(KUBE_BINS_DIR) prometheus

## certmanager: build cert-manager's controller and cainjector, pinned in
## hack/kube/go.mod, into $(KUBE_BINS_DIR); a no-op when that version is
## there. test/chart/certmanager runs them beside the chart's webhook.
.PHONY: certmanager
certmanager:
	hack/certmanager.sh $(KUBE_BINS_DIR)

## alerts-test: the alerts' tests alone: promtool check and unit tests
## (test/alerts), every query of the alerts and the dashboard against what
## nudge serves (test/monitoring), and the alerts firing in a real
## Prometheus (test/prometheus).
alerts-test: kube-bins helm promtool prometheus
	$(GO) test -count=1 -timeout 20m -p 1 ./test/alerts/ ./test/monitoring/ ./test/prometheus/

## dashboard: write charts/nudge/files/dashboard.json from hack/dashboard
## (the Grafana Foundation SDK, pinned in hack/dashboard/go.mod);
## test/monitoring fails when the committed file differs.
dashboard:
	cd hack/dashboard && $(GO) run . -o $(CURDIR)/charts/nudge/files/dashboard.json

## helm: build helm, pinned in hack/helm/go.mod, into $(KUBE_BINS_DIR); a
## no-op when that version is there.
helm:
	hack/chart/helm.sh $(KUBE_BINS_DIR)

## manifests: render charts/nudge into config/ (test/chart fails when they differ).
manifests: helm
	hack/chart/manifests.sh $(KUBE_BINS_DIR)/helm config

## chart-test: the chart's tests alone: lint, rendering, config/, end to end.
chart-test: kube-bins helm
	$(GO) test -count=1 -timeout 20m -p 1 ./test/chart/...

.PHONY: image sbom dist chart-package cross

# The release: what `make image`, `make dist` and `make chart-package` write,
# as .github/workflows/release.yaml publishes them (see docs/releasing.md).
IMAGE_PLATFORMS := linux/amd64 linux/arm64
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
# Every timestamp of the image: SOURCE_DATE_EPOCH, else the commit's time.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_URL ?= https://github.com/nudge-dev/nudge
# The image's licenses label: nudge's LICENSE, an SPDX identifier.
LICENSES ?= Apache-2.0
# The CA bundle of Debian's ca-certificates, the image's /etc/ssl/certs.
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
CYCLONEDX_GOMOD ?= $(GO) run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

## cross: bin/<os>_<arch>/nudge (nudge.exe on Windows) for every platform of
## the image and the plugin's archives, built as `make build` builds.
cross:
	@set -e; for p in $(sort $(IMAGE_PLATFORMS) $(DIST_PLATFORMS)); do \
	  os=$${p%/*} arch=$${p#*/} ext=; [ "$$os" = windows ] && ext=.exe; \
	  echo "Building $(BIN)/$${os}_$${arch}/nudge$$ext"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/$${os}_$${arch}/nudge$$ext ./cmd/nudge; \
	done

## image: the image, linux/amd64 and linux/arm64, as an OCI image layout in
## bin/image/ (index.json holds both platforms), built without a container
## engine by hack/release/image on a base assembled from files (distroless/
## static's passwd and group, Debian's CA certificates), run as 65532; then
## `make sbom`. The release workflow builds the Dockerfile instead.
image:
	@test -s $(CA_BUNDLE) || { echo "No $(CA_BUNDLE): installing Debian's ca-certificates"; \
	  apt-get update && apt-get install -y --no-install-recommends ca-certificates; }
	$(MAKE) --no-print-directory cross DIST_PLATFORMS=
	cd hack/release && $(GO) run ./image -out $(abspath $(BIN))/image -ca $(CA_BUNDLE) -created $(SOURCE_DATE_EPOCH) \
	  $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(abspath $(BIN))/$(subst /,_,$(p))/nudge) \
	  -label org.opencontainers.image.title=nudge \
	  -label "org.opencontainers.image.description=Rolls Kubernetes workloads when the ConfigMaps and Secrets they use change" \
	  -label org.opencontainers.image.version=$(VERSION) \
	  -label org.opencontainers.image.revision=$(REVISION) \
	  -label org.opencontainers.image.source=$(SOURCE_URL) \
	  -label org.opencontainers.image.licenses=$(LICENSES)
	$(MAKE) --no-print-directory sbom

## sbom: bin/image/sbom.cdx.json, the CycloneDX SBOM of the modules linked
## into bin/linux_amd64/nudge (cyclonedx-gomod, pinned, reading the build
## info of the binary: the same modules as linux/arm64's).
sbom:
	$(MAKE) --no-print-directory cross IMAGE_PLATFORMS=linux/amd64 DIST_PLATFORMS=
	mkdir -p $(BIN)/image
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(CYCLONEDX_GOMOD) bin -json -noserial -notimestamp -version $(VERSION) \
	  -output $(BIN)/image/sbom.cdx.json $(BIN)/linux_amd64/nudge

## chart-package: bin/chart/nudge-<X.Y.Z>.tgz, the chart packaged by helm
## with the release tag VERSION=vX.Y.Z: version X.Y.Z, appVersion vX.Y.Z
## (the image's tag), e.g. `make chart-package VERSION=v1.2.3`.
chart-package: helm
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || \
	  { echo "chart-package: VERSION=$(VERSION) is not a release tag vX.Y.Z" >&2; exit 1; }
	$(KUBE_BINS_DIR)/helm package charts/nudge --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) \
	  --destination $(BIN)/chart

## dist: the kubectl plugin's archives for a release tag VERSION=vX.Y.Z,
## bin/dist/kubectl-nudge_<version>_<os>_<arch>.tar.gz (.zip on Windows) for
## $(DIST_PLATFORMS), and their krew manifest bin/dist/nudge.yaml, checked
## with krew itself (hack/release/krew-check.sh), e.g.
## `make dist VERSION=v1.2.3`.
dist:
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || \
	  { echo "dist: VERSION=$(VERSION) is not a release tag vX.Y.Z" >&2; exit 1; }
	$(MAKE) --no-print-directory cross IMAGE_PLATFORMS=
	rm -rf $(BIN)/dist
	cd hack/release && $(GO) run ./dist -out $(abspath $(BIN))/dist -version $(VERSION) -created $(SOURCE_DATE_EPOCH) \
	  $(if $(wildcard LICENSE),-license $(CURDIR)/LICENSE) \
	  $(foreach p,$(DIST_PLATFORMS),-binary $(p)=$(abspath $(BIN))/$(subst /,_,$(p))/nudge$(if $(findstring windows/,$(p)),.exe))
	hack/release/krew-check.sh $(BIN)/dist $(VERSION) $(DIST_PLATFORMS)

.PHONY: flux

## flux: build Flux's kustomize-controller, pinned in hack/kube/go.mod, into
## $(KUBE_BINS_DIR); a no-op when that version is there. test/flux runs it.
flux:
	hack/flux.sh $(KUBE_BINS_DIR)
