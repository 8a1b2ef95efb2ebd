import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dir, '..');

/** The code block of ARCHITECTURE.md's "Layout" section. */
function layoutBlock(): string {
  const page = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## Layout\n'));
  const start = section.indexOf('```\n') + 4;
  return section.slice(start, section.indexOf('\n```', start));
}

interface Entry {
  /** From the repository's root; a folder ends in `/`. */
  readonly path: string;
  /** Its description, continuation lines included. */
  text: string;
}

/**
 * The block's entries: a line's first word is a path, relative to the folder above it when
 * indented by two spaces a level; a line indented past the names continues the description.
 */
function entries(): Entry[] {
  const out: Entry[] = [];
  const folders: string[] = [];
  for (const line of layoutBlock().split('\n')) {
    const indent = line.length - line.trimStart().length;
    const [name = '', ...rest] = line.trim().split(/\s+/);
    const last = out.at(-1);
    if (indent > 20 && last) {
      last.text += ` ${line.trim()}`;
      continue;
    }
    const level = indent / 2;
    folders.length = level;
    const path = (level > 0 ? (folders[level - 1] ?? '') : '') + name;
    if (name.endsWith('/')) folders[level] = path;
    out.push({ path, text: rest.join(' ') });
  }
  return out;
}

/** Every shipped source file under src/: not tests, not generated modules. */
function sourceFiles(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return name === 'generated' ? [] : sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [relative(ROOT, full)] : [];
  });
}

/** The folders outside src/ whose every entry the layout names: what tests share, and the scripts. */
const SHARED_FOLDERS = ['test/', 'scripts/'];

const mentions = (text: string, file: string) => new RegExp(`(^|[\\s,(])${file.replace('.', '\\.')}\\b`).test(text);

describe("ARCHITECTURE.md's Layout", () => {
  const listed = entries();

  test("names every file under src/, by its path or in its folder's line", () => {
    const unnamed = sourceFiles().filter((file) => {
      const slash = file.lastIndexOf('/') + 1;
      const folder = file.slice(0, slash);
      const base = file.slice(slash);
      return !listed.some((e) => e.path === file || (e.path === folder && mentions(e.text, base)));
    });
    expect(unnamed).toEqual([]);
  });

  test("names every file of test/, and every file and folder of scripts/, in its folder's line", () => {
    const unnamed: string[] = [];
    for (const folder of SHARED_FOLDERS) {
      const line = listed.find((e) => e.path === folder);
      for (const name of readdirSync(join(ROOT, folder))) {
        const path = `${folder}${name}${statSync(join(ROOT, folder, name)).isDirectory() ? '/' : ''}`;
        if (!listed.some((e) => e.path === path) && !(line && mentions(line.text, name))) unnamed.push(path);
      }
    }
    expect(unnamed).toEqual([]);
  });

  test('names no file or folder that does not exist', () => {
    const missing: string[] = [];
    for (const { path, text } of listed) {
      if (!existsSync(join(ROOT, path))) missing.push(path);
      const listsFiles = path.startsWith('src/') || SHARED_FOLDERS.some((folder) => path.startsWith(folder));
      if (listsFiles && path.endsWith('/')) {
        for (const [file] of text.matchAll(/(?<![\w*/.-])[\w.-]+\.(ts|sh|service)\b/g)) {
          if (!existsSync(join(ROOT, path, file))) missing.push(path + file);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

/** The gateway's share: what runs per request, apart from its limiters. */
const GATEWAY_LINES_MAX = 1100;

describe('the floors', () => {
  test(`src/gateway/ outside limiter/ holds at most ${GATEWAY_LINES_MAX} lines of shipped code`, () => {
    const lines = sourceFiles(join(ROOT, 'src/gateway'))
      .filter((file) => !file.startsWith('src/gateway/limiter/'))
      .reduce((sum, file) => sum + readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1, 0);
    expect(lines).toBeLessThanOrEqual(GATEWAY_LINES_MAX);
  });
});

/** The numbered steps of ARCHITECTURE.md's "One request's way" from `from` on (a `### ` heading), each as one line. */
function walkSteps(from = "\n## One request's way"): string[] {
  const page = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const start = page.indexOf(from);
  const section = page.slice(start, page.indexOf('\n## ', start + 1));
  return section
    .split(/\n(?=\d+\. )/)
    .filter((s) => /^\d+\. /.test(s))
    .map((s) => s.replaceAll(/\s+/g, ' '));
}

/** The steps the comment over `operationHandler` of `src/http/pipeline.ts` lists (` * 1. \`name\`: ...`), in order. */
function pipelineSteps(): { number: number; name: string }[] {
  const text = readFileSync(join(ROOT, 'src/http/pipeline.ts'), 'utf8');
  const end = text.indexOf('function operationHandler<');
  const comment = text.slice(text.lastIndexOf('/**', end), end);
  return [...comment.matchAll(/^ \* (\d+)\. `(\w+)`/gm)].map((m) => ({ number: Number(m[1]), name: m[2] ?? '' }));
}

/** Whether `file` defines `name`: a function, a method, or a constant holding a function. */
function defines(file: string, name: string): boolean {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const [owner, member] = name.includes('.') ? name.split('.') : [undefined, name];
  if (owner && !new RegExp(`\\bclass ${owner}\\b`).test(text)) return false;
  return new RegExp(
    `(function\\*? ${member}\\b|^\\s+(static )?(async )?${member}\\s*[(<]|(const|let) ${member}\\s*=)`,
    'm',
  ).test(text);
}

describe("ARCHITECTURE.md's walk of one request", () => {
  const steps = walkSteps();

  test("has four steps of start-up, then the request's steps as src/http/pipeline.ts lists them, each naming its function first", () => {
    const listed = pipelineSteps();
    expect(listed.map((s) => s.number)).toEqual(listed.map((_, i) => i + 1));
    const request = walkSteps('\n### The request').map((s) => {
      const [, number = '', name = ''] = /^(\d+)\. \*\*[^*]*\*\* \(`(\w+)\(?\)?`/.exec(s) ?? [];
      return { number: Number(number), name };
    });
    expect(request).toEqual(listed);
    expect(steps).toHaveLength(4 + listed.length);
  });

  test('each function a step names is defined in a file that step names', () => {
    const missing: string[] = [];
    for (const step of steps) {
      const files = [...step.matchAll(/`(src\/[\w/.-]+\.ts)`/g)].map((m) => m[1] ?? '');
      for (const [, name = ''] of step.matchAll(/`([\w.]+)\(\)`/g)) {
        if (!files.some((f) => existsSync(join(ROOT, f)) && defines(f, name))) missing.push(name);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('comments under src/', () => {
  /** Every comment line of every .ts file under src/, tests included: `file:line: text`. */
  function commentLines(dir = join(ROOT, 'src')): string[] {
    return readdirSync(dir).flatMap((name) => {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) return name === 'generated' ? [] : commentLines(full);
      if (!name.endsWith('.ts')) return [];
      return readFileSync(full, 'utf8')
        .split('\n')
        .flatMap((line, i) => {
          const at = /^\s*(\/\/|\/\*|\*)/.test(line) ? 0 : line.indexOf(' // ');
          return at < 0 ? [] : [`${relative(ROOT, full)}:${i + 1}: ${line.slice(at).trim()}`];
        });
    });
  }

  test('quote no percentage and no microsecond figure: figures belong in bench/README.md', () => {
    const figures = commentLines().filter((l) => /\d\s?%(?![a-z])|µs|microsecond/i.test(l.slice(l.indexOf(': ') + 2)));
    expect(figures).toEqual([]);
  });
});
