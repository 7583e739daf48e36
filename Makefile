# stitch — developer entry points. `make test` is what CI runs (.ci/run).
GO        ?= go
# Packages whose tests are pure CPU work run without the race detector: the tokenizer, the template
# engine, the CLI wiring in the root package (its tests load the 11 MB tokenizer repeatedly; the
# concurrency they start lives in sim/ and server/, which run with -race), and e2e (it drives
# separate processes; compiling the OpenAI SDK under -race alone takes minutes). -race slows them
# ten- to fifty-fold. bench and fleet drive the same servers and simulators from outside and link
# llm-d-kv-cache (controller-runtime, client-go, otel: ~900 packages whose race build alone costs
# minutes on two cores); the concurrency they start is sim's and server's, tested with -race there.
# tools/benchplot imports bench (and gonum/plot) and starts no goroutines of its own.
# Everything else runs with -race.
MODULE      := github.com/stitchllm/stitch
NORACE_PKGS := . ./render/bpe/... ./render/jinja/... ./e2e/... ./bench/... ./fleet/... ./tools/benchplot/...
# render's golden sweeps are pure CPU (22 templates' renders tokenized in full; every split of the
# corpus resumed from an items prefix) and take minutes
# under -race; they run without it, render's concurrency tests with it.
RENDER_SWEEPS := ^(TestGoldenFamilies|TestExtendTextMatchesFullEncode|TestItemsPrefixResume)$$
RACE_PKGS    = $(shell $(GO) list ./... | grep -v -e /render/bpe -e /render/jinja -e /e2e -e /bench -e /fleet -e '^$(MODULE)$$')

# go test's default 10-minute timeout per package binary is shorter than e2e (and render/bpe)
# take on a loaded 2-core machine: a run that is slow, not stuck, must not fail. A hang still ends
# the run, with every goroutine's stack.
TEST_TIMEOUT ?= 25m

# staticcheck runs at a pinned version through the Go module proxy (go.mod stays free of it).
STATICCHECK_VERSION ?= v0.8.2

.PHONY: test test-short bench lint fmt golden e2e-deps build

build:
	$(GO) build -o stitch .

test: lint e2e-deps
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(NORACE_PKGS)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestArtifactProperty' ./prepare/
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(RENDER_SWEEPS)' ./render/
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -skip '$(RENDER_SWEEPS)' $(RACE_PKGS)

# Unit tests only: skips e2e and long golden sweeps.
test-short:
	$(GO) test -short -count=1 -timeout $(TEST_TIMEOUT) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './*/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# The Node clients of the e2e suite (openai, @openai/agents, @openai/codex): reinstalled whenever
# package-lock.json is newer than the tree npm last installed (node_modules/.package-lock.json).
e2e-deps: $(if $(wildcard e2e/node/package-lock.json),e2e/node/node_modules/.package-lock.json)

e2e/node/node_modules/.package-lock.json: e2e/node/package-lock.json
	cd e2e/node && npm ci --no-audit --no-fund

# Regenerate golden files from the oracles (needs Node and Python; see README "Development").
golden:
	cd tools/oracle && npm ci --no-audit --no-fund
	$(GO) generate ./...

# Container image (see Dockerfile): `make image` builds the static binary here and assembles a
# FROM scratch image from .image/ with no base image and no registry, with the classic builder or
# BuildKit alike. `stitch --version` in the image reports VERSION, COMMIT and BUILD_DATE.
IMAGE      ?= stitch:dev
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
DOCKER     ?= docker
# The runtime user; the Dockerfile's USER and --chown say the same number.
IMAGE_UID  := 65532
# The build machine's CA bundle, for an https upstream or rediss:// Redis (scratch has none).
CA_BUNDLE  ?= $(firstword $(wildcard /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem))
# -s -w drops the symbol table and DWARF (89 MB -> 65 MB before the plots left the binary); panics
# still print file:line.
IMAGE_LDFLAGS = -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

.PHONY: image image-context docker
image: image-context
	$(DOCKER) build -t $(IMAGE) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) .

# .image/rootfs is copied to / (root-owned), .image/data to /var/lib/stitch (owned by IMAGE_UID).
# rootfs holds var/lib so that /var and /var/lib exist, root-owned, before the --chown copy: BuildKit
# would create them owned by IMAGE_UID, the classic builder by root.
image-context:
	rm -rf .image
	mkdir -p .image/rootfs/usr/local/bin .image/rootfs/etc/ssl/certs .image/rootfs/var/lib .image/data
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -buildvcs=false -ldflags "$(IMAGE_LDFLAGS)" -o .image/rootfs/usr/local/bin/stitch .
	printf 'root:x:0:0:root:/:/sbin/nologin\nstitch:x:$(IMAGE_UID):$(IMAGE_UID):stitch:/var/lib/stitch:/sbin/nologin\n' >.image/rootfs/etc/passwd
	printf 'root:x:0:\nstitch:x:$(IMAGE_UID):\n' >.image/rootfs/etc/group
	$(if $(CA_BUNDLE),cp $(CA_BUNDLE) .image/rootfs/etc/ssl/certs/ca-certificates.crt,@echo "warning: no CA bundle found (set CA_BUNDLE): https upstreams will fail in the image")

# The name this target had before the image was built outside docker.
docker: image
