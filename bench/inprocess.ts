/**
 * `make bench-inprocess BENCH_BASE=<ref>`: the app of this tree against `<ref>`'s, in one process,
 * through `app.fetch` (no sockets, no wrk, no log file, an in-memory store), in alternating blocks,
 * reporting the median of the per-block ratios of CPU time per request. For a change to the
 * request path when the machine is too busy for `make bench`: each pair of blocks runs back to
 * back, so a neighbour's load hits both alike, and there is no load generator to share a core
 * with. It measures the app's own code only: not Bun's HTTP server, the SQLite store or the log's
 * writes, so its percentages are larger than the same change makes in `make bench`.
 *
 * Knobs (environment): BENCH_BASE (required), BENCH_HEAD (a ref to stand for this tree: two
 * earlier commits side by side, to find which of a run of commits costs what), BENCH_ONLY
 * (list,get,401,429,post), AB_BLOCKS (40), AB_REQUESTS (3,000 a block), AB_TRACE (a ratio, 0 to 1:
 * both apps record every request into a trace ring, sampled at that ratio, with the tail rules on,
 * the ring's kept records read and dropped after each block; unset, neither records).
 */
import { existsSync } from 'node:fs';
import { createApp } from '../src/app.ts';
import { SlidingWindowLimiter } from '../src/gateway/gateway.ts';
import { parseKeys } from '../src/keys/file.ts';
import { hashToken } from '../src/keys/records.ts';
import { KeyTable } from '../src/keys/table.ts';
import { createLogger } from '../src/log.ts';
import { MemoryStore } from '../src/store/memory-store.ts';
import { buildBase } from './lib/base.ts';

type Modules = {
  createApp: typeof createApp;
  hashToken: typeof hashToken;
  parseKeys: typeof parseKeys;
  KeyTable: typeof KeyTable;
  SlidingWindowLimiter: typeof SlidingWindowLimiter;
  createLogger: typeof createLogger;
  MemoryStore: typeof MemoryStore;
};
type App = { fetch: (req: Request) => Response | Promise<Response> };

const BLOCKS = Number(process.env.AB_BLOCKS ?? 40);
const REQUESTS = Number(process.env.AB_REQUESTS ?? 3000);
const TOKEN = 'psk_inprocess-0123456789abcdefghijklmnopqrstuvwxyz';
const SPENT = 'psk_inprocess-spent-0123456789abcdefghijklmnopqrstuv';
const SCENARIOS = [
  { id: 'list', path: '/v1/pets?limit=20', token: TOKEN, status: 200 },
  { id: 'get', path: '/v1/pets/7', token: TOKEN, status: 200 },
  // A new client address for every request, as the 401 scenario of `make bench`.
  { id: '401', path: '/v1/pets?limit=20', token: 'psk_nobody', status: 401 },
  // A key whose minute is spent, and whose ban never starts: every request a 429.
  { id: '429', path: '/v1/pets?limit=20', token: SPENT, status: 429 },
  // A create (each build's store in memory grows alike, the blocks alternating).
  { id: 'post', path: '/v1/pets', token: TOKEN, status: 201, body: '{"name":"Rex","categoryId":1}' },
] as const;

/** The first of `paths` under `root` that exists: a BENCH_BASE commit may keep a module elsewhere. */
function firstOf(root: string, ...paths: string[]): string {
  const found = paths.find((path) => existsSync(`${root}/${path}`));
  if (found === undefined) throw new Error(`${root} has none of ${paths.join(', ')}`);
  return `${root}/${found}`;
}

async function modulesOf(root: string): Promise<Modules> {
  const [app, file, records, table, memory, log, store] = await Promise.all([
    import(`${root}/src/app.ts`),
    import(firstOf(root, 'src/keys/file.ts', 'src/gateway/keys/file.ts')),
    // `hashToken`: in records.ts, or in file.ts in a commit without it.
    import(firstOf(root, 'src/keys/records.ts', 'src/keys/file.ts', 'src/gateway/keys/file.ts')),
    import(firstOf(root, 'src/keys/table.ts', 'src/gateway/keys/table.ts')),
    import(firstOf(root, 'src/gateway/limiter/in-process.ts')),
    import(`${root}/src/log.ts`),
    import(firstOf(root, 'src/store/memory-store.ts', 'src/store/memory.ts')),
  ]);
  return { ...app, ...file, ...records, ...table, ...memory, ...log, ...store };
}

/** The app as `make bench` runs it, but in memory: 100 pets, one enterprise key out of reach, JSON log lines. */
async function appOf(m: Modules): Promise<App> {
  const store = new m.MemoryStore();
  for (let i = 1; i <= 100; i++) await store.create({ name: `pet ${i}`, categoryId: 1, status: 'available' });
  const sha256 = m.hashToken(TOKEN).toString('hex');
  const limits = { perMinute: 1_000_000_000, perDay: 1_000_000_000 };
  const spent = {
    name: 'spent',
    plan: 'enterprise',
    limits: { perMinute: 1, perDay: 1_000_000_000 },
    ban: { seconds: 1, threshold: 1_000_000_000 },
    sha256: m.hashToken(SPENT).toString('hex'),
  };
  const table = new m.KeyTable(
    m.parseKeys(JSON.stringify({ keys: [{ name: 'bench', plan: 'enterprise', limits, sha256 }, spent] })),
  );
  // The line is built as in production, then dropped: its write is the log file's cost, not the app's.
  const log = m.createLogger({ write: () => {} });
  const limiter = new m.SlidingWindowLimiter({});
  const app = m.createApp({
    store,
    keyTable: () => table,
    // A BENCH_BASE commit from before `keyTable` names the option `keys`.
    ...{ keys: () => table },
    limiter,
    log,
    clientAddress: (c) => c.req.header('x-forwarded-for') ?? '192.0.2.1',
  });
  // The spent key's one request a minute, so every later one is refused.
  await app.fetch(new Request('http://localhost/v1/pets', { headers: { Authorization: `Bearer ${SPENT}` } }));
  return app;
}

let sent = 0;
/** CPU µs a request over one block. */
async function block(app: App, scenario: (typeof SCENARIOS)[number]): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    // 90,000 addresses, as `make bench`: each stays under its 60 a minute, and the limiter
    // under its 100,000 subjects (past them, newcomers share one overflow quota: 429s).
    sent = (sent + 1) % 90_000;
    const address = `10.${sent >> 16}.${(sent >> 8) & 255}.${sent & 255}`;
    const headers: Record<string, string> = { Authorization: `Bearer ${scenario.token}`, 'X-Forwarded-For': address };
    const body = 'body' in scenario ? scenario.body : undefined;
    if (body) headers['Content-Type'] = 'application/json';
    const init = body ? { method: 'POST', headers, body } : { headers };
    const res = await app.fetch(new Request(`http://localhost${scenario.path}`, init));
    await res.arrayBuffer();
    if (res.status !== scenario.status) throw new Error(`${scenario.id}: ${res.status}, not ${scenario.status}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / REQUESTS;
}

/** Every request of the app at `root` recorded into a ring, as with an endpoint (`AB_TRACE`). */
async function record(root: string, ratio: number): Promise<{ drain: () => void }> {
  const [spans, ring, exporter] = await Promise.all([
    import(`${root}/src/trace/spans.ts`),
    import(`${root}/src/trace/ring.ts`),
    import(`${root}/src/trace/export.ts`),
  ]);
  const into = new ring.TraceRing();
  const { sampled } = exporter.samplingOf('parentbased_traceidratio', ratio);
  spans.useRecorder(into, undefined, sampled, { slowerThanMs: 1000, errors: true, maxPerSecond: 100 });
  return { drain: () => into.drain(() => {}) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

const ref = process.env.BENCH_BASE;
if (!ref) throw new Error('bench-inprocess: set BENCH_BASE=<ref>');
const base = buildBase(ref);
const head = process.env.BENCH_HEAD ? buildBase(process.env.BENCH_HEAD) : undefined;
const current: Modules = head
  ? await modulesOf(head.root)
  : { createApp, hashToken, parseKeys, KeyTable, SlidingWindowLimiter, createLogger, MemoryStore };
const headName = head ? `${head.ref} (${head.commit})` : 'this tree';
const only = process.env.BENCH_ONLY?.split(',');
const ratio = process.env.AB_TRACE === undefined ? undefined : Number(process.env.AB_TRACE);
const recorders =
  ratio === undefined
    ? []
    : [await record(head ? head.root : `${import.meta.dir}/..`, ratio), await record(base.root, ratio)];
const drain = () => {
  for (const r of recorders) r.drain();
};
for (const scenario of SCENARIOS.filter((s) => !only || only.includes(s.id))) {
  const apps = [await appOf(current), await appOf(await modulesOf(base.root))] as const;
  for (const app of apps) await block(app, scenario); // warm-up
  const ratios: number[] = [];
  const costs: [number[], number[]] = [[], []];
  for (let b = 0; b < BLOCKS; b++) {
    // Who goes first alternates, so a drift within the pair favours neither.
    const mineFirst = b % 2 === 0;
    const a = await block(mineFirst ? apps[0] : apps[1], scenario);
    const z = await block(mineFirst ? apps[1] : apps[0], scenario);
    drain();
    const [mine, theirs] = mineFirst ? [a, z] : [z, a];
    costs[0].push(mine);
    costs[1].push(theirs);
    ratios.push(mine / theirs);
  }
  const change = (median(ratios) - 1) * 100;
  console.log(
    `${scenario.id}: ${headName} ${median(costs[0]).toFixed(2)} µs, ${ref} (${base.commit}) ${median(costs[1]).toFixed(2)} µs a request; median of ${BLOCKS} paired ratios ${change >= 0 ? '+' : ''}${change.toFixed(1)}%`,
  );
}
