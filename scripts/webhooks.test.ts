/**
 * Quota notifications end to end, on one instance with its SQLite file: a real HTTP receiver on
 * loopback verifies each delivery with `standardwebhooks`, as an integrator's would.
 * Retries run on a short schedule (PETSTORE_WEBHOOK_RETRY_SECONDS) so backoff shows in seconds.
 */
import { afterEach, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KeySpec, metricSum, type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';
import { freePort, newSecret, type Receiver, startReceiver } from '../test/webhook-receiver.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => {})));
});

async function serve(keys: KeySpec[], extra: string[] = [], env: Record<string, string> = {}, data?: string) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-webhooks-'));
  const args = ['--keys', writeKeysFile(keys, dir), '--data', data ?? join(dir, 'pets.db'), '--metrics', ...extra];
  const server = await spawnServer({ args, env });
  cleanup.push(() => server.stop('SIGKILL'));
  return { server, args, env };
}

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  cleanup.push(() => r.close());
  return r;
}

async function list(server: Running, name: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${tokenOf(name)}` } });
  await res.arrayBuffer();
  return res.status;
}

async function metric(server: Running, line: RegExp): Promise<number> {
  return metricSum(await (await fetch(`${server.url}/metrics`)).text(), line);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('80% and 100% of a day quota: one signed event each, in order; the first 429 sends quota.exhausted once', async () => {
  const secret = newSecret();
  const hooks = await receiver(secret);
  const { server } = await serve([
    { name: 'acme', plan: 'pro', limits: { perMinute: 100, perDay: 10 }, webhook: { url: hooks.url, secret } },
  ]);
  const statuses: number[] = [];
  for (let i = 0; i < 13; i++) statuses.push(await list(server, 'acme'));
  expect(statuses).toEqual([...Array(10).fill(200), 429, 429, 429]);
  const got = await hooks.waitFor(3, 10_000);
  await sleep(2_000); // nothing more comes: not one event per 429
  expect(hooks.got.map((r) => [r.status, r.body?.type])).toEqual([
    [200, 'quota.threshold'],
    [200, 'quota.threshold'],
    [200, 'quota.exhausted'],
  ]);
  const [eighty, hundred, exhausted] = got.map((r) => r.body?.data);
  expect(eighty).toMatchObject({ consumer: 'acme', window: 'day', threshold: 80, limit: 10, used: 8 });
  expect(hundred).toMatchObject({ consumer: 'acme', window: 'day', threshold: 100, limit: 10, used: 10 });
  expect(exhausted).toMatchObject({ consumer: 'acme', window: 'day', limit: 10, used: 10 });
  expect(typeof eighty?.reset).toBe('number');
  expect(new Set(got.map((r) => r.id)).size).toBe(3);
  expect(got.every((r) => /^msg_[0-9a-f]{32}$/.test(r.id))).toBe(true);
  expect(await metric(server, /^petstore_webhook_deliveries_total\{.*outcome="delivered"/)).toBe(3);
  // The secret is never logged.
  expect(server.lines.join('\n')).not.toContain(secret.slice(6));
});

test('a receiver down, then answering 503, until 20 s: delivered, with the backoff in the attempt times; /readyz stays 200', async () => {
  const secret = newSecret();
  const port = await freePort();
  const start = Date.now();
  const { server } = await serve(
    [
      {
        name: 'late',
        plan: 'pro',
        limits: { perMinute: 100, perDay: 4 },
        thresholds: [100],
        webhook: { url: `http://127.0.0.1:${port}/hooks`, secret },
      },
    ],
    [],
    { PETSTORE_WEBHOOK_RETRY_SECONDS: '0.5,1,2,4,8,8,8' },
  );
  for (let i = 0; i < 4; i++) expect(await list(server, 'late')).toBe(200);
  // Connection refused for the first 3 s, then 503 until 20 s after the crossing, then 200.
  await sleep(3_000);
  const hooks = await receiver(secret, () => (Date.now() - start < 20_000 ? 503 : 200), port);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  const [delivered] = await hooks.waitFor(1, 45_000);
  expect(delivered?.body?.type).toBe('quota.threshold');
  expect(delivered?.at).toBeGreaterThanOrEqual(start + 20_000);
  // Every attempt carries the same id; the gaps between them grow.
  expect(new Set(hooks.got.map((r) => r.id)).size).toBe(1);
  const times = hooks.got.map((r) => r.at);
  const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
  expect(hooks.got.length).toBeGreaterThanOrEqual(3);
  expect(gaps.at(-1)).toBeGreaterThan(5_000);
  expect(gaps[0]).toBeGreaterThan(2_500);
  expect(await metric(server, /^petstore_webhook_deliveries_total\{.*outcome="retried"/)).toBeGreaterThanOrEqual(4);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
}, 60_000);

test('kill -9 right after the crossing request, restart: the event arrives', async () => {
  const secret = newSecret();
  const port = await freePort();
  const keys: KeySpec[] = [
    {
      name: 'crash',
      plan: 'pro',
      limits: { perMinute: 100, perDay: 5 },
      thresholds: [100],
      webhook: { url: `http://127.0.0.1:${port}/hooks`, secret },
    },
  ];
  const { server, args } = await serve(keys, [], { PETSTORE_WEBHOOK_RETRY_SECONDS: '0.5' });
  for (let i = 0; i < 5; i++) expect(await list(server, 'crash')).toBe(200);
  expect(await server.stop('SIGKILL')).toBe(null);
  const hooks = await receiver(secret, () => 200, port);
  const again = await spawnServer({ args });
  cleanup.push(() => again.stop('SIGKILL'));
  const [event] = await hooks.waitFor(1, 45_000);
  expect(event?.body).toMatchObject({ type: 'quota.threshold', data: { consumer: 'crash', threshold: 100, used: 5 } });
}, 60_000);

test('a receiver that never answers: requests are not slowed, and the outbox stays within --webhook-outbox-max', async () => {
  const secret = newSecret();
  const hooks = await receiver(secret, () => 'hang');
  const names = Array.from({ length: 8 }, (_, i) => `busy${i}`);
  const { server } = await serve(
    names.map((name) => ({
      name,
      plan: 'pro',
      limits: { perMinute: 100, perDay: 2 },
      thresholds: [50, 100],
      webhook: { url: hooks.url, secret },
    })),
    ['--webhook-outbox-max', '5'],
  );
  const slowest: number[] = [];
  for (const name of names) {
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await list(server, name);
      slowest.push(performance.now() - t);
    }
  }
  // 24 events (50%, 100% and the first 429 of 8 consumers) against a bound of 5.
  const until = Date.now() + 30_000;
  while ((await metric(server, /^petstore_webhook_deliveries_total\{.*outcome="dropped"/)) < 19) {
    expect(Date.now()).toBeLessThan(until);
    await sleep(250);
  }
  expect(await metric(server, /^petstore_webhook_outbox_events\{/)).toBeLessThanOrEqual(5);
  expect(hooks.got.length).toBeGreaterThan(0);
  expect(Math.max(...slowest)).toBeLessThan(1_000);
  // SIGTERM with attempts hanging: the worker cuts them short (they stay pending) and the server stops as usual.
  expect(await server.stop()).toBe(0);
  expect(server.lines.some((l) => l.includes('"error":"the server stopped before the answer"'))).toBe(true);
}, 60_000);

test('a key expiring within 7 days is announced once at start; a ban start sends key.banned', async () => {
  const secret = newSecret();
  const hooks = await receiver(secret);
  const expiresAt = new Date(Date.now() + 3 * 86_400_000);
  expiresAt.setUTCMilliseconds(0);
  const dir = mkdtempSync(join(tmpdir(), 'petstore-webhooks-'));
  const sha = (t: string) => new Bun.CryptoHasher('sha256').update(t).digest('hex');
  const file = join(dir, 'keys.json');
  await Bun.write(
    file,
    JSON.stringify({
      consumers: [
        {
          name: 'rotating',
          plan: 'pro',
          limits: { perMinute: 2, perDay: 1_000 },
          ban: { threshold: 2, seconds: 60 },
          webhook: { url: hooks.url, secret },
          keys: [{ id: 'old', sha256: sha(tokenOf('rotating')), expiresAt: expiresAt.toISOString() }],
        },
      ],
    }),
  );
  const server = await spawnServer({ args: ['--keys', file, '--data', join(dir, 'pets.db')] });
  cleanup.push(() => server.stop('SIGKILL'));
  const [expiring] = await hooks.waitFor(1, 10_000);
  expect(expiring?.body).toMatchObject({
    type: 'key.expiring',
    data: { consumer: 'rotating', key: 'old', expiresAt: expiresAt.getTime() / 1_000, days: 7 },
  });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push(await list(server, 'rotating'));
  expect(statuses).toEqual([200, 200, 429, 429]);
  const got = await hooks.waitFor(2, 10_000);
  expect(got[1]?.body).toMatchObject({ type: 'key.banned', data: { consumer: 'rotating' } });
  expect(Number(got[1]?.body?.data.until) - Date.now() / 1_000).toBeGreaterThan(50);
  expect(hooks.got.map((r) => r.body?.type)).toEqual(['key.expiring', 'key.banned']);
}, 30_000);
