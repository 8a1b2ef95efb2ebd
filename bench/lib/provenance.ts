/** Where and with what a run happened, for the report: machine, versions, commit. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    // wrk -v exits 1 after printing its version.
    const out = (err as { stdout?: string }).stdout;
    return typeof out === 'string' && out ? out.trim() : 'unknown';
  }
}

/** `version` of the package.json in `dir` (relative to the repository). */
function packageVersion(dir: string): string {
  const json: unknown = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8'));
  return typeof json === 'object' && json && 'version' in json ? String(json.version) : 'unknown';
}

export function machine(): Record<string, string | number> {
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    os: /^PRETTY_NAME="?([^"\n]*)"?/m.exec(osRelease)?.[1] ?? 'unknown',
    kernel: release(),
    loadAverageAtStart: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
}

export function versions(): Record<string, string> {
  const commit = run('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']);
  const dirty = run('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no']) ? '+changes' : '';
  return {
    petstore: `${packageVersion('.')} (${commit}${dirty})`,
    bun: Bun.version,
    node: process.versions.node ? run('node', ['--version']) : 'unknown',
    hono: packageVersion('node_modules/hono'),
    express: packageVersion('bench/node_modules/express'),
    'express-rate-limit': packageVersion('bench/node_modules/express-rate-limit'),
    'hono-rate-limiter': packageVersion('bench/node_modules/hono-rate-limiter'),
    wrk: run('wrk', ['-v']).split('\n')[0]?.split(' ').slice(0, 2).join(' ') ?? 'unknown',
  };
}
