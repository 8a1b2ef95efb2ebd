#!/usr/bin/env bash
# make release: into dist/release/, one binary per target that ops run, a CycloneDX SBOM and
# SHA256SUMS over all of them.
#
# The Bun runtime of each target comes from the npm registry (@oven/bun-<os>-<cpu>[-musl], the
# packages `bun` itself installs from), fetched with `npm pack` at the version of the installed
# bun and cached in node_modules/.cache/bun-runtimes/. `bun build` is handed that file with
# --compile-executable-path, never left to download one, and both the runtime and the result are
# checked for the target's machine type and C library, so a wrong or missing runtime stops the
# release instead of quietly producing a host binary under another name.
set -euo pipefail
cd "$(dirname "$0")/.."
BUN=node_modules/.bin/bun
OUT=dist/release
# shellcheck source=scripts/lib/build-info.sh
source scripts/lib/build-info.sh

# target -> npm package, executable format, and the dynamic loader it must name (none on macOS).
declare -A PKG=(
  [linux-x64]=bun-linux-x64 [linux-arm64]=bun-linux-aarch64
  [linux-x64-musl]=bun-linux-x64-musl [linux-arm64-musl]=bun-linux-aarch64-musl
  [darwin-x64]=bun-darwin-x64 [darwin-arm64]=bun-darwin-aarch64
)
# The first bytes each target's executable starts with: ELF (class 64, little endian) with
# e_machine at byte 18 (0x3e x86-64, 0xb7 aarch64); Mach-O 64 with cputype at byte 4.
declare -A MAGIC=(
  [linux-x64]='7f454c46020101' [linux-arm64]='7f454c46020101'
  [linux-x64-musl]='7f454c46020101' [linux-arm64-musl]='7f454c46020101'
  [darwin-x64]='cffaedfe07000001' [darwin-arm64]='cffaedfe0c000001'
)
declare -A MACHINE=(
  [linux-x64]=3e00 [linux-arm64]=b700 [linux-x64-musl]=3e00 [linux-arm64-musl]=b700
)
declare -A LOADER=(
  [linux-x64]=/lib64/ld-linux-x86-64.so.2 [linux-arm64]=/lib/ld-linux-aarch64.so.1
  [linux-x64-musl]=/lib/ld-musl-x86_64.so.1 [linux-arm64-musl]=/lib/ld-musl-aarch64.so.1
)
TARGETS=(linux-x64 linux-arm64 linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64)

fail() { echo "release: $*" >&2; exit 1; }
hex() { od -An -tx1 -v -j "$2" -N "$3" "$1" | tr -d ' \n'; } # FILE OFFSET COUNT

# Fails unless FILE is an executable for TARGET: its magic, its CPU, and (Linux) its C library.
check_executable() { # TARGET FILE
  local t=$1 f=$2 magic=${MAGIC[$1]}
  [[ -s $f ]] || fail "$f: missing or empty"
  [[ $(hex "$f" 0 $((${#magic} / 2))) == "$magic" ]] || fail "$f is not a $t executable (starts $(hex "$f" 0 8))"
  if [[ -n ${MACHINE[$t]:-} ]]; then
    [[ $(hex "$f" 18 2) == "${MACHINE[$t]}" ]] || fail "$f is not a $t executable (ELF machine $(hex "$f" 18 2))"
    # PT_INTERP sits in the first page, right after the program headers.
    head -c 4096 "$f" | grep -aqF "${LOADER[$t]}" || fail "$f does not use ${LOADER[$t]}: not a $t executable"
  fi
}

bun_version=$(node -p 'require("./node_modules/bun/package.json").version')
version=$(node -p 'require("./package.json").version')
grep -q "^export const VERSION = '$version';" src/version.ts || fail "src/version.ts's VERSION is not package.json's $version"
commit=$(build_commit)
cache=node_modules/.cache/bun-runtimes/$bun_version

# The bun executable of npm package @oven/NAME@$bun_version, fetched once into the cache.
runtime() { # TARGET -> prints the path
  local t=$1 name=${PKG[$1]} dir tmp tgz
  dir=$cache/$name
  if [[ ! -x $dir/bun ]]; then
    tmp=$(mktemp -d)
    echo "release: npm pack @oven/$name@$bun_version" >&2
    tgz=$(cd "$tmp" && npm pack --silent "@oven/$name@$bun_version" | tail -n 1) ||
      fail "npm pack @oven/$name@$bun_version failed: the $t runtime comes from the npm registry"
    tar -xzf "$tmp/$tgz" -C "$tmp" package/package.json package/bin/bun || fail "$tgz has no package/bin/bun"
    [[ $(node -p "const p = require('$tmp/package/package.json'); p.name + '@' + p.version") == "@oven/$name@$bun_version" ]] ||
      fail "$tgz is not @oven/$name@$bun_version"
    mkdir -p "$dir"
    mv "$tmp/package/bin/bun" "$dir/bun.tmp" && mv "$dir/bun.tmp" "$dir/bun"
    rm -rf "$tmp"
  fi
  check_executable "$t" "$dir/bun"
  echo "$dir/bun"
}

rm -rf "$OUT"
mkdir -p "$OUT"
[[ -f src/reference/generated/scalar-bundle.ts ]] || "$BUN" scripts/embed-docs.ts
echo "release: petstore $version, commit $commit, bun $bun_version"
mapfile -t flags < <(compile_flags)
mapfile -t entries < <(compile_entries)
for t in "${TARGETS[@]}"; do
  exe=$(runtime "$t")
  bin=$OUT/petstore-$version-$t
  mapfile -t stamp < <(stamp_defines "$t")
  # compile_flags, as scripts/build.sh has them; here the target is named and its runtime
  # handed over.
  "$BUN" build "${flags[@]}" "${stamp[@]}" \
    --target="bun-$t" --compile-executable-path="$exe" "${entries[@]}" --outfile "$bin" >/dev/null ||
    fail "bun build --target=bun-$t failed"
  check_executable "$t" "$bin"
  echo "release: $bin ($(du -h "$bin" | cut -f1))"
done

# The SBOM of what the binaries bundle: the lock file's production dependencies, with licenses.
# --package-lock-only: the lock is the record (node_modules here also holds dev tools). The
# writer itself is one of contract/package.json's tools.
contract/node_modules/.bin/cyclonedx-npm --omit dev --package-lock-only --flatten-components --output-reproducible \
  --validate --spec-version 1.6 --output-format JSON --output-file "$OUT/petstore-$version.cdx.json" ||
  fail "cyclonedx-npm failed"
echo "release: $OUT/petstore-$version.cdx.json ($(node -p "require('./$OUT/petstore-$version.cdx.json').components.length") components)"

# The Prometheus rules (and their tests) and the Grafana dashboard operators load, as deploy/ holds
# them; reproducible (sorted, no times, owners or gzip name).
monitoring=$OUT/petstore-$version-monitoring.tar.gz
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - deploy/prometheus deploy/grafana | gzip -n >"$monitoring"
echo "release: $monitoring ($(tar -tzf "$monitoring" | grep -vc '/$') files)"

(cd "$OUT" && sha256sum -- petstore-* >SHA256SUMS)
echo "release: $OUT/SHA256SUMS over $(wc -l <"$OUT/SHA256SUMS") files"
