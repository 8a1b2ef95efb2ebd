import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pipelineSteps, pipelineTree } from '../test/pipeline-steps.ts';

const ROOT = join(import.meta.dir, '..');

/** The folders outside src/ whose every entry a list names: what tests share, and the scripts. */
const SHARED_FOLDERS = ['test/', 'scripts/'];

/**
 * Every README.md under src/ (generated modules aside), and those of SHARED_FOLDERS: each lists its
 * folder's files.
 */
function readmes(dir = join(ROOT, 'src')): string[] {
  const here = readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return name === 'generated' ? [] : readmes(full);
    return name === 'README.md' ? [relative(ROOT, full)] : [];
  });
  return dir === join(ROOT, 'src') ? [...here, ...SHARED_FOLDERS.map((folder) => `${folder}README.md`)] : here;
}

interface Entry {
  /** From the repository's root; a folder ends in `/`. */
  readonly path: string;
  /** Its description, continuation lines included. */
  text: string;
}

/**
 * A README's entries. The folder's own is its text between the title and the first code block.
 * That block lists the rest: a line's first word is a path, relative to the README's folder, or to
 * the folder above it when indented by two spaces a level; a line indented past the names
 * continues the description.
 */
function entries(readme: string): Entry[] {
  const page = readFileSync(join(ROOT, readme), 'utf8');
  const base = readme.slice(0, readme.lastIndexOf('/') + 1);
  const start = page.indexOf('```\n') + 4;
  const out: Entry[] = [{ path: base, text: page.slice(page.indexOf('\n'), start - 4).replaceAll(/\s+/g, ' ') }];
  const folders: string[] = [];
  for (const line of page.slice(start, page.indexOf('\n```', start)).split('\n')) {
    const indent = line.length - line.trimStart().length;
    const [name = '', ...rest] = line.trim().split(/\s+/);
    const last = out.at(-1);
    if (indent > 20 && last) {
      last.text += ` ${line.trim()}`;
      continue;
    }
    const level = indent / 2;
    folders.length = level;
    const path = (level > 0 ? (folders[level - 1] ?? '') : base) + name;
    if (name.endsWith('/')) folders[level] = path;
    out.push({ path, text: rest.join(' ') });
  }
  return out;
}

/**
 * Every shipped source file under src/ (not generated modules), and each test with no source file
 * of its name.
 */
function sourceFiles(dir = join(ROOT, 'src'), withSpanningTests = false): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return name === 'generated' ? [] : sourceFiles(full, withSpanningTests);
    if (!name.endsWith('.ts')) return [];
    const spans = name.endsWith('.test.ts') && !existsSync(full.replace(/\.test\.ts$/, '.ts'));
    return !name.endsWith('.test.ts') || (withSpanningTests && spans) ? [relative(ROOT, full)] : [];
  });
}

const mentions = (text: string, file: string) => new RegExp(`(^|[\\s,(\`])${file.replace('.', '\\.')}\\b`).test(text);

describe("the folders' READMEs", () => {
  const lists = readmes();
  const listed = lists.flatMap(entries);

  test("name every file under src/, and every test that spans files, by its path or in its folder's text", () => {
    const unnamed = sourceFiles(join(ROOT, 'src'), true).filter((file) => {
      const slash = file.lastIndexOf('/') + 1;
      const folder = file.slice(0, slash);
      const base = file.slice(slash);
      return !listed.some((e) => e.path === file || (e.path === folder && mentions(e.text, base)));
    });
    expect(unnamed).toEqual([]);
  });

  test("name every file of test/, and every file and folder of scripts/, by its path or in its folder's text", () => {
    const unnamed: string[] = [];
    for (const folder of SHARED_FOLDERS) {
      const own = listed.find((e) => e.path === folder);
      for (const name of readdirSync(join(ROOT, folder))) {
        if (name === 'README.md') continue;
        const path = `${folder}${name}${statSync(join(ROOT, folder, name)).isDirectory() ? '/' : ''}`;
        if (!listed.some((e) => e.path === path) && !(own && mentions(own.text, name))) unnamed.push(path);
      }
    }
    expect(unnamed).toEqual([]);
  });

  test('name no file or folder that does not exist', () => {
    const missing: string[] = [];
    for (const { path, text } of listed) {
      if (!existsSync(join(ROOT, path))) missing.push(path);
      if (path.endsWith('/')) {
        for (const [file] of text.matchAll(/(?<![\w*/.-])[\w.-]+\.(ts|sh|service)\b/g)) {
          if (!existsSync(join(ROOT, path, file))) missing.push(path + file);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  test("are each linked from ARCHITECTURE.md's map", () => {
    const page = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const map = page.slice(page.indexOf('\n## The map'), page.indexOf('\n## ', page.indexOf('\n## The map') + 1));
    expect(lists.filter((readme) => !map.includes(`](${readme})`))).toEqual([]);
  });
});

/** The gateway's share: what runs per request, apart from its limiters. */
const GATEWAY_LINES_MAX = 1100;

describe('the layers', () => {
  test(`src/gateway/ outside limiter/ holds at most ${GATEWAY_LINES_MAX} lines of shipped code`, () => {
    const lines = sourceFiles(join(ROOT, 'src/gateway'))
      .filter((file) => !file.startsWith('src/gateway/limiter/'))
      .reduce((sum, file) => sum + readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1, 0);
    expect(lines).toBeLessThanOrEqual(GATEWAY_LINES_MAX);
  });
});

/**
 * A step's first line: the request's are numbered (`1. `), start-up's are labelled (`- **S1** `).
 */
const STEP = /^(\d+\. |- \*\*S\d+\*\* )/;

/**
 * The steps of ARCHITECTURE.md's "One request's way" from `from` on (a `### ` heading), each as
 * one line.
 */
function walkSteps(from = "\n## One request's way"): string[] {
  const page = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const start = page.indexOf(from);
  const section = page.slice(start, page.indexOf('\n## ', start + 1));
  return section
    .split(/\n(?=\d+\. |- \*\*S\d+\*\* )/)
    .filter((s) => STEP.test(s))
    .map((s) => s.replaceAll(/\s+/g, ' '));
}

/**
 * Whether `file` defines `name`: a function, a method, or a constant given an arrow function or
 * a `function` expression.
 */
function defines(file: string, name: string): boolean {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const [owner, member] = name.includes('.') ? name.split('.') : [undefined, name];
  if (owner && !new RegExp(`\\bclass ${owner}\\b`).test(text)) return false;
  return new RegExp(
    `(function\\*? ${member}\\b|^\\s+(static )?(async )?${member}\\s*[(<]|const ${member}\\s*(:[^=]+)?=\\s*(async )?(function\\b|\\(|<|\\w+ =>))`,
    'm',
  ).test(text);
}

describe("ARCHITECTURE.md's walk of one request", () => {
  const steps = walkSteps();

  test("has four steps of start-up, S1 to S4, then the request's steps as src/pipeline/pipeline.ts lists them, each naming its function first", () => {
    expect(steps.slice(0, 4).map((s) => /^- \*\*(S\d+)\*\*/.exec(s)?.[1])).toEqual(['S1', 'S2', 'S3', 'S4']);
    const listed = pipelineSteps();
    expect(listed.map((s) => s.number)).toEqual(listed.map((_, i) => i + 1));
    const request = walkSteps('\n### The request').map((s) => {
      const [, number = '', name = ''] = /^(\d+)\. \*\*[^*]*\*\* \(`(\w+)\(?\)?`/.exec(s) ?? [];
      return { number: Number(number), name };
    });
    expect(request).toEqual(listed);
    expect(steps).toHaveLength(4 + listed.length);
  });

  test("shows the call tree of src/pipeline/pipeline.ts's header, line for line, each name a function of src/pipeline/", () => {
    const tree = pipelineTree();
    const page = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const shown = /\n```\n([\s\S]*?)\n```\n/.exec(page.slice(page.indexOf('\n### The request')))?.[1] ?? '';
    const names = tree.map((line) => line.trim().split(' ')[0] ?? '');
    expect(names[0]).toBe('handleRequest');
    expect(shown.split('\n')).toEqual(tree);
    const files = ['src/pipeline/pipeline.ts', 'src/pipeline/cors.ts', 'src/pipeline/answer.ts'];
    expect(names.filter((name) => !files.some((f) => defines(f, name)))).toEqual([]);
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
