import { describe, expect, test } from 'bun:test';
import { clearWorker, HostInFlight, hostSlotsMemory } from './host-in-flight.ts';

describe('in-flight slots taken for the host (--workers)', () => {
  test("a consumer's cap counts its requests on every worker", () => {
    const memory = hostSlotsMemory(3);
    const workers = [0, 1, 2].map((w) => new HostInFlight<string>(4, memory, w));
    const taken = [0, 1, 2, 0, 1, 2, 0, 1].map((w) => workers[w]?.enter('con_acme'));
    expect(taken).toEqual([true, true, true, true, false, false, false, false]);
    // Another consumer has slots of its own.
    expect(workers[1]?.enter('globex')).toBe(true);
    workers[0]?.leave('con_acme');
    expect(workers[2]?.enter('con_acme')).toBe(true);
    expect(workers[1]?.enter('con_acme')).toBe(false);
  });

  test('a worker that died gives back its slots when its column is cleared', () => {
    const memory = hostSlotsMemory(2);
    const [a, b] = [0, 1].map((w) => new HostInFlight<string>(2, memory, w));
    expect([a?.enter('con_acme'), a?.enter('con_acme'), b?.enter('con_acme')]).toEqual([true, true, false]);
    clearWorker(memory, 0);
    // The replacement starts in the same column, with nothing taken.
    const replacement = new HostInFlight<string>(2, memory, 0);
    expect([b?.enter('con_acme'), replacement.enter('con_acme'), b?.enter('con_acme')]).toEqual([true, true, false]);
  });

  test('the latest admitting decision is still kept per worker for the refusal headers', () => {
    const memory = hostSlotsMemory(2);
    const a = new HostInFlight<string>(1, memory, 0);
    expect(a.enter('con_acme')).toBe(true);
    a.remember('con_acme', 'decision 1');
    expect(a.latest('con_acme')).toBe('decision 1');
    expect(new HostInFlight<string>(1, memory, 1).enter('con_acme')).toBe(false);
  });
});
