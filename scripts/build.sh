#!/usr/bin/env bash
# Compiles dist/petstore with Bun (bytecode, ESM) and smoke-tests it: a bytecode build can print
# an error, exit 0 and still produce a binary that crashes at start, so the build runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUN=node_modules/.bin/bun
OUT=dist/petstore
# shellcheck source=scripts/lib/build-info.sh
source scripts/lib/build-info.sh
target=$(host_target)

mkdir -p dist
# make generates the docs bundle module first; this covers running the script on its own.
[[ -f src/reference/generated/scalar-bundle.ts ]] || "$BUN" scripts/embed-docs.ts
mapfile -t flags < <(compile_flags)
mapfile -t entries < <(compile_entries)
mapfile -t stamp < <(stamp_defines "$target")
"$BUN" build "${flags[@]}" "${stamp[@]}" "${entries[@]}" --outfile "$OUT.tmp"

version=$("$OUT.tmp" --version)
expected="petstore $(node -p 'require("./package.json").version') (commit $(build_commit), target $target)"
[[ "$version" == "$expected" ]] || {
  echo "build: smoke test failed: --version printed '$version'" >&2; exit 1; }

log=$(mktemp)
"$OUT.tmp" --port 0 --host 127.0.0.1 --data :memory: --log-format json >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(grep -o '"address":"http://127.0.0.1:[0-9]*"' "$log" | grep -o '[0-9]*"$' | tr -d '"' || true)
  [[ -n "$port" ]] && break
  kill -0 $pid 2>/dev/null || { echo "build: smoke test failed: the binary exited at start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.05
done
[[ -n "$port" ]] || { echo "build: smoke test failed: no listening line" >&2; cat "$log" >&2; exit 1; }
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[[ "$status" == 200 ]] || { echo "build: smoke test failed: /healthz answered $status" >&2; exit 1; }
kill -TERM $pid; wait $pid || { echo "build: smoke test failed: SIGTERM did not exit 0" >&2; exit 1; }
trap - EXIT; rm -f "$log"
mv "$OUT.tmp" "$OUT"
echo "build: $OUT ok ($(du -h "$OUT" | cut -f1), $version)"
