# The Pet Store gateway. `make run` builds and serves on embedded defaults; `make test` tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN      := dist/petstore
NODE_BIN := node_modules/.bin
BUN      := $(NODE_BIN)/bun
DENO     := $(NODE_BIN)/deno
SOURCES  := $(shell find src -name '*.ts' ! -name '*.test.ts') contract/openapi.yaml package.json
DOCS_GEN := src/docs/generated/scalar-bundle.ts
# Deno from source, with only the permissions the server uses: sockets, its env vars, the keys
# file and the SQLite file (node:sqlite). No --allow-run, --allow-ffi or --allow-sys.
DENO_PERMS := --allow-net --allow-env --allow-read --allow-write
IMAGE    ?= petstore:latest

.PHONY: help deps build run run-deno run-node test unit e2e docs-test lint typecheck clean contract-test bench docker

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

# `npm install` with the committed lock, not `npm ci`: the registry mirror CI uses serves only
# this platform's optional packages (Bun's, Deno's, Biome's native builds), so a lock that
# `npm ci` accepts cannot be written here. `npm install` keeps the locked versions.
node_modules/.stamp: package.json package-lock.json
	npm install --no-audit --no-fund
	@touch $@

deps: node_modules/.stamp ## install dependencies when package-lock.json changed

# The Scalar bundle, gzipped into a TypeScript module that the binary, Deno and Node all import.
$(DOCS_GEN): node_modules/.stamp scripts/embed-docs.ts
	$(BUN) scripts/embed-docs.ts
	@touch $@

$(BIN): node_modules/.stamp $(SOURCES) $(DOCS_GEN) scripts/build.sh
	scripts/build.sh

build: $(BIN) ## compile the single binary dist/petstore (Bun, bytecode) and smoke-test it

dist/node/main.js: node_modules/.stamp $(SOURCES) $(DOCS_GEN)
	$(BUN) build --target=node --format=esm src/main.ts --outfile $@

run: build ## build, then serve on embedded defaults (port 8080, pets in ./data/petstore.db, a development key)
	$(BIN)

run-deno: node_modules/.stamp $(DOCS_GEN) ## serve from source under Deno
	$(DENO) run $(DENO_PERMS) src/main.ts

run-node: dist/node/main.js ## serve under Node (bundled for Node by Bun first)
	node dist/node/main.js

test: unit e2e ## unit tests, then end-to-end tests against the built binary

unit: node_modules/.stamp $(DOCS_GEN) ## unit tests (bun test), beside the code in src/
	$(BUN) test src

e2e: build ## end-to-end tests: start dist/petstore and talk HTTP to it
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test scripts/e2e

.PHONY: e2e-runtimes image-test service-verify
e2e-runtimes: build dist/node/main.js ## the end-to-end tests on the binary, on Deno from source and on Node (bundle)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test scripts/e2e
	PETSTORE_CMD="$(abspath $(DENO)) run $(DENO_PERMS) $(abspath src/main.ts)" $(BUN) test scripts/e2e
	PETSTORE_CMD="node $(abspath dist/node/main.js)" $(BUN) test scripts/e2e

image-test: node_modules/.stamp ## build the Dockerfile with buildah on bases made from this host, run it, check /healthz
	scripts/image-test.sh

docker: ## build the image $(IMAGE) from the Dockerfile with docker, podman or buildah
	@if docker info >/dev/null 2>&1; then set -x; docker build -t $(IMAGE) .; \
	elif command -v podman >/dev/null; then set -x; podman build --format docker -t $(IMAGE) .; \
	elif command -v buildah >/dev/null; then set -x; buildah bud --format docker -t $(IMAGE) .; \
	else echo "make docker: needs a running docker, or podman, or buildah" >&2; exit 1; fi

service-verify: build ## systemd-analyze verify scripts/petstore.service, and its exposure score under 2.0
	@command -v systemd-analyze >/dev/null || { echo "service-verify: needs systemd-analyze (apt-get install -y systemd)" >&2; exit 1; }
	@t=$$(mktemp -d) && trap 'rm -rf "$$t"' EXIT && \
	  sed 's|/usr/local/bin/petstore|$(abspath $(BIN))|' scripts/petstore.service >"$$t/petstore.service" && \
	  systemd-analyze verify "$$t/petstore.service" && \
	  systemd-analyze security --offline=yes --threshold=20 "$$t/petstore.service" | tail -n 1

bench: build ## wrk: dist/petstore vs bare Bun.serve vs Express (~6 min); bench/results.json, bench/README.md
	$(BUN) bench/run.ts

.PHONY: fault-test fuzz soak
fault-test: build ## a full disk and a read-only data file mid-run (503, then recovery; root), SIGTERM under load (~5 s)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 scripts/fault.test.ts

fuzz: build .venv/.stamp ## Schemathesis, 2,000 examples per operation, a random seed (FUZZ_SEED, FUZZ_EXAMPLES) (~1 min)
	$(BUN) scripts/fuzz.ts

soak: build .venv/.stamp ## the long ones: fuzz with 10,000 examples, a 300,000-request flood (memory), kill -9 (~4 min)
	FUZZ_EXAMPLES=10000 $(BUN) scripts/fuzz.ts
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 300000 scripts/flood.test.ts
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 scripts/durability.test.ts

.PHONY: durability-test postgres-test
durability-test: build ## kill -9 dist/petstore mid-load of POSTs, restart: every 201 is there (SQLite default)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 scripts/durability.test.ts

postgres-test: build ## PostgreSQL store and durability tests on a throwaway server (scripts/with-postgres.sh)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh $(BUN) test --timeout 60000 src/store/postgres.test.ts scripts/durability.test.ts

.PHONY: redis-test scale-out-test keys-redis-test
keys-redis-test: build ## two dist/petstore sharing Redis: two keys of one consumer use up one quota
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-redis.sh $(BUN) test scripts/keys-redis.test.ts

redis-test: node_modules/.stamp ## the Redis limiter (its Lua script replayed against the in-process one) on a throwaway redis-server
	scripts/with-redis.sh $(BUN) test src/gateway/limiter/redis.test.ts

scale-out-test: build ## two dist/petstore sharing PostgreSQL and Redis: one quota, one catalogue, Redis stopped mid-run (~75 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh \
	  $(BUN) test --timeout 180000 src/gateway/limiter/redis.test.ts scripts/scale-out.test.ts

docs-test: build ## browser test of /docs in Debian's Chromium (apt-get install chromium); screenshot in reports/
	@test -x /usr/bin/chromium || { echo "docs-test: needs /usr/bin/chromium: apt-get install -y chromium" >&2; exit 1; }
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 120000 scripts/docs-browser.test.ts

# Schemathesis (Python) in a project-local virtual env, pinned in requirements-dev.txt.
.venv/.stamp: requirements-dev.txt
	rm -rf .venv && python3 -m venv .venv
	.venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

.PHONY: contract-lint contract-selftest
contract-lint: node_modules/.stamp ## lint contract/openapi.yaml with Redocly's recommended rules (redocly.yaml)
	$(NODE_BIN)/redocly lint contract/openapi.yaml

contract-test: contract-lint build .venv/.stamp ## Dredd and Schemathesis against dist/petstore; JUnit XML in reports/
	$(BUN) scripts/contract-test.ts

contract-selftest: build .venv/.stamp ## prove contract-test can fail: each tool through a response-mutating proxy
	$(BUN) scripts/contract-selftest.ts

typecheck: node_modules/.stamp $(DOCS_GEN)
	$(NODE_BIN)/tsc --noEmit -p .

lint: typecheck ## tsc --noEmit (strict) and Biome
	$(NODE_BIN)/biome check src scripts contract

clean: ## remove build output and reports
	rm -rf dist reports src/docs/generated
