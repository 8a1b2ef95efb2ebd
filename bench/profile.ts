/**
 * `make bench-profile`: CPU profiles of the product under wrk, one per scenario, from the source
 * (`bun --cpu-prof src/main.ts`: the compiled binary is minified, so its profile names no
 * function), with the same durable defaults, keys, seed (or the million-pet file) and pinning as `make bench`. Writes
 * bench/tmp/profile/<scenario>.cpuprofile (open it in Chrome DevTools or speedscope) and
 * <scenario>.md, a summary of self and inclusive time by function and by file (lib/cpuprofile.ts).
 *
 * Knobs (environment): BENCH_PROFILE (scenario ids, default `list,401,page-1m,get-1m`; the mixed
 * scenarios of lib/mixed.ts run on SQLite, or with BENCH_PROFILE_POSTGRES=1 on a throwaway PostgreSQL), BENCH_SECONDS (8),
 * BENCH_PROFILE_INTERVAL (sampling interval in µs, 250), BENCH_BASE (profile that commit's source
 * instead, from its build in dist/: `lib/base.ts`; written as <scenario>-<commit>.*),
 * BENCH_PROFILE_SAMPLED (a ratio, 0 to 1: export that share of traces to a sink that answers at
 * once, as the bench's trace scenario does; written as <scenario>-sampled-<ratio>.*).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBase } from './lib/base.ts';
import { parseProfile, renderSummary, summarise } from './lib/cpuprofile.ts';
import { millionFile } from './lib/million.ts';
import { MIXED_SCENARIOS, startOnPostgres, throwawayDatabase } from './lib/mixed.ts';
import { SCENARIOS, startOn, startSeeded, WRK, writeKeys } from './lib/setup.ts';
import { runWrk } from './lib/wrk.ts';

const base = process.env.BENCH_BASE ? buildBase(process.env.BENCH_BASE) : undefined;
const ROOT = base?.root ?? join(import.meta.dir, '..');
const BUN = join(ROOT, 'node_modules/.bin/bun');
const OUT = join(import.meta.dir, 'tmp/profile');
const IDS = (process.env.BENCH_PROFILE ?? 'list,401,page-1m,get-1m').split(',');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const INTERVAL = Number(process.env.BENCH_PROFILE_INTERVAL ?? 250);
const WARMUP = 2;
const SAMPLED = process.env.BENCH_PROFILE_SAMPLED;
/** The mixed scenarios on a throwaway PostgreSQL instead of SQLite. */
const ON_POSTGRES = process.env.BENCH_PROFILE_POSTGRES === '1';
/** An OTLP/HTTP sink for BENCH_PROFILE_SAMPLED: takes each export and answers at once. */
const sink = SAMPLED
  ? Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        await req.arrayBuffer();
        return new Response(new Uint8Array(0), { headers: { 'Content-Type': 'application/x-protobuf' } });
      },
    })
  : undefined;
const traceArgs = sink
  ? [
      '--otel-endpoint',
      `http://127.0.0.1:${sink.port}`,
      '--otel-sampler',
      'parentbased_traceidratio',
      '--otel-sampler-arg',
      String(SAMPLED),
    ]
  : [];

mkdirSync(OUT, { recursive: true });
for (const id of IDS) {
  const all = [...SCENARIOS, ...MIXED_SCENARIOS];
  const scenario = all.find((s) => s.id === id);
  if (!scenario) throw new Error(`bench-profile: no scenario ${id} (${all.map((s) => s.id).join(', ')})`);
  const dir = mkdtempSync(join(tmpdir(), 'petstore-profile-'));
  const pg = ON_POSTGRES && scenario.data === 'mixed' ? await throwawayDatabase() : undefined;
  const stem = `${id}${pg ? '-postgres' : ''}${base ? `-${base.commit}` : ''}${SAMPLED ? `-sampled-${SAMPLED}` : ''}`;
  const name = `${stem}.cpuprofile`;
  rmSync(join(OUT, name), { force: true });
  // The seeding POSTs are profiled too (not on the million pets, which need none): a few hundred
  // samples against tens of thousands.
  const cmd = [
    BUN,
    '--cpu-prof',
    `--cpu-prof-dir=${OUT}`,
    `--cpu-prof-name=${name}`,
    `--cpu-prof-interval=${INTERVAL}`,
    join(ROOT, 'src/main.ts'),
  ];
  const keysFile = writeKeys(dir).file;
  const [server] =
    scenario.data === 'million'
      ? await startOn(
          cmd,
          dir,
          'petstore',
          keysFile,
          await millionFile([BUN, join(ROOT, 'src/main.ts')], keysFile),
          traceArgs,
        )
      : pg
        ? await startOnPostgres(cmd, dir, 'petstore', keysFile, pg.url, traceArgs)
        : // The mixed scenarios read /metrics (the memo's hits), as in `make bench`.
          await startSeeded(cmd, dir, 'petstore', keysFile, [
            ...traceArgs,
            ...(scenario.data === 'mixed' ? ['--metrics'] : []),
          ]);
  const prepare = async () => (await scenario.prepare?.(server, pg ? 'postgres' : 'petstore', dir)) ?? {};
  await runWrk(server.url, scenario.load, { ...WRK, seconds: WARMUP }, await prepare());
  const env = await prepare();
  const cpuBefore = server.cpuSeconds();
  const w = await runWrk(server.url, scenario.load, { ...WRK, seconds: SECONDS }, env);
  const cpuUs = ((server.cpuSeconds() - cpuBefore) * 1e6) / w.requests;
  await server.stop();
  await pg?.finish();
  rmSync(dir, { recursive: true, force: true });
  const summary = summarise(parseProfile(readFileSync(join(OUT, name), 'utf8')), ROOT);
  const title = `${scenario.label}: ${Math.round(w.rps)} req/s, ${cpuUs.toFixed(1)} µs CPU a request under the profiler (${w.requests} requests, ${w.statusErrors} >= 400)`;
  const md = renderSummary(title, summary);
  writeFileSync(join(OUT, `${stem}.md`), `${md}\n`);
  console.log(`${md}\n`);
}
sink?.stop(true);
console.log(`bench-profile: profiles and summaries in ${OUT}`);
