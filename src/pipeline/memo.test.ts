import { describe, expect, test } from 'bun:test';
import type { PetSet, Reply } from '../core/reply.ts';
import { ChangeCounter, EVERY_PET } from '../store/change-counter.ts';
import type { ChangeCount } from '../store/store.ts';
import { StoreTimeoutError } from '../store/store-error.ts';
import { ReplyMemo, type StoreChanges } from './memo.ts';

const page = (n: number, reads?: PetSet): Reply => ({
  status: 200,
  body: `[${n}]`,
  type: 'application/json',
  ...(reads ? { reads } : {}),
});

/** Reads `reply` for `target` at change count `count` through the memo, as step 6.2 does. */
async function readThrough(memo: ReplyMemo, target: string, count: ChangeCount, reply: Reply): Promise<void> {
  await memo.readOrJoin(target, count, async () => reply);
}

/** A memo over a bare change counter, and a way to memoise a reply (asked twice) read now. */
function counted() {
  const changes = new ChangeCounter();
  const store: StoreChanges = {
    changeCount: () => changes.count(),
    readsUnchangedSince: (since, reads) => changes.readsUnchangedSince(since as number, reads),
  };
  const memo = new ReplyMemo(store);
  const memoise = async (target: string, reply: Reply) => {
    const since = changes.count();
    await readThrough(memo, target, since, reply);
    await readThrough(memo, target, since, reply);
  };
  const get = (target: string) => memo.get(target, changes.count())?.body;
  return { changes, memo, memoise, get };
}

describe('ReplyMemo', () => {
  test('memoises a reply from its second asking on, while nothing changes', async () => {
    const { changes, memo, get } = counted();
    await readThrough(memo, '/v1/pets', 0, page(1));
    expect(get('/v1/pets')).toBeUndefined();
    await readThrough(memo, '/v1/pets', 0, page(1));
    expect(get('/v1/pets')).toBe('[1]');
    // A reply that names nothing it read depends on every pet.
    changes.changed({ ids: [99] });
    expect(get('/v1/pets')).toBeUndefined();
    // Read again: memoised again at once, the target is known.
    await readThrough(memo, '/v1/pets', changes.count(), page(2));
    expect(get('/v1/pets')).toBe('[2]');
  });

  test("serves a pet's memoised reply through other pets' changes, not through its own", async () => {
    const { changes, memoise, get } = counted();
    await memoise('/v1/pets/7', page(7, { ids: [7] }));
    await memoise('/v1/pets/8', page(8, { ids: [8] }));
    changes.changed({ ids: [8], statuses: true });
    expect([get('/v1/pets/7'), get('/v1/pets/8')]).toEqual(['[7]', undefined]);
    changes.changed({ ids: [3], members: true });
    expect(get('/v1/pets/7')).toBe('[7]');
    changes.changed(EVERY_PET);
    expect(get('/v1/pets/7')).toBeUndefined();
  });

  test('asks the store what a memoised reply read once per change count, not at every asking', async () => {
    const changes = new ChangeCounter();
    let asked = 0;
    const memo = new ReplyMemo({
      changeCount: () => changes.count(),
      readsUnchangedSince: (since, reads) => {
        asked++;
        return changes.readsUnchangedSince(since as number, reads);
      },
    });
    await readThrough(memo, '/v1/pets/7', 0, page(7, { ids: [7] }));
    await readThrough(memo, '/v1/pets/7', 0, page(7, { ids: [7] }));
    changes.changed({ ids: [8] });
    for (let i = 0; i < 3; i++) expect(memo.get('/v1/pets/7', changes.count())?.body).toBe('[7]');
    expect(asked).toBe(1);
    // Moved on to the count it was found true at, it still sees a later change of what it read.
    changes.changed({ ids: [7] });
    expect(memo.get('/v1/pets/7', changes.count())).toBeUndefined();
    expect(asked).toBe(2);
  });

  test('serves a memoised full page through creates and other pets; the last page and a status filter as they depend', async () => {
    const { changes, memoise, get } = counted();
    await memoise('full', page(1, { ids: [1, 2, 3] }));
    await memoise('last', page(2, { ids: [4, 5], members: true }));
    await memoise('available', page(3, { ids: [1, 3], statuses: true }));
    // A change of a name elsewhere leaves all three.
    changes.changed({ ids: [9] });
    expect([get('full'), get('last'), get('available')]).toEqual(['[1]', '[2]', '[3]']);
    // A status changes elsewhere: only the filtered page can have changed.
    changes.changed({ ids: [9], statuses: true });
    expect([get('full'), get('last'), get('available')]).toEqual(['[1]', '[2]', undefined]);
    // A pet is created: the last page may show it.
    changes.changed({ ids: [10], members: true });
    expect([get('full'), get('last')]).toEqual(['[1]', undefined]);
    // A pet the full page shows changes.
    changes.changed({ ids: [2] });
    expect(get('full')).toBeUndefined();
  });

  test('never serves a reply read before a change that ends after the read began', async () => {
    const { changes, memo, get } = counted();
    const since = changes.count();
    await readThrough(memo, '/v1/pets/7', since, page(7, { ids: [7] }));
    // A change of pet 7 counted while the second read ran: that read may have seen the old pet.
    changes.changed({ ids: [7] });
    await readThrough(memo, '/v1/pets/7', since, page(7, { ids: [7] }));
    expect(get('/v1/pets/7')).toBeUndefined();
  });

  test('memoises nothing for a store that cannot tell its change count', async () => {
    const { memo } = counted();
    await readThrough(memo, '/v1/pets', undefined, page(1));
    await readThrough(memo, '/v1/pets', undefined, page(1));
    expect(memo.get('/v1/pets', undefined)).toBeUndefined();
  });

  test('holds at most its bytes of bodies, the least recently used out first', async () => {
    const memo = new ReplyMemo({ changeCount: () => 0, readsUnchangedSince: () => true }, 10);
    for (const target of ['a', 'b', 'c']) {
      await readThrough(memo, target, 0, { status: 200, body: 'xxxx', type: 'application/json' });
      await readThrough(memo, target, 0, { status: 200, body: 'xxxx', type: 'application/json' });
    }
    expect([memo.get('a', 0), memo.get('b', 0)?.body, memo.get('c', 0)?.body]).toEqual([undefined, 'xxxx', 'xxxx']);
  });
  describe('readOrJoin: requests that miss while a read of their target is under way', () => {
    /** A read that settles when told, counting how often it was started. */
    function pending(memo: ReplyMemo, changes: ChangeCounter) {
      let reads = 0;
      const settle: Array<(reply: Reply | Error) => void> = [];
      const read = () => {
        reads++;
        return new Promise<Reply>((resolve, reject) =>
          settle.push((r) => (r instanceof Error ? reject(r) : resolve(r))),
        );
      };
      const ask = (target: string) =>
        memo.readOrJoin(target, changes.count(), read).then(
          ({ reply, joined }) => [reply.status, reply.body, joined],
          (err: Error) => ['failed', err.message],
        );
      return { ask, settle, reads: () => reads };
    }

    test('share the read when nothing it read changed meanwhile; a change of another pet does not count', async () => {
      const { changes, memo, get } = counted();
      const { ask, settle, reads } = pending(memo, changes);
      const first = ask('/v1/pets/7');
      changes.changed({ ids: [8] });
      const second = ask('/v1/pets/7');
      expect(reads()).toBe(1);
      settle[0]?.(page(7, { ids: [7] }));
      expect(await Promise.all([first, second])).toEqual([
        [200, '[7]', false],
        [200, '[7]', true],
      ]);
      // Asked once by a read of its own: remembered, not yet memoised.
      expect(get('/v1/pets/7')).toBeUndefined();
    });

    test('when a pet the read saw changed after it began, the first waiting reads again and the others share that', async () => {
      const { changes, memo } = counted();
      const { ask, settle, reads } = pending(memo, changes);
      const first = ask('/v1/pets/7');
      changes.changed({ ids: [7] });
      const waiting = [ask('/v1/pets/7'), ask('/v1/pets/7')];
      settle[0]?.(page(7, { ids: [7] }));
      expect(await first).toEqual([200, '[7]', false]);
      await Bun.sleep(0);
      expect(reads()).toBe(2);
      settle[1]?.(page(70, { ids: [7] }));
      expect(await Promise.all(waiting)).toEqual([
        [200, '[70]', false],
        [200, '[70]', true],
      ]);
    });

    test('read for themselves when the read fails or answers other than 200', async () => {
      const { changes, memo } = counted();
      const { ask, settle, reads } = pending(memo, changes);
      const failed = ask('/v1/pets/7');
      const after = ask('/v1/pets/7');
      settle[0]?.(new Error('store unreachable'));
      expect(await failed).toEqual(['failed', 'store unreachable']);
      await Bun.sleep(0);
      expect(reads()).toBe(2);
      settle[1]?.(page(7, { ids: [7] }));
      expect(await after).toEqual([200, '[7]', false]);
      const missing = ask('/v1/pets/9');
      const again = ask('/v1/pets/9');
      settle[2]?.({ status: 404, body: 'no', type: 'application/json' });
      expect(await missing).toEqual([404, 'no', false]);
      await Bun.sleep(0);
      settle[3]?.({ status: 404, body: 'no', type: 'application/json' });
      expect([await again, reads()]).toEqual([[404, 'no', false], 4]);
    });

    test('share the failure of a store that cannot answer: no second read past its bound', async () => {
      const { changes, memo } = counted();
      const { ask, settle, reads } = pending(memo, changes);
      const first = ask('/v1/pets');
      const waiting = ask('/v1/pets');
      settle[0]?.(new StoreTimeoutError('read pets: no answer within 2000 ms'));
      const expected = ['failed', 'read pets: no answer within 2000 ms'];
      expect([await first, await waiting, reads()]).toEqual([expected, expected, 1]);
    });

    test('share nothing for a store that cannot tell its change count', async () => {
      const { changes, memo } = counted();
      let reads = 0;
      const read = async () => page(++reads);
      const answers = await Promise.all([
        memo.readOrJoin('/v1/pets', undefined, read),
        memo.readOrJoin('/v1/pets', undefined, read),
      ]);
      expect(answers.map((a) => [a.reply.body, a.joined])).toEqual([
        ['[1]', false],
        ['[2]', false],
      ]);
      expect(changes.count()).toBe(0);
    });
  });
});
