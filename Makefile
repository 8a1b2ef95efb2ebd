# The Pet Store gateway. `make run` builds and serves on embedded defaults; `make test` tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN      := dist/petstore
NODE_BIN := node_modules/.bin
BUN      := $(NODE_BIN)/bun
DENO     := $(NODE_BIN)/deno
SOURCES  := $(shell find src -name '*.ts' ! -name '*.test.ts') contract/openapi.yaml package.json

.PHONY: help deps build run run-deno run-node test unit e2e lint typecheck clean contract-test bench docker

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.stamp ## install dependencies (npm ci) when package-lock.json changed

$(BIN): node_modules/.stamp $(SOURCES) scripts/build.sh
	scripts/build.sh

build: $(BIN) ## compile the single binary dist/petstore (Bun, bytecode) and smoke-test it

dist/node/main.js: node_modules/.stamp $(SOURCES)
	$(BUN) build --target=node --format=esm src/main.ts --outfile $@

run: build ## build, then serve on embedded defaults (port 8080, in-memory pets, a development key)
	$(BIN)

run-deno: node_modules/.stamp ## serve from source under Deno
	$(DENO) run --allow-net --allow-env --allow-read --allow-write --allow-sys --allow-ffi src/main.ts

run-node: dist/node/main.js ## serve under Node (bundled for Node by Bun first)
	node dist/node/main.js

test: unit e2e ## unit tests, then end-to-end tests against the built binary

unit: node_modules/.stamp ## unit tests (bun test), beside the code in src/
	$(BUN) test src

e2e: build ## end-to-end tests: start dist/petstore and talk HTTP to it
	PETSTORE_CMD="$(abspath $(BIN))" $(BUN) test scripts/e2e

typecheck: node_modules/.stamp
	$(NODE_BIN)/tsc --noEmit -p .

lint: typecheck ## tsc --noEmit (strict) and Biome
	$(NODE_BIN)/biome check src scripts contract

clean: ## remove build output and reports
	rm -rf dist reports
