// `bun test ./bench/lib`: the mixed harness's sizing, and that a write sent as a list is counted.
import { describe, expect, test } from 'bun:test';
import { nextNeed } from './mixed.ts';
import { runWrk } from './wrk.ts';

describe('nextNeed', () => {
  test('twice what a run used, never less than it had', () => {
    expect(nextNeed(24_000, 10_000)).toBe(28_000);
    expect(nextNeed(24_000, 20_000)).toBe(24_000);
  });
  test('twice what it had when a run used everything up', () => {
    expect(nextNeed(24_000, 0)).toBe(48_000);
  });
  test('none when none were needed', () => {
    expect(nextNeed(0, 0)).toBe(0);
  });
});

const hasWrk = Bun.which('wrk') !== null;

describe.skipIf(!hasWrk)('wrk/mixed.lua', () => {
  test('closes with no order to close are sent as lists and each is counted in fallbacks', async () => {
    // A server in a process of its own: a test elsewhere in the suite may replace the global Response.
    const server = Bun.spawn(
      [
        process.execPath,
        '-e',
        "const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('[]') }); console.log(s.port)",
      ],
      { stdout: 'pipe' },
    );
    try {
      const reader = server.stdout.getReader();
      const port = Number(new TextDecoder().decode((await reader.read()).value).trim());
      const load = { method: 'GET', path: '/', token: 't', addresses: 0, script: 'mixed.lua' } as const;
      const r = await runWrk(
        `http://127.0.0.1:${port}`,
        load,
        { seconds: 1, threads: 1, connections: 2 },
        { BENCH_MIX: 'close=100' },
      );
      expect(r.requests).toBeGreaterThan(0);
      // wrk counts the requests answered; it also makes one when a thread starts, and the last of
      // each connection may still be in flight.
      expect(r.fallbacks).toBeGreaterThanOrEqual(r.requests);
      expect(r.fallbacks).toBeLessThanOrEqual(r.requests + 3);
    } finally {
      server.kill();
      await server.exited;
    }
  });
});
