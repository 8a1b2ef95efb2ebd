/**
 * The shipped rules and dashboard against a real Prometheus (Debian's `prometheus`) scraping the
 * built binary every second, on a throwaway PostgreSQL and Redis, while a load drives it in phases:
 * - normal traffic: no alert pending or firing, and every objective's panel shows data (100%
 *   available, the budget untouched: no 5xx series exists yet);
 * - a spent key hammered, bad tokens from 3,000 addresses, Redis stopped, then PostgreSQL stopped:
 *   PetstoreConsumerRefused, PetstoreUnauthorizedFlood, PetstoreRateLimiterFailedOver,
 *   PetstoreStoreUnavailable and PetstoreAvailabilityFastBurn go pending or firing.
 * Then, through Prometheus's HTTP API: every rule is healthy and every query of every rule and
 * every dashboard panel evaluates without error, and each panel about what the load exercised
 * returns data. The rules loaded are the shipped file with each `for:` cut to 2 s (the
 * expressions are the shipped ones, byte for byte); the metric names they and the dashboard read
 * are checked against what this binary serves on /metrics.
 *
 * Needs PETSTORE_TEST_POSTGRES_URL/_DIR and PETSTORE_TEST_REDIS_URL/_DIR: `make monitoring-test`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { type Running, spawnServer, tokenOf } from '../test/harness.ts';
import {
  allRules,
  asGrafanaSends,
  exportedSeries,
  panelQueries,
  panels,
  panelsOfRow,
  RULES_FILE,
  scrapedNames,
  variableSelectors,
} from '../test/monitoring.ts';
import { freshDatabase, pgCtl, pgStartOptions, type TestDatabase } from '../test/postgres.ts';

const PG_SERVER = process.env.PETSTORE_TEST_POSTGRES_URL ?? '';
const PG_DIR = process.env.PETSTORE_TEST_POSTGRES_DIR ?? '';
const REDIS = process.env.PETSTORE_TEST_REDIS_URL ?? '';
const READY = Boolean(PG_SERVER && PG_DIR && REDIS && Bun.which('prometheus'));
if (!READY) {
  console.warn(
    'monitoring.test.ts: needs prometheus, PETSTORE_TEST_POSTGRES_URL/_DIR and PETSTORE_TEST_REDIS_URL; skipped. ' +
      'Run it with: make monitoring-test',
  );
}

/** Panels whose series the load does not make: no webhook receiver is configured. */
const NOT_EXERCISED = new Set(['Webhook deliveries by outcome']);
/** The alerts the faults must bring (pending or firing). */
const EXPECTED_ALERTS = [
  'PetstoreAvailabilityFastBurn',
  'PetstoreConsumerRefused',
  'PetstoreRateLimiterFailedOver',
  'PetstoreStoreUnavailable',
  'PetstoreUnauthorizedFlood',
];

let dir = '';
let db: TestDatabase | undefined;
let server: Running | undefined;
let prometheus: ChildProcess | undefined;
let prom = '';
let pgStopped = false;

interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

async function api<T>(
  path: string,
  params: Record<string, string> = {},
): Promise<{ status: string; data: T; error?: string }> {
  const res = await fetch(`${prom}/api/v1/${path}?${new URLSearchParams(params)}`);
  return (await res.json()) as { status: string; data: T; error?: string };
}

const alerts = async () => (await api<{ alerts: Alert[] }>('alerts')).data.alerts;
const query = (expr: string) => api<{ result: unknown[] }>('query', { query: expr });

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(250);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** `n` requests of `make(i)`, `concurrency` at a time; resolves with the statuses by count. */
async function drive(n: number, make: (i: number) => Request, concurrency = 16): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const res = await fetch(make(next++));
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

/**
 * `drive` in five parts 1.2 s apart: a series born within one scrape shows no increase to
 * `rate()` (its first sample already holds the count), so a fault lasts several scrapes, as a
 * real one does.
 */
async function spread(n: number, make: (i: number) => Request, concurrency = 16): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  const part = Math.ceil(n / 5);
  for (let p = 0; p < 5; p++) {
    if (p > 0) await Bun.sleep(1_200);
    const got = await drive(Math.min(part, n - p * part), (i) => make(p * part + i), concurrency);
    for (const [status, count] of Object.entries(got))
      statuses[Number(status)] = (statuses[Number(status)] ?? 0) + count;
  }
  return statuses;
}

const withKey = (name: string, path = '/v1/pets') =>
  new Request(`${server?.url}${path}`, { headers: { authorization: `Bearer ${tokenOf(name)}` } });

/** docs/monitoring.md's prometheus.yml and the `sh` block after it. */
function prometheusBlocks(): [string, string] {
  const page = readFileSync(join(import.meta.dir, '../docs/monitoring.md'), 'utf8');
  const at = page.indexOf('<!-- tested: scripts/monitoring.test.ts checks this file with promtool');
  const [config = '', commands = ''] = [...page.slice(at).matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]);
  return [config, commands];
}

describe.skipIf(!READY)('the shipped rules and dashboard on a real Prometheus scraping the binary', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-monitoring-'));
    const day = 86_400_000;
    const sha256 = (name: string) => createHash('sha256').update(tokenOf(name)).digest('hex');
    const keys = [
      {
        name: 'steady',
        plan: 'enterprise',
        limits: { perMinute: 100_000, perDay: 1_000_000 },
        sha256: sha256('steady'),
        expiresAt: new Date(Date.now() + 30 * day).toISOString(),
      },
      { name: 'spent', plan: 'free', limits: { perMinute: 5, perDay: 1000 }, sha256: sha256('spent') },
      { name: 'trial', plan: 'free', limits: { perMinute: 3, perDay: 1000 }, enforce: false, sha256: sha256('trial') },
    ];
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys }), { mode: 0o600 });
    db = await freshDatabase(PG_SERVER, `petstore_monitoring_${process.pid}`);
    server = await spawnServer({
      args: [
        '--keys',
        join(dir, 'keys.json'),
        '--metrics',
        '--data',
        db.url,
        '--redis',
        REDIS,
        '--trust-proxy',
        '127.0.0.1',
      ],
    });
    // The shipped rules with every `for:` cut to 2 s; nothing else changes.
    const shipped = readFileSync(RULES_FILE, 'utf8');
    const rules = shipped.replace(/^( +)for: \S+$/gm, '$1for: 2s');
    expect(rules.split('\n').filter((l) => !/^ +for: /.test(l))).toEqual(
      shipped.split('\n').filter((l) => !/^ +for: /.test(l)),
    );
    writeFileSync(join(dir, 'rules.yml'), rules);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: {scrape_interval: 1s, evaluation_interval: 1s}',
        'rule_files: [rules.yml]',
        'scrape_configs:',
        '  - job_name: petstore',
        `    static_configs: [{targets: ["127.0.0.1:${server.port}"]}]`,
        '',
      ].join('\n'),
    );
    const check = spawnSync('promtool', ['check', 'config', join(dir, 'prometheus.yml')], { encoding: 'utf8' });
    expect([check.status, check.stderr]).toEqual([0, '']);
    const port = await freePort();
    prom = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--enable-feature=exemplar-storage',
        '--web.enable-lifecycle',
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    await waitFor('Prometheus to answer', async () =>
      (await fetch(`${prom}/-/ready`).catch(() => undefined))?.ok ? true : undefined,
    );
    await waitFor('the first scrape', async () => {
      const up = await query('up{job="petstore"} == 1');
      return up.data.result.length === 1 ? true : undefined;
    });
  });

  afterAll(async () => {
    prometheus?.kill('SIGTERM');
    await server?.stop();
    if (pgStopped)
      await pgCtl(PG_DIR, 'start', '-w', '-t', '60', '-l', join(PG_DIR, 'server.log'), '-o', pgStartOptions(PG_DIR));
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("docs/monitoring.md's prometheus.yml and promtool line, as written, in a folder holding the rules", () => {
    const [config, commands] = prometheusBlocks();
    const folder = mkdtempSync(join(tmpdir(), 'petstore-prometheus-doc-'));
    for (const file of ['petstore.rules.yml', 'petstore.rules.test.yml']) {
      writeFileSync(join(folder, file), readFileSync(join(import.meta.dir, '../deploy/prometheus', file)));
    }
    writeFileSync(
      join(folder, 'prometheus.yml'),
      config.replace('/etc/prometheus/petstore.rules.yml', join(folder, 'petstore.rules.yml')),
    );
    const checked = spawnSync('promtool', ['check', 'config', 'prometheus.yml'], { cwd: folder, encoding: 'utf8' });
    expect([checked.status, checked.stdout]).toEqual([
      0,
      expect.stringContaining('is valid prometheus config file syntax'),
    ]);
    const line = commands.split('\n').find((l) => l.startsWith('promtool ')) ?? '';
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', line], { cwd: folder, encoding: 'utf8' });
    expect([run.status, run.stdout]).toEqual([0, expect.stringContaining('SUCCESS')]);
    rmSync(folder, { recursive: true });
  });

  test('the names the rules and the dashboard read are what this binary serves', async () => {
    const served = exportedSeries(await (await fetch(`${server?.url}/metrics`)).text());
    served.add('up');
    const exprs = [...allRules().map((r) => r.expr), ...panelQueries().map((q) => q.expr), ...variableSelectors()];
    expect(exprs.flatMap(scrapedNames).filter((n) => !served.has(n))).toEqual([]);
  });

  test('normal traffic: no alert pending; then a spent key, a 401 flood, Redis and the store stopped bring their alerts', async () => {
    const started = Date.now();
    // Normal traffic, four rounds 2 s apart: lists, quota reads and creates with a good key, and a
    // report-only key over its limit (served all the same).
    for (let round = 0; round < 4; round++) {
      const statuses = await drive(100, (i) =>
        i % 10 === 0
          ? new Request(`${server?.url}/v1/pets`, {
              method: 'POST',
              headers: { authorization: `Bearer ${tokenOf('steady')}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name: `pet-${i}`, categoryId: 1 }),
            })
          : withKey(i % 10 === 1 ? 'trial' : 'steady', i % 3 === 0 ? '/v1/rate_limit' : '/v1/pets'),
      );
      expect(Object.keys(statuses)).toEqual(['200', '201']);
      await Bun.sleep(2_000);
    }
    // Several evaluations after the traffic: still nothing pending or firing.
    await Bun.sleep(3_000);
    expect(await alerts()).toEqual([]);
    // No 5xx yet: every query of the objectives' panels and of the errors panel has data, and
    // availability and its budget read 100%.
    const slo = [
      ...panelsOfRow('Objectives and error budget'),
      ...panels().filter((p) => p.title === 'Errors by operation'),
    ];
    expect(slo.length).toBe(7);
    const empty: string[] = [];
    for (const p of slo) {
      for (const t of p.targets ?? []) {
        const res = await query(asGrafanaSends(t.expr));
        expect([p.title, res.status]).toEqual([p.title, 'success']);
        if (res.data.result.length === 0) empty.push(`${p.title}: ${t.expr}`);
      }
    }
    expect(empty).toEqual([]);
    const value = async (expr: string) =>
      ((await query(expr)).data.result as { value: [number, string] }[]).map((r) => r.value[1]);
    expect(await value('1 - petstore:slo_errors:ratio_rate30d{slo="availability"}')).toEqual(['1']);
    expect(await value('petstore:slo_error_budget_remaining:ratio30d{slo="availability"}')).toEqual(['1']);
    expect(await value('petstore:api_errors:rate5m')).toEqual(['0']);

    // A spent key: 5 a minute, sent 200 times.
    expect(await spread(200, () => withKey('spent'), 4)).toMatchObject({ 200: 5 });
    // Bad tokens from 3,000 addresses (each within its own per-address limit): 401s.
    const flood = await spread(3_000, (i) => {
      const addr = `198.51.${Math.floor(i / 250)}.${i % 250}`;
      return new Request(`${server?.url}/v1/pets`, {
        headers: { authorization: `Bearer psk_${'x'.repeat(43)}`, 'x-forwarded-for': addr },
      });
    });
    expect(flood).toEqual({ 401: 3_000 });
    // Redis stopped: the limiter fails over to this process (--redis-fail open), requests still served.
    const redisPort = new URL(REDIS).port;
    spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', redisPort, 'shutdown', 'nosave']);
    expect(await drive(20, () => withKey('steady'), 2)).toEqual({ 200: 20 });
    // PostgreSQL stopped: every API request that needs the store is answered 503.
    expect((await pgCtl(PG_DIR, 'stop', '-m', 'fast', '-w', '-t', '60')).code).toBe(0);
    pgStopped = true;
    const down = await spread(600, () => withKey('steady'), 8);
    expect(down[503]).toBeGreaterThan(500);

    let seen: string[] = [];
    const raised = await waitFor('the alerts of the faults', async () => {
      seen = [...new Set((await alerts()).map((a) => a.labels.alertname ?? ''))].sort();
      return EXPECTED_ALERTS.every((a) => seen.includes(a)) ? seen : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}; pending or firing: ${seen.join(', ') || 'none'}`);
    });
    console.log(
      `monitoring: alerts pending or firing ${((Date.now() - started) / 1000).toFixed(0)} s after the start: ${raised.join(', ')}`,
    );
    expect(raised).toEqual(expect.arrayContaining(EXPECTED_ALERTS));
    // Nothing the load did not cause: the target is up, no key expires within 7 days, the outbox is empty.
    for (const quiet of [
      'PetstoreTargetDown',
      'PetstoreKeyExpiringSoon',
      'PetstoreWebhookOutboxGrowing',
      'PetstoreWebhookOutboxStale',
    ]) {
      expect(raised).not.toContain(quiet);
    }
  });

  test('every rule is healthy and evaluates; every panel query evaluates, and the panels about what the load did return data', async () => {
    const groups = (
      await api<{ groups: { rules: { name: string; health: string; lastError?: string; query: string }[] }[] }>('rules')
    ).data.groups;
    const rules = groups.flatMap((g) => g.rules);
    expect(rules.length).toBe(allRules().length);
    expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual(
      [],
    );
    for (const r of allRules()) {
      const res = await query(r.expr);
      expect([r.record ?? r.alert, res.status, res.error]).toEqual([r.record ?? r.alert, 'success', undefined]);
    }
    // A panel shows data when any of its queries returns some.
    const shows = new Map<string, boolean>();
    for (const { panel, expr } of [...panelQueries(), ...variableSelectors().map((expr) => ({ panel: expr, expr }))]) {
      const res = await query(asGrafanaSends(expr));
      expect([panel, expr, res.status, res.error]).toEqual([panel, expr, 'success', undefined]);
      shows.set(panel, (shows.get(panel) ?? false) || res.data.result.length > 0);
    }
    expect([...shows].filter(([panel, data]) => !data && !NOT_EXERCISED.has(panel)).map(([panel]) => panel)).toEqual(
      [],
    );
    expect(shows.size).toBeGreaterThan(25);
  });
  test("docs/monitoring.md's prometheus.yml loaded by its reload line: the shipped rules, the job petstore scraping the binary", async () => {
    // Last: it puts the page's configuration (15 s scrapes, the shipped rules' own `for:`) in place of the test's.
    const [config, commands] = prometheusBlocks();
    const rules = join(dir, 'petstore.rules.yml');
    writeFileSync(rules, readFileSync(RULES_FILE));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      config
        .replace('/etc/prometheus/petstore.rules.yml', rules)
        .replace('"10.0.0.11:9090", "10.0.0.12:9090"', `"127.0.0.1:${server?.port}"`),
    );
    const reload = commands.split('\n').find((l) => l.startsWith('curl ')) ?? '';
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', reload.replace('localhost:9090', new URL(prom).host)], {
      encoding: 'utf8',
    });
    expect([run.status, run.stdout]).toEqual([0, '']);
    const groups = (await api<{ groups: { file: string; rules: unknown[] }[] }>('rules')).data.groups;
    expect([...new Set(groups.map((g) => g.file))]).toEqual([rules]);
    expect(groups.flatMap((g) => g.rules).length).toBe(allRules().length);
    // The configuration in force (its scrape pools follow it a few seconds later).
    const loaded = YAML.parse((await api<{ yaml: string }>('status/config')).data.yaml) as {
      rule_files: string[];
      scrape_configs: { job_name: string; scrape_interval: string; static_configs: { targets: string[] }[] }[];
    };
    expect(loaded.rule_files).toEqual([rules]);
    expect(
      loaded.scrape_configs.map((c) => [c.job_name, c.scrape_interval, c.static_configs.flatMap((t) => t.targets)]),
    ).toEqual([['petstore', '15s', [`127.0.0.1:${server?.port}`]]]);
  });
});
