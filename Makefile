# The Pet Store service. `make run` builds and serves with the built-in defaults (no flags); `make test` tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN      := dist/petstore
NODE_BIN := node_modules/.bin
# The QA tools (contract/package.json) and the bench's peers (bench/package.json) have their own
# packages, installed by the targets that use them: serving, building and `make test` never wait for them.
QA       := contract/node_modules/.stamp
QA_BIN   := contract/node_modules/.bin
PEERS    := bench/node_modules/.stamp
BUN      := $(NODE_BIN)/bun
# The Node that runs the Node bundle (make run-node, make e2e-runtimes): 22.15 or later is what the
# OpenTelemetry packages require; npm's node-<os>-<cpu> package ships it (scripts/fetch-node.sh).
NODE_VERSION := 22.23.3
NODE     := node_modules/.cache/node-$(NODE_VERSION)/bin/node
DENO     := $(NODE_BIN)/deno
SOURCES  := $(shell find src -name '*.ts' ! -name '*.test.ts') contract/openapi.yaml contract/admin.openapi.yaml package.json
DOCS_GEN := src/reference/generated/scalar-bundle.ts
# Deno from source, with only the permissions the server uses: sockets, its env vars, the keys
# file and the SQLite file (node:sqlite). No --allow-run, --allow-ffi or --allow-sys.
DENO_PERMS := --allow-net --allow-env --allow-read --allow-write
IMAGE    ?= petstore:latest
# The end-to-end suites: scripts/e2e, and the contract's 400 examples sent to the server under test.
# Paths start with ./ so that bun test takes them as paths, not as substrings that also match
# the copies of a BENCH_BASE build under dist/bench-base-*/.
E2E      := ./scripts/e2e ./contract/messages.test.ts
# The suites run again with two workers (--workers; scripts/e2e/workers.test.ts runs in E2E): the
# server, the limits, the keys and ops, on a SQLite file (test/harness.ts). ~30 s.
E2E_WORKERS := ./scripts/e2e/server.test.ts ./scripts/e2e/limits.test.ts ./scripts/e2e/keys.test.ts ./scripts/e2e/ops.test.ts
TS_CLIENT := dist/clients/typescript/schema.ts
PY_CLIENT := dist/clients/python/petstore_client/__init__.py

.PHONY: help deps build run run-deno run-node test unit e2e docs-test lint links typecheck clean contract-test bench bench-quick bench-inprocess bench-profile docker

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

# `npm install` with the committed lock, not `npm ci`: the registry mirror CI uses serves only
# this platform's optional packages (Bun's, Deno's, Biome's native builds), so a lock that
# `npm ci` accepts cannot be written here. `npm install` keeps the locked versions.
node_modules/.stamp: package.json package-lock.json
	npm install --no-audit --no-fund
	@touch $@

# The sub-packages resolve what they share with the root (hono for the bench's Hono peer,
# typescript for dependency-cruiser) from the root's node_modules, one level up.
$(QA) $(PEERS): %/node_modules/.stamp: %/package.json %/package-lock.json node_modules/.stamp
	cd $* && npm install --no-audit --no-fund
	@touch $@

deps: node_modules/.stamp $(QA) $(PEERS) ## install every package's dependencies (root, contract/, bench/) when a lock changed

# The Scalar bundle, gzipped into a TypeScript module that the binary, Deno and Node all import.
$(DOCS_GEN): node_modules/.stamp scripts/embed-docs.ts contract/openapi.yaml contract/admin.openapi.yaml
	$(BUN) scripts/embed-docs.ts
	@touch $@

# The commit a build stamps into --version; rewritten only when it changes, so a new commit rebuilds.
dist/.commit: FORCE
	@mkdir -p dist && c=$$(source scripts/lib/build-info.sh && build_commit) && \
	  { [[ "$$(cat $@ 2>/dev/null)" == "$$c" ]] || echo "$$c" >$@; }
FORCE:

$(BIN): node_modules/.stamp $(SOURCES) $(DOCS_GEN) scripts/build.sh scripts/lib/build-info.sh dist/.commit
	scripts/build.sh

build: $(BIN) ## compile the single binary dist/petstore (Bun, bytecode) and smoke-test it

dist/node/main.js: node_modules/.stamp $(SOURCES) $(DOCS_GEN)
	$(BUN) build --target=node --format=esm --define 'PETSTORE_DOCS_EMBED="base64"' src/main.ts --outfile $@

# Loopback unless HOST says otherwise: the development key it prints is for this machine only.
run: build ## build, then serve with the built-in defaults on 127.0.0.1:8080 (HOST=0.0.0.0 for every interface; pets in ./data/petstore.db, a development key)
	$(BIN) --host "$${HOST:-127.0.0.1}"

run-deno: node_modules/.stamp $(DOCS_GEN) ## serve from source under Deno
	$(DENO) run $(DENO_PERMS) src/main.ts

$(NODE):
	scripts/fetch-node.sh $(NODE_VERSION) $(patsubst %/bin/node,%,$@)

run-node: dist/node/main.js $(NODE) ## serve under Node 22.23 (from npm; bundled for Node by Bun first)
	$(NODE) dist/node/main.js

test: unit e2e ## unit tests, then end-to-end tests against the built binary

# On a throwaway Redis and PostgreSQL (scripts/with-redis.sh and with-postgres.sh, which install
# Debian's packages when missing), so that the limiter's Lua script is replayed against the
# in-process limiter and the PostgreSQL store runs its conformance suite on every run.
unit: node_modules/.stamp $(DOCS_GEN) ## unit tests (bun test), beside the code in src/ (and the bench harness's in bench/lib/); the Lua limiter and the PostgreSQL store on throwaway servers
	scripts/with-postgres.sh scripts/with-redis.sh $(BUN) test ./src ./bench/lib

# The unit test files that need a real server: those that use test/redis.ts or test/postgres.ts.
SERVER_TESTS = $(shell grep -rlE "test/(redis|postgres)\.ts'" src --include='*.test.ts')

.PHONY: unit-no-db
unit-no-db: node_modules/.stamp $(DOCS_GEN) ## the unit tests that need no PostgreSQL or Redis: all but the files that use test/redis.ts or test/postgres.ts (~30 s)
	@echo "unit-no-db: leaving out $(SERVER_TESTS) (make unit runs them)"
	$(BUN) test ./src ./bench/lib $(addprefix --path-ignore-patterns=,$(SERVER_TESTS))

e2e: build ## end-to-end tests: start dist/petstore and talk HTTP to it, then the server, limits, keys and ops again with --workers 2; then 20,000 idle connections (~20 s)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test $(E2E)
	PETSTORE_WORKERS=2 PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test $(E2E_WORKERS)
	$(MAKE) --no-print-directory connections-test

# Each side holds one descriptor per connection: the soft open-file limit is raised to the hard
# one (the test holds fewer than 20,000 when even that is lower, and says so).
.PHONY: connections-test
connections-test: build ## 20,000 idle and half-sent connections: fresh requests answer within 1 s, all closed in ~10 s
	ulimit -Sn "$$(ulimit -Hn)" && PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 90000 ./scripts/connections.test.ts

.PHONY: release release-test
# The runtimes of the other targets come from the npm registry (scripts/release.sh).
dist/release/SHA256SUMS: node_modules/.stamp $(QA) package-lock.json $(SOURCES) $(DOCS_GEN) scripts/release.sh scripts/lib/build-info.sh dist/.commit $(wildcard deploy/*/*)
	scripts/release.sh

release: dist/release/SHA256SUMS ## dist/release/: a binary per target (linux x64/arm64, glibc/musl; macOS), SBOM, the monitoring tarball (deploy/), SHA256SUMS (~1 min)
	@cat dist/release/SHA256SUMS

release-test: release ## sha256sum -c, the SBOM, linux-x64 natively and linux-arm64 under qemu-user (installed when missing)
	scripts/release-test.sh

.PHONY: e2e-runtimes image-test service-verify
e2e-runtimes: build dist/node/main.js $(NODE) ## the end-to-end tests on the binary, on Deno from source and on Node 22.23 (bundle)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test $(E2E)
	PETSTORE_CMD="$(abspath $(DENO)) run $(DENO_PERMS) $(abspath src/main.ts)" $(BUN) test $(E2E)
	PETSTORE_CMD="$(abspath $(NODE)) $(abspath dist/node/main.js)" $(BUN) test $(E2E)

image-test: release ## build the Dockerfile (it takes dist/release's binary) with buildah on bases made from this host, run it, check /healthz
	scripts/image-test.sh

docker: release ## build the image $(IMAGE) from the Dockerfile (dist/release's binary) with docker, podman or buildah
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

bench: build $(PEERS) ## wrk: dist/petstore vs bare Bun.serve, Hono's floor, the Hono and Express peers, on 1M pets vs Bun.serve + bun:sqlite, and mixed reads and writes on SQLite and PostgreSQL (~12 min; BENCH_BASE=<ref> adds that build beside it, ~34 min); bench/README.md
	$(BUN) bench/run.ts

bench-quick: build $(PEERS) ## a ~3 min smoke run of `make bench` (1 round of 1 s); report in bench/tmp/quick/, not over bench/README.md
	BENCH_QUICK=1 $(BUN) bench/run.ts

bench-inprocess: node_modules/.stamp $(DOCS_GEN) ## BENCH_BASE=<ref>: this tree's app vs <ref>'s through app.fetch in one process, paired blocks (~1 min a scenario); for a busy machine
	$(BUN) bench/inprocess.ts

bench-profile: node_modules/.stamp $(DOCS_GEN) ## bun --cpu-prof of src/main.ts under wrk (list, 401, random pages and pets of 1M), summaries in bench/tmp/profile/ (~1 min)
	$(BUN) bench/profile.ts

.PHONY: fault-test fuzz soak
fault-test: build ## a full disk and a read-only data file mid-run (503, then recovery; root), SIGTERM under load (~5 s)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 ./scripts/fault.test.ts

fuzz: build .venv/.stamp ## Schemathesis, 2,000 examples per operation, a random seed (FUZZ_SEED, FUZZ_EXAMPLES) (~1 min)
	$(BUN) contract/fuzz.ts

soak: build .venv/.stamp ## the long ones: fuzz with 10,000 examples, a 300,000-request flood (memory), kill -9 (~4 min)
	FUZZ_EXAMPLES=10000 $(BUN) contract/fuzz.ts
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 300000 ./scripts/flood.test.ts
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 ./scripts/durability.test.ts

.PHONY: durability-test postgres-test
durability-test: build ## kill -9 dist/petstore mid-load of POSTs, restart: every 201 is there (SQLite default; one worker, then two)
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 ./scripts/durability.test.ts
	PETSTORE_WORKERS=2 PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 60000 ./scripts/durability.test.ts

postgres-test: build ## the binary on PostgreSQL: durability, memoised answers (two instances, 1,000 writes) and orders (200 buyers over four instances; holds that end) on a throwaway server; the store's own tests run in make unit
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh $(BUN) test --timeout 90000 ./scripts/durability.test.ts ./scripts/fleet-reads.test.ts ./scripts/orders.test.ts
	PETSTORE_WORKERS=2 PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh $(BUN) test --timeout 90000 ./scripts/durability.test.ts

.PHONY: redis-test scale-out-test keys-redis-test outage-test keys-store-test
outage-test: build ## two dist/petstore under load through Redis killed, PostgreSQL restarted, stopped 5 s, a table locked; SQLite locked by another process (~45 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh $(BUN) test --timeout 180000 ./scripts/outages.test.ts

keys-store-test: build ## two dist/petstore with --keys store on one PostgreSQL (limits in Redis): admin writes seen within 2 s, a killed connection, kill -9 mid-writes (~30 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh $(BUN) test --timeout 60000 ./scripts/keys-store.test.ts

keys-redis-test: build ## two dist/petstore sharing Redis: two keys of one consumer use up one quota; costs spent exactly across both
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-redis.sh $(BUN) test ./scripts/keys-redis.test.ts ./scripts/quota-redis.test.ts

redis-test: node_modules/.stamp ## the Redis limiter (its Lua script replayed against the in-process one, its notices) on a throwaway redis-server
	scripts/with-redis.sh $(BUN) test ./src/gateway/limiter/redis.test.ts ./src/gateway/limiter/leases.test.ts ./src/gateway/limiter/notices.test.ts

.PHONY: webhooks-test
webhooks-test: build ## quota webhooks to a real receiver: order, backoff, kill -9, bound (SQLite); two instances on Redis + PostgreSQL: one event per crossing, one killed mid-record (~2 min)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh \
	  $(BUN) test --timeout 120000 ./scripts/webhooks.test.ts ./scripts/webhooks-scale.test.ts ./src/gateway/limiter/notices.test.ts

scale-out-test: build ## two dist/petstore sharing PostgreSQL and Redis: one quota, one catalogue, Redis stopped mid-run; --max-in-flight under a slow Redis, /readyz; docs/fleet.md's database and two instances as written (~90 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh \
	  $(BUN) test --timeout 180000 ./src/gateway/limiter/redis.test.ts ./src/gateway/limiter/leases.test.ts ./scripts/scale-out.test.ts ./scripts/redis-gateway.test.ts ./scripts/fleet-doc.test.ts

docs-test: build $(QA) ## browser test of /docs in Debian's Chromium (apt-get install chromium); screenshot in reports/
	@test -x /usr/bin/chromium || { echo "docs-test: needs /usr/bin/chromium: apt-get install -y chromium" >&2; exit 1; }
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 120000 ./contract/docs-browser.test.ts

# Schemathesis (Python) in a project-local virtual env, pinned in requirements-dev.txt.
.venv/.stamp: requirements-dev.txt
	rm -rf .venv && python3 -m venv .venv
	.venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

.PHONY: contract-lint contract-selftest
contract-lint: $(QA) $(TS_CLIENT) ## contract/openapi.yaml and admin.openapi.yaml: Redocly, Spectral, swagger-parser; openapi-typescript's types checked
	$(QA_BIN)/redocly lint contract/openapi.yaml contract/admin.openapi.yaml
	$(QA_BIN)/spectral lint --ruleset .spectral.yaml --fail-severity warn contract/openapi.yaml contract/admin.openapi.yaml
	$(BUN) contract/validate.ts contract/openapi.yaml
	$(BUN) contract/validate.ts contract/admin.openapi.yaml
	$(NODE_BIN)/tsc --noEmit -p clients/codegen/typescript

# The clients integrators generate from the contract (gitignored, under dist/). The TypeScript
# one is openapi-typescript's types used with openapi-fetch; the Python one a package written by
# openapi-python-client (pinned in requirements-dev.txt), which formats it with the ruff of .venv.
$(TS_CLIENT): $(QA) contract/openapi.yaml
	$(QA_BIN)/openapi-typescript contract/openapi.yaml -o $@

$(PY_CLIENT): .venv/.stamp contract/openapi.yaml
	PATH="$(abspath .venv/bin):$$PATH" .venv/bin/openapi-python-client generate --path contract/openapi.yaml \
	  --meta none --output-path $(dir $@) --overwrite --fail-on-warning

.PHONY: client-test
client-test: build $(QA) $(TS_CLIENT) $(PY_CLIENT) ## generated TypeScript and Python clients run a scenario through Prism (proxy) against dist/petstore
	$(NODE_BIN)/tsc --noEmit -p clients/codegen/typescript
	.venv/bin/ruff check clients/python && .venv/bin/ruff format --check clients/python
	$(BUN) scripts/client-test.ts

# The published TypeScript client, built as its README says: `npm install && npm pack` in its
# folder (types generated from the contract, then tsc), giving $(TS_PKG)/petstore-client-<version>.tgz.
TS_PKG := clients/typescript
.PHONY: ts-client ts-client-test
ts-client: ## @petstore/client: npm install && npm pack in clients/typescript (types and methods from the contract)
	cd $(TS_PKG) && npm install --no-audit --no-fund && npm pack

ts-client-test: build ts-client ## @petstore/client against dist/petstore: every operation, three real minutes of a shared key, lost answers, paging, the tarball under Node, Bun and Deno (~3½ min)
	$(NODE_BIN)/tsc --noEmit -p $(TS_PKG)/test
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test --timeout 240000 ./$(TS_PKG)/test

contract-test: contract-lint build .venv/.stamp ## Dredd and Schemathesis against dist/petstore; JUnit XML in reports/
	$(BUN) contract/test.ts

contract-selftest: build $(QA) .venv/.stamp ## prove contract-test can fail: each tool through a response-mutating proxy
	$(BUN) contract/selftest.ts

# contract/ and bench/ import their packages' tools, so checking their types needs both installed.
typecheck: node_modules/.stamp $(QA) $(PEERS) $(DOCS_GEN) ## tsc --noEmit (strict) over src/, test/, scripts/, contract/ and bench/ (part of make lint)
	$(NODE_BIN)/tsc --noEmit -p .

lint: typecheck depcheck links ## tsc --noEmit (strict), Biome, the module rules (dependency-cruiser), every Markdown link and anchor
	$(NODE_BIN)/biome check src test scripts contract clients

.PHONY: links
links: node_modules/.stamp ## every link and #anchor of the Markdown files resolves, offline (remark-validate-links); proved to fail on a broken one first
	scripts/check-links.sh

.PHONY: depcheck
depcheck: $(QA) ## no import cycles; each unit of src/ imports only the layers below it (LAYERS in .dependency-cruiser.cjs)
	$(QA_BIN)/depcruise --config .dependency-cruiser.cjs src test scripts contract clients

clean: ## remove build output and reports
	rm -rf dist reports src/reference/generated

.PHONY: leases-test
leases-test: build ## four dist/petstore on one Redis, 200 clients per key ignoring Retry-After: never over the minute, day and month quotas (costs too), barely under; 0.02 script runs a request far from a limit; kill -9 holding grants, Redis with AOF killed under --redis-fail closed; Redis answering 0.7 s late under load, one and two instances (~120 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-redis.sh $(BUN) test --timeout 180000 ./scripts/leases.test.ts ./scripts/leases-faults.test.ts ./scripts/slow-redis.test.ts

.PHONY: fleet-sim
fleet-sim: node_modules/.stamp ## N = 1..64 limiters on one throwaway Redis, leases against a script per request: runs, Redis CPU, never over, false refusals; table and chart in bench/README.md (~2 min)
	scripts/with-redis.sh $(BUN) bench/fleet-sim.ts

.PHONY: monitoring-test
monitoring-test: build ## promtool check and test the shipped rules; a real Prometheus scraping dist/petstore (PostgreSQL, Redis) while faults raise the alerts; every panel query evaluated; docs/monitoring.md's prometheus.yml loaded by its reload line (~45 s)
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || { [[ $$(id -u) == 0 ]] && command -v apt-get >/dev/null && \
	  echo "monitoring-test: installing Debian's prometheus package (prometheus, promtool)" && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || \
	  { echo "monitoring-test: needs prometheus and promtool: apt-get install -y prometheus" >&2; exit 1; }
	promtool check rules deploy/prometheus/petstore.rules.yml
	cd deploy/prometheus && promtool test rules petstore.rules.test.yml
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh scripts/with-redis.sh $(BUN) test --timeout 120000 ./scripts/monitoring.test.ts

.PHONY: first-day-test
first-day-test: build ## docs/operations.md's systemd and First day blocks run as written under the unit's restrictions (root; unshare, setpriv, overlays: the host is untouched; ~10 s)
	$(BUN) test --timeout 150000 ./scripts/first-day.test.ts

.PHONY: backup-test
backup-test: build ## petstore backup under load (creates acknowledged while it runs), restored into a new server: every pet acknowledged before it served, no id given twice; SQLite and PostgreSQL; docs/operations.md's backup and restore blocks as written (~20 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh $(BUN) test --timeout 90000 ./scripts/backup.test.ts

.PHONY: rolling-upgrade-test
rolling-upgrade-test: build ## PostgreSQL: two dist/petstore under traffic while a later release migrates pets (readable_from), a third on the later schema, a restart: no 5xx, every pet kept; a contract migration refused at start (~15 s)
	PETSTORE_CMD="$(abspath $(BIN))" scripts/with-postgres.sh $(BUN) test --timeout 90000 ./scripts/rolling-upgrade.test.ts

.PHONY: upgrade-test
# The previous release: the last commit landed before this work (schema 7).
UPGRADE_BASE ?= 447dbb3
upgrade-test: build ## PostgreSQL: docs/operations.md from the previous release (UPGRADE_BASE, built as the bench builds its base) under traffic: backup, migrate up under the old instances, replaced one by one; back by restore with the pets carried over: no 5xx, every pet kept (~1 min)
	PETSTORE_CMD="$(abspath $(BIN))" PETSTORE_UPGRADE_BASE="$(UPGRADE_BASE)" scripts/with-postgres.sh $(BUN) test --timeout 240000 ./scripts/upgrade-previous.test.ts
