# Switchboard. `make run` starts the dashboard; `make test` runs every test
# (installing what the tests need: npm packages, and Debian chromium when
# missing); `make bench` measures it.

GO      ?= go
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHROMIUM ?= /usr/bin/chromium

.PHONY: run build test test-go test-e2e deps-e2e chromium check generate bench clean

run:
	$(GO) run ./cmd/switchboard

build:
	$(GO) build -o bin/switchboard ./cmd/switchboard
	$(GO) build -o bin/mcp-fixture ./cmd/mcp-fixture

# Everything CI runs: generated code up to date, vet, Go tests with the race
# detector, then the browser tests.
test: check deps-e2e test-go test-e2e

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) tool templ generate
	@git diff --exit-code -- '*_templ.go' || { echo "templ generate changed files: commit them"; exit 1; }
	$(GO) vet ./...

test-go: deps-e2e
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -run '^$$' -bench . -benchtime 1x ./store

test-e2e: deps-e2e chromium build
	cd e2e && npx playwright test

# npm packages the tests use: Playwright and real MCP servers.
deps-e2e:
	@[ -d e2e/node_modules/@playwright/test ] && [ -d e2e/node_modules/@modelcontextprotocol/server-everything ] \
		&& [ -d e2e/node_modules/@modelcontextprotocol/conformance ] \
		|| npm ci --prefix e2e --no-audit --no-fund

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
	$(GO) test -run '^$$' -bench . -benchmem ./store
	$(GO) run ./cmd/bench -out bench-results/$$(git describe --always --dirty=+dirty).json

clean:
	rm -rf bin e2e/test-results e2e/playwright-report bench-results
