// The version, commit and target that `--version` prints.

/**
 * What `--version` prints: the release version (a test keeps it equal to package.json's), the
 * commit it was built from and the target it was compiled for. The build stamps the last two with
 * `bun build --define` (scripts/build.sh, scripts/release.sh); a run from source (Deno, Node's
 * bundle, `bun src/main.ts`) has no stamp, so it says `unknown` and `source` rather than guess.
 */
export const VERSION = '1.0.0';

// Replaced by `bun build --define`; undeclared at run time otherwise, which `typeof` tolerates.
declare const PETSTORE_COMMIT: string | undefined;
declare const PETSTORE_TARGET: string | undefined;

/** The git commit of the build (12 hex digits, `-dirty` if the tree had edits), else `unknown`. */
export const COMMIT: string = typeof PETSTORE_COMMIT === 'string' ? PETSTORE_COMMIT : 'unknown';

/** Whether this is a compiled binary (`bun build --compile`), not a run from source. */
export const COMPILED: boolean = typeof PETSTORE_TARGET === 'string';

/** The Bun target the binary was compiled for (`linux-arm64-musl`...), else `source`. */
export const TARGET: string = typeof PETSTORE_TARGET === 'string' ? PETSTORE_TARGET : 'source';

/**
 * The `--version` line.
 *
 * @example
 * versionLine(); // 'petstore 1.0.0 (commit 3f2a1bc09d4e, target linux-arm64)\n'
 */
export function versionLine(): string {
  return `petstore ${VERSION} (commit ${COMMIT}, target ${TARGET})\n`;
}
