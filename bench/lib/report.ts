/** results.json's shape, the targets of issue 8 checked against it, and the Markdown report. */
import { type Group, renderChart } from './chart.ts';
import type { WrkResult } from './wrk.ts';

export type ServerName = 'petstore' | 'bare' | 'express';

/** One wrk round, with the server's CPU time per request over it. */
export interface Round extends WrkResult {
  /** Server CPU (user + system) per request, in µs: what the load generator cannot hide. */
  readonly cpuUs: number;
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
  };
  targets: Target[];
}

const MIB = 1024 * 1024;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(2)} ms`;
const pct = (n: number) => `${Math.round(n * 100)}%`;

function summary(results: Results, id: string, server: ServerName): Summary {
  const s = results.scenarios.find((x) => x.id === id)?.servers[server]?.median;
  if (!s) throw new Error(`no ${server} result for scenario ${id}`);
  return s;
}

/** Issue 8's targets, each with the measured figure. */
export function checkTargets(results: Results): Target[] {
  const list = summary(results, 'list', 'petstore');
  const bare = summary(results, 'list', 'bare');
  const express = summary(results, 'list', 'express');
  const limited = summary(results, '429', 'petstore');
  const unknown = summary(results, '401', 'petstore');
  const { startup, binary, memory } = results;
  return [
    {
      figure: 'Authenticated, rate-limited `GET /v1/pets?limit=20`: req/s vs bare `Bun.serve`',
      measured: `${fmt(list.rps)} vs ${fmt(bare.rps)} (${pct(list.rps / bare.rps)}); server CPU ${list.cpuUs.toFixed(1)} vs ${bare.cpuUs.toFixed(1)} µs/request`,
      target: '≥ 80%',
      met: list.rps >= 0.8 * bare.rps,
    },
    {
      figure: 'Same: p99 latency vs bare `Bun.serve`',
      measured: `${ms(list.p99Ms)} vs ${ms(bare.p99Ms)} (${(list.p99Ms / bare.p99Ms).toFixed(2)}x)`,
      target: '≤ 2x',
      met: list.p99Ms <= 2 * bare.p99Ms,
    },
    {
      figure: '429 path (exhausted key) req/s vs the 200 path',
      measured: `${fmt(limited.rps)} vs ${fmt(list.rps)} (${pct(limited.rps / list.rps)})`,
      target: '≥ 100%',
      met: limited.rps >= list.rps,
    },
    {
      figure: '401 path (bad token) req/s vs the 200 path',
      measured: `${fmt(unknown.rps)} vs ${fmt(list.rps)} (${pct(unknown.rps / list.rps)})`,
      target: '≥ 100%',
      met: unknown.rps >= list.rps,
    },
    {
      figure: '`GET /v1/pets?limit=20` req/s vs Express + express-rate-limit on Node',
      measured: `${fmt(list.rps)} vs ${fmt(express.rps)} (${(list.rps / express.rps).toFixed(1)}x)`,
      target: '≥ 5x',
      met: list.rps >= 5 * express.rps,
    },
    {
      figure: `Start-up to first 200 (median of ${startup.runs} starts)`,
      measured: ms(startup.medianMs),
      target: '< 25 ms',
      met: startup.medianMs < 25,
    },
    {
      figure: 'Binary size vs the bare Bun runtime',
      measured: `${(binary.bytes / MIB).toFixed(1)} MiB vs ${(binary.bunBytes / MIB).toFixed(1)} MiB (+${binary.overMiB.toFixed(1)} MiB)`,
      target: '≤ +5 MiB',
      met: binary.overMiB <= 5,
    },
    {
      figure: `RSS bounded by the limiter's LRU: idle, then after each ${fmt(memory.perWave)} distinct bad tokens and addresses`,
      measured: `${[memory.idleMiB, ...memory.waves.map((w) => w.rssMiB)].map((m) => m.toFixed(0)).join(' → ')} MiB`,
      target: 'last ≤ first full LRU + 25% (unbounded: +~150 MiB a wave)',
      met: (memory.waves.at(-1)?.rssMiB ?? Number.POSITIVE_INFINITY) <= 1.25 * (memory.waves[0]?.rssMiB ?? 0),
    },
  ];
}

function scenarioTable(results: Results): string {
  const rows = results.scenarios.map((s) => {
    const cell = (name: ServerName) => {
      const m = s.servers[name]?.median;
      return m ? `${fmt(m.rps)} | ${m.p99Ms.toFixed(2)} | ${m.cpuUs.toFixed(1)}` : '– | – | –';
    };
    const p = s.servers.petstore?.median;
    const b = s.servers.bare?.median;
    const e = s.servers.express?.median;
    const ratio = (x: Summary | undefined, y: Summary | undefined, f: (r: number) => string) =>
      x && y ? f(x.rps / y.rps) : '–';
    const statuses = Object.entries(s.productStatuses)
      .map(([k, v]) => `${k}×${fmt(v)}`)
      .join(' ');
    return `| ${s.label} | ${cell('petstore')} | ${cell('bare')} | ${cell('express')} | ${ratio(p, b, pct)} | ${ratio(p, e, (r) => `${r.toFixed(1)}x`)} | ${statuses} |`;
  });
  return [
    '| Scenario | petstore req/s | p99 ms | CPU µs/req | bare req/s | p99 ms | CPU µs/req | Express req/s | p99 ms | CPU µs/req | vs bare | vs Express | petstore statuses |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
    ...rows,
  ].join('\n');
}

/** The generated part of bench/README.md: targets, all scenarios, extra figures, provenance. */
export function renderReport(results: Results): string {
  const { machine, versions, settings, startup, memory } = results;
  const targets = results.targets.map(
    (t) => `| ${t.figure} | ${t.measured} | ${t.target} | ${t.met ? '✅ met' : '❌ missed'} |`,
  );
  return [
    `Run of ${results.date} on ${machine.cpu} (${machine.cores} cores, ${machine.memoryGiB} GiB), ${machine.os}, kernel ${machine.kernel}.`,
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
    '### Every scenario (medians of the rounds)',
    '',
    scenarioTable(results),
    '',
    `Start-up to first 200: median ${ms(startup.medianMs)}, fastest ${ms(startup.minMs)}, p90 ${ms(startup.p90Ms)} over ${startup.runs} starts.`,
    `RSS (read ${memory.settleMs / 1000} s after each wave): idle ${memory.idleMiB.toFixed(1)} MiB; ${memory.waves
      .map(
        (w, i) =>
          `after ${fmt((i + 1) * memory.perWave)} strangers ${w.rssMiB.toFixed(1)} MiB (statuses ${JSON.stringify(w.statuses)})`,
      )
      .join(
        '; ',
      )}. Once the limiter holds 100,000 subjects, newcomers share one overflow quota per plan, hence the 429s.`,
    '',
    '![Throughput and p99 latency per scenario](chart.svg)',
  ].join('\n');
}

/** Two panels, req/s and p99, one group per scenario. */
export function renderResultsChart(results: Results): string {
  const order: ServerName[] = ['petstore', 'bare', 'express'];
  const groups = (pick: (s: Summary) => number): Group[] =>
    results.scenarios.map((s) => ({
      label: s.label,
      bars: order.flatMap((name) => {
        const m = s.servers[name]?.median;
        return m ? [{ series: name, value: pick(m) }] : [];
      }),
    }));
  return renderChart(
    [
      { title: 'Throughput', unit: 'req/s', groups: groups((s) => s.rps) },
      { title: 'p99 latency', unit: 'ms', groups: groups((s) => s.p99Ms) },
    ],
    `make bench, ${results.date}, ${results.machine.cpu}, ${results.machine.cores} cores; medians of ${results.settings.rounds} rounds`,
  );
}
