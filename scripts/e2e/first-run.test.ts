// What a new user meets first: the first start's messages in their order, the development key
// with a request to paste, and errors that say where and what to do (keys file, health check,
// open-file limit). Against the server under test (PETSTORE_CMD, the binary by default).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import {
  type KeySpec,
  type Running,
  runCommand,
  serverCommand,
  serverLacksSqlite,
  spawnServer,
  writeKeysFile,
} from '../../test/harness.ts';

const ROOT = join(import.meta.dir, '../..');
type LogLine = Record<string, unknown>;
const jsonLines = (server: Running): LogLine[] =>
  server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);

async function waitForLog(server: Running, msg: string): Promise<LogLine> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = jsonLines(server).find((l) => l.msg === msg);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no "${msg}" line:\n${server.lines.join('\n')}`);
    await Bun.sleep(20);
  }
}

const tempDir = () => mkdtempSync(join(tmpdir(), 'petstore-first-run-'));
const noSqlite = serverLacksSqlite();
/** Deno's permissions keep /proc/self/limits from the server (it needs --allow-all): no check there. */
const underDeno = serverCommand().some((part) => /(^|\/)deno$/.test(part));

/** A keys file whose second line has a comma before "}". */
const STRAY_COMMA = '{"keys": [\n  {"name": "acme", "plan": "pro",}\n]}\n';
const strayCommaError = (file: string) =>
  [
    `${file}:2:34: not valid JSON: expected a property name in double quotes, found "}"`,
    '    {"name": "acme", "plan": "pro",}',
    `  ${' '.repeat(33)}^`,
  ].join('\n');

describe('the development key', () => {
  test('is shown once the server listens, with a curl to paste and the docs address on the real port', async () => {
    const server = await spawnServer();
    try {
      // stderr's banner and stdout's log lines travel apart: the banner may be read a moment later.
      const banner = await bannerOf(server);
      const token = /Authorization: Bearer (psk_[0-9A-Za-z]{38})/.exec(banner.join('\n'))?.[1] as string;
      expect(banner).toEqual([
        'No keys file given (--keys FILE or PETSTORE_KEYS_FILE): made one development key for this run.',
        `  Authorization: Bearer ${token}`,
        'It is shown once and forgotten at exit. Try it, and read the API reference:',
        `  curl -H 'Authorization: Bearer ${token}' ${server.url}/v1/pets`,
        `  ${server.url}/docs`,
        'For real keys, make a keys file and serve it with --keys FILE:',
        '  petstore keys add --keys FILE --consumer NAME --plan PLAN   (prints the token once)',
      ]);
      const curl = execFileSync('curl', ['-s', '-H', `Authorization: Bearer ${token}`, `${server.url}/v1/pets`]);
      expect(JSON.parse(curl.toString())).toEqual([]);
      expect((await fetch(`${server.url}/docs`)).status).toBe(200);
      // The key is announced after the store opened and the port was bound.
      expect(jsonLines(server).flatMap((l) => (l.msg === 'request' ? [] : [l.msg]))).toEqual([
        'pets are kept in memory only and are lost at exit',
        'serving with a generated development key',
        'listening',
      ]);
    } finally {
      await server.stop();
    }
  });
});

describe('a start that fails shows no key and nothing about serving', () => {
  let other: Running;
  beforeAll(async () => {
    other = await spawnServer({ args: ['--keys', writeKeysFile([])] });
  });
  afterAll(async () => {
    await other.stop();
  });

  test('the port in use: exit 1, and no database file is left behind', async () => {
    const dir = tempDir();
    const r = await runCommand(['--port', String(other.port), '--host', '127.0.0.1', '--data', join(dir, 'pets.db')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith('petstore: failed to start: ');
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/Bearer|development key|serving|listening/);
    expect(readdirSync(dir)).toEqual([]);
  });

  test.skipIf(noSqlite)('--data under a file: exit 2, the data store error alone', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), '');
    const r = await runCommand(['--port', '0', '--host', '127.0.0.1', '--data', join(dir, 'file/pets.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith(`petstore: data store: --data ${join(dir, 'file/pets.db')}: `);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/Bearer|development key|serving|listening/);
  });
});

describe('a keys file that is not JSON names the file, line and column, and quotes the line', () => {
  test('at start-up: exit 2', async () => {
    const file = join(tempDir(), 'keys.json');
    writeFileSync(file, STRAY_COMMA, { mode: 0o600 });
    const r = await runCommand(['--keys', file, '--port', '0', '--data', ':memory:']);
    expect([r.code, r.stderr]).toEqual([
      2,
      `petstore: keys file: ${strayCommaError(file)}\nRun petstore --help for usage.\n`,
    ]);
  });

  test('on SIGHUP: the reload fails with the same words and the previous keys stay', async () => {
    const file = writeKeysFile([{ name: 'acme', plan: 'pro' }]);
    const server = await spawnServer({ args: ['--keys', file] });
    try {
      writeFileSync(file, STRAY_COMMA);
      server.child.kill('SIGHUP');
      const line = await waitForLog(server, 'keys reload failed; keeping the previous keys');
      expect(line).toMatchObject({ level: 'error', file, error: strayCommaError(file) });
    } finally {
      await server.stop();
    }
  });

  test('in keys list: exit 2', async () => {
    const file = join(tempDir(), 'keys.json');
    writeFileSync(file, STRAY_COMMA, { mode: 0o600 });
    const r = await runCommand(['keys', 'list', '--keys', file]);
    expect([r.code, r.stderr]).toEqual([
      2,
      `petstore: keys file: ${strayCommaError(file)}\nRun petstore --help for usage.\n`,
    ]);
  });
});

describe('petstore healthcheck says why it failed, on one line of stderr', () => {
  test('nothing listening: connection refused', async () => {
    const port = await closedPort();
    const r = await runCommand(['healthcheck', '--port', String(port), '--host', '127.0.0.1']);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      1,
      '',
      `petstore healthcheck: http://127.0.0.1:${port}/healthz: connection refused: is the server running, on this port and host?\n`,
    ]);
  });

  test('another status: the status and the body’s message (here the metrics port)', async () => {
    const metricsPort = await closedPort();
    const server = await spawnServer({ args: ['--metrics-port', String(metricsPort), '--keys', writeKeysFile([])] });
    try {
      const r = await runCommand(['healthcheck', '--port', String(metricsPort), '--host', '127.0.0.1']);
      expect([r.code, r.stderr]).toEqual([
        1,
        `petstore healthcheck: http://127.0.0.1:${metricsPort}/healthz: answered 404: No resource exists at this path.\n`,
      ]);
      expect(await runCommand(['healthcheck', '--port', String(server.port), '--host', '127.0.0.1'])).toEqual({
        code: 0,
        stdout: '',
        stderr: '',
      });
    } finally {
      await server.stop();
    }
  });

  test('a server that never answers: timed out after 3 s', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const r = await runCommand(['healthcheck', '--port', String(port), '--host', '127.0.0.1']);
      expect([r.code, r.stderr]).toEqual([
        1,
        `petstore healthcheck: http://127.0.0.1:${port}/healthz: no answer within 3 s\n`,
      ]);
    } finally {
      silent.close();
    }
  }, 10_000);
});

describe.skipIf(underDeno)('the open-file limit is warned about only below what the configured server needs', () => {
  const warning = (server: Running) => jsonLines(server).find((l) => String(l.msg).startsWith('the open-file limit'));

  test('20,000 is plenty for a development key: no warning', async () => {
    const server = await spawnServer({ ulimit: { soft: 20_000, hard: 20_000 } });
    try {
      expect(warning(server)).toBeUndefined();
    } finally {
      await server.stop();
    }
  });

  test('200 consumers with 128 requests in flight each need 26,624: 20,000 is warned about, saying so', async () => {
    const keys: KeySpec[] = Array.from({ length: 200 }, (_, i) => ({ name: `c${i}`, plan: 'free' }));
    const server = await spawnServer({ args: ['--keys', writeKeysFile(keys)], ulimit: { soft: 20_000, hard: 20_000 } });
    try {
      expect(warning(server)).toMatchObject({
        level: 'warn',
        msg: 'the open-file limit is below what this server needs: each connection holds one, and new clients are refused when none is left',
        soft: 20_000,
        hard: 20_000,
        needed: 26_624,
      });
    } finally {
      await server.stop();
    }
  });
});

test('/openapi.yaml names the servers /openapi.json names: --public-url and --staging-url', async () => {
  const server = await spawnServer({
    args: ['--public-url', 'https://api.petstore.example', '--staging-url', 'https://staging.petstore.example'],
  });
  try {
    const yaml = YAML.parse(await (await fetch(`${server.url}/openapi.yaml`)).text()) as Record<string, unknown>;
    const json = (await (await fetch(`${server.url}/openapi.json`)).json()) as Record<string, unknown>;
    expect(yaml.servers).toEqual([
      { url: 'https://api.petstore.example/v1', description: 'Production' },
      { url: 'https://staging.petstore.example/v1', description: 'Staging' },
    ]);
    expect(yaml).toEqual(json);
  } finally {
    await server.stop();
  }
});

describe('a fresh clone installs only what serving, building and testing need', () => {
  const manifest = (dir: string) =>
    JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
  const names = (dir: string) => Object.keys({ ...manifest(dir).dependencies, ...manifest(dir).devDependencies });

  test('the QA tools and the bench peers are in their own packages, each with its lock', () => {
    const qa = ['dredd', '@stoplight/prism-cli', '@redocly/cli', '@stoplight/spectral-cli', 'playwright-core'];
    const peers = ['express', 'express-rate-limit', 'hono-rate-limiter'];
    expect(names('.').filter((n) => qa.includes(n) || peers.includes(n))).toEqual([]);
    expect(qa.filter((n) => !names('contract').includes(n))).toEqual([]);
    expect(peers.filter((n) => !names('bench').includes(n))).toEqual([]);
    for (const dir of ['.', 'contract', 'bench']) expect(existsSync(join(ROOT, dir, 'package-lock.json'))).toBe(true);
  });

  test('make run and make test install the root package only', () => {
    for (const target of ['run', 'test']) {
      const plan = execFileSync('make', ['-C', ROOT, '-n', '-B', target], { encoding: 'utf8' });
      expect(plan).not.toMatch(/cd (contract|bench)/);
      expect(new Set(plan.match(/npm install[^\n]*/g))).toEqual(new Set(['npm install --no-audit --no-fund']));
    }
  });

  test('the caches tools write are ignored by git: .schemathesis/', () => {
    const ignored = execFileSync('git', ['-C', ROOT, 'check-ignore', '-v', '.schemathesis/x'], { encoding: 'utf8' });
    expect(ignored).toContain('.schemathesis/');
  });
});

/** A loopback port nothing listens on (bound once, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** The lines the server wrote that are not log lines: the development key's banner (7 lines). */
async function bannerOf(server: Running): Promise<string[]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const banner = server.lines.filter((l) => !l.startsWith('{'));
    if (banner.length >= 7 || Date.now() > deadline) return banner;
    await Bun.sleep(20);
  }
}
