// make release-test: what ops download from dist/release/ (scripts/release.sh). The linux-x64
// binary runs natively, the linux-arm64 one under qemu-user (RELEASE_QEMU_AARCH64, set up by
// scripts/release-test.sh); each starts, answers /healthz and one request with an API key, and
// says exactly which version, commit and target it is. The rest cannot run here: release.sh
// checks their executable format when it builds them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pkg from '../package.json' with { type: 'json' };
import { type Running, runCommand, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';

const dir = join(import.meta.dir, '../dist/release');
const { version } = pkg;
const commit = process.env.RELEASE_COMMIT ?? '';
const TARGETS = ['linux-x64', 'linux-arm64', 'linux-x64-musl', 'linux-arm64-musl', 'darwin-x64', 'darwin-arm64'];

describe('dist/release', () => {
  test('holds one binary per target, the SBOM, the monitoring tarball and SHA256SUMS, nothing else', () => {
    expect(readdirSync(dir).sort()).toEqual(
      [
        ...TARGETS.map((t) => `petstore-${version}-${t}`),
        `petstore-${version}.cdx.json`,
        `petstore-${version}-monitoring.tar.gz`,
        'SHA256SUMS',
      ].sort(),
    );
  });

  test("the monitoring tarball holds deploy/'s rules, their tests and the dashboard, as committed", () => {
    const tarball = join(dir, `petstore-${version}-monitoring.tar.gz`);
    const files = Bun.spawnSync(['tar', '-tzf', tarball]).stdout.toString().trim().split('\n');
    const shipped = [
      'deploy/grafana/petstore.json',
      'deploy/prometheus/petstore.rules.test.yml',
      'deploy/prometheus/petstore.rules.yml',
    ];
    expect(files.filter((f) => !f.endsWith('/')).sort()).toEqual(shipped);
    for (const f of shipped) {
      const inside = Bun.spawnSync(['tar', '-xzOf', tarball, f]).stdout.toString();
      expect([f, inside]).toEqual([f, readFileSync(join(import.meta.dir, '..', f), 'utf8')]);
    }
  });

  test('sha256sum -c SHA256SUMS passes over every other file', () => {
    const listed = readFileSync(join(dir, 'SHA256SUMS'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.replace(/^[0-9a-f]{64} {2}/, ''));
    expect(listed.sort()).toEqual(
      readdirSync(dir)
        .filter((f) => f !== 'SHA256SUMS')
        .sort(),
    );
    const check = Bun.spawnSync(['sha256sum', '--strict', '-c', 'SHA256SUMS'], { cwd: dir });
    expect([check.exitCode, check.stderr.toString()]).toEqual([0, '']);
    expect(check.stdout.toString().trim().split('\n').sort()).toEqual(listed.map((f) => `${f}: OK`).sort());
  });
});

describe('the CycloneDX SBOM', () => {
  interface Component {
    group?: string;
    name: string;
    version: string;
    licenses?: { license?: { id?: string } }[];
  }
  const bom = JSON.parse(readFileSync(join(dir, `petstore-${version}.cdx.json`), 'utf8')) as {
    bomFormat: string;
    specVersion: string;
    metadata: { component: Component };
    components: Component[];
  };
  const lock = JSON.parse(readFileSync(join(import.meta.dir, '../package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string }>;
  };
  const find = (full: string) => bom.components.find((c) => (c.group ? `${c.group}/${c.name}` : c.name) === full);

  test('is CycloneDX JSON about petstore at this version', () => {
    expect([bom.bomFormat, bom.specVersion]).toEqual(['CycloneDX', '1.6']);
    expect([bom.metadata.component.name, bom.metadata.component.version]).toEqual(['petstore', version]);
  });

  test.each([
    ['hono', 'MIT'],
    ['valibot', 'MIT'],
    ['lru-cache', 'BlueOak-1.0.0'],
    ['@scalar/api-reference', 'MIT'],
    ['@scalar/hono-api-reference', 'MIT'],
    ['@hono/node-server', 'MIT'],
    ['yaml', 'ISC'],
  ])('lists %s at the locked version with its license %s', (name, license) => {
    const c = find(name);
    expect([c?.version, c?.licenses?.map((l) => l.license?.id)]).toEqual([
      lock.packages[`node_modules/${name}`]?.version,
      [license],
    ]);
  });

  test('leaves the development tools out', () => {
    for (const dev of ['bun', 'deno', '@biomejs/biome', 'dredd', '@cyclonedx/cyclonedx-npm', 'express']) {
      expect(find(dev)).toBeUndefined();
    }
  });
});

/** The release binary of `target`, through qemu-user when it is not this machine's CPU. */
function useBinary(target: string, qemu?: string) {
  const bin = join(dir, `petstore-${version}-${target}`);
  process.env.PETSTORE_CMD = qemu ? `${qemu} -L /usr/aarch64-linux-gnu ${bin}` : bin;
}

const runnable: [string, string | undefined][] = [['linux-x64', undefined]];
if (process.env.RELEASE_QEMU_AARCH64) runnable.push(['linux-arm64', process.env.RELEASE_QEMU_AARCH64]);

describe.each(runnable)('petstore-%s', (target, qemu) => {
  let server: Running;
  beforeAll(async () => {
    useBinary(target, qemu);
    server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'ops', plan: 'pro' }])] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('--version names the version, the commit and the target', async () => {
    useBinary(target, qemu);
    const r = await runCommand(['--version']);
    expect([r.code, r.stdout]).toEqual([0, `petstore ${version} (commit ${commit}, target ${target})\n`]);
  });

  test('answers /healthz and a request with an API key', async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const res = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${tokenOf('ops')}` } });
    expect([res.status, await res.json()]).toEqual([200, []]);
  });

  test('stops cleanly on SIGTERM', async () => {
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
