// The figures of the package README's "Several clients on one key", simulated (not part of
// any test run; a few seconds):
//   node_modules/.bin/bun clients/typescript/test/sharing-sim.ts [runs] [latency ms]
// Three clients share a key of 10 a minute and create 9, 8 and 8 pets one after another, as in
// pacing.test.ts, against the service's own app and limiter in memory (test/testing.ts), on a
// virtual clock: every timer of the process (the clients' holds and retry waits) fires in order
// of its due time without waiting, and each request and answer takes a random 0.3 ms to
// `latency` ms. Prints, per run, the 429s and the seconds the 25 calls took.
import { testApp, tokenFor } from '../../../test/testing.ts';
import { createClient, type Fetch } from '../src/index.ts';

const RUNS = Number(process.argv[2] ?? 25);
const LATENCY_MS = Number(process.argv[3] ?? 5);
const SHARES = [9, 8, 8];

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
}
let now = 0;
let seq = 0;
let timers: Timer[] = [];
Date.now = () => now;
Object.assign(globalThis, {
  setTimeout: (run: () => void, ms = 0) => {
    const timer = { at: now + Math.max(0, ms), seq: ++seq, run };
    timers.push(timer);
    return timer;
  },
  clearTimeout: (timer: Timer | undefined) => {
    timers = timers.filter((t) => t !== timer);
  },
});
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const after = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function run(index: number): Promise<{ refused: number; seconds: number }> {
  const start = Date.UTC(2026, 10, 22, 12, 0, 0) + ((index * 137) % 1_000);
  now = start;
  timers = [];
  const { app, clock } = testApp({
    start,
    keys: [{ name: 'shared', plan: 'enterprise', limits: { perMinute: 10, perDay: 1_000 } }],
  });
  const statuses: number[] = [];
  const fetch: Fetch = async (url, init) => {
    await after(0.3 + Math.random() * LATENCY_MS);
    clock.advance(now - clock.now());
    const answer = await app.request(url, init);
    const headers = new Headers(answer.headers);
    headers.set('date', new Date(now).toUTCString());
    statuses.push(answer.status);
    const body = await answer.text();
    await after(0.3 + Math.random() * LATENCY_MS);
    return new Response(body, { status: answer.status, headers });
  };
  let done = false;
  const calls = Promise.all(
    SHARES.map(async (n, c) => {
      const client = createClient({ apiKey: tokenFor('shared'), baseUrl: 'http://sim/v1', fetch });
      for (let i = 0; i < n; i++) await client.createPet({ name: `client ${c} pet ${i}`, categoryId: 1 });
    }),
  ).finally(() => {
    done = true;
  });
  while (!done) {
    for (let i = 0; i < 20 && !done; i++) await settle();
    timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = timers.shift();
    if (!next) continue;
    now = Math.max(now, next.at);
    next.run();
  }
  await calls;
  return { refused: statuses.filter((s) => s === 429).length, seconds: Math.round((now - start) / 1_000) };
}

const results = [];
for (let i = 0; i < RUNS; i++) results.push(await run(i));
console.log(results.map((r) => `${r.refused} refused in ${r.seconds} s`).join('\n'));
const refused = results.map((r) => r.refused);
console.log(
  `${RUNS} runs, latency up to ${LATENCY_MS} ms: at most ${Math.max(...refused)} refused (mean ${(refused.reduce((a, b) => a + b, 0) / RUNS).toFixed(2)}), ` +
    `${Math.min(...results.map((r) => r.seconds))}-${Math.max(...results.map((r) => r.seconds))} s`,
);
