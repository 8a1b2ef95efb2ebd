import { describe, expect, test } from 'bun:test';
import { fakeClock, tokenFor } from '../../../test/testing.ts';
import { createApp } from '../../app.ts';
import type { Decision } from '../../core/decision.ts';
import { parseKeys } from '../../keys/file.ts';
import { hashToken } from '../../keys/records.ts';
import { KeyTable } from '../../keys/table.ts';
import { createLogger } from '../../log.ts';
import { MemoryStore } from '../../store/memory-store.ts';
import { FailoverLimiter, type RedisFailMode } from './failover.ts';
import { SlidingWindowLimiter } from './in-process.ts';
import type { RateLimiter, Subject, Verdict } from './limiter.ts';

const subject: Subject = {
  id: 'key:acme',
  keyless: false,
  plan: 'free',
  label: 'acme',
  limits: { perMinute: 2, perDay: 100 },
  ban: { threshold: 100, seconds: 900 },
};

/** A shared limiter that works until told it is down: admits everything, counting calls. */
function flakyPrimary() {
  const state = { down: false, calls: 0 };
  const limiter: RateLimiter = {
    async decide(): Promise<Decision> {
      state.calls++;
      if (state.down) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
      return { outcome: 'admitted', now: 0, windows: [], retryAfter: 0 };
    },
  };
  return { state, limiter };
}

function setup(mode: RedisFailMode) {
  const clock = fakeClock();
  const lines: Record<string, unknown>[] = [];
  const primary = flakyPrimary();
  const probe = { ok: true };
  const limiter = new FailoverLimiter({
    primary: primary.limiter,
    fallback: new SlidingWindowLimiter({ clock }),
    probe: async () => {
      if (!probe.ok) throw new Error('Connection is closed.');
    },
    mode,
    log: createLogger({ write: (l) => lines.push(JSON.parse(l)), now: clock.now }),
    name: 'redis://cache:6379',
    clock,
    probeIntervalMs: 3_600_000,
  });
  return { clock, lines, primary, probe, limiter };
}

describe('FailoverLimiter', () => {
  test('open: while Redis is down the local limits decide; each change is logged once', async () => {
    const { clock, lines, primary, probe, limiter } = setup('open');
    expect((await limiter.decide(subject)).outcome).toBe('admitted');
    expect(limiter.status()).toMatchObject({ backend: 'redis', ready: true, outages: 0 });

    primary.state.down = true;
    probe.ok = false;
    clock.advance(5_000);
    const local: Verdict[] = [];
    for (let i = 0; i < 3; i++) local.push(await limiter.decide(subject));
    expect(local.map((d) => d.outcome)).toEqual(['admitted', 'admitted', 'rate_limited']);
    // Requests do not wait for a Redis that is down: only the first one after it went down tried
    // it.
    expect(primary.state.calls).toBe(2);
    expect(await limiter.check()).toBe(false);
    expect(limiter.status()).toEqual({
      backend: 'local',
      ready: true,
      since: clock.now(),
      reason: 'Connection is closed.',
      outages: 1,
      localDecisions: 3,
      unavailableDecisions: 0,
    });

    primary.state.down = false;
    probe.ok = true;
    clock.advance(42_000);
    expect(await limiter.check()).toBe(true);
    expect(await limiter.decide(subject)).toMatchObject({ windows: [] }); // the primary's decision again
    expect(limiter.status()).toMatchObject({ backend: 'redis', ready: true, outages: 1, localDecisions: 3 });
    expect(lines).toEqual([
      {
        time: '2026-11-22T12:00:05.000Z',
        level: 'warn',
        msg: 'rate limiter: Redis unreachable; each instance now enforces the limits on its own',
        redis: 'redis://cache:6379',
        failMode: 'open',
        reason: 'connect ECONNREFUSED 127.0.0.1:6379',
      },
      {
        time: '2026-11-22T12:00:47.000Z',
        level: 'info',
        msg: 'rate limiter: Redis reachable again; limits are shared again',
        redis: 'redis://cache:6379',
        downSeconds: 42,
      },
    ]);
    await limiter.close();
  });

  test('closed: while Redis is down /v1 answers 503 service_unavailable, not ready', async () => {
    const { lines, primary, probe, limiter } = setup('closed');
    primary.state.down = true;
    probe.ok = false;
    const keys = new KeyTable(
      parseKeys(
        JSON.stringify({ keys: [{ name: 'acme', plan: 'free', sha256: hashToken(tokenFor('acme')).toString('hex') }] }),
      ),
    );
    const app = createApp({ store: new MemoryStore(), keyTable: () => keys, limiter, clock: fakeClock() });
    const res = await app.request('/v1/pets', { headers: { Authorization: `Bearer ${tokenFor('acme')}` } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    expect(await res.json()).toEqual({
      code: 'service_unavailable',
      message: 'Rate limits cannot be checked right now; retry shortly.',
      status: 503,
    });
    expect(limiter.status()).toMatchObject({ backend: 'none', ready: false, unavailableDecisions: 1 });
    // The limiter itself answers a verdict, never an HTTP error.
    expect(await limiter.decide(subject)).toEqual({
      outcome: 'unavailable',
      reason: 'connect ECONNREFUSED 127.0.0.1:6379',
    });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'rate limiter: Redis unreachable; answering 503 until it is back (--redis-fail closed)'],
    ]);
    probe.ok = true;
    primary.state.down = false;
    expect(await limiter.check()).toBe(true);
    expect(limiter.status()).toMatchObject({ backend: 'redis', ready: true });
    await limiter.close();
  });
});
