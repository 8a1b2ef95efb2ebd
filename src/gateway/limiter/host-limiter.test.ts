import { describe, expect, test } from 'bun:test';
import { fakeClock } from '../../../test/testing.ts';
import {
  type DecidedMessage,
  type DecideMessage,
  grantMemory,
  HostLimiter,
  packAnswers,
  packAsks,
  RemoteLimiter,
  unpackAnswers,
  unpackAsks,
} from './host-limiter.ts';
import { SlidingWindowLimiter } from './in-process.ts';
import type { Subject, Verdict } from './limiter.ts';

/**
 * A question as the supervisor receives it: packed with its turn, copied as a MessagePort copies
 * it.
 */
const crossed = (m: DecideMessage) => unpackAsks(structuredClone(packAsks([m])))[0] as DecideMessage;
/** An answer as the worker receives it. */
const answered = (m: DecidedMessage) => unpackAnswers(structuredClone(packAnswers([m])))[0] as DecidedMessage;

/** Workers wired to one host limiter, their messages copied as a MessagePort copies them. */
function host(workers: number) {
  const clock = fakeClock();
  const host = new HostLimiter(new SlidingWindowLimiter({ clock }));
  const remotes = Array.from({ length: workers }, () => {
    let ask: (m: DecideMessage) => void = () => {};
    const remote = new RemoteLimiter((m) => queueMicrotask(() => ask(crossed(m))));
    ask = host.forWorker((m: DecidedMessage) => queueMicrotask(() => remote.answer(answered(m))));
    return remote;
  });
  return { clock, host, remotes };
}

const consumer = (perMinute: number, threshold = 0): Subject => ({
  id: 'key:acme',
  keyless: false,
  plan: 'pro',
  label: 'acme',
  limits: { perMinute, perDay: 100_000 },
  ban: { seconds: 900, threshold },
});

const outcomes = (verdicts: Verdict[]) => verdicts.map((v) => v.outcome);

describe('one limiter for the host: workers ask the supervisor', () => {
  test('four workers deciding at once admit exactly the limit, none over', async () => {
    const { remotes } = host(4);
    // Each worker has its own subject object for the consumer (its own key table).
    const subjects = remotes.map(() => consumer(30));
    const verdicts = await Promise.all(
      Array.from({ length: 80 }, (_, i) => remotes[i % 4]?.decide(subjects[i % 4] as Subject) as Promise<Verdict>),
    );
    expect(outcomes(verdicts).filter((o) => o === 'admitted')).toHaveLength(30);
    expect(outcomes(verdicts).filter((o) => o === 'rate_limited')).toHaveLength(50);
  });

  test('a ban started on one worker refuses on every worker from the next request', async () => {
    const { remotes } = host(2);
    const [a, b] = remotes as [RemoteLimiter, RemoteLimiter];
    const onA = consumer(2, 2);
    const onB = consumer(2, 2);
    expect(outcomes(await Promise.all([a.decide(onA), a.decide(onA)]))).toEqual(['admitted', 'admitted']);
    expect(outcomes(await Promise.all([a.decide(onA), a.decide(onA)]))).toEqual(['rate_limited', 'key_banned']);
    const next = await b.decide(onB);
    expect(next.outcome).toBe('key_banned');
  });

  test('costs and reads of the quota (cost 0) are the same as in one event loop', async () => {
    const { remotes } = host(2);
    const [a, b] = remotes as [RemoteLimiter, RemoteLimiter];
    const s = consumer(10);
    expect((await a.decide(s, 7)).outcome).toBe('admitted');
    expect((await b.decide(consumer(10), 4)).outcome).toBe('rate_limited');
    const read = await b.decide(consumer(10), 0);
    expect(read.outcome === 'admitted' && read.windows[0]?.remaining).toBe(3);
  });

  test("keyless clients' addresses are counted for the host", async () => {
    const { remotes } = host(3);
    const keyless = (): Subject => ({
      id: 'addr:203.0.113.7',
      keyless: true,
      plan: 'anonymous',
      label: '203.0.113.7',
      limits: { perMinute: 5, perDay: 1000 },
      ban: { seconds: 900, threshold: 0 },
    });
    const verdicts = await Promise.all(
      Array.from({ length: 9 }, (_, i) => remotes[i % 3]?.decide(keyless()) as Promise<Verdict>),
    );
    expect(outcomes(verdicts).filter((o) => o === 'admitted')).toHaveLength(5);
  });

  test('a subject the supervisor forgot is sent again whole', async () => {
    const clock = fakeClock();
    const host = new HostLimiter(new SlidingWindowLimiter({ clock }));
    let ask = host.forWorker(() => {});
    const remote = new RemoteLimiter((m) => queueMicrotask(() => ask(crossed(m))));
    const answer = (m: DecidedMessage) => queueMicrotask(() => remote.answer(answered(m)));
    ask = host.forWorker(answer);
    const s = consumer(3);
    expect((await remote.decide(s)).outcome).toBe('admitted');
    // A new table of numbers on the supervisor's side: the next question by number alone is unknown
    // there.
    ask = host.forWorker(answer);
    const again = await remote.decide(s);
    expect(again.outcome === 'admitted' && again.windows[0]?.remaining).toBe(1);
  });
});

/** Workers with grant memory, wired to one host limiter; `asks` counts the questions each sent. */
function grantingHost(workers: number, limiter?: SlidingWindowLimiter, startMs = 50) {
  const clock = fakeClock(Date.UTC(2026, 10, 22, 12, 0, 0, startMs));
  const on = limiter ?? new SlidingWindowLimiter({ clock });
  const host = new HostLimiter(on, { workers, clock });
  const asks = Array.from({ length: workers }, () => 0);
  const remotes = Array.from({ length: workers }, (_, i) => {
    const grants = grantMemory();
    let ask: (m: DecideMessage) => void = () => {};
    const remote = new RemoteLimiter(
      (m) => {
        asks[i] = (asks[i] ?? 0) + 1;
        queueMicrotask(() => ask(crossed(m)));
      },
      { grants, clock },
    );
    ask = host.forWorker((m: DecidedMessage) => queueMicrotask(() => remote.answer(answered(m))), grants);
    return remote;
  });
  return { clock, host, remotes, asks, limiter: on };
}

/**
 * `count` requests on `remote`, `atOnce` at a time; each outcome also goes to `seen` as it comes.
 */
async function burst(
  remote: RemoteLimiter,
  subject: Subject,
  count: number,
  atOnce = 10,
  seen: string[] = [],
): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  const one = async () => {
    const verdict = await remote.decide(subject);
    seen.push(verdict.outcome);
    return verdict;
  };
  for (let sent = 0; sent < count; sent += atOnce) {
    verdicts.push(...(await Promise.all(Array.from({ length: Math.min(atOnce, count - sent) }, one))));
  }
  return verdicts;
}

describe('grants: a busy consumer decided on its worker', () => {
  test('far from its limits, a second of 1,000 requests costs a few questions, and the headers count every request', async () => {
    const { clock, remotes, asks } = grantingHost(2);
    const [a] = remotes as [RemoteLimiter];
    const s = consumer(100_000);
    // A first second measures the rate (no grant yet), the next is spent from grants.
    for (let i = 0; i < 10; i++) {
      await burst(a, s, 100);
      clock.advance(100);
    }
    const before = asks[0] as number;
    const verdicts = await burst(a, s, 1_000);
    expect(asks[0] as number).toBeLessThan(before + 10);
    const remaining = verdicts.map((v) => (v.outcome === 'admitted' ? v.windows[0]?.remaining : -1));
    expect(remaining.at(-1)).toBe(100_000 - 2_000);
    expect(new Set(remaining).size).toBe(1_000);
  });

  test('a grant asked for as a second starts is given for that whole second, and its unspent units go back', async () => {
    const { clock, host, remotes, asks, limiter } = grantingHost(2, undefined, 0);
    const [a] = remotes as [RemoteLimiter];
    const s = consumer(100_000);
    // Every step lands on a whole second: each second's first request asks, the rest are its
    // grant's.
    for (let i = 0; i < 3; i++) {
      await burst(a, s, 100);
      clock.advance(1_000);
      host.sweep();
    }
    const before = asks[0] as number;
    const verdicts = await burst(a, s, 1_000);
    expect(asks[0] as number).toBeLessThan(before + 10);
    expect(verdicts.filter((v) => v.outcome === 'admitted')).toHaveLength(1_000);
    clock.advance(1_000);
    host.sweep();
    const after = limiter.decide(s, 0);
    expect(after.outcome === 'admitted' && after.windows[0]?.remaining).toBe(100_000 - 1_300);
  });

  test("a second's unspent units go back when it ends, from a worker that stopped asking too", async () => {
    const { clock, host, remotes, limiter } = grantingHost(2);
    const [a] = remotes as [RemoteLimiter];
    const s = consumer(100_000);
    for (let i = 0; i < 12; i++) {
      await burst(a, s, 100);
      clock.advance(100);
    }
    const read = limiter.decide(s, 0);
    // Units are counted ahead while granted...
    expect(read.outcome === 'admitted' && read.windows[0]?.remaining).toBeLessThan(100_000 - 1_200);
    clock.advance(1_000);
    host.sweep();
    const after = limiter.decide(s, 0);
    expect(after.outcome === 'admitted' && after.windows[0]?.remaining).toBe(100_000 - 1_200);
  });

  test('four workers with grants admit exactly the limit: none over, none refused while units lie unused', async () => {
    const { clock, remotes, host, limiter } = grantingHost(4);
    const subjects = remotes.map(() => consumer(3_000, 0));
    let admitted = 0;
    let outstanding = 0;
    const seen: string[] = [];
    const refused = remotes.map(() => 0);
    // Every worker busy in steps of 100 ms until it is refused twice, as clients that give up.
    while (refused.some((n) => n < 2)) {
      const verdicts = await Promise.all(
        remotes.map((r, i) => ((refused[i] as number) < 2 ? burst(r, subjects[i] as Subject, 40, 20, seen) : [])),
      );
      verdicts.forEach((vs, i) => {
        admitted += vs.filter((v) => v.outcome === 'admitted').length;
        refused[i] = (refused[i] as number) + vs.filter((v) => v.outcome !== 'admitted').length;
      });
      const read = limiter.decide(consumer(3_000, 0), 0);
      if (read.outcome === 'admitted')
        outstanding = Math.max(outstanding, 3_000 - (read.windows[0]?.remaining ?? 0) - admitted);
      clock.advance(100);
      host.sweep();
    }
    // Units were granted ahead (so the refusals came with grants held elsewhere), and yet:
    expect(outstanding).toBeGreaterThan(100);
    expect(admitted).toBe(3_000);
    // The first refusal came once all 3,000 were admitted: none while units lay unused elsewhere.
    expect(seen.indexOf('rate_limited')).toBe(3_000);
  });

  test('a ban started on one worker refuses on a worker holding a grant from its next request', async () => {
    const { clock, remotes, limiter } = grantingHost(2);
    const [a, b] = remotes as [RemoteLimiter, RemoteLimiter];
    const s = consumer(1_000, 3);
    for (let i = 0; i < 12; i++) {
      await burst(b, s, 20);
      clock.advance(100);
    }
    // b holds units of this second...
    const read = limiter.decide(s, 0);
    expect(read.outcome === 'admitted' && read.windows[0]?.remaining).toBeLessThan(1_000 - 240);
    // ...and a spends the rest of the minute and is banned.
    const verdicts = await burst(a, consumer(1_000, 3), 1_000, 1);
    expect(verdicts.at(-1)?.outcome).toBe('key_banned');
    expect(verdicts.filter((v) => v.outcome === 'admitted')).toHaveLength(1_000 - 240);
    expect((await b.decide(s)).outcome).toBe('key_banned');
  });
});

describe('answers packed for the message', () => {
  test('every answer comes out as it went in, plain verdicts through the numbers', () => {
    const windows = [
      { name: 'minute', seconds: 60, limit: 300, remaining: 0, reset: 1_795_348_861 },
      { name: 'day', seconds: 86_400, limit: 10_000, remaining: 9_700, reset: 1_795_435_201 },
      { name: 'month', seconds: 2_592_000, limit: 200_000, remaining: 199_700, reset: 1_796_083_200 },
    ] as const;
    const answers: DecidedMessage[] = [
      { type: 'decided', id: 1, verdict: { outcome: 'admitted', now: 1_795_348_800, windows, retryAfter: 0 } },
      {
        type: 'decided',
        id: 2,
        verdict: { outcome: 'key_banned', now: 1_795_348_800, windows: windows.slice(0, 2), retryAfter: 900 },
      },
      { type: 'decided', id: 3, verdict: { outcome: 'unavailable', reason: 'Redis is down' } },
      { type: 'decided', id: 4, error: 'boom' },
      { type: 'decided', id: 5, unknown: true },
      {
        type: 'decided',
        id: 6,
        verdict: { outcome: 'rate_limited', now: 1_795_348_800, windows, retryAfter: 61 },
        grant: { slot: 3, units: 40, end: 1_795_348_801_000 },
      },
      {
        type: 'decided',
        id: 7,
        verdict: {
          outcome: 'admitted',
          now: 1_795_348_800,
          windows,
          retryAfter: 0,
          notices: [{ type: 'key.banned', until: 1 }],
        },
      },
    ];
    const packed = packAnswers(structuredClone(answers));
    expect(packed.packed).toHaveLength(2 * 5 + 5 * 5);
    const out = unpackAnswers(structuredClone(packed)).sort((x, y) => x.id - y.id);
    expect(out).toEqual(answers);
  });
});

describe('questions packed for the message', () => {
  test("every question comes out as it went in; keyless clients' subjects from their addresses", () => {
    const limits = { perMinute: 60, perDay: 1_000 };
    const ban = { seconds: 900, threshold: 60 };
    const keyless = (label: string): Subject => ({
      id: `addr:${label}`,
      keyless: true,
      plan: 'anonymous',
      label,
      limits,
      ban,
    });
    const asks: DecideMessage[] = [
      {
        type: 'decide',
        id: 1,
        ref: 1,
        subject: consumer(300),
        cost: 1,
        requestIds: ['req-1', 'a'.repeat(32), 'b'.repeat(16)],
      },
      { type: 'decide', id: 2, ref: 1, cost: 3, wanted: 250, requestIds: ['req-2', undefined, undefined] },
      {
        type: 'decide',
        id: 3,
        ref: 0,
        subject: keyless('203.0.113.7'),
        cost: 1,
        requestIds: ['req-3', undefined, undefined],
      },
      { type: 'decide', id: 4, ref: 0, subject: keyless('2001:db8:0:100::/56'), cost: 1, requestIds: undefined },
      // A keyless client of other limits goes whole.
      {
        type: 'decide',
        id: 5,
        ref: 0,
        subject: { ...keyless('198.51.100.1'), limits: { perMinute: 5, perDay: 9 } },
        cost: 1,
        requestIds: undefined,
      },
    ];
    const packed = packAsks(asks);
    expect(packed.subjects).toHaveLength(2);
    expect(unpackAsks(structuredClone(packed))).toEqual(asks);
  });
});
