/**
 * `make bench`: dist/petstore against a bare `Bun.serve` replaying its bytes (the runtime's
 * physical limit), against Hono + hono/bearer-auth + hono-rate-limiter on Bun (what a Hono team
 * would write in an afternoon) and against Express + express-rate-limit on Node (the usual
 * alternative), optionally against an earlier commit's build (BENCH_BASE), in alternating wrk
 * rounds; then random pages and pets of a million-pet file (lib/million.ts), where no memo
 * helps, against `Bun.serve` + `bun:sqlite` on the same file (sqlite-floor.ts); then the list on
 * two products whose webhook receivers answer and never answer (lib/hooks.ts); then the list
 * without a trace endpoint, exporting 1%, none but the tail's and every request (lib/traces.ts); then the product
 * as a fleet instance on PostgreSQL without Redis against the product alone on SQLite
 * (lib/fleet-reads.ts); then the list on the same binary alone and on a throwaway Redis
 * (lib/fleet.ts); then start-up, binary size and RSS under a flood of keyless clients.
 * Writes bench/results.json, bench/chart.svg and the generated part of bench/README.md.
 *
 * Knobs (environment): BENCH_SECONDS (4), BENCH_ROUNDS (4; 6 with BENCH_BASE), BENCH_WARMUP (2), BENCH_STARTS (40),
 * BENCH_BASE=<git ref> (also run that commit's build, in the same rounds),
 * BENCH_QUICK=1 (1 round of 1 s, 5 starts, a smaller flood: a smoke run of ~1 min; its report
 * goes to bench/tmp/quick/, never over the committed one),
 * BENCH_OUT=<dir> (write the report there instead of bench/),
 * BENCH_ONLY (comma-separated scenario ids, for profiling; skips the report),
 * BENCH_KEEP=1 (keep the temp dir with the product's log).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keylessCost } from './keyless.ts';
import { type BaseBuild, buildBase } from './lib/base.ts';
import { capture } from './lib/captured.ts';
import { FLEET_SCENARIO, type FleetFigures, startFleetPair } from './lib/fleet.ts';
import { FLEET_READS_SCENARIOS, startPostgresFleet } from './lib/fleet-reads.ts';
import { HOOKS_SCENARIO, type HooksFigures, startHooksFleet } from './lib/hooks.ts';
import { flood, median, startupOnce } from './lib/measure.ts';
import { millionFile } from './lib/million.ts';
import { countsBetween, countsOf, MIXED_SCENARIOS, mixedSection, startMixedFleet } from './lib/mixed.ts';
import { machine, versions } from './lib/provenance.ts';
import { QUOTA_SCENARIO, writeQuotaKeys } from './lib/quota.ts';
import {
  baseChanges,
  checkTargets,
  type Results,
  type Round,
  type ScenarioResult,
  type ServerName,
  summarise,
} from './lib/report.ts';
import { type Running, startPrinter, startProduct } from './lib/servers.ts';
import {
  LIST,
  PINNED,
  request,
  SCENARIOS,
  type Scenario,
  SEED_PETS,
  SERVER_CPU,
  startOn,
  startSeeded,
  tokenOf,
  WRK,
  writeKeys,
} from './lib/setup.ts';
import { startTracesFleet, TRACES_SCENARIO, type TracesFigures } from './lib/traces.ts';
import { startWorkersPair, WORKERS_SCENARIOS, type WorkersFigures } from './lib/workers.ts';
import { writeReport } from './lib/write.ts';
import { runWrk } from './lib/wrk.ts';

const ROOT = join(import.meta.dir, '..');
const BINARY = join(ROOT, 'dist/petstore');
const BUN = join(ROOT, 'node_modules/.bin/bun');
const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = knob('BENCH_SECONDS', QUICK ? 1 : 4);
// Against a base build, more rounds: its verdict is the median of the rounds' paired ratios.
const ROUNDS = knob('BENCH_ROUNDS', QUICK ? 1 : process.env.BENCH_BASE ? 6 : 4);
const WARMUP = knob('BENCH_WARMUP', QUICK ? 1 : 2);
const STARTS = knob('BENCH_STARTS', QUICK ? 5 : 40);
const ONLY = process.env.BENCH_ONLY?.split(',');
const BASE_REF = process.env.BENCH_BASE || undefined;
const FLOOD = QUICK ? 10_000 : 100_000;
const FLOOD_WAVES = QUICK ? 2 : 3;
/** Idle time after a flood before RSS is read, so collectable garbage is not counted as kept. */
const SETTLE_MS = 3_000;

function ensureWrk(): void {
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return;
  } catch {}
  if (process.getuid?.() !== 0) throw new Error('bench: needs wrk: run `sudo apt-get install -y wrk`');
  console.log('bench: installing wrk (apt-get)');
  execFileSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq wrk'], { stdio: 'inherit' });
}

/** Statuses in the product's request log lines written after `offset`; returns the new offset. */
async function loggedStatuses(logFile: string, offset: number): Promise<[Record<string, number>, number]> {
  // Read in chunks: a product's log over a scenario can pass the longest string the runtime makes.
  const counts: Record<string, number> = {};
  const count = (text: string) => {
    for (const m of text.matchAll(/"msg":"request".*?"status":(\d{3})/g)) {
      const status = m[1] as string;
      counts[status] = (counts[status] ?? 0) + 1;
    }
  };
  const decoder = new TextDecoder();
  let bytes = 0;
  let rest = '';
  const reader = Bun.file(logFile).slice(offset).stream().getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    const chunk = next.value;
    bytes += chunk.byteLength;
    const text = rest + decoder.decode(chunk, { stream: true });
    const cut = text.lastIndexOf('\n') + 1;
    count(text.slice(0, cut));
    rest = text.slice(cut);
  }
  count(rest + decoder.decode());
  return [counts, offset + bytes];
}

async function main(): Promise<void> {
  ensureWrk();
  statSync(BINARY); // `make bench` builds it first
  const base: BaseBuild | undefined = BASE_REF ? buildBase(BASE_REF) : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'));
  const data = join(dir, 'petstore.db');
  const { file: keysFile, entries } = writeKeys(dir);
  const productArgs = ['--keys', keysFile, '--data', data, '--trust-proxy', '127.0.0.1'];
  const started = new Date();
  console.log(`bench: temp dir ${dir}${QUICK ? ' (quick mode)' : ''}`);

  // The quota scenario right after the list it is compared with, before the 401 flood fills the
  // limiter's table (a heap of 100,000 keyless clients makes every later request dearer).
  const ordered = [
    ...SCENARIOS.flatMap((s) => (s.id === 'list' ? [s, QUOTA_SCENARIO] : [s])),
    HOOKS_SCENARIO,
    TRACES_SCENARIO,
    ...FLEET_READS_SCENARIOS,
    ...MIXED_SCENARIOS,
    FLEET_SCENARIO,
    ...WORKERS_SCENARIOS,
  ];
  const selected = ordered.filter((s) => !ONLY || ONLY.includes(s.id));
  const scenarios: ScenarioResult[] = [];
  // One set of servers at a time: those of the seeded scenarios, then those of the million pets.
  const seeded = selected.filter((s) => s.data === undefined);
  if (seeded.length > 0) {
    const fleet = await startSeededFleet(dir, keysFile, entries, base);
    scenarios.push(...(await runScenarios(fleet, seeded)));
    await stopFleet(fleet);
  }
  let hooks: HooksFigures | undefined;
  const hooked = selected.filter((s) => s.data === 'hooks');
  if (hooked.length > 0) {
    console.log('bench: two products with webhooks, one receiver answering, one never (lib/hooks.ts)');
    const fleet = await startHooksFleet(dir, [BINARY]);
    scenarios.push(...(await runScenarios(fleet, hooked)));
    hooks = await fleet.finish();
    console.log(`bench: hooks: outboxes before and after the rounds ${JSON.stringify(hooks)}`);
    await stopFleet(fleet);
  }
  let traces: TracesFigures | undefined;
  const traced = selected.filter((s) => s.data === 'traces');
  if (traced.length > 0) {
    console.log(
      'bench: traces: no endpoint, 1% exported, ratio 0 with the tail rules on, every request exported to a live OTLP receiver (lib/traces.ts)',
    );
    const fleet = await startTracesFleet(dir, [BINARY], keysFile, base?.binary);
    scenarios.push(...(await runScenarios(fleet, traced)));
    traces = await fleet.finish();
    console.log(`bench: traces: ${JSON.stringify(traces)}`);
    await stopFleet(fleet);
    fleet.close();
  }
  const onPostgres = selected.filter((s) => s.data === 'postgres');
  if (onPostgres.length > 0) {
    console.log('bench: fleet instances on PostgreSQL without Redis (lib/fleet-reads.ts)');
    const fleet = await startPostgresFleet(dir, BINARY, keysFile, base);
    try {
      scenarios.push(...(await runScenarios(fleet, onPostgres)));
      await stopFleet(fleet);
    } finally {
      await fleet.finish();
    }
  }
  const mixed = selected.filter((s) => s.data === 'mixed');
  if (mixed.length > 0) {
    console.log('bench: mixed traffic and writes alone, on SQLite and on PostgreSQL (lib/mixed.ts)');
    const fleet = await startMixedFleet(dir, BINARY, keysFile);
    try {
      scenarios.push(...(await runScenarios(fleet, mixed, dir)));
    } finally {
      // Stopped on a failure too: the products would outlive the run, on a database gone.
      await stopFleet(fleet);
      await fleet.finish();
    }
    console.log(mixedSection(scenarios));
  }
  let fleetFigures: FleetFigures | undefined;
  const paired = selected.filter((s) => s.data === 'fleet');
  if (paired.length > 0) {
    console.log('bench: the same binary alone and on a throwaway Redis (lib/fleet.ts)');
    const fleet = await startFleetPair(dir, [BINARY]);
    scenarios.push(...(await runScenarios(fleet, paired)));
    fleetFigures = await fleet.finish();
    console.log(`bench: fleet: ${JSON.stringify(fleetFigures)}`);
    await stopFleet(fleet);
    fleet.close();
  }
  let workersFigures: WorkersFigures | undefined;
  const workers = selected.filter((s) => s.data === 'workers');
  if (workers.length > 0) {
    console.log('bench: the same binary with --workers 1 and --workers 2, unpinned (lib/workers.ts)');
    const pair = await startWorkersPair(dir, [BINARY], BUN);
    scenarios.push(...(await runScenarios(pair, workers)));
    workersFigures = await pair.finish();
    console.log(`bench: workers: ${JSON.stringify(workersFigures)}`);
    await stopFleet(pair);
  }
  const million = selected.filter((s) => s.data === 'million');
  if (million.length > 0) {
    const fleet = await startMillionFleet(dir, keysFile, base);
    scenarios.push(...(await runScenarios(fleet, million)));
    await stopFleet(fleet);
  }
  if (ONLY) return partialReport(scenarios, dir);

  console.log(`bench: start-up, ${STARTS} starts`);
  const samples: number[] = [];
  for (let i = 0; i < STARTS; i++) samples.push(await startupOnce(BINARY, productArgs, tokenOf('bench')));
  const sorted = [...samples].sort((a, b) => a - b);

  console.log(`bench: RSS under ${FLOOD_WAVES} x ${FLOOD} distinct bad tokens and addresses`);
  const fresh = await startProduct([BINARY], productArgs, join(dir, 'memory.log'));
  await request(`${fresh.url}${LIST}`, { token: tokenOf('bench') }).then((r) => r.arrayBuffer());
  await Bun.sleep(500);
  const mib = (bytes: number) => bytes / 1024 / 1024;
  const idleMiB = mib(fresh.rss());
  const waves: { statuses: Record<number, number>; rssMiB: number }[] = [];
  for (let i = 0; i < FLOOD_WAVES; i++) {
    const statuses = await flood(fresh, i * FLOOD, FLOOD);
    await Bun.sleep(SETTLE_MS);
    waves.push({ statuses, rssMiB: mib(fresh.rss()) });
  }
  await fresh.stop();
  console.log('bench: memory per keyless client (bench/keyless.ts)');
  const perKeylessClient = await keylessCost(BINARY);

  const bunBytes = statSync(realpathSync(BUN)).size;
  const bytes = statSync(BINARY).size;
  const results: Results = {
    date: `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    machine: machine(),
    versions: versions(),
    settings: {
      ...(QUICK ? { mode: 'QUICK (smoke run, figures not meaningful)' } : {}),
      rounds: ROUNDS,
      seconds: SECONDS,
      warmup: WARMUP,
      pinning: PINNED ? 'server on CPU 1, wrk on CPU 0 (taskset)' : 'none (no taskset)',
      'wrk threads': WRK.threads,
      connections: WRK.connections,
      'seeded pets': SEED_PETS,
      data: 'SQLite file (WAL, synchronous=FULL) in a temp dir',
      log: 'JSON line per request to a file',
    },
    ...(base ? { base: { ref: base.ref, commit: base.commit, bytes: statSync(base.binary).size } } : {}),
    scenarios,
    startup: {
      runs: STARTS,
      medianMs: median(samples),
      minMs: sorted[0] ?? Number.NaN,
      p90Ms: sorted[Math.floor(sorted.length * 0.9)] ?? Number.NaN,
      samplesMs: samples.map((s) => Math.round(s * 100) / 100),
    },
    binary: { bytes, bunBytes, overMiB: mib(bytes - bunBytes) },
    memory: { idleMiB, perWave: FLOOD, settleMs: SETTLE_MS, waves, perKeylessClient },
    ...(hooks ? { hooks } : {}),
    ...(fleetFigures ? { fleet: fleetFigures } : {}),
    ...(traces ? { traces } : {}),
    ...(workersFigures ? { workers: workersFigures } : {}),
    targets: [],
  };
  results.targets = checkTargets(results);
  // A smoke run never overwrites the committed report.
  const out = process.env.BENCH_OUT || (QUICK ? join(import.meta.dir, 'tmp/quick') : import.meta.dir);
  mkdirSync(out, { recursive: true });
  writeReport(out, results);
  if (out !== import.meta.dir) console.log(`bench: report in ${out}/README.md`);
  for (const t of results.targets)
    console.log(`${t.met ? 'met   ' : 'MISSED'} ${t.figure}: ${t.measured} (target ${t.target})`);
  finish(dir);
}

/** The servers of a set of scenarios, and the request logs of the product builds among them. */
interface Fleet {
  readonly servers: Partial<Record<ServerName, Running>>;
  readonly logs: Partial<Record<ServerName, string>>;
}

/** The product and the base build on their own seeded files, and the peers replaying the list's bytes. */
async function startSeededFleet(
  dir: string,
  keysFile: string,
  entries: ReturnType<typeof writeKeys>['entries'],
  base: BaseBuild | undefined,
): Promise<Fleet> {
  // The product's keys add the quota scenario's key (a base build may refuse a month and costs).
  const [product, logFile] = await startSeeded([BINARY], dir, 'petstore', writeQuotaKeys(dir));
  const logs: Partial<Record<ServerName, string>> = { petstore: logFile };
  const captured = await capture(await request(`${product.url}${LIST}`, { token: tokenOf('bench') }));
  if (captured.status !== 200) throw new Error(`capture: GET ${LIST} answered ${captured.status}`);
  const responseFile = join(dir, 'response.json');
  writeFileSync(responseFile, JSON.stringify(captured));
  const peerConfig = join(dir, 'peers.json');
  const peerKeys = entries.map((e) => ({ name: e.name, sha256: e.sha256, perMinute: e.limits.perMinute }));
  writeFileSync(peerConfig, JSON.stringify({ response: captured, keys: peerKeys }));

  const servers: Partial<Record<ServerName, Running>> = {
    petstore: product,
    bare: await startPrinter('bare', [...SERVER_CPU, BUN, join(import.meta.dir, 'bare-server.ts'), responseFile]),
    floor: await startPrinter('floor', [...SERVER_CPU, BUN, join(import.meta.dir, 'hono-floor.ts'), responseFile]),
    hono: await startPrinter('hono', [...SERVER_CPU, BUN, join(import.meta.dir, 'hono-server.ts'), peerConfig]),
    express: await startPrinter('express', [
      ...SERVER_CPU,
      'node',
      join(import.meta.dir, 'express-server.mjs'),
      peerConfig,
    ]),
  };
  if (base) {
    const [running, baseLog] = await startSeeded([base.binary], dir, 'base', keysFile);
    servers.base = running;
    logs.base = baseLog;
  }
  return { servers, logs };
}

/** The product, the base build and the SQLite floor, all on the one million-pet file. */
async function startMillionFleet(dir: string, keysFile: string, base: BaseBuild | undefined): Promise<Fleet> {
  const data = await millionFile([BINARY], keysFile);
  const [product, logFile] = await startOn([BINARY], dir, 'petstore-1m', keysFile, data);
  const servers: Partial<Record<ServerName, Running>> = {
    petstore: product,
    sqlite: await startPrinter('sqlite', [...SERVER_CPU, BUN, join(import.meta.dir, 'sqlite-floor.ts'), data]),
  };
  const logs: Partial<Record<ServerName, string>> = { petstore: logFile };
  if (base) {
    try {
      const [running, baseLog] = await startOn([base.binary], dir, 'base-1m', keysFile, data);
      servers.base = running;
      logs.base = baseLog;
    } catch (err) {
      // A base with an older schema refuses the file (lib/million.ts): the rest still runs.
      console.warn(`bench: the base build cannot serve ${data}, so it sits out the million-pet scenarios:`);
      console.warn((err as Error).message);
    }
  }
  return { servers, logs };
}

async function stopFleet(fleet: Fleet): Promise<void> {
  for (const s of Object.values(fleet.servers)) await s.stop();
}

/** Each scenario in alternating wrk rounds over the fleet's servers that it names. */
async function runScenarios(
  { servers, logs }: Fleet,
  list: readonly Scenario[],
  dir = tmpdir(),
): Promise<ScenarioResult[]> {
  const scenarios: ScenarioResult[] = [];
  const offsets: Partial<Record<ServerName, number>> = {};
  /** Statuses each product build logged since the last call. */
  const logged = async () => {
    const out: Partial<Record<ServerName, Record<string, number>>> = {};
    for (const [name, file] of Object.entries(logs) as [ServerName, string][]) {
      const [counts, next] = await loggedStatuses(file, offsets[name] ?? 0);
      offsets[name] = next;
      out[name] = counts;
    }
    return out;
  };
  for (const scenario of list) {
    const names = scenario.servers.filter((name) => servers[name] !== undefined);
    const paired = names.includes('base') ? (scenario.paired ?? ['petstore']).filter((n) => names.includes(n)) : [];
    const pairs: NonNullable<ScenarioResult['pairs']> = {};
    const result: ScenarioResult = {
      ...(paired.length > 0 ? { pairs } : {}),
      id: scenario.id,
      label: scenario.label,
      expect: scenario.expect,
      servers: {},
      productStatuses: {},
      ...(servers.base ? { baseStatuses: {} } : {}),
    };
    const rounds: Partial<Record<ServerName, Round[]>> = {};
    // Unpinned scenarios (the workers') let wrk use both cores too, as their servers do.
    const wrk = scenario.unpinned ? { ...WRK, threads: 2, prefix: [] } : WRK;
    const prepare = (name: ServerName) => scenario.prepare?.(serverOf(servers, name), name, dir) ?? {};
    for (const name of names) {
      const seconds = QUICK ? WARMUP : Math.max(WARMUP, scenario.warmup?.[name] ?? 0);
      await runWrk(serverOf(servers, name).url, scenario.load, { ...wrk, seconds }, await prepare(name));
      rounds[name] = [];
    }
    await logged();
    const measure = async (name: ServerName, round: number, beside?: ServerName): Promise<Round> => {
      const server = serverOf(servers, name);
      const env = await prepare(name);
      const counted = scenario.metrics ? await countsOf(server) : undefined;
      const cpuBefore = server.cpuSeconds();
      const w = await runWrk(
        server.url,
        scenario.load,
        { ...wrk, seconds: Math.min(SECONDS, scenario.seconds ?? SECONDS) },
        env,
      );
      const cpuUs = ((server.cpuSeconds() - cpuBefore) * 1e6) / w.requests;
      const r = { ...w, cpuUs, ...(counted ? { counts: countsBetween(counted, await countsOf(server)) } : {}) };
      const who = beside ? `${name} beside ${beside}` : name;
      console.log(
        `${scenario.id.padEnd(7)} round ${round + 1} ${who.padEnd(8)} ${Math.round(r.rps).toString().padStart(7)} req/s  CPU ${r.cpuUs.toFixed(1).padStart(5)} µs/req  p50 ${(r.p50Us / 1000).toFixed(2)} ms  p99 ${(r.p99Us / 1000).toFixed(2)} ms  >=400: ${r.statusErrors}  socket errors: ${r.socketErrors}`,
      );
      return r;
    };
    for (let round = 0; round < (QUICK ? ROUNDS : Math.max(ROUNDS, scenario.rounds ?? 0)); round++) {
      // Every server alone (the figures against bare, Hono, Express), in turns. With a base, each
      // server paired with it runs in the base's block instead: the two alone, then side by side.
      for (const name of roundOrder(names, paired, round)) {
        if (name !== 'base' || paired.length === 0) {
          rounds[name]?.push(await measure(name, round));
          continue;
        }
        for (const other of paired) {
          // Both run alone just before the pair, taking turns to go first: what a server ran last
          // moves its CPU per request beside the other. On PostgreSQL's random pages a product
          // fresh from its own run came out 25-37% over a base that had only run in pairs (three
          // ad hoc runs), 2% with neither run alone first, 4.5% with both; and a create costs more
          // as its store grows. The base's runs alone are not reported.
          for (const first of round % 2 === 0 ? [other, 'base' as const] : ['base' as const, other]) {
            const alone = await measure(first, round);
            if (first !== 'base') rounds[first]?.push(alone);
          }
          const [ours, theirs] = await Promise.all([measure(other, round, 'base'), measure('base', round, other)]);
          const pair = pairs[other] ?? { ours: [], theirs: [] };
          pairs[other] = pair;
          pair.ours.push(ours);
          pair.theirs.push(theirs);
          rounds.base?.push(theirs);
        }
      }
    }

    const statuses = await logged();
    Object.assign(result.productStatuses, statuses.petstore);
    if (result.baseStatuses) Object.assign(result.baseStatuses, statuses.base);
    for (const [name, counts] of Object.entries(statuses)) {
      const unexpected = Object.keys(counts).filter((s) => s !== String(scenario.expect));
      if (unexpected.length > 0) console.warn(`bench: ${scenario.id}: ${name} answered ${JSON.stringify(counts)}`);
    }
    for (const name of names) {
      const r = rounds[name] ?? [];
      result.servers[name] = { rounds: r, median: summarise(r) };
    }
    scenarios.push(result);
  }
  return scenarios;
}

/**
 * Who runs in `round`, in turn: the servers rotated, so drift within a round is shared out; the
 * servers paired with the base run in its block, not in a turn of their own.
 */
function roundOrder(names: readonly ServerName[], paired: readonly ServerName[], round: number): ServerName[] {
  const rotated = names.map((_, i, all) => all[(i + round) % all.length] as ServerName);
  return rotated.filter((name) => !paired.includes(name));
}

function serverOf(servers: Partial<Record<ServerName, Running>>, name: ServerName): Running {
  const server = servers[name];
  if (!server) throw new Error(`bench: ${name} is not running`);
  return server;
}

/**
 * A BENCH_ONLY run's figures, with no report: each scenario's change against the base build
 * (the median of the paired rounds' ratios, and each pair's), the mixed section; with BENCH_OUT,
 * its scenarios as scenarios.json there.
 */
function partialReport(scenarios: ScenarioResult[], dir: string): void {
  for (const c of baseChanges({ scenarios })) {
    const s = scenarios.find((x) => x.id === c.id);
    const pairs = s?.pairs?.petstore;
    const ratios = pairs ? pairs.ours.map((r, i) => (r.cpuUs / (pairs.theirs[i]?.cpuUs ?? Number.NaN)).toFixed(3)) : [];
    console.log(
      `vs base ${c.id}: ${c.product.cpuUs.toFixed(1)} vs ${c.base.cpuUs.toFixed(1)} µs a request, change ${(c.change * 100).toFixed(1)}% (median of the pairs' ratios ${ratios.join(' ')}), rounds' range now / base ${c.spread}`,
    );
  }
  const out = process.env.BENCH_OUT;
  if (out) {
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'scenarios.json'), `${JSON.stringify({ machine: machine(), scenarios }, null, 2)}\n`);
    console.log(`bench: scenarios in ${out}/scenarios.json`);
  }
  finish(dir);
}

function finish(dir: string): void {
  if (process.env.BENCH_KEEP === '1') console.log(`bench: kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

await main();
