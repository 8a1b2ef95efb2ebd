import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import type { StoredOrder } from '../src/core/order-records.ts';
import { MAX_ID, type NewPet, petOf, type StoredPet } from '../src/core/pet-records.ts';
import { fingerprintOf, IDEMPOTENCY_TTL_MS } from '../src/store/idempotency.ts';
import type { Outbox } from '../src/store/outbox.ts';
import type { DataStore, IdempotentCreate } from '../src/store/store.ts';

/** Opens an empty store for one test; `dispose` removes whatever it left behind. */
export interface StoreFixture {
  readonly store: DataStore;
  dispose(): Promise<void>;
}

const rex: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };
const tom: NewPet = { name: 'Tom', categoryId: 2, status: 'sold' };
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const once = (pet: NewPet, key = 'k-1', now = T0, owner = 'key:acme'): IdempotentCreate => ({
  owner,
  key,
  fingerprint: fingerprintOf(pet),
  now,
});

/**
 * The behaviour every `DataStore` shares, run against each backend by its own test file.
 *
 * @example
 * describeStore('MemoryStore', async () => ({ store: new MemoryStore(), dispose: async () => {} }))
 */
export function describeStore(name: string, open: () => Promise<StoreFixture>): void {
  describe(`${name} (DataStore behaviour)`, () => {
    let fixture: StoreFixture;
    let store: DataStore;
    beforeEach(async () => {
      fixture = await open();
      store = fixture.store;
    });
    afterEach(async () => {
      await store.close();
      await fixture.dispose();
    });

    test('create assigns ids 1, 2, 3 and returns the pet as stored', async () => {
      const first = await store.create(rex);
      expect(first).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available', version: first.version });
      expect(Number.isSafeInteger(first.version) && first.version >= 1).toBe(true);
      const second = await store.create({ name: 'Tom', categoryId: 2, status: 'sold' });
      expect(petOf(second)).toEqual({ id: 2, name: 'Tom', categoryId: 2, status: 'sold' });
      expect((await store.create(rex)).id).toBe(3);
    });

    test('get returns the stored pet, or undefined for an id never assigned', async () => {
      const pet = await store.create({ name: 'Zoë 🐈 "quoted"', categoryId: MAX_ID, status: 'pending' });
      expect(await store.get(pet.id)).toEqual({
        id: 1,
        name: 'Zoë 🐈 "quoted"',
        categoryId: MAX_ID,
        status: 'pending',
        version: pet.version,
      });
      expect(await store.get(2)).toBeUndefined();
      expect(await store.get(MAX_ID)).toBeUndefined();
    });

    test('list pages in ascending id order after a cursor, filtered by status', async () => {
      const statuses = ['available', 'sold', 'available', 'pending', 'available', 'sold'] as const;
      for (const [i, status] of statuses.entries()) await store.create({ name: `p${i + 1}`, categoryId: 7, status });
      const ids = (pets: readonly { id: number }[]) => pets.map((p) => p.id);
      expect(ids(await store.list({ limit: 100 }))).toEqual([1, 2, 3, 4, 5, 6]);
      expect(ids(await store.list({ limit: 2 }))).toEqual([1, 2]);
      expect(ids(await store.list({ limit: 2, after: 2 }))).toEqual([3, 4]);
      expect(ids(await store.list({ limit: 100, after: 6 }))).toEqual([]);
      expect(ids(await store.list({ limit: 100, status: 'available' }))).toEqual([1, 3, 5]);
      expect(ids(await store.list({ limit: 1, status: 'available', after: 1 }))).toEqual([3]);
      expect(ids(await store.list({ limit: 100, status: 'sold', after: 2 }))).toEqual([6]);
      expect(await store.list({ limit: 1, status: 'pending' })).toEqual([
        { id: 4, name: 'p4', categoryId: 7, status: 'pending' },
      ]);
    });

    test('inventory counts the pets in each status, 0 for a status none has', async () => {
      expect(await store.inventory()).toEqual({ available: 0, pending: 0, sold: 0 });
      await store.create(rex);
      await store.create(tom);
      await store.createOnce(rex, once(rex));
      await store.create({ ...rex, status: 'available' });
      expect(await store.inventory()).toEqual({ available: 3, pending: 0, sold: 1 });
    });

    describe('orders', () => {
      const HOUR = 3_600_000;
      const place = (petId: number, owner = 'key:acme', key?: string, holdMs = HOUR) =>
        store.placeOrder({
          owner,
          petId,
          holdMs,
          now: Date.now(),
          ...(key === undefined ? {} : { idempotencyKey: key }),
        });
      const placed = async (petId: number, owner?: string, key?: string, holdMs?: number) => {
        const result = await place(petId, owner, key, holdMs);
        if (result.outcome !== 'placed') throw new Error(`expected placed, got ${result.outcome}`);
        return result.order;
      };

      test('placing holds an available pet: pending at once; a pet not available or missing is refused', async () => {
        await store.create(rex);
        await store.create(tom);
        const before = Date.now();
        const order = await placed(1);
        expect(order).toMatchObject({ petId: 1, status: 'placed' });
        expect(order.id).toMatch(/^ord_[0-9a-f]{32}$/);
        // Led by the millisecond it was made (so new ids append to the indexes), then random.
        expect(Math.abs(Number.parseInt(order.id.slice(4, 16), 16) - order.placedAt)).toBeLessThan(5_000);
        expect(order.holdUntil - order.placedAt).toBe(HOUR);
        expect(Math.abs(order.placedAt - before)).toBeLessThan(5_000);
        expect((await store.get(1))?.status).toBe('pending');
        expect(await store.inventory()).toEqual({ available: 0, pending: 1, sold: 1 });
        expect(await place(1, 'key:other')).toEqual({ outcome: 'pet_unavailable' });
        expect(await place(2)).toEqual({ outcome: 'pet_unavailable' });
        expect(await place(3)).toEqual({ outcome: 'pet_not_found' });
      });

      test('an Idempotency-Key answers the order it placed; with another pet, a conflict', async () => {
        await store.create(rex);
        await store.create(rex);
        const first = await placed(1, 'key:acme', 'k');
        expect(await place(1, 'key:acme', 'k')).toEqual({ outcome: 'replayed', order: first });
        expect(await place(2, 'key:acme', 'k')).toEqual({ outcome: 'conflict' });
        // Keys are the owner's: another's same key is its own.
        expect((await place(2, 'key:other', 'k')).outcome).toBe('placed');
      });

      test("an order is its owner's alone: another owner neither reads, lists nor closes it", async () => {
        await store.create(rex);
        const order = await placed(1);
        const now = Date.now();
        expect(await store.getOrder('key:acme', order.id, now)).toEqual(order);
        expect(await store.getOrder('key:other', order.id, now)).toBeUndefined();
        expect(await store.listOrders('key:other', { limit: 10 }, now)).toEqual([]);
        expect(await store.closeOrder('key:other', order.id, 'completed', now)).toEqual({ outcome: 'not_found' });
        expect(await store.getOrder('key:acme', order.id, now)).toEqual(order);
        expect((await store.get(1))?.status).toBe('pending');
      });

      test('complete sells the pet, cancel frees it; repeating is unchanged, the other move order_closed', async () => {
        await store.create(rex);
        await store.create(rex);
        const now = Date.now();
        const sold = await placed(1);
        const done = await store.closeOrder('key:acme', sold.id, 'completed', now);
        expect(done).toEqual({ outcome: 'closed', order: { ...sold, status: 'completed' } });
        expect((await store.get(1))?.status).toBe('sold');
        expect(await store.closeOrder('key:acme', sold.id, 'completed', now)).toEqual({
          outcome: 'unchanged',
          order: { ...sold, status: 'completed' },
        });
        expect((await store.closeOrder('key:acme', sold.id, 'cancelled', now)).outcome).toBe('order_closed');
        const freed = await placed(2);
        expect((await store.closeOrder('key:acme', freed.id, 'cancelled', now)).outcome).toBe('closed');
        expect((await store.get(2))?.status).toBe('available');
        expect((await store.closeOrder('key:acme', freed.id, 'completed', now)).outcome).toBe('order_closed');
        expect((await placed(2)).petId).toBe(2);
      });

      test('a hold that runs out expires once: the order expired, the pet available, one order.expired event', async () => {
        await store.create(rex);
        const order = await placed(1, 'key:acme', undefined, 200);
        await Bun.sleep(300);
        const now = Date.now();
        expect(await store.getOrder('key:acme', order.id, now)).toEqual({ ...order, status: 'expired' });
        expect(await store.expireDueOrders(Date.now())).toBe(0);
        expect((await store.get(1))?.status).toBe('available');
        expect((await store.closeOrder('key:acme', order.id, 'completed', now)).outcome).toBe('order_closed');
        const events = (await store.outbox?.claim('test', Date.now() + 1_000, 60_000, 10)) ?? [];
        expect(events.map((e) => [e.consumer, e.type, JSON.parse(e.payload).data.order.id])).toEqual([
          ['acme', 'order.expired', order.id],
        ]);
        expect((await place(1, 'key:other')).outcome).toBe('placed');
      });

      test('a retry of a placing after its hold ran out answers the order expired, never placed', async () => {
        await store.create(rex);
        const order = await placed(1, 'key:acme', 'k', 200);
        await Bun.sleep(300);
        expect(await place(1, 'key:acme', 'k')).toEqual({
          outcome: 'replayed',
          order: { ...order, status: 'expired' },
        });
        expect((await store.get(1))?.status).toBe('available');
      });

      test('a retry of a placing after its order was cancelled answers the order cancelled, and holds nothing', async () => {
        await store.create(rex);
        const order = await placed(1, 'key:acme', 'k');
        await store.closeOrder('key:acme', order.id, 'cancelled', Date.now());
        expect(await place(1, 'key:acme', 'k')).toEqual({
          outcome: 'replayed',
          order: { ...order, status: 'cancelled' },
        });
        expect((await store.get(1))?.status).toBe('available');
      });

      test('a change after a hold ran out sees the expiry first: If-Match against the version it gave, one count per pet', async () => {
        await store.create(rex);
        await store.create(rex);
        await placed(1, 'key:acme', undefined, 200);
        await placed(2, 'key:acme', undefined, 200);
        const held = (await store.get(1))?.version as number;
        const held2 = (await store.get(2))?.version as number;
        await Bun.sleep(300);
        // No read in between: the write itself finds the hold over, and the version it moved.
        expect((await store.update(1, { status: 'sold' }, [held])).outcome).toBe('stale');
        expect((await store.remove(2, [held2])).outcome).toBe('stale');
        const expired = (await store.get(1)) as StoredPet;
        expect(expired.status).toBe('available');
        const sold = await store.update(1, { status: 'sold' }, [expired.version]);
        expect(sold.outcome).toBe('updated');
        const after = (sold as { pet: StoredPet }).pet;
        expect(after.version).not.toBe(expired.version);
        expect(await store.get(1)).toEqual(after);
        expect(await store.inventory()).toEqual({ available: 1, pending: 0, sold: 1 });
      });

      test('a change after a hold ran out, with no precondition: counted once, a version of its own', async () => {
        await store.create(rex);
        await store.create(rex);
        await placed(1, 'key:acme', undefined, 200);
        await placed(2, 'key:acme', undefined, 200);
        const held = (await store.get(1))?.version as number;
        await Bun.sleep(300);
        const sold = await store.update(1, { status: 'sold' });
        expect(sold.outcome).toBe('updated');
        const version = (sold as { pet: StoredPet }).pet.version;
        // The expiry moved the version once and the change once more: neither repeats.
        expect(version).toBeGreaterThan(held + 1);
        expect((await store.remove(2)).outcome).toBe('removed');
        expect(await store.inventory()).toEqual({ available: 0, pending: 0, sold: 1 });
      });

      test('a retired owner: its placed orders cancelled, pets available; one made again under its name has none', async () => {
        await store.create(rex);
        await store.create(rex);
        const open = await placed(1, 'key:acme', 'k');
        const done = await placed(2, 'key:acme');
        await store.closeOrder('key:acme', done.id, 'completed', Date.now());
        await store.retireOwner('key:acme');
        const now = Date.now();
        expect((await store.get(1))?.status).toBe('available');
        expect((await store.get(2))?.status).toBe('sold');
        expect(await store.listOrders('key:acme', { limit: 10 }, now)).toEqual([]);
        expect(await store.getOrder('key:acme', open.id, now)).toBeUndefined();
        expect(await store.closeOrder('key:acme', open.id, 'completed', now)).toEqual({ outcome: 'not_found' });
        const again = await placed(1, 'key:acme', 'k');
        expect(again.id).not.toBe(open.id);
      });

      test("an adopted owner: its orders and createPet keys are the heir's, but for a key the heir already has", async () => {
        const [OLD, HEIR, OTHER] = ['key:acme', 'con_0123456789abcdef0123456789abcdef:acme', 'key:shop'];
        for (let i = 0; i < 4; i++) await store.create(rex);
        const mine = await placed(1, OLD, 'k');
        const clash = await placed(2, OLD, 'both');
        const heirs = await placed(3, HEIR, 'both');
        const others = await placed(4, OTHER, 'k');
        const created = await store.createOnce(tom, once(tom, 'pet-key', T0, OLD));
        await store.adoptOwners([{ from: OLD, to: HEIR }]);
        const now = Date.now();
        expect((await store.listOrders(HEIR, { limit: 10 }, now)).map((o) => o.id).sort()).toEqual(
          [mine.id, heirs.id].sort(),
        );
        expect((await store.listOrders(OLD, { limit: 10 }, now)).map((o) => o.id)).toEqual([clash.id]);
        expect((await store.listOrders(OTHER, { limit: 10 }, now)).map((o) => o.id)).toEqual([others.id]);
        expect(await store.getOrder(OLD, mine.id, now)).toBeUndefined();
        // The heir's retry of the key its predecessor used answers that order, not a second one.
        expect(await place(1, HEIR, 'k')).toEqual({ outcome: 'replayed', order: mine });
        expect(await store.createOnce(tom, once(tom, 'pet-key', T0 + 1, HEIR))).toEqual({
          outcome: 'replayed',
          pet: (created as { pet: StoredPet }).pet,
        });
        expect((await store.createOnce(tom, once(tom, 'pet-key', T0 + 1, OLD))).outcome).toBe('created');
      });

      test("the listing pages an owner's orders by id, filtered by status", async () => {
        for (let i = 0; i < 5; i++) await store.create(rex);
        const orders: StoredOrder[] = [];
        for (let id = 1; id <= 5; id++) orders.push(await placed(id));
        const now = Date.now();
        await store.closeOrder('key:acme', orders[0]?.id ?? '', 'cancelled', now);
        const ids = orders.map((o) => o.id).sort();
        const first = await store.listOrders('key:acme', { limit: 2 }, now);
        expect(first.map((o) => o.id)).toEqual(ids.slice(0, 2));
        const next = await store.listOrders('key:acme', { limit: 10, after: first[1]?.id }, now);
        expect(next.map((o) => o.id)).toEqual(ids.slice(2));
        const placedOnly = await store.listOrders('key:acme', { limit: 10, status: 'placed' }, now);
        expect(placedOnly.map((o) => o.id).sort()).toEqual(ids.filter((id) => id !== orders[0]?.id));
      });

      test('a close after a hold ran out, with nothing read in between: the order expired, the pet available', async () => {
        await store.create(rex);
        const order = await placed(1, 'key:acme', undefined, 200);
        await Bun.sleep(300);
        expect(await store.closeOrder('key:acme', order.id, 'completed', Date.now())).toEqual({
          outcome: 'order_closed',
          order: { ...order, status: 'expired' },
        });
        expect((await store.get(1))?.status).toBe('available');
        expect(await store.inventory()).toEqual({ available: 1, pending: 0, sold: 0 });
      });

      test('100 concurrent orders without a key for 10 pets, then 10 concurrent closes of each: one sale or release a pet', async () => {
        for (let i = 0; i < 10; i++) await store.create(rex);
        const results = await Promise.all(Array.from({ length: 100 }, (_, i) => place((i % 10) + 1, `key:buyer${i}`)));
        const orders = results.flatMap((r, i) =>
          r.outcome === 'placed' ? [{ owner: `key:buyer${i}`, ...r.order }] : [],
        );
        expect(orders.map((o) => o.petId).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
        expect(results.filter((r) => r.outcome === 'pet_unavailable')).toHaveLength(90);
        const now = Date.now();
        const closes = await Promise.all(
          orders.flatMap((o) =>
            Array.from({ length: 10 }, (_, i) =>
              store.closeOrder(o.owner, o.id, i % 2 ? 'completed' : 'cancelled', now),
            ),
          ),
        );
        // Each order: one close wins; of the nine others, the four asking what it did are unchanged.
        expect(
          ['closed', 'unchanged', 'order_closed'].map((o) => closes.filter((c) => c.outcome === o).length),
        ).toEqual([10, 40, 50]);
        const sold = closes.filter((c) => c.outcome === 'closed' && c.order.status === 'completed').length;
        expect(await store.inventory()).toEqual({ available: 10 - sold, pending: 0, sold });
      });

      test('200 concurrent orders for 20 pets: exactly 20 placed, each pet in one order and pending', async () => {
        for (let i = 0; i < 20; i++) await store.create(rex);
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) => place((i % 20) + 1, `key:buyer${i % 10}`, `k${i}`)),
        );
        const won = results.flatMap((r) => (r.outcome === 'placed' ? [r.order.petId] : []));
        expect(won.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        expect(results.filter((r) => r.outcome === 'pet_unavailable')).toHaveLength(180);
        expect(await store.inventory()).toEqual({ available: 0, pending: 20, sold: 0 });
      });
    });

    test('concurrent creates each get their own id and are all readable', async () => {
      const made = await Promise.all(
        Array.from({ length: 250 }, (_, i) => store.create({ name: `n${i}`, categoryId: i + 1, status: 'available' })),
      );
      expect(new Set(made.map((p) => p.id)).size).toBe(250);
      expect(made.map((p) => p.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
      const listed = await store.list({ limit: 1000 });
      expect(listed).toHaveLength(250);
      for (const pet of made) expect(listed[pet.id - 1]).toEqual(petOf(pet));
    });

    test('createOnce stores once per key: a retry gets the same pet, another body a conflict', async () => {
      const made = await store.createOnce(rex, once(rex));
      const pet = {
        id: 1,
        name: 'Rex',
        categoryId: 1,
        status: 'available' as const,
        version: made.outcome === 'created' ? made.pet.version : 0,
      };
      expect(await store.get(1)).toEqual(pet);
      expect(made).toEqual({ outcome: 'created', pet });
      expect(await store.createOnce(rex, once(rex, 'k-1', T0 + 1_000))).toEqual({ outcome: 'replayed', pet });
      expect(await store.createOnce(tom, once(tom))).toEqual({ outcome: 'conflict' });
      // Another key, or the same key of another caller, is another request.
      expect(await store.createOnce(rex, once(rex, 'k-2'))).toMatchObject({ outcome: 'created', pet: { id: 2 } });
      expect(await store.createOnce(tom, once(tom, 'k-1', T0, 'key:other'))).toMatchObject({
        outcome: 'created',
        pet: { id: 3, name: 'Tom' },
      });
      expect(await store.create(rex)).toMatchObject({ id: 4 });
      expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([1, 2, 3, 4]);
    });

    test('a key is remembered for 24 h from its first use, then forgotten', async () => {
      await store.createOnce(rex, once(rex));
      const lastMs = T0 + IDEMPOTENCY_TTL_MS - 1;
      expect(await store.createOnce(tom, once(tom, 'k-1', lastMs))).toEqual({ outcome: 'conflict' });
      expect(await store.createOnce(rex, once(rex, 'k-1', lastMs))).toMatchObject({
        outcome: 'replayed',
        pet: { id: 1 },
      });
      // Expired: the key is free again, for any body, and remembered anew from then.
      const later = T0 + IDEMPOTENCY_TTL_MS;
      expect(await store.createOnce(tom, once(tom, 'k-1', later))).toMatchObject({
        outcome: 'created',
        pet: { id: 2 },
      });
      expect(await store.createOnce(tom, once(tom, 'k-1', later + IDEMPOTENCY_TTL_MS - 1))).toMatchObject({
        outcome: 'replayed',
        pet: { id: 2 },
      });
      expect(await store.createOnce(rex, once(rex, 'k-1', later + 1))).toEqual({ outcome: 'conflict' });
      // A sweep (the next day) drops expired keys without touching live ones or pets.
      const dayAfter = later + IDEMPOTENCY_TTL_MS + 60_000;
      expect(await store.createOnce(rex, once(rex, 'k-3', dayAfter))).toMatchObject({ outcome: 'created' });
      expect(await store.createOnce(rex, once(rex, 'k-3', dayAfter + 1))).toMatchObject({
        outcome: 'replayed',
        pet: { id: 3 },
      });
      expect(await store.list({ limit: 10 })).toHaveLength(3);
    });

    test('concurrent creates with one key store one pet; all of them answer it', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          i % 2 ? store.createOnce(rex, once(rex, 'same')) : store.create({ ...tom, name: `t${i}` }),
        ),
      );
      const keyed = results.filter((_, i) => i % 2).map((r) => ('outcome' in r ? r : undefined));
      expect(keyed.filter((r) => r?.outcome === 'created')).toHaveLength(1);
      expect(keyed.filter((r) => r?.outcome === 'replayed')).toHaveLength(9);
      const ids = new Set(keyed.map((r) => (r && 'pet' in r ? r.pet.id : 0)));
      expect(ids.size).toBe(1);
      const all = await store.list({ limit: 100 });
      expect(all).toHaveLength(11);
      expect(all.filter((p) => p.name === 'Rex')).toHaveLength(1);
    });

    test('update: every (from, to) pair of statuses is a transition or invalid_transition', async () => {
      const statuses = ['available', 'pending', 'sold'] as const;
      const allowed = new Set(['available>pending', 'available>sold', 'pending>available', 'pending>sold']);
      for (const from of statuses) {
        for (const to of statuses) {
          const made = await store.create({ name: `${from}>${to}`, categoryId: 1, status: from });
          const result = await store.update(made.id, { status: to });
          const seen = await store.get(made.id);
          if (from === to) {
            // No transition, no change: the version stays.
            expect(result).toEqual({ outcome: 'updated', pet: made });
            expect(seen).toEqual(made);
          } else if (allowed.has(`${from}>${to}`)) {
            expect(result.outcome).toBe('updated');
            expect(seen).toEqual({ ...made, status: to, version: seen?.version ?? 0 });
            expect((seen?.version ?? 0) > made.version).toBe(true);
            expect(result).toEqual({ outcome: 'updated', pet: seen as StoredPet });
          } else {
            expect([from, to, result]).toEqual([from, to, { outcome: 'invalid_transition', pet: made, to }]);
            expect(seen).toEqual(made);
          }
        }
      }
      expect(await store.list({ limit: 100, status: 'sold' })).toHaveLength(5);
    });

    test('10 concurrent changes with one If-Match: one updated, nine stale; without it, each its own version', async () => {
      const made = await store.create(rex);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.update(made.id, { name: `Rex ${i}` }, [made.version])),
      );
      const won = results.flatMap((r) => (r.outcome === 'updated' ? [r.pet] : []));
      expect([won.length, results.filter((r) => r.outcome === 'stale').length]).toEqual([1, 9]);
      expect(await store.get(made.id)).toEqual(won[0] as StoredPet);
      const free = await Promise.all(Array.from({ length: 10 }, (_, i) => store.update(made.id, { name: `Max ${i}` })));
      const versions = new Set(free.map((r) => (r.outcome === 'updated' ? r.pet.version : 0)));
      expect(versions.size).toBe(10);
      expect(versions.has(0)).toBe(false);
    });

    test('update: If-Match decides in the write; a missing pet is not_found; keys keep what their create answered', async () => {
      const made = await store.create(rex);
      const renamed = await store.update(made.id, { name: 'Max', categoryId: 9 }, [made.version]);
      expect(renamed.outcome).toBe('updated');
      const now = renamed.outcome === 'updated' ? renamed.pet : made;
      expect(petOf(now)).toEqual({ id: 1, name: 'Max', categoryId: 9, status: 'available' });
      expect(await store.update(made.id, { name: 'Lost' }, [made.version])).toEqual({ outcome: 'stale', pet: now });
      expect(await store.update(made.id, { name: 'Lost' }, [])).toEqual({ outcome: 'stale', pet: now });
      expect(await store.get(made.id)).toEqual(now);
      expect((await store.update(made.id, { status: 'sold' }, [made.version, now.version])).outcome).toBe('updated');
      expect((await store.update(made.id, { name: 'Any' }, '*')).outcome).toBe('updated');
      expect(await store.update(99, { name: 'Nobody' }, '*')).toEqual({ outcome: 'not_found' });
      // Concurrent changes with the same If-Match: exactly one wins.
      const current = (await store.get(made.id))?.version ?? 0;
      const racing = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.update(made.id, { name: `r${i}` }, [current])),
      );
      expect(racing.filter((r) => r.outcome === 'updated')).toHaveLength(1);
      expect(racing.filter((r) => r.outcome === 'stale')).toHaveLength(9);
      // The key answers the pet as its create answered it, not as it is now.
      const keyed = await store.createOnce(tom, once(tom, 'kept'));
      const first = keyed.outcome === 'created' ? keyed.pet : undefined;
      await store.update(first?.id ?? 0, { name: 'Changed' });
      expect(await store.createOnce(tom, once(tom, 'kept', T0 + 1))).toEqual({
        outcome: 'replayed',
        pet: first as StoredPet,
      });
    });

    test('remove: gone from get and every list, its id never given again, its key still answers its create', async () => {
      const keyed = await store.createOnce(rex, once(rex, 'gone'));
      const first = keyed.outcome === 'created' ? keyed.pet : undefined;
      const other = await store.create(tom);
      expect(await store.remove(first?.id ?? 0, [(first?.version ?? 0) + 1])).toEqual({
        outcome: 'stale',
        pet: first as StoredPet,
      });
      expect(await store.remove(first?.id ?? 0, [first?.version ?? 0])).toEqual({ outcome: 'removed' });
      expect(await store.get(1)).toBeUndefined();
      expect(await store.list({ limit: 10 })).toEqual([petOf(other)]);
      expect(await store.list({ limit: 10, status: 'available' })).toEqual([]);
      expect(await store.remove(1, '*')).toEqual({ outcome: 'not_found' });
      expect(await store.update(1, { name: 'Ghost' })).toEqual({ outcome: 'not_found' });
      // The retry answers the create's pet and stores nothing; the next pet gets a new id.
      expect(await store.createOnce(rex, once(rex, 'gone', T0 + 1))).toEqual({
        outcome: 'replayed',
        pet: first as StoredPet,
      });
      expect(await store.list({ limit: 10 })).toHaveLength(1);
      await store.remove(other.id);
      expect((await store.create(rex)).id).toBe(3);
    });

    test('ping resolves on an open store', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    test("the outbox keeps the recording request's traceparent until the event is claimed", async () => {
      const outbox = store.outbox as Outbox;
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const base = { consumer: 'acme', type: 'quota.threshold', payload: '{}', createdAt: T0 };
      await outbox.record([
        { ...base, id: 't1', traceparent },
        { ...base, id: 't2', createdAt: T0 + 1 },
      ]);
      expect((await outbox.claim('a', T0 + 10, 30_000, 10)).map((e) => [e.id, e.traceparent])).toEqual([
        ['t1', traceparent],
        ['t2', undefined],
      ]);
    });

    test('the outbox: recorded once per id, leased to one worker at a time, retried when due, settled', async () => {
      const outbox = store.outbox as Outbox;
      const event = (id: string, at: number) => ({
        id,
        consumer: 'acme',
        type: 'quota.threshold',
        payload: `{"n":"${id}"}`,
        createdAt: at,
      });
      await outbox.record([event('e1', T0), event('e2', T0 + 1)]);
      await outbox.record([{ ...event('e1', T0 + 5), payload: 'other' }]);
      expect(await outbox.stats()).toEqual({ pending: 2, failed: 0, oldestPendingAt: T0 });
      // Two workers at once: each event goes to one of them.
      const [a, b] = await Promise.all([
        outbox.claim('a', T0 + 10, 30_000, 10),
        outbox.claim('b', T0 + 10, 30_000, 10),
      ]);
      expect([...(a ?? []), ...(b ?? [])].map((e) => [e.id, e.payload, e.attempts])).toEqual([
        ['e1', '{"n":"e1"}', 0],
        ['e2', '{"n":"e2"}', 0],
      ]);
      const owner = (a ?? []).length > 0 ? 'a' : 'b';
      expect(await outbox.claim('c', T0 + 20, 30_000, 10)).toEqual([]);
      await outbox.settle('e1', owner, { outcome: 'delivered' }, T0 + 30);
      await outbox.settle('e2', 'c', { outcome: 'delivered' }, T0 + 30); // not c's lease: nothing
      await outbox.settle('e2', owner, { outcome: 'retry', at: T0 + 5_000, error: 'HTTP 503' }, T0 + 30);
      expect(await outbox.claim('c', T0 + 4_999, 30_000, 10)).toEqual([]);
      expect((await outbox.claim('c', T0 + 5_000, 30_000, 10)).map((e) => [e.id, e.attempts])).toEqual([['e2', 1]]);
      // A lease that ran out (its worker died) is taken over.
      expect((await outbox.claim('d', T0 + 40_000, 30_000, 10)).map((e) => e.id)).toEqual(['e2']);
      await outbox.settle('e2', 'd', { outcome: 'failed', error: 'gave up' }, T0 + 40_001);
      expect(await outbox.stats()).toEqual({ pending: 0, failed: 1, oldestPendingAt: undefined });
      // A delivered id recorded again is not sent again.
      await outbox.record([event('e1', T0 + 50_000)]);
      expect(await outbox.claim('c', T0 + 60_000, 30_000, 10)).toEqual([]);
    });

    test('the outbox is bounded: failed events are dropped first, oldest first, then pending ones', async () => {
      const outbox = store.outbox as Outbox;
      const event = (id: string, at: number, type = 'quota.threshold') => ({
        id,
        consumer: 'acme',
        type,
        payload: '{}',
        createdAt: at,
      });
      await outbox.record([event('f1', T0, 'key.banned'), event('f2', T0 + 1, 'key.banned')]);
      for (const e of await outbox.claim('w', T0 + 2, 30_000, 10)) {
        await outbox.settle(e.id, 'w', { outcome: 'failed', error: 'gave up' }, T0 + 3);
      }
      await outbox.record([event('p1', T0 + 4), event('p2', T0 + 5), event('p3', T0 + 6)]);
      expect(await outbox.trim(4, T0 + 10)).toEqual([{ consumer: 'acme', type: 'key.banned' }]);
      expect(await outbox.trim(4, T0 + 10)).toEqual([]);
      expect(await outbox.trim(2, T0 + 10)).toHaveLength(2);
      expect(await outbox.stats()).toEqual({ pending: 2, failed: 0, oldestPendingAt: T0 + 5 });
    });
  });
}
