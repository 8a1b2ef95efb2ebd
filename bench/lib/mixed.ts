import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Round, ScenarioResult, ServerName } from './report.ts';
import type { Running } from './servers.ts';
import { LIST, request, type Scenario, SEED_PETS, startOn, startSeeded, tokenOf } from './setup.ts';
import { throwawayPostgres } from './throwaway-postgres.ts';

const token = tokenOf('bench');
const MIX = 'list=45,get=45,patch=5,place=2.5,close=2.5';
/** Seconds of each round of the place and close scenarios: each place uses a pet up. */
const WRITE_SECONDS = 2;
/**
 * Pets to have available, orders to have placed, before the first run of each scenario, by
 * backend. A round that used up what it had sends the rest of its writes as lists (counted as
 * `fallbacks`), so each later run has twice as many as the most a run used, or twice what it had
 * when it ran out (`prepared`): sized by the round's seconds and the rate the server writes at.
 */
const NEEDS: Record<string, Partial<Record<ServerName, { pets: number; orders: number }>>> = {
  mixed: { petstore: { pets: 4_000, orders: 0 }, postgres: { pets: 2_000, orders: 0 } },
  place: { petstore: { pets: 24_000, orders: 0 }, postgres: { pets: 8_000, orders: 0 } },
  close: { petstore: { pets: 0, orders: 24_000 }, postgres: { pets: 0, orders: 8_000 } },
};

/** How many to have next time, from `had` before a run and `left` after it. */
export function nextNeed(had: number, left: number): number {
  if (had === 0) return 0;
  return left === 0 ? 2 * had : Math.max(had, 2 * (had - left));
}

function mixScenario(id: string, label: string, mix: string, extra: Partial<Scenario> = {}): Scenario {
  return {
    id,
    label,
    expect: 200,
    servers: ['petstore', 'postgres'],
    data: 'mixed',
    load: { method: 'GET', path: LIST, token, addresses: 0, script: 'mixed.lua', env: { BENCH_MIX: mix } },
    metrics: true,
    ...extra,
  };
}

export const MIXED_SCENARIOS: Scenario[] = [
  mixScenario('mix-list', `GET ${LIST} (with --metrics; mixed's reference)`, 'list=100'),
  mixScenario('mixed', 'Mixed: 90% list and get, 5% PATCH, 5% place then cancel or complete', MIX, {
    prepare: prepared('mixed'),
  }),
  mixScenario('patch', 'PATCH /v1/pets/{id} with If-Match', 'patch=100', { prepare: prepared('patch') }),
  mixScenario('place', 'POST /v1/store/orders', 'place=100', {
    expect: 201,
    prepare: prepared('place'),
    seconds: WRITE_SECONDS,
  }),
  mixScenario('close', 'POST /v1/store/orders/{id}/cancel or /complete, in turns', 'close=100', {
    prepare: prepared('close'),
    seconds: WRITE_SECONDS,
  }),
];

export interface MixedFleet {
  readonly servers: Partial<Record<ServerName, Running>>;
  readonly logs: Partial<Record<ServerName, string>>;
  /** Stops the PostgreSQL server (after the products). */
  finish(): Promise<void>;
}

/** A database of its own on a throwaway PostgreSQL server; `finish` stops the server. */
export async function throwawayDatabase(): Promise<{ url: string; finish: () => Promise<void> }> {
  const { urls, finish } = await throwawayPostgres(MIXED_DATABASE);
  return { url: urls[MIXED_DATABASE] ?? '', finish };
}

const MIXED_DATABASE = 'petstore_mixed';

/**
 * The product (`cmd`) on `url` with `--metrics` and `extra`, seeded as startSeeded seeds a file.
 *
 * @example
 * const [server, log] = await startOnPostgres([binary], dir, 'mixed-pg', keysFile, url)
 */
export async function startOnPostgres(
  cmd: string[],
  dir: string,
  name: string,
  keysFile: string,
  url: string,
  extra: readonly string[] = [],
): Promise<[Running, string]> {
  const started = await startOn(cmd, dir, name, keysFile, url, ['--metrics', ...extra]);
  await createPets(started[0], SEED_PETS, 1);
  return started;
}

/** The product on SQLite and on a throwaway PostgreSQL, both seeded alike, both with `--metrics`. */
export async function startMixedFleet(dir: string, binary: string, keysFile: string): Promise<MixedFleet> {
  const { url, finish } = await throwawayDatabase();
  try {
    const [sqlite, sqliteLog] = await startSeeded([binary], dir, 'mixed-sqlite', keysFile, ['--metrics']);
    const [pg, pgLog] = await startOnPostgres([binary], dir, 'mixed-pg', keysFile, url);
    return { servers: { petstore: sqlite, postgres: pg }, logs: { petstore: sqliteLog, postgres: pgLog }, finish };
  } catch (err) {
    await finish();
    throw err;
  }
}

const json = { 'Content-Type': 'application/json' };

/** `count` pets created, `concurrency` at a time, named as startSeeded names them. */
async function createPets(server: Running, count: number, concurrency = 16): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const res = await request(`${server.url}/v1/pets`, {
        method: 'POST',
        token,
        headers: json,
        body: JSON.stringify({ name: `Pet ${i + 1}`, categoryId: 1 + (i % 5) }),
      });
      if (res.status !== 201) throw new Error(`mixed: POST /v1/pets answered ${res.status}: ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Up to `most` items of a paginated listing (`Link: rel="next"`), from `path`. */
async function listed<T>(server: Running, path: string, most: number): Promise<T[]> {
  const items: T[] = [];
  // The Link header's target is relative to the page it came with.
  let next: URL | undefined = new URL(path, server.url);
  while (next !== undefined && items.length < most) {
    const res: Response = await request(next.toString(), { token });
    if (res.status !== 200) throw new Error(`mixed: GET ${next} answered ${res.status}: ${await res.text()}`);
    items.push(...((await res.json()) as T[]));
    const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    next = link === undefined ? undefined : new URL(link, next);
  }
  return items.slice(0, most);
}

/** Available pets, `need` of them (created when too few are left), and how many there were before. */
async function availablePets(server: Running, need: number): Promise<{ ids: number[]; found: number }> {
  if (need === 0) return { ids: [], found: 0 };
  let pets = await listed<{ id: number }>(server, '/v1/pets?status=available&limit=100', need);
  const found = pets.length;
  if (pets.length < need) {
    await createPets(server, need - pets.length);
    pets = await listed<{ id: number }>(server, '/v1/pets?status=available&limit=100', need);
  }
  return { ids: pets.map((p) => p.id), found };
}

/** Orders placed and still open, `need` of them (placed on available pets when too few are), and how many there were before. */
async function placedOrders(server: Running, need: number): Promise<{ ids: string[]; found: number }> {
  if (need === 0) return { ids: [], found: 0 };
  let orders = await listed<{ id: string }>(server, '/v1/store/orders?status=placed&limit=100', need);
  const found = orders.length;
  if (orders.length < need) {
    const { ids: pets } = await availablePets(server, need - orders.length);
    let next = 0;
    const worker = async () => {
      while (next < pets.length) {
        const petId = pets[next++];
        const res = await request(`${server.url}/v1/store/orders`, {
          method: 'POST',
          token,
          headers: json,
          body: JSON.stringify({ petId }),
        });
        if (res.status !== 201) throw new Error(`mixed: placing an order answered ${res.status}: ${await res.text()}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    orders = await listed<{ id: string }>(server, '/v1/store/orders?status=placed&limit=100', need);
  }
  return { ids: orders.map((o) => o.id), found };
}

/** The ETags of pets 1 to SEED_PETS, read by `getPet`. */
async function tagsOf(server: Running): Promise<string[]> {
  const lines: string[] = [];
  for (let id = 1; id <= SEED_PETS; id++) {
    const res = await request(`${server.url}/v1/pets/${id}`, { token });
    await res.arrayBuffer();
    const tag = res.headers.get('etag');
    if (res.status !== 200 || !tag) throw new Error(`mixed: GET /v1/pets/${id} answered ${res.status}, ETag ${tag}`);
    lines.push(`tag ${id} ${tag}`);
  }
  return lines;
}

/**
 * What a run of scenario `id` works on, written to a file wrk/mixed.lua reads; what the last run
 * left tells how many the next one needs (`nextNeed`).
 */
function prepared(id: 'mixed' | 'patch' | 'place' | 'close') {
  const needs = new Map<ServerName, { pets: number; orders: number }>();
  return async (server: Running, name: ServerName, dir: string): Promise<Record<string, string>> => {
    let need = needs.get(name) ?? NEEDS[id]?.[name] ?? { pets: 0, orders: 0 };
    const last = needs.get(name);
    const tags = id === 'mixed' || id === 'patch' ? await tagsOf(server) : [];
    let pets = await availablePets(server, need.pets);
    let orders = await placedOrders(server, need.orders);
    if (last !== undefined) {
      need = { pets: nextNeed(last.pets, pets.found), orders: nextNeed(last.orders, orders.found) };
      if (need.pets > last.pets) pets = await availablePets(server, need.pets);
      if (need.orders > last.orders) orders = await placedOrders(server, need.orders);
    }
    needs.set(name, need);
    const lines = [...tags, ...pets.ids.map((pet) => `pet ${pet}`), ...orders.ids.map((order) => `order ${order}`)];
    const file = join(dir, `mix-${id}-${name}.txt`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    return { BENCH_MIX_FILE: file };
  };
}

/** What a round's `/metrics` deltas count: requests by `operation status`, and the memo's hits and misses. */
export async function countsOf(server: Running): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^petstore_http_requests_total\{operation="(\w+)",status="(\d+)"\} (\S+)$/gm)) {
    counts[`${m[1]} ${m[2]}`] = Number(m[3]);
  }
  for (const m of text.matchAll(/^petstore_answer_memo_total\{operation="(\w+)",outcome="(\w+)"\} (\S+)$/gm)) {
    counts[`memo ${m[1]} ${m[2]}`] = Number(m[3]);
  }
  return counts;
}

/** `after` less `before`, key by key, keeping the keys that moved. */
export function countsBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(after)) {
    const d = n - (before[key] ?? 0);
    if (d !== 0) out[key] = d;
  }
  return out;
}

const sumOf = (rounds: readonly Round[], pick: (key: string) => boolean) =>
  rounds.reduce((s, r) => s + Object.entries(r.counts ?? {}).reduce((t, [k, n]) => (pick(k) ? t + n : t), 0), 0);
const secondsOf = (rounds: readonly Round[]) => rounds.reduce((s, r) => s + r.durationUs / 1e6, 0);

/**
 * The memo's hits over its hits and misses in `rounds` (of `operation` only, when given), or
 * undefined when none counted.
 */
export function memoHitRate(rounds: readonly Round[], operation = ''): number | undefined {
  const prefix = operation ? `memo ${operation} ` : 'memo ';
  const hits = sumOf(rounds, (k) => k.startsWith(prefix) && k.endsWith(' hit'));
  const misses = sumOf(rounds, (k) => k.startsWith(prefix) && k.endsWith(' miss'));
  return hits + misses > 0 ? hits / (hits + misses) : undefined;
}

/** Per operation in `rounds`: requests a second over the rounds' time, and its statuses. */
export function operationsOf(
  rounds: readonly Round[],
): { operation: string; rps: number; statuses: string; hitRate: number | undefined }[] {
  const seconds = secondsOf(rounds);
  const ops = new Map<string, Record<string, number>>();
  for (const r of rounds) {
    for (const [key, n] of Object.entries(r.counts ?? {})) {
      const [operation, status] = key.split(' ') as [string, string];
      if (operation === 'memo' || operation === 'metrics') continue;
      const statuses = ops.get(operation) ?? {};
      statuses[status] = (statuses[status] ?? 0) + n;
      ops.set(operation, statuses);
    }
  }
  return [...ops.entries()].map(([operation, statuses]) => ({
    operation,
    hitRate: memoHitRate(rounds, operation),
    rps: Object.values(statuses).reduce((a, b) => a + b, 0) / seconds,
    statuses: Object.entries(statuses)
      .map(([s, n]) => `${s}×${n.toLocaleString('en-US')}`)
      .join(' '),
  }));
}

const MIXED_SERVERS: readonly [ServerName, string][] = [
  ['petstore', 'SQLite'],
  ['postgres', 'PostgreSQL'],
];

/** The Markdown of the mixed scenarios: the mix against the list, the memo, each write alone. */
export function mixedSection(scenarios: readonly ScenarioResult[]): string {
  const of = (id: string) => scenarios.find((s) => s.id === id);
  const mixed = of('mixed');
  if (!mixed) return '';
  const list = of('mix-list');
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const range = (rounds: readonly Round[]) => {
    const cpus = rounds.map((r) => r.cpuUs);
    return `${Math.min(...cpus).toFixed(1)}-${Math.max(...cpus).toFixed(1)}`;
  };
  const rows: string[] = [];
  for (const [name, backend] of MIXED_SERVERS) {
    const m = mixed.servers[name];
    const l = list?.servers[name];
    if (!m) continue;
    const hit = memoHitRate(m.rounds);
    const listHit = l ? memoHitRate(l.rounds) : undefined;
    const ratio = l ? m.median.cpuUs / l.median.cpuUs : undefined;
    const fell = m.rounds.reduce((s, r) => s + (r.fallbacks ?? 0), 0);
    rows.push(
      `| ${backend} | ${m.median.cpuUs.toFixed(1)} (${range(m.rounds)}) | ${l ? `${l.median.cpuUs.toFixed(1)} (${range(l.rounds)})` : '–'} | ${ratio === undefined ? '–' : `${ratio.toFixed(2)}x ${ratio <= 1.5 ? '✅' : '❌'}`} | ${fmt(m.median.rps)} | ${l ? fmt(l.median.rps) : '–'} | ${hit === undefined ? '–' : `${(hit * 100).toFixed(1)}%`} (list alone ${listHit === undefined ? '–' : `${(listHit * 100).toFixed(1)}%`}) | ${fell} |`,
    );
  }
  const ops: string[] = [];
  for (const [name, backend] of MIXED_SERVERS) {
    const m = mixed.servers[name];
    if (!m) continue;
    for (const o of operationsOf(m.rounds)) {
      const hit = o.hitRate === undefined ? '–' : `${(o.hitRate * 100).toFixed(1)}%`;
      ops.push(`| ${backend} | ${o.operation} | ${fmt(o.rps)} | ${hit} | ${o.statuses} |`);
    }
  }
  const writes: string[] = [];
  for (const id of ['patch', 'place', 'close']) {
    const s = of(id);
    if (!s) continue;
    for (const [name, backend] of MIXED_SERVERS) {
      const w = s.servers[name];
      if (!w) continue;
      const statuses = operationsOf(w.rounds)
        .map((o) => `${o.operation} ${o.statuses}`)
        .join('; ');
      const fell = w.rounds.reduce((t, r) => t + (r.fallbacks ?? 0), 0);
      writes.push(
        `| ${s.label} | ${backend} | ${w.median.cpuUs.toFixed(1)} (${range(w.rounds)}) | ${fmt(w.median.rps)} | ${w.median.p99Ms.toFixed(2)} | ${statuses}${fell ? `; ${fell} sent as a list (nothing left to write)` : ''} |`,
      );
    }
  }
  return [
    '| Backend | mixed: CPU µs/req (rounds) | list alone: CPU µs/req (rounds) | mixed / list (target ≤ 1.5x) | mixed req/s | list req/s | memo hit rate (list and get) | writes sent as a list |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
    '',
    'Within the mix, per operation (from `/metrics` over the measured rounds):',
    '',
    '| Backend | Operation | req/s | memo hit rate | statuses |',
    '|---|---|--:|--:|---|',
    ...ops,
    '',
    'Each write alone (medians of the rounds):',
    '',
    '| Write | Backend | CPU µs/req (rounds) | req/s | p99 ms | statuses |',
    '|---|---|--:|--:|--:|---|',
    ...writes,
    '',
  ].join('\n');
}
