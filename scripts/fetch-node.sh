#!/usr/bin/env bash
# Puts Node.js VERSION under DIR (DIR/bin/node) from the npm registry: the package
# node-<os>-<cpu>@VERSION ships the official binary inside it and runs no install script, so
# nothing is downloaded from anywhere but the registry. The runs on Node (make e2e-runtimes,
# make run-node) use it: the OpenTelemetry packages want Node 22.15 or later.
#   scripts/fetch-node.sh 22.23.3 node_modules/.cache/node-22.23.3
set -euo pipefail
version=$1 dir=$2
case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "fetch-node: no node-<os> package for $(uname -s)" >&2; exit 1 ;; esac
case "$(uname -m)" in x86_64 | amd64) cpu=x64 ;; aarch64 | arm64) cpu=arm64 ;; *) echo "fetch-node: no node package for $(uname -m)" >&2; exit 1 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-node: npm pack node-$os-$cpu@$version" >&2
tgz=$(cd "$tmp" && npm pack --silent "node-$os-$cpu@$version" | tail -n 1)
tar -xzf "$tmp/$tgz" -C "$tmp"
got=$("$tmp/package/bin/node" --version)
[[ "$got" == "v$version" ]] || { echo "fetch-node: node-$os-$cpu@$version holds node $got" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && mv "$tmp/package" "$dir"
