/**
 * `make fleet-sim`: N = 1, 2, 4, 8, 16, 64 limiters in one process, each with its own Redis
 * connection, sharing one real Redis (scripts/with-redis.sh), decide the same traffic twice:
 * with quota leases (`LeaseLimiter`) and with one script run per request (`RedisLimiter`, the
 * limiter without leases). Keys are drawn from a Zipf distribution over a mix of generous and
 * tight plans; each request goes to a random instance. Time is a fake clock that both the
 * limiters and the script read, so a run of simulated seconds takes a few real ones.
 *
 * Per N and limiter: script runs and Redis CPU (INFO commandstats, INFO cpu) per 1,000
 * requests, the request rate at which that CPU would fill one Redis core, the largest
 * admitted/limit over every 60 s and over the run (must be at most 1.0), and false refusals
 * per 1,000 requests (refused while an exact sliding window would have admitted: while the
 * fleet still had budget). Writes the table and bench/fleet-sim.svg into bench/README.md.
 *
 * Knobs: SIM_SECONDS (30, simulated), SIM_RATE (2,000 requests a simulated second).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { LeaseLimiter } from '../src/gateway/limiter/leases.ts';
import type { RateLimiter, Subject } from '../src/gateway/limiter/limiter.ts';
import { RedisLimiter } from '../src/gateway/limiter/redis.ts';
import { busiest, mulberry32 } from '../test/windows.ts';

const URL = process.env.PETSTORE_TEST_REDIS_URL ?? '';
if (!URL) throw new Error('fleet-sim: needs PETSTORE_TEST_REDIS_URL: run it with `make fleet-sim`');
const SECONDS = Number(process.env.SIM_SECONDS ?? 30);
const RATE = Number(process.env.SIM_RATE ?? 2_000);
const FLEETS = [1, 2, 4, 8, 16, 64];
const KEYS = 200;
const ZIPF_S = 1.1;
const README = join(import.meta.dir, 'README.md');
const CHART = join(import.meta.dir, 'fleet-sim.svg');

/** Every 4th key by rank is on a tight plan; the rest on a generous one. */
const PLANS = {
  tight: { perMinute: 60, perDay: 1_000 },
  generous: { perMinute: 20_000, perDay: 1_000_000 },
};

const subjects: Subject[] = Array.from({ length: KEYS }, (_, rank) => {
  const plan = rank % 4 === 3 ? 'tight' : 'generous';
  return {
    id: `key:sim-${rank}`,
    keyless: false,
    plan: 'pro',
    label: `sim-${rank}-${plan}`,
    limits: PLANS[plan],
    ban: { threshold: 0, seconds: 0 },
  };
});
/** Cumulative Zipf weights over the ranks. */
const cumulative = (() => {
  const weights = subjects.map((_, rank) => 1 / (rank + 1) ** ZIPF_S);
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((w) => {
    sum += w / total;
    return sum;
  });
})();
const pick = (r: number) => {
  const i = cumulative.findIndex((c) => r <= c);
  return i < 0 ? KEYS - 1 : i;
};

async function redisFigures(redis: Redis): Promise<{ scripts: number; cpu: number }> {
  const stats = await redis.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  const cpu = await redis.info('cpu');
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  return {
    scripts: calls('evalsha') + calls('eval'),
    cpu: seconds('used_cpu_user') + seconds('used_cpu_sys'),
  };
}

interface Row {
  n: number;
  limiter: 'leases' | 'per request';
  requests: number;
  scriptsPer1000: number;
  cpuMsPer1000: number;
  saturation: number;
  worstMinute: number;
  worstRun: number;
  falsePer1000: number;
}

async function simulate(n: number, leases: boolean, admin: Redis): Promise<Row> {
  const prefix = `petstore:sim:${n}:${leases ? 'l' : 'r'}:`;
  let now = Date.UTC(2026, 10, 22, 12, 0, 0) + 137;
  const clock = { now: () => now };
  const connections = Array.from({ length: n }, () => new Redis(URL, { maxRetriesPerRequest: 0 }));
  const instances: RateLimiter[] = connections.map((client, i) => {
    const shared = new RedisLimiter({ client, clock, prefix });
    return leases ? new LeaseLimiter({ shared, clock, holder: `sim-${i}` }) : shared;
  });
  const random = mulberry32(42);
  const logs = subjects.map((): [number, number][] => []);
  let falseRefusals = 0;
  let requests = 0;
  const before = await redisFigures(admin);
  const perMs = RATE / 1_000;
  let owed = 0;
  for (let ms = 0; ms < SECONDS * 1_000; ms++) {
    now++;
    owed += perMs;
    const batch: Promise<void>[] = [];
    for (; owed >= 1; owed--) {
      const k = pick(random());
      const subject = subjects[k] as Subject;
      const at = instances[Math.floor(random() * n)] as RateLimiter;
      const log = logs[k] as [number, number][];
      requests++;
      batch.push(
        Promise.resolve(at.decide(subject)).then((d) => {
          if (d.outcome === 'admitted') {
            log.push([now, 1]);
            return;
          }
          if (d.outcome !== 'rate_limited') return;
          // Would an exact sliding window have admitted it?
          let minute = 0;
          for (let i = log.length - 1; i >= 0 && (log[i] as [number, number])[0] > now - 60_000; i--) minute++;
          if (minute + 1 <= subject.limits.perMinute && log.length + 1 <= subject.limits.perDay) falseRefusals++;
        }),
      );
    }
    await Promise.all(batch);
    if (leases && ms % 500 === 0) await Promise.all(instances.map((i) => (i as LeaseLimiter).sweep()));
  }
  const after = await redisFigures(admin);
  await Promise.all(connections.map((c) => c.quit()));
  let worstMinute = 0;
  let worstRun = 0;
  subjects.forEach((subject, k) => {
    const log = logs[k] as [number, number][];
    worstMinute = Math.max(worstMinute, busiest(log, 60_000) / subject.limits.perMinute);
    worstRun = Math.max(worstRun, log.length / subject.limits.perDay);
  });
  const scripts = after.scripts - before.scripts;
  const cpu = after.cpu - before.cpu;
  return {
    n,
    limiter: leases ? 'leases' : 'per request',
    requests,
    scriptsPer1000: (scripts / requests) * 1_000,
    cpuMsPer1000: (cpu / requests) * 1_000_000,
    saturation: requests / cpu,
    worstMinute,
    worstRun,
    falsePer1000: (falseRefusals / requests) * 1_000,
  };
}

const fixed = (x: number, digits: number) => x.toFixed(digits);
const thousands = (x: number) => Math.round(x).toLocaleString('en-US');

function table(rows: readonly Row[]): string {
  const lines = [
    '| N | limiter | script runs / 1,000 req | Redis CPU ms / 1,000 req | one Redis core saturates at (req/s) | largest admitted/limit (60 s) | (whole run, day) | false refusals / 1,000 req |',
    '|--:|---|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.n} | ${r.limiter} | ${fixed(r.scriptsPer1000, 1)} | ${fixed(r.cpuMsPer1000, 1)} | ${thousands(r.saturation)} | ${fixed(r.worstMinute, 3)} | ${fixed(r.worstRun, 3)} | ${fixed(r.falsePer1000, 2)} |`,
    );
  }
  return lines.join('\n');
}

/** Script runs per 1,000 requests against N, both limiters, log-scaled N. */
function chart(rows: readonly Row[]): string {
  const w = 640;
  const h = 320;
  const left = 60;
  const bottom = 40;
  const top = 20;
  const max = Math.max(...rows.map((r) => r.scriptsPer1000), 1);
  const x = (n: number) => left + (Math.log2(n) / Math.log2(64)) * (w - left - 20);
  const y = (v: number) => h - bottom - (v / max) * (h - bottom - top);
  const line = (limiter: Row['limiter'], color: string) => {
    const points = rows
      .filter((r) => r.limiter === limiter)
      .map((r) => `${x(r.n).toFixed(1)},${y(r.scriptsPer1000).toFixed(1)}`);
    return `<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(' ')}"/>`;
  };
  const ticks = FLEETS.map(
    (n) => `<text x="${x(n)}" y="${h - bottom + 16}" text-anchor="middle" font-size="12">${n}</text>`,
  ).join('');
  const yTicks = [0, max / 2, max]
    .map((v) => `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end" font-size="12">${Math.round(v)}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<line x1="${left}" y1="${h - bottom}" x2="${w - 20}" y2="${h - bottom}" stroke="black"/>
<line x1="${left}" y1="${top}" x2="${left}" y2="${h - bottom}" stroke="black"/>
${ticks}${yTicks}
<text x="${(w + left) / 2}" y="${h - 6}" text-anchor="middle" font-size="12">instances (N)</text>
<text x="14" y="${top + 10}" font-size="12">script runs / 1,000 requests</text>
${line('per request', '#c0392b')}${line('leases', '#2471a3')}
<text x="${w - 200}" y="${top + 20}" font-size="12" fill="#c0392b">one script run per request</text>
<text x="${w - 200}" y="${top + 36}" font-size="12" fill="#2471a3">quota leases</text>
</svg>
`;
}

const BEGIN = '<!-- fleet-sim: begin -->';
const END = '<!-- fleet-sim: end -->';

const admin = new Redis(URL);
const rows: Row[] = [];
for (const n of FLEETS) {
  for (const leases of [false, true]) {
    const row = await simulate(n, leases, admin);
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
await admin.quit();
const section = `${BEGIN}
${SECONDS} simulated seconds at ${thousands(RATE)} requests a second, ${KEYS} keys (Zipf, s = ${ZIPF_S};
every fourth by rank on a tight plan of ${PLANS.tight.perMinute} a minute, the rest ${thousands(PLANS.generous.perMinute)} a minute), each request
to a random instance (\`make fleet-sim\`, ${new Date().toISOString().slice(0, 10)}):

${table(rows)}

![script runs per 1,000 requests against N](fleet-sim.svg)
${END}`;
const readme = readFileSync(README, 'utf8');
const start = readme.indexOf(BEGIN);
const end = readme.indexOf(END);
writeFileSync(
  README,
  start >= 0 && end > start
    ? readme.slice(0, start) + section + readme.slice(end + END.length)
    : `${readme.trimEnd()}\n\n## Fleet simulation: quota leases against a script per request\n\n${section}\n`,
);
writeFileSync(CHART, chart(rows));
console.log(table(rows));
