import { describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = join(import.meta.dir, '..');

/** Every file git tracks, by its path from the root. */
const TRACKED = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
/** Files made by a build, not tracked: still cited. */
const BUILT = ['src/reference/generated/', 'dist/', 'bench/tmp/'];

/**
 * A file as comments cite it: a path, or a name with an extension of the repository's own code and
 * documents.
 */
const CITED = /(?<![\w./-])((?:[\w.-]+\/)+[\w.-]+\.[a-z]+|[\w-]+(?:\.[\w-]+)*\.(?:ts|md|cjs|sh|yaml|service))\b/g;
/** The top-level folders: a cited path that starts with one is the repository's. */
const FOLDERS = new Set(TRACKED.filter((path) => path.includes('/')).map((path) => path.slice(0, path.indexOf('/'))));

/**
 * The comments of a file: `//` and block comments in TypeScript and JavaScript, `#` lines
 * elsewhere.
 */
function comments(path: string, text: string): string[] {
  const hash = /(^|\/)Makefile$|\.(sh|ya?ml)$/.test(path);
  const found = hash
    ? [...text.matchAll(/^\s*#(.*)$/gm)].map((m) => m[1] ?? '')
    : [...text.matchAll(/\/\*[\s\S]*?\*\/|(?<![:'"`\w])\/\/.*$/gm)].map((m) => m[0]);
  // A URL cites a page elsewhere, not a file here.
  return found.map((comment) => comment.replace(/\b[a-z][\w+.-]*:\/\/\S+/gi, ''));
}

/** Whether `cited`, seen in a comment of `from`, names a file or folder that is there. */
function exists(cited: string, from: string): boolean {
  if (existsSync(join(ROOT, cited)) || existsSync(join(ROOT, dirname(from), cited))) return true;
  // A path outside the repository's folders is a package's (hono/dist/compose.js) or an example's
  // (..data/keys.json).
  if (cited.includes('/') && !FOLDERS.has(cited.slice(0, cited.indexOf('/')))) return true;
  if (BUILT.some((prefix) => cited.startsWith(prefix))) return true;
  return TRACKED.some((path) => path === cited || path.endsWith(`/${cited}`));
}

/** The widest a comment line under src/ may be, in characters. */
const COMMENT_COLUMNS_MAX = 100;

describe('comments', () => {
  test('cite no file that is not there', () => {
    const sources = TRACKED.filter(
      (path) =>
        /\.(ts|cjs|js|sh|ya?ml)$|(^|\/)Makefile$/.test(path) &&
        !path.includes('node_modules/') &&
        !path.startsWith('bench/results/'),
    );
    const missing: string[] = [];
    for (const path of sources) {
      for (const comment of comments(path, readFileSync(join(ROOT, path), 'utf8'))) {
        for (const [, cited] of comment.matchAll(CITED)) {
          if (cited && !exists(cited, path)) missing.push(`${path}: ${cited}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  // A reader who opens any file of the product learns first what it holds and why. The header is
  // `//` lines, so it is never taken for the docstring of the declaration below it.
  test('every source file under src/ opens with a file header of `//` lines', () => {
    const sources = TRACKED.filter((path) => /^src\/.*\.ts$/.test(path) && !path.endsWith('.test.ts'));
    const bare = sources.filter((path) => !readFileSync(join(ROOT, path), 'utf8').startsWith('// '));
    expect(bare).toEqual([]);
  });

  // A comment line is read without scrolling sideways. Exempt: the lines of an `@example`, whose
  // calls and results read as one line of code each, and `biome-ignore` directives, one line each.
  test(`under src/ are at most ${COMMENT_COLUMNS_MAX} columns wide`, () => {
    const wide: string[] = [];
    for (const path of TRACKED.filter((p) => /^src\/.*\.ts$/.test(p))) {
      let inExample = false;
      for (const [i, line] of readFileSync(join(ROOT, path), 'utf8').split('\n').entries()) {
        const text = line.trim();
        if (text.startsWith('/**')) inExample = false;
        if (/^(\/\*\*|\*)\s*@\w/.test(text)) inExample = /^(\/\*\*|\*)\s*@example\b/.test(text);
        const comment = /^(\/\/|\/\*\*|\*)/.test(text) && !text.includes('biome-ignore');
        if (comment && !inExample && [...line].length > COMMENT_COLUMNS_MAX) wide.push(`${path}:${i + 1}`);
        if (text.endsWith('*/')) inExample = false;
      }
    }
    expect(wide).toEqual([]);
  });
});
