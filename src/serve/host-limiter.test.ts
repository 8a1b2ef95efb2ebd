import { describe, expect, test } from 'bun:test';
import { fakeClock } from '../../test/testing.ts';
import { SlidingWindowLimiter, type Subject, type Verdict } from '../gateway/index.ts';
import { type DecidedMessage, type DecideMessage, LimiterOwner, RemoteLimiter } from './host-limiter.ts';

/** Workers wired to one owner, their messages copied as a MessagePort copies them. */
function host(workers: number) {
  const clock = fakeClock();
  const owner = new LimiterOwner(new SlidingWindowLimiter({ clock }));
  const remotes = Array.from({ length: workers }, () => {
    let ask: (m: DecideMessage) => void = () => {};
    const remote = new RemoteLimiter((m) => queueMicrotask(() => ask(structuredClone(m))));
    ask = owner.forWorker((m: DecidedMessage) => queueMicrotask(() => remote.answer(structuredClone(m))));
    return remote;
  });
  return { clock, owner, remotes };
}

const consumer = (perMinute: number, threshold = 0): Subject => ({
  id: 'key:acme',
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

  test("strangers' addresses are counted for the host", async () => {
    const { remotes } = host(3);
    const stranger = (): Subject => ({
      id: 'addr:203.0.113.7',
      plan: 'anonymous',
      label: '203.0.113.7',
      limits: { perMinute: 5, perDay: 1000 },
      ban: { seconds: 900, threshold: 0 },
    });
    const verdicts = await Promise.all(
      Array.from({ length: 9 }, (_, i) => remotes[i % 3]?.decide(stranger()) as Promise<Verdict>),
    );
    expect(outcomes(verdicts).filter((o) => o === 'admitted')).toHaveLength(5);
  });

  test('a subject the supervisor forgot is sent again whole', async () => {
    const clock = fakeClock();
    const owner = new LimiterOwner(new SlidingWindowLimiter({ clock }));
    let ask = owner.forWorker(() => {});
    const remote = new RemoteLimiter((m) => queueMicrotask(() => ask(structuredClone(m))));
    const answer = (m: DecidedMessage) => queueMicrotask(() => remote.answer(structuredClone(m)));
    ask = owner.forWorker(answer);
    const s = consumer(3);
    expect((await remote.decide(s)).outcome).toBe('admitted');
    // A new table of numbers on the supervisor's side: the next question by number alone is unknown there.
    ask = owner.forWorker(answer);
    const again = await remote.decide(s);
    expect(again.outcome === 'admitted' && again.windows[0]?.remaining).toBe(1);
  });
});
