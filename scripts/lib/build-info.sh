# shellcheck shell=bash
# What a build stamps into the binary (src/version.ts): sourced by build.sh, release.sh, release-test.sh.

# The commit being built: 12 hex digits, `-dirty` when tracked files differ from it; `unknown`
# outside a git checkout (a source tarball).
build_commit() {
  local c
  c=$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; return; }
  git diff --quiet HEAD -- 2>/dev/null || c+=-dirty
  echo "$c"
}

# `bun build --define` flags of a compiled binary: the version stamp of TARGET (e.g.
# linux-arm64-musl), and the docs bundle as embedded files rather than base64 (src/reference/page.ts).
stamp_defines() { # TARGET
  printf -- '--define=PETSTORE_COMMIT="%s"\n--define=PETSTORE_TARGET="%s"\n' "$(build_commit)" "$1"
  printf -- '--define=PETSTORE_DOCS_EMBED="file"\n'
}

# `bun build` flags of every compiled binary (build.sh, release.sh): ESM with bytecode, minified,
# split so that modules loaded with import() are evaluated only when loaded; a JIT 30 times
# more reluctant to compile while the module graph is evaluated, each line of it once
# (src/main.ts restores the normal one); and a binary that reads no `.env` or `bunfig.toml` from where it starts (Bun's
# default for a compiled program: a bunfig's `preload` would run any script found there),
# configured by its flags and environment alone, as under Deno and Node.
compile_flags() {
  printf -- '%s\n' --compile --bytecode --format=esm --minify --splitting --sourcemap=none \
    --compile-jit-policy=30 --no-compile-autoload-dotenv --no-compile-autoload-bunfig
}

# The entry points of every compiled binary: the program, and the worker each `--workers` thread
# runs (src/serve/supervisor.ts starts it by this path, which the binary keeps).
compile_entries() {
  printf -- '%s\n' src/main.ts src/serve/worker.ts
}

# The release target name of this machine (linux-x64, linux-arm64, ...-musl, darwin-...).
host_target() {
  local os arch
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "unsupported OS $(uname -s)" >&2; return 1 ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "unsupported CPU $(uname -m)" >&2; return 1 ;; esac
  if [[ $os == linux ]] && ldd --version 2>&1 | grep -qi musl; then echo "$os-$arch-musl"; else echo "$os-$arch"; fi
}
