/** results.json's shape, the targets checked against it, and the Markdown report. */
import { type Group, renderChart } from './chart.ts';
import type { FleetFigures } from './fleet.ts';
import type { HooksFigures, OutboxFigures } from './hooks.ts';
import { median } from './measure.ts';
import { memoHitRate, mixedSection } from './mixed.ts';
import type { TracesFigures } from './traces.ts';
import type { WorkersFigures } from './workers.ts';
import type { WrkResult } from './wrk.ts';

export type ServerName =
  | 'petstore'
  | 'hooked'
  | 'redis'
  | 'traced1'
  | 'tracedtail'
  | 'tracedall'
  | 'base'
  | 'bare'
  | 'floor'
  | 'hono'
  | 'express'
  | 'sqlite'
  | 'lone'
  | 'postgres'
  | 'w1'
  | 'w2'
  | 'bare1'
  | 'bare2';
/** Column order of the tables and the chart. */
export const SERVERS: readonly ServerName[] = [
  'petstore',
  'hooked',
  'redis',
  'traced1',
  'tracedtail',
  'tracedall',
  'base',
  'bare',
  'floor',
  'sqlite',
  'lone',
  'postgres',
  'w1',
  'w2',
  'bare1',
  'bare2',
  'hono',
  'express',
];

/** What one more client address without a valid key costs the product (bench/keyless.ts). */
export interface KeylessCost {
  /** Keyless clients in the measured waves, after the first. */
  readonly clients: number;
  /** The slope of RSS against the keyless clients sent, over the readings from the first wave on. */
  readonly bytesPerKeylessClient: number;
  /** RSS idle, then after each wave, the first included (MiB). */
  readonly rssMiB: readonly number[];
  /** Answers of the measured waves: all 401 while the keyless clients' table is not saturated. */
  readonly statuses: Record<number, number>;
}

/** One wrk round, with the server's CPU time per request over it. */
export interface Round extends WrkResult {
  /** Server CPU (user + system) per request, in µs: what the load generator cannot hide. */
  readonly cpuUs: number;
  /** With `Scenario.metrics`: what the server's `/metrics` counted over the round (lib/mixed.ts). */
  readonly counts?: Record<string, number>;
}

export interface Summary {
  /** Medians over the rounds. */
  readonly rps: number;
  readonly cpuUs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface ScenarioResult {
  readonly id: string;
  readonly label: string;
  /** Status every response of the product must have. */
  readonly expect: number;
  readonly servers: Partial<Record<ServerName, { rounds: Round[]; median: Summary }>>;
  /** Statuses the product logged during its measured rounds. */
  readonly productStatuses: Record<string, number>;
  /** The same for the base build, when there was one. */
  readonly baseStatuses?: Record<string, number>;
  /**
   * With the base build: the rounds of each server measured beside it (`Scenario.paired`), round
   * by round, its own (`ours`) and the base's at the same time (`theirs`).
   */
  readonly pairs?: Partial<Record<ServerName, { readonly ours: Round[]; readonly theirs: Round[] }>>;
}

export interface Target {
  readonly figure: string;
  readonly measured: string;
  readonly target: string;
  readonly met: boolean;
}

export interface Results {
  readonly date: string;
  readonly machine: Record<string, string | number>;
  readonly versions: Record<string, string>;
  readonly settings: Record<string, string | number>;
  /** The earlier build run in the same rounds (BENCH_BASE), when there was one. */
  readonly base?: { ref: string; commit: string; bytes: number };
  readonly scenarios: ScenarioResult[];
  readonly startup: { runs: number; medianMs: number; minMs: number; p90Ms: number; samplesMs: number[] };
  readonly binary: { bytes: number; bunBytes: number; overMiB: number };
  readonly memory: {
    idleMiB: number;
    /** Requests per wave, each with its own bad token and client address. */
    perWave: number;
    /** Idle time after each wave before RSS is read. */
    settleMs: number;
    waves: { statuses: Record<number, number>; rssMiB: number }[];
    /** What one more client address costs (bench/keyless.ts); the README's figure. */
    perKeylessClient?: KeylessCost;
  };
  /** The outboxes of the scenario with a receiver that never answers, when it ran. */
  readonly hooks?: HooksFigures;
  /** The Redis side of the fleet scenario, when it ran. */
  readonly fleet?: FleetFigures;
  /** The trace scenario's receiver and drops, when it ran. */
  readonly traces?: TracesFigures;
  /** RSS by workers and the supervisor's CPU per request, when the workers scenarios ran. */
  readonly workers?: WorkersFigures;
  targets: Target[];
}

const MIB = 1024 * 1024;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(2)} ms`;
const pct = (n: number) => `${Math.round(n * 100)}%`;

function summary(results: Results, id: string, server: ServerName): Summary | undefined {
  return results.scenarios.find((x) => x.id === id)?.servers[server]?.median;
}

/**
 * The rounds that compare `server` with the base build in `scenario`: its runs beside the base
 * and the base's beside it when they ran side by side (`pairs`), else each one's rounds.
 */
function againstBase(
  scenario: ScenarioResult | undefined,
  server: ServerName,
): { readonly ours: readonly Round[]; readonly theirs: readonly Round[] } {
  return (
    scenario?.pairs?.[server] ?? {
      ours: scenario?.servers[server]?.rounds ?? [],
      theirs: scenario?.servers.base?.rounds ?? [],
    }
  );
}

/** The medians of `rounds`, or undefined for none. */
const mediansOf = (rounds: readonly Round[]): Summary | undefined =>
  rounds.length > 0 ? summarise(rounds) : undefined;

/** The medians of `rounds`. */
export const summarise = (rounds: readonly Round[]): Summary => ({
  rps: median(rounds.map((r) => r.rps)),
  cpuUs: median(rounds.map((r) => r.cpuUs)),
  p50Ms: median(rounds.map((r) => r.p50Us)) / 1000,
  p99Ms: median(rounds.map((r) => r.p99Us)) / 1000,
});

/**
 * `a`'s CPU per request over `b`'s in scenario `id`: the median of the rounds' ratios, each of
 * two runs at the same time (`a` beside the base, `ScenarioResult.pairs`) or back to back in
 * one round, so the host's drift between rounds (it moves a build's figure by a quarter from
 * one round to the next) cancels out. Undefined unless both ran.
 */
export function pairedRatio(
  results: Pick<Results, 'scenarios'>,
  id: string,
  a: ServerName,
  b: ServerName,
): number | undefined {
  const scenario = results.scenarios.find((x) => x.id === id);
  const { ours, theirs } =
    b === 'base'
      ? againstBase(scenario, a)
      : { ours: scenario?.servers[a]?.rounds ?? [], theirs: scenario?.servers[b]?.rounds ?? [] };
  const ratios = ours.flatMap((r, i) => {
    const t = theirs[i];
    return t && t.cpuUs > 0 ? [r.cpuUs / t.cpuUs] : [];
  });
  return ratios.length > 0 ? median(ratios) : undefined;
}

/**
 * Every request exported, against the same build without an endpoint: the span objects made
 * from the ring's records and the protobuf encoding.
 */
const TRACE_ALL_MOST = 1.6;

/** A CPU-per-request change of more than this against the base build is a regression (a bug). */
export const REGRESSION = 0.05;

/** One target, or a "not measured" line when a scenario it needs was not run. */
function target(
  figure: string,
  target: string,
  parts: (Summary | undefined)[],
  check: (...s: Summary[]) => [string, boolean],
): Target {
  const present = parts.filter((p): p is Summary => p !== undefined);
  if (present.length < parts.length) return { figure, measured: 'not measured', target, met: false };
  const [measured, met] = check(...present);
  return { figure, measured, target, met };
}

const cpu = (a: Summary, b: Summary) =>
  `${a.cpuUs.toFixed(1)} vs ${b.cpuUs.toFixed(1)} µs (${(a.cpuUs / b.cpuUs).toFixed(2)}x)`;
/** Two medians and the median of their rounds' ratios (`pairedRatio`), which decides. */
const paired = (a: Summary, b: Summary, ratio: number) =>
  `${a.cpuUs.toFixed(1)} vs ${b.cpuUs.toFixed(1)} µs; paired ${ratio.toFixed(2)}x`;

/**
 * The median over the rounds of `b`'s figure over `a`'s in the same round (`--workers 2` over
 * `--workers 1`): what the host did to one round it did to both.
 */
function roundRatio(
  results: Results,
  id: string,
  figure: 'rps' | 'cpuUs',
  [one, two]: readonly [ServerName, ServerName] = ['w1', 'w2'],
): number | undefined {
  const scenario = results.scenarios.find((x) => x.id === id);
  const a = scenario?.servers[one]?.rounds ?? [];
  const b = scenario?.servers[two]?.rounds ?? [];
  const ratios = a.flatMap((r, i) => {
    const other = b[i];
    return other ? [other[figure] / r[figure]] : [];
  });
  return ratios.length > 0 ? median(ratios) : undefined;
}

/** `--workers 2` against `--workers 1` on the list, a pet, a 401 and a POST; RSS by workers. */
function workersTargets(results: Results): Target[] {
  const out: Target[] = [];
  for (const [id, label, least] of [
    ['workers-list', '`GET /v1/pets?limit=20` (cached)', 1.3],
    ['workers-get', '`GET /v1/pets/{id}`', 1.3],
    ['workers-401', '401', 1.3],
    ['workers-post', '`POST /v1/pets` (one writer)', 1.0],
  ] as const) {
    const rps = roundRatio(results, id, 'rps');
    const cpuRatio = roundRatio(results, id, 'cpuUs');
    const measured =
      rps === undefined || cpuRatio === undefined
        ? 'not measured'
        : `${rps.toFixed(2)}x req/s, ${cpuRatio.toFixed(2)}x CPU per request (medians of paired rounds)`;
    out.push({
      figure: `${label}: \`--workers 2\` vs \`--workers 1\`, req/s and server CPU per request`,
      target: `≥ ${least.toFixed(1)}x req/s, ≤ 1.10x CPU`,
      measured,
      met: rps !== undefined && cpuRatio !== undefined && rps >= least && cpuRatio <= 1.1,
    });
  }
  const floorRps = roundRatio(results, 'workers-list', 'rps', ['bare1', 'bare2']);
  const floorCpu = roundRatio(results, 'workers-list', 'cpuUs', ['bare1', 'bare2']);
  out.push({
    figure:
      "The runtime's floor: a bare `Bun.serve` replaying the list's bytes from 2 workers vs 1, in the list's rounds",
    target: 'reported',
    measured:
      floorRps === undefined || floorCpu === undefined
        ? 'not measured'
        : `${floorRps.toFixed(2)}x req/s, ${floorCpu.toFixed(2)}x CPU per request (medians of paired rounds)`,
    met: floorRps !== undefined,
  });
  const w = results.workers;
  out.push({
    figure: "RSS with 1, 2 and 4 workers; the supervisor thread's CPU per request with 2",
    target: 'reported',
    measured: w
      ? `${w.rssMiB[1]} / ${w.rssMiB[2]} / ${w.rssMiB[4]} MiB; ${w.supervisorUsPerRequest.toFixed(2)} µs a request (${fmt(w.requests)} requests)`
      : 'not measured',
    met: w !== undefined,
  });
  return out;
}

/** The targets (bench/README.md), each with the measured figure. */
export function checkTargets(results: Results): Target[] {
  const at = (id: string, server: ServerName) => summary(results, id, server);
  /** `server`'s medians and the base's, from the rounds that compare them (`againstBase`). */
  const beside = (id: string, server: ServerName): [Summary | undefined, Summary | undefined] => {
    const { ours, theirs } = againstBase(
      results.scenarios.find((x) => x.id === id),
      server,
    );
    return [mediansOf(ours), mediansOf(theirs)];
  };
  const { startup, binary, memory } = results;
  const targets: Target[] = [];
  // The list is served from the answer memo, a pet is read, a POST waits for its fsync.
  for (const [id, label, most] of [
    ['list', '`GET /v1/pets?limit=20`', 1.6],
    ['get', '`GET /v1/pets/{id}`', 1.8],
    ['post', '`POST /v1/pets` (durable)', 2.5],
  ] as const) {
    targets.push(
      target(
        `${label}: server CPU per request vs bare \`Bun.serve\``,
        `≤ ${most}x`,
        [at(id, 'petstore'), at(id, 'bare')],
        (p, b) => [cpu(p, b), p.cpuUs <= most * b.cpuUs],
      ),
    );
    // The POST's 201 waits for the group commit's fsync, which the bare server does not do:
    // its req/s and p99 against bare are shown in the table, the target is on CPU only.
    if (id === 'post') continue;
    targets.push(
      target(`${label}: req/s vs bare`, '≥ 66%', [at(id, 'petstore'), at(id, 'bare')], (p, b) => [
        `${fmt(p.rps)} vs ${fmt(b.rps)} (${pct(p.rps / b.rps)})`,
        p.rps >= 0.66 * b.rps,
      ]),
      target(`${label}: p99 vs bare`, '≤ 2x', [at(id, 'petstore'), at(id, 'bare')], (p, b) => [
        `${ms(p.p99Ms)} vs ${ms(b.p99Ms)} (${(p.p99Ms / b.p99Ms).toFixed(2)}x)`,
        p.p99Ms <= 2 * b.p99Ms,
      ]),
    );
  }
  // A refusal never costs more than a served request: an attacker's request must be the cheapest.
  for (const [id, label, least] of [
    ['401', '401 path (bad token, many addresses)', 1],
    ['429', '429 path (exhausted key)', 1.2],
  ] as const) {
    targets.push(
      target(
        `${label} req/s vs the 200 path`,
        `≥ ${pct(least)}`,
        [at(id, 'petstore'), at('list', 'petstore')],
        (r, l) => [
          `${fmt(r.rps)} vs ${fmt(l.rps)} (${pct(r.rps / l.rps)}); CPU ${r.cpuUs.toFixed(1)} vs ${l.cpuUs.toFixed(1)} µs`,
          r.rps >= least * l.rps,
        ],
      ),
    );
  }
  targets.push(
    target(
      '`GET /v1/pets?limit=20` with a month window and costs: server CPU per request vs the same list without',
      '≤ +5%',
      [at('quota', 'petstore'), at('list', 'petstore')],
      (q, l) => [`${cpu(q, l)}`, q.cpuUs <= 1.05 * l.cpuUs],
    ),
  );
  targets.push(...workersTargets(results));
  const fleet = results.fleet;
  targets.push(
    target(
      '`GET /v1/pets?limit=20` on `--redis` (quota leases): server CPU per request vs the same binary without Redis',
      '≤ 1.15x',
      [at('fleet', 'redis'), at('fleet', 'petstore')],
      (r, p) => [
        `${cpu(r, p)}${fleet ? `; ${(fleet.scriptRuns / Math.max(1, fleet.requests)).toFixed(4)} script runs a request (${fmt(fleet.scriptRuns)} for ${fmt(fleet.requests)})` : ''}`,
        r.cpuUs <= 1.15 * p.cpuUs,
      ],
    ),
  );
  const hooked = results.hooks?.after.hooked;
  targets.push(
    target(
      '`GET /v1/pets?limit=20` while a webhook receiver never answers: p99 vs the same server whose receiver answers',
      '≤ 1.1x',
      [at('hooks', 'hooked'), at('hooks', 'petstore')],
      (h, p) => [
        `${ms(h.p99Ms)} vs ${ms(p.p99Ms)} (${(h.p99Ms / p.p99Ms).toFixed(2)}x); CPU ${cpu(h, p)}`,
        h.p99Ms <= 1.1 * p.p99Ms,
      ],
    ),
    {
      figure:
        'Outbox of the server whose receiver never answers, after the rounds: events kept vs `--webhook-outbox-max`',
      measured:
        hooked && results.hooks
          ? `${fmt(hooked.pending + hooked.failed)} of ${fmt(results.hooks.outboxMax)} (${fmt(hooked.dropped)} of ${fmt(results.hooks.events)} events dropped, ${fmt(hooked.retried)} attempts timed out)`
          : 'not measured',
      target: '≤ the bound',
      met:
        hooked !== undefined &&
        results.hooks !== undefined &&
        hooked.pending + hooked.failed <= results.hooks.outboxMax,
    },
  );
  // No endpoint against the base build, in the same rounds; each exporting product against the
  // same build without an endpoint, round by round.
  targets.push(
    target(
      '`GET /v1/pets?limit=20`, no trace endpoint (ids in the log lines, `traceresponse`, the request scope): server CPU per request vs the base build',
      '≤ +2%',
      beside('traces', 'petstore'),
      (t, b) => {
        const ratio = pairedRatio(results, 'traces', 'petstore', 'base') ?? t.cpuUs / b.cpuUs;
        return [`${paired(t, b, ratio)}; p99 ${ms(t.p99Ms)} vs ${ms(b.p99Ms)}`, ratio <= 1.02];
      },
    ),
  );
  for (const [server, label, most] of [
    ['traced1', 'exporting 1% of traces to a live OTLP receiver', 1.04],
    ['tracedtail', 'ratio 0 with the tail rules on (every request recorded, none slow or failed)', 1.04],
    ['tracedall', 'exporting every request to a live OTLP receiver', TRACE_ALL_MOST],
  ] as const) {
    const label100 = most >= 1.5 ? `≤ ${most}x` : `≤ +${Math.round((most - 1) * 100)}%`;
    targets.push(
      target(
        `\`GET /v1/pets?limit=20\`, ${label}: server CPU per request vs the same build without an endpoint`,
        label100,
        [at('traces', server), at('traces', 'petstore')],
        (t, p) => {
          const ratio = pairedRatio(results, 'traces', server, 'petstore') ?? t.cpuUs / p.cpuUs;
          return [`${paired(t, p, ratio)}; p99 ${ms(t.p99Ms)} vs ${ms(p.p99Ms)}`, ratio <= most];
        },
      ),
    );
  }
  targets.push(
    target(
      '`GET /v1/pets?limit=20` on PostgreSQL without Redis (a fleet instance): server CPU per request vs the product alone on SQLite',
      '≤ 1.15x',
      [at('fleet-reads', 'petstore'), at('fleet-reads', 'lone')],
      (p, l) => {
        const base = at('fleet-reads', 'base');
        return [`${cpu(p, l)}${base ? `; base ${(base.cpuUs / l.cpuUs).toFixed(2)}x` : ''}`, p.cpuUs <= 1.15 * l.cpuUs];
      },
    ),
  );
  for (const [server, backend] of [
    ['petstore', 'SQLite'],
    ['postgres', 'PostgreSQL'],
  ] as const) {
    const rounds = results.scenarios.find((s) => s.id === 'mixed')?.servers[server]?.rounds ?? [];
    const hit = memoHitRate(rounds);
    targets.push(
      target(
        `Mixed traffic on ${backend} (90% list and get, 5% PATCH, 5% place then cancel or complete): server CPU per request vs the list alone on the same server`,
        '≤ 1.5x',
        [at('mixed', server), at('mix-list', server)],
        (m, l) => [
          `${cpu(m, l)}; memo hit rate ${hit === undefined ? '–' : `${(hit * 100).toFixed(1)}%`}`,
          m.cpuUs <= 1.5 * l.cpuUs,
        ],
      ),
    );
  }
  for (const [id, label] of [
    ['page-1m', 'Random page of 1M pets (`GET /v1/pets?limit=20&cursor={random}`)'],
    ['get-1m', 'Random pet of 1M (`GET /v1/pets/{random id}`)'],
  ] as const) {
    const base = at(id, 'base');
    targets.push(
      target(
        `${label}: server CPU per request vs \`Bun.serve\` + \`bun:sqlite\` (the SQLite floor)`,
        '≤ 2x',
        [at(id, 'petstore'), at(id, 'sqlite')],
        (p, f) => [`${cpu(p, f)}${base ? `; base ${(base.cpuUs / f.cpuUs).toFixed(2)}x` : ''}`, p.cpuUs <= 2 * f.cpuUs],
      ),
    );
  }
  targets.push(
    target(
      '`GET /v1/pets?limit=20` req/s vs Express 5 + express-rate-limit on Node',
      '≥ 7x',
      [at('list', 'petstore'), at('list', 'express')],
      (p, e) => [
        `${fmt(p.rps)} vs ${fmt(e.rps)} (${(p.rps / e.rps).toFixed(1)}x); CPU ${cpu(p, e)}`,
        p.rps >= 7 * e.rps,
      ],
    ),
    target(
      '`GET /v1/pets?limit=20` server CPU per request vs Hono + bearer-auth + hono-rate-limiter on Bun',
      '≤ 0.5x',
      [at('list', 'petstore'), at('list', 'hono')],
      (p, h) => [cpu(p, h), p.cpuUs <= 0.5 * h.cpuUs],
    ),
    {
      figure: 'Binary size vs the bare Bun runtime',
      measured: `${(binary.bytes / MIB).toFixed(1)} MiB vs ${(binary.bunBytes / MIB).toFixed(1)} MiB (+${binary.overMiB.toFixed(1)} MiB)`,
      target: '≤ +5 MiB',
      met: binary.overMiB <= 5,
    },
    {
      figure: `Start-up to first 200 (median of ${startup.runs} starts)`,
      measured: ms(startup.medianMs),
      target: '≤ 15 ms',
      met: startup.medianMs <= 15,
    },
    {
      figure: `RSS bounded by the keyless clients' fixed table: idle, then after each ${fmt(memory.perWave)} distinct bad tokens and addresses`,
      measured: `${[memory.idleMiB, ...memory.waves.map((w) => w.rssMiB)].map((m) => m.toFixed(0)).join(' → ')} MiB`,
      target: 'last ≤ first wave + 25% (unbounded: +~150 MiB a wave)',
      met: (memory.waves.at(-1)?.rssMiB ?? Number.POSITIVE_INFINITY) <= 1.25 * (memory.waves[0]?.rssMiB ?? 0),
    },
    memory.perKeylessClient
      ? {
          // The readings: idle, after the first wave, then one per measured wave.
          figure: `RSS per keyless client (an address with a bad token): the slope of RSS over ${fmt(memory.perKeylessClient.clients)} more after a first wave, in ${memory.perKeylessClient.rssMiB.length - 2} waves (\`keyless.ts\`)`,
          measured: `${memory.perKeylessClient.bytesPerKeylessClient} bytes`,
          target: '≤ 64 bytes',
          met: memory.perKeylessClient.bytesPerKeylessClient <= 64,
        }
      : { figure: 'RSS per keyless client (`keyless.ts`)', measured: 'not measured', target: '≤ 64 bytes', met: false },
  );
  if (results.base) {
    const changes = baseChanges(results);
    const worst = changes.reduce((w, c) => (c.change > w.change ? c : w), changes[0] ?? { id: '–', change: 0 });
    targets.push({
      figure: `No scenario's server CPU per request more than ${pct(REGRESSION)} over the base build (${results.base.ref}, ${results.base.commit})`,
      measured: changes.length ? `worst: ${worst.id} ${signedPct(worst.change)}` : 'not measured',
      target: `≤ +${pct(REGRESSION)}`,
      met: changes.length > 0 && changes.every((c) => c.change <= REGRESSION),
    });
  }
  return targets;
}

const signedPct = (n: number) => `${n >= 0 ? '+' : '−'}${Math.abs(n * 100).toFixed(1)}%`;

/** Per scenario: the product's CPU per request against the base build's, as a relative change of the paired rounds (`pairedRatio`). */
export function baseChanges(
  results: Pick<Results, 'scenarios'>,
): { id: string; label: string; change: number; product: Summary; base: Summary; spread: string }[] {
  return results.scenarios.flatMap((s) => {
    // Side by side when paired: the product's rounds beside the base, not its rounds alone.
    const { ours, theirs } = againstBase(s, 'petstore');
    const product = mediansOf(ours);
    const base = mediansOf(theirs);
    const range = (rounds: readonly Round[]) => {
      const cpus = rounds.map((r) => r.cpuUs);
      return `${Math.min(...cpus).toFixed(1)}-${Math.max(...cpus).toFixed(1)}`;
    };
    return product && base
      ? [
          {
            id: s.id,
            label: s.label,
            change: (pairedRatio(results, s.id, 'petstore', 'base') ?? product.cpuUs / base.cpuUs) - 1,
            product,
            base,
            spread: `${range(ours)} / ${range(theirs)}`,
          },
        ]
      : [];
  });
}

function baseTable(results: Results): string {
  if (!results.base) return '';
  const rows = baseChanges(results).map(
    (c) =>
      `| ${c.label} | ${c.product.cpuUs.toFixed(1)} | ${c.base.cpuUs.toFixed(1)} | ${signedPct(c.change)}${c.change > REGRESSION ? ' ❌ regression' : ''} | ${c.spread} | ${fmt(c.product.rps)} vs ${fmt(c.base.rps)} (${signedPct(c.product.rps / c.base.rps - 1)}) |`,
  );
  return [
    `### Against the base build (${results.base.ref}, ${results.base.commit}, in the same rounds)`,
    '',
    `Binary: ${(results.base.bytes / MIB).toFixed(1)} MiB at base, ${(results.binary.bytes / MIB).toFixed(1)} MiB now.`,
    '',
    "The rounds' range shows the noise: a change inside it is not a finding. An A/A run (`BENCH_BASE=HEAD` on an unchanged tree) shows what this machine's noise does to the flag.",
    '',
    "| Scenario | CPU µs/req now | base | change (median of the rounds' ratios) | rounds' range now / base | req/s now vs base |",
    '|---|--:|--:|--:|--:|--:|',
    ...rows,
    '',
  ].join('\n');
}

function scenarioTable(results: Results): string {
  const rows = results.scenarios.flatMap((s) => {
    // The reads of a million pets are set against the SQLite floor: bare only replays bytes; the
    // PostgreSQL instance against the product alone on SQLite.
    const reference: ServerName = s.servers.bare ? 'bare' : s.servers.lone ? 'lone' : 'sqlite';
    const b = s.servers[reference]?.median;
    const list = s.id === 'list' ? undefined : summary(results, 'list', 'petstore');
    return SERVERS.flatMap((name) => {
      const m = s.servers[name]?.median;
      if (!m) return [];
      const vsBare =
        b && name !== reference
          ? `${(m.cpuUs / b.cpuUs).toFixed(2)}x · ${pct(m.rps / b.rps)} · ${(m.p99Ms / b.p99Ms).toFixed(2)}x`
          : '–';
      const own = name === 'base' ? summary(results, 'list', 'base') : list;
      const vsList = (name === 'petstore' || name === 'base') && own && s.expect >= 400 ? pct(m.rps / own.rps) : '–';
      const logged = name === 'petstore' ? s.productStatuses : name === 'base' ? s.baseStatuses : undefined;
      const statuses = Object.entries(logged ?? {})
        .map(([k, v]) => `${k}×${fmt(v)}`)
        .join(' ');
      return [
        `| ${s.label} | ${name} | ${fmt(m.rps)} | ${m.p50Ms.toFixed(2)} | ${m.p99Ms.toFixed(2)} | ${m.cpuUs.toFixed(1)} | ${vsBare} | ${vsList} | ${statuses} |`,
      ];
    });
  });
  return [
    '| Scenario | Server | req/s | p50 ms | p99 ms | CPU µs/req | vs bare (1M pets: vs sqlite; PostgreSQL: vs lone): CPU · req/s · p99 | req/s vs the 200 path | statuses logged |',
    '|---|---|--:|--:|--:|--:|--:|--:|---|',
    ...rows,
  ].join('\n');
}

/**
 * Where the list path's CPU goes: the runtime (bare), Hono in the product's shape (floor), and
 * the product's own code above that floor.
 */
function floorLine(results: Results): string {
  const [bare, floor, product] = (['bare', 'floor', 'petstore'] as const).map((n) => summary(results, 'list', n));
  if (!bare || !floor || !product) return '';
  const us = (n: number) => `${n.toFixed(1)} µs`;
  return [
    `Where the list path's CPU goes: bare \`Bun.serve\` ${us(bare.cpuUs)} a request; Hono in the product's shape doing none of its work ([\`hono-floor.ts\`](hono-floor.ts)) ${us(floor.cpuUs)} (${(floor.cpuUs / bare.cpuUs).toFixed(2)}x bare); the product ${us(product.cpuUs)}, so its own code costs ${us(product.cpuUs - floor.cpuUs)} a request above Hono's floor, where the 1.6x target leaves ${us(Math.max(0, 1.6 * bare.cpuUs - floor.cpuUs))}.`,
    '',
  ].join('\n');
}

/** What the outboxes of the scenario with a receiver that never answers held, before and after its rounds. */
function hooksLine(results: Results): string {
  const h = results.hooks;
  if (!h) return '';
  const state = (o: OutboxFigures | undefined) =>
    o
      ? `${fmt(o.pending)} pending, ${fmt(o.failed)} failed; ${fmt(o.delivered)} delivered, ${fmt(o.retried)} retried, ${fmt(o.dropped)} dropped`
      : 'not read';
  return [
    `Webhooks ([lib/hooks.ts](lib/hooks.ts)): ${fmt(h.events)} events recorded on each server, outbox bound ${fmt(h.outboxMax)}. As the rounds started, \`petstore\` (receiver answers) ${state(h.before.petstore)}; \`hooked\` (receiver never answers) ${state(h.before.hooked)}. After them, \`hooked\` ${state(h.after.hooked)}; its receiver was sent ${fmt(h.hanging)} attempts and answered none.`,
    '',
  ].join('\n');
}

/** What the trace scenario's receiver got, and what the exporting products dropped. */
function tracesLine(results: Results): string {
  const t = results.traces;
  if (!t) return '';
  return [
    `Traces ([lib/traces.ts](lib/traces.ts)): the receiver took ${fmt(t.exports)} exports (${(t.bytes / MIB).toFixed(1)} MiB of protobuf) over the scenario; spans dropped: \`traced1\` ${fmt(t.dropped.traced1 ?? 0)}, \`tracedtail\` ${fmt(t.dropped.tracedtail ?? 0)}, \`tracedall\` ${fmt(t.dropped.tracedall ?? 0)}.`,
    '',
  ].join('\n');
}

/** The generated part of bench/README.md: targets, all scenarios, extra figures, provenance. */
export function renderReport(results: Results): string {
  const { machine, versions, settings, startup, memory } = results;
  const targets = results.targets.map(
    (t) => `| ${t.figure} | ${t.measured} | ${t.target} | ${t.met ? '✅ met' : '❌ missed'} |`,
  );
  return [
    `Run of ${results.date} on ${machine.cpu} (${machine.cores} cores, ${machine.memoryGiB} GiB), ${machine.os}, kernel ${machine.kernel}, load average at start ${machine.loadAverageAtStart}.`,
    `Versions: ${Object.entries(versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    `Settings: ${Object.entries(settings)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
    '### Targets',
    '',
    '| Figure | Measured | Target | |',
    '|---|---|---|---|',
    ...targets,
    '',
    floorLine(results),
    '### Every scenario (medians of the rounds)',
    '',
    "The peers replay the list response's bytes for every request they let through (bare lets every one through, POSTs included; hono and express refuse the 401 and 429 scenarios themselves); only the product and the base build read the store and write a log line. The floor (list only) is Hono in the product's shape doing none of its work. On 1M pets, every request reads a random page or pet that no memo holds, and `sqlite` is `Bun.serve` + `bun:sqlite` reading the same file with one prepared statement, the reference of those rows. The PostgreSQL scenarios ([lib/fleet-reads.ts](lib/fleet-reads.ts)) run the product and the base build as fleet instances without Redis, each on its own database of 100,000 pets on one throwaway server, and `lone` is the product alone on its SQLite file.",
    '',
    scenarioTable(results),
    '',
    baseTable(results),
    ...(results.scenarios.some((s) => s.id === 'mixed')
      ? ['### Mixed traffic and each write alone ([lib/mixed.ts](lib/mixed.ts))', '', mixedSection(results.scenarios)]
      : []),
    hooksLine(results),
    tracesLine(results),
    `Start-up to first 200: median ${ms(startup.medianMs)}, fastest ${ms(startup.minMs)}, p90 ${ms(startup.p90Ms)} over ${startup.runs} starts.`,
    `RSS (read ${memory.settleMs / 1000} s after each wave): idle ${memory.idleMiB.toFixed(1)} MiB; ${memory.waves
      .map(
        (w, i) =>
          `after ${fmt((i + 1) * memory.perWave)} keyless clients ${w.rssMiB.toFixed(1)} MiB (statuses ${JSON.stringify(w.statuses)})`,
      )
      .join(
        '; ',
      )}. Addresses without a valid key share the keyless clients' table of fixed size: a 429 here means it is saturated.`,
    ...(memory.perKeylessClient
      ? [
          `Memory per keyless client ([keyless.ts](keyless.ts)): ${memory.perKeylessClient.bytesPerKeylessClient} bytes of RSS for each of ${fmt(memory.perKeylessClient.clients)} more addresses, each with a bad token (RSS ${memory.perKeylessClient.rssMiB.join(' → ')} MiB: idle, after the first wave, after each measured one).`,
        ]
      : []),
    '',
    '![Throughput and p99 latency per scenario](chart.svg)',
  ].join('\n');
}

/** Two panels, req/s and p99, one group per scenario. */
export function renderResultsChart(results: Results): string {
  const groups = (pick: (s: Summary) => number): Group[] =>
    results.scenarios.map((s) => ({
      label: s.label,
      bars: SERVERS.flatMap((name) => {
        const m = s.servers[name]?.median;
        return m ? [{ series: name, value: pick(m) }] : [];
      }),
    }));
  return renderChart(
    [
      { title: 'Throughput', unit: 'req/s', groups: groups((s) => s.rps) },
      { title: 'p99 latency', unit: 'ms', groups: groups((s) => s.p99Ms) },
      { title: 'Server CPU per request', unit: 'µs', groups: groups((s) => s.cpuUs) },
    ],
    `make bench, ${results.date}, ${results.machine.cpu}, ${results.machine.cores} cores; medians of ${results.settings.rounds} rounds`,
  );
}
