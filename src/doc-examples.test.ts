import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');

/**
 * The pages users read: the README, SECURITY.md, QA's and the maintainers' pages, and every page
 * under docs/.
 */
function pages(dir = 'docs'): string[] {
  const under = readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return pages(path);
    return path.endsWith('.md') ? [path] : [];
  });
  return dir === 'docs'
    ? ['README.md', 'SECURITY.md', 'contract/README.md', 'ARCHITECTURE.md', 'CHANGELOG.md', ...under]
    : under;
}

/**
 * A marker, the line above a block: `<!-- tested: FILE runs this block … -->` when FILE runs the
 * block's text as the page writes it, or `<!-- not run as written (why): FILE runs … -->` when
 * it cannot run here (systemd, a download, a host's paths) and FILE runs what it does.
 */
const MARKER = /^\s*<!-- (tested|not run as written(?: \([^)]*\))?): (.*) -->$/;
/**
 * The test files a marker names: a path to a `.test.ts` file, or to a test script such as
 * `scripts/image-test.sh`.
 */
const TEST_FILE = /[\w./-]+(?:\.test\.ts|-test\.sh)\b/g;
/** A fence that opens a shell block. */
const SHELL = /^\s*```(?:sh|bash|console|shell|zsh)\s*$/;

interface Block {
  /** `page:line` of the fence. */
  where: string;
  page: string;
  /** The marker line above it, if the line above is one. */
  marker?: RegExpExecArray;
}

function shellBlocks(page: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let open = false;
  for (const [i, line] of lines.entries()) {
    if (/^\s*```/.test(line)) {
      if (!open && SHELL.test(line)) {
        const above = lines.slice(0, i).findLast((l) => l.trim() !== '') ?? '';
        blocks.push({ where: `${page}:${i + 1}`, page, marker: MARKER.exec(above) ?? undefined });
      }
      open = !open;
    }
  }
  return blocks;
}

describe('every shell block of the documents is run by a test', () => {
  const all = pages().flatMap((page) => shellBlocks(page, readFileSync(join(ROOT, page), 'utf8')));

  test('finds the blocks', () => {
    expect(all.length).toBeGreaterThan(20);
  });

  test('each has a marker on the line above: tested, or not run as written and what runs it', () => {
    expect(all.filter((b) => !b.marker).map((b) => b.where)).toEqual([]);
  });

  test('every marker names a test file that exists', () => {
    const wrong: string[] = [];
    for (const page of pages()) {
      for (const [i, line] of readFileSync(join(ROOT, page), 'utf8').split('\n').entries()) {
        const marker = MARKER.exec(line);
        if (!marker) continue;
        const files = [...(marker[2] ?? '').matchAll(TEST_FILE)].map((m) => m[0]);
        if (files.length === 0) wrong.push(`${page}:${i + 1}: names no test file`);
        for (const file of files)
          if (!existsSync(join(ROOT, file))) wrong.push(`${page}:${i + 1}: ${file} is not there`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('the test a "tested" marker names reads that page', () => {
    const unread = all
      .filter((b) => b.marker?.[1] === 'tested')
      .flatMap((b) => {
        const file = (b.marker?.[2] ?? '').match(TEST_FILE)?.[0] ?? '';
        return existsSync(join(ROOT, file)) && readFileSync(join(ROOT, file), 'utf8').includes(`${b.page}'`)
          ? []
          : [`${b.where}: ${file}`];
      });
    expect(unread).toEqual([]);
  });
});

describe('the pages users read', () => {
  test('name only files and folders that exist, in every `src/…`-style path they quote', () => {
    const missing: string[] = [];
    for (const page of [...pages(), 'bench/README.md']) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const [, path = ''] of text.matchAll(
        /`((?:src|scripts|test|contract|deploy|bench|clients)\/[\w./-]*\w)`/g,
      )) {
        // What a run makes or installs (bench/tmp/, src/reference/generated/, node_modules) is not
        // in a clone.
        const made = /\/tmp\/|\/generated\/|node_modules/.test(path);
        if (!made && !existsSync(join(ROOT, path))) missing.push(`${page}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
