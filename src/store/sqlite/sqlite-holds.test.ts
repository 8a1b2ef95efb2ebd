import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../log.ts';
import { DATA_VERSION_TTL_MS, SqliteStore } from './sqlite.ts';
import { loadSqlite, type SqliteOpener } from './sqlite-driver.ts';

const openSqlite = (await loadSqlite()) as SqliteOpener;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'petstore-holds-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A store on the test's one file, on the fake clock given. */
const openAt = (clock: { now: () => number }) =>
  SqliteStore.open({ path: join(dir, 'pets.db'), open: openSqlite, log: silentLogger, clock });

// Two stores on one file are two workers of one host (`--workers 2`): a pet read on the one that
// did not place the order must not show the pet `pending` past its hold, as on the one that did.
describe('a hold placed through another process of the same file', () => {
  test('a pet read past the hold waits for the expiry, whoever placed the order', async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const placer = openAt(clock);
    const reader = openAt(clock);
    const pet = await placer.create({ name: 'Rex', categoryId: 1, status: 'available' });
    const placed = await placer.placeOrder({ owner: 'con_a', petId: pet.id, holdMs: 2_000, now });
    expect(placed.outcome).toBe('placed');
    now += DATA_VERSION_TTL_MS;
    expect((await reader.get(pet.id))?.status).toBe('pending');

    // Past the hold, as the pipeline reads a pet: the due orders expired first, then the pet.
    now += 2_000;
    await reader.startDueOrderExpiry();
    expect((await reader.get(pet.id))?.status).toBe('available');
    expect((await placer.getOrder('con_a', placed.outcome === 'placed' ? placed.order.id : '', now))?.status).toBe(
      'expired',
    );
    await placer.close();
    await reader.close();
  });
});

// A batch that rolls back undoes its expiry: the orders it expired are placed again, and the
// store must not go on believing their holds are gone.
describe('an expiry rolled back with its batch', () => {
  test('the order is expired by the next read, its pet available', async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const store = openAt(clock);
    // A create that fails for itself, in the same batch as the expiry, rolls the batch back.
    const raw = openSqlite(join(dir, 'pets.db'));
    raw.exec(
      "CREATE TRIGGER refuse_boom BEFORE INSERT ON pets WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
    );
    raw.close();
    // The store sees that commit of another connection now, not as a reason to look again later.
    now += DATA_VERSION_TTL_MS;
    store.changeCount();
    const pet = await store.create({ name: 'Rex', categoryId: 1, status: 'available' });
    const placed = await store.placeOrder({ owner: 'con_a', petId: pet.id, holdMs: 2_000, now });
    expect(placed.outcome).toBe('placed');

    now += 2_000;
    const expiring = store.expireDueOrders(now);
    const refused = store.create({ name: 'boom', categoryId: 1, status: 'available' });
    expect(
      await refused.then(
        () => 'stored',
        (err: Error) => err.message,
      ),
    ).toBe('store pet: boom refused');
    await expiring;

    await store.startDueOrderExpiry();
    expect((await store.get(pet.id))?.status).toBe('available');
    const id = placed.outcome === 'placed' ? placed.order.id : '';
    expect((await store.getOrder('con_a', id, now))?.status).toBe('expired');
    await store.close();
  });
});
