/**
 * `BENCH_BASE=<ref>`: an earlier commit's binary, built in dist/bench-base-<commit>/ from
 * `git archive`, so `make bench` can run it in the same rounds as the current build. Under dist/
 * (ignored, removed by `make clean`) rather than bench/, which `make lint` type-checks and lints:
 * a second copy of src/ there would be checked too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

export interface BaseBuild {
  /** The ref as given and the commit it names (short). */
  readonly ref: string;
  readonly commit: string;
  /** The commit's tree (its `src/` beside its `node_modules`), where `binary` is built. */
  readonly root: string;
  readonly binary: string;
}

const git = (...args: string[]) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();

/**
 * Builds (or reuses) `ref`'s dist/petstore. Its dependencies are this tree's node_modules
 * (a symlink) when its package-lock.json is byte for byte this one, else its own `npm install`
 * over a hard-linked copy of them.
 *
 * @example
 * const base = buildBase('HEAD~3'); // { ref: 'HEAD~3', commit: 'f23d22d', root: '.../dist/bench-base-f23d22d', binary: '.../dist/bench-base-f23d22d/dist/petstore' }
 */
export function buildBase(ref: string): BaseBuild {
  const commit = git('rev-parse', '--short', `${ref}^{commit}`);
  const dir = join(ROOT, 'dist', `bench-base-${commit}`);
  const binary = join(dir, 'dist/petstore');
  if (existsSync(binary)) {
    console.log(`bench: base ${ref} (${commit}): reusing ${binary}`);
    return { ref, commit, root: dir, binary };
  }
  console.log(`bench: base ${ref} (${commit}): building in ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive "${commit}" | tar -x -C "${dir}"`], { stdio: 'inherit' });
  const lock = (root: string) => readFileSync(join(root, 'package-lock.json'), 'utf8');
  const modules = join(dir, 'node_modules');
  if (lock(dir) === lock(ROOT)) {
    if (!existsSync(modules) && !isLink(modules)) symlinkSync(join(ROOT, 'node_modules'), modules);
    // The shared node_modules is up to date: tell make not to reinstall it because of file times.
    execFileSync('make', ['-C', dir, '-o', 'node_modules/.stamp', 'build'], { stdio: 'inherit' });
  } else {
    // Start from a hard-linked copy of this tree's node_modules: `npm install` then fetches only
    // what differs (it replaces files rather than writing into them, so this tree's copy is safe).
    if (!existsSync(modules)) execFileSync('cp', ['-al', join(ROOT, 'node_modules'), modules]);
    // The copy's stamp is newer than the base's lock: removed, so make installs the base's lock.
    rmSync(join(modules, '.stamp'), { force: true });
    execFileSync('make', ['-C', dir, 'build'], { stdio: 'inherit' });
  }
  if (!existsSync(binary)) throw new Error(`bench: building ${ref} left no ${binary}`);
  return { ref, commit, root: dir, binary };
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
