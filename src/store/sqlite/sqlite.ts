// The SQLite backend (`--data FILE`). It keeps pets, orders, idempotency keys, API keys with
// `--keys store` and the webhook outbox in one file. Each write is durable before it is answered.
import { resolve } from 'node:path';
import { clearTimeout, setImmediate, setTimeout } from 'node:timers';
import { type Clock, systemClock } from '../../core/clock.ts';
import { type Closing, petStatusOnClose, type StoredOrder } from '../../core/order-records.ts';
import type { Inventory, NewPet, Pet, PetPatch, StoredPet } from '../../core/pet-records.ts';
import type { IfMatch } from '../../core/preconditions.ts';
import type { PetSet } from '../../core/reply.ts';
import type { Logger } from '../../log.ts';
import { ChangeCounter, EVERY_PET } from '../change-counter.ts';
import { planRemove, planUpdate } from '../change-rules.ts';
import { IDEMPOTENCY_TTL_MS, idempotencyKeySpace, KEYED_CREATES, KeyExpirySchedule } from '../idempotency.ts';
import type { KeyStore, WithKeyStore } from '../key-store.ts';
import { newOrderId, ORDER_COLUMNS, orderExpiredEvent, orderFromRow, retiredOwner } from '../order-rows.ts';
import type { Outbox } from '../outbox.ts';
import { SCHEMA_VERSION } from '../sql/migrations.ts';
import { RECORD } from '../sql/outbox-sql.ts';
import {
  COUNT_BY_STATUS,
  column,
  inventoryFromRows,
  PET_COLUMNS,
  petFromRow,
  REPLAYED_PET,
  replayedPetFromRow,
  STORED_PET_COLUMNS,
  storedPetFromRow,
} from '../sql/pet-rows.ts';
import type {
  CloseOrderResult,
  CreateOnceResult,
  DataStore,
  IdempotentCreate,
  ListOptions,
  OrderListOptions,
  OwnerMove,
  PlaceOrder,
  PlaceOrderResult,
  RemoveResult,
  UpdateResult,
} from '../store.ts';
import { STORE_CALLS } from '../store.ts';
import {
  isSqliteBusy,
  type StoreError,
  StoreOpenError,
  StoreTimeoutError,
  StoreUnavailableError,
  sqliteError,
} from '../store-error.ts';
import { prepareDataFile, restrictCreated } from './file-modes.ts';
import { SqliteKeyStore } from './key-store-sqlite.ts';
import { rollback, type SqliteConnection, type SqliteOpener } from './sqlite-driver.ts';
import { migrate } from './sqlite-migrate.ts';
import { sqliteOutbox } from './sqlite-outbox.ts';

/** How long opening the file (its migrations) waits for another process holding the lock. */
const OPEN_BUSY_TIMEOUT_MS = 5_000;
/**
 * After opening, SQLite's own busy wait is off: it sleeps inside the call, which would stop the
 * whole event loop (every other request with it). A statement that finds the file locked by
 * another process is tried again every `BUSY_POLL_MS` instead, up to `lockWaitMs`.
 */
const BUSY_POLL_MS = 10;
/** The default of `lockWaitMs`. */
const DEFAULT_LOCK_WAIT_MS = 5_000;

const INSERT = `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${STORED_PET_COLUMNS}`;
const SELECT_ONE = `SELECT ${STORED_PET_COLUMNS} FROM pets WHERE id = ?`;
const UPDATE = `UPDATE pets SET name = ?, category_id = ?, status = ?, version = version + 1 WHERE id = ?
  RETURNING ${STORED_PET_COLUMNS}`;
/** AUTOINCREMENT (migration `pets`) never gives a removed pet's id again. */
const DELETE = 'DELETE FROM pets WHERE id = ?';
const SELECT_PAGE = `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`;
const SELECT_PAGE_BY_STATUS = `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`;
/** Changes when another connection commits: what keeps `changeCount()` honest across processes. */
const DATA_VERSION = 'PRAGMA data_version';
/**
 * How long a `data_version` read is trusted. The statement costs more than a read by id
 * (bench/README.md#measured-costs-behind-the-codes-choices), so it is read at most this often.
 * This process's own commits move `changeCount()` at once, so only another process's commit (a
 * hand edit with `sqlite3`, a second instance, which docs/operations.md advises against) can go
 * unseen, for at most this long.
 */
export const DATA_VERSION_TTL_MS = 100;
/**
 * The live key and the pet its create answered (`REPLAYED_PET`); none when that is unknown. The
 * `scope` column holds the key space (`idempotencyKeySpace` of the owner and createPet).
 */
const SELECT_KEY = `
  SELECT k.fingerprint, ${REPLAYED_PET}
  FROM idempotency_keys k LEFT JOIN pets p ON p.id = k.pet_id
  WHERE k.scope = ? AND k.idempotency_key = ? AND k.expires_at > ?`;
const UPSERT_KEY = `
  INSERT INTO idempotency_keys
    (scope, idempotency_key, fingerprint, pet_id, expires_at, pet_name, pet_category_id, pet_status, pet_version)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (scope, idempotency_key) DO UPDATE
  SET fingerprint = excluded.fingerprint, pet_id = excluded.pet_id, expires_at = excluded.expires_at,
    pet_name = excluded.pet_name, pet_category_id = excluded.pet_category_id,
    pet_status = excluded.pet_status, pet_version = excluded.pet_version`;
const DROP_EXPIRED_KEYS = 'DELETE FROM idempotency_keys WHERE expires_at <= ?';
const ORDER_BY_KEY = `SELECT ${ORDER_COLUMNS} FROM orders WHERE owner = ? AND idempotency_key = ?`;
const ORDER_OF = `SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ? AND owner = ?`;
/** Pending only from available: the conditional write that holds a pet for one order only. */
const HOLD_PET =
  "UPDATE pets SET status = 'pending', version = version + 1 WHERE id = ? AND status = 'available' RETURNING id";
const PET_STATUS = 'SELECT status FROM pets WHERE id = ?';
const INSERT_ORDER = `INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until, idempotency_key)
  VALUES (?, ?, ?, 'placed', ?, ?, ?)`;
/** The owner's order closes only if it is placed: otherwise no row, and `ORDER_OF` tells why. */
const CLOSE_ORDER = `UPDATE orders SET status = ? WHERE id = ? AND owner = ? AND status = 'placed'
  RETURNING ${ORDER_COLUMNS}`;
/** A pet an order held leaves pending for `status` (sold, or available again). */
const RELEASE_PET =
  "UPDATE pets SET status = ?, version = version + 1 WHERE id = ? AND status = 'pending' RETURNING id";
const EXPIRE_DUE = `UPDATE orders SET status = 'expired' WHERE status = 'placed' AND hold_until <= ?
  RETURNING owner, ${ORDER_COLUMNS}`;
const CANCEL_OWNED = "UPDATE orders SET status = 'cancelled' WHERE owner = ? AND status = 'placed' RETURNING pet_id";
const RETIRE_OWNER = 'UPDATE orders SET owner = ?, idempotency_key = NULL WHERE owner = ?';
// Moves `from`'s orders (?2) to the consumer `to` (?1) that adopts them. An order whose
// Idempotency-Key `to` already uses stays with `from`: moving it would give `to` two orders with
// one key, which the unique (owner, idempotency_key) pair forbids.
const ADOPT_ORDERS = `UPDATE orders SET owner = ?1 WHERE owner = ?2 AND (idempotency_key IS NULL
  OR NOT EXISTS (SELECT 1 FROM orders mine WHERE mine.owner = ?1 AND mine.idempotency_key = orders.idempotency_key))`;
const ADOPT_KEYS = `UPDATE idempotency_keys SET scope = ?1 WHERE scope = ?2
  AND NOT EXISTS (SELECT 1 FROM idempotency_keys mine WHERE mine.scope = ?1 AND mine.idempotency_key = idempotency_keys.idempotency_key)`;
const PLACED_FOR_PET = "SELECT 1 AS held FROM orders WHERE pet_id = ? AND status = 'placed'";
const ANY_ORDER_DUE = "SELECT 1 AS due FROM orders WHERE status = 'placed' AND hold_until <= ? LIMIT 1";
const EARLIEST_HOLD_END = "SELECT min(hold_until) AS at FROM orders WHERE status = 'placed'";
const ORDER_PAGE = `SELECT ${ORDER_COLUMNS} FROM orders WHERE owner = ? AND id > ? ORDER BY owner, id LIMIT ?`;
const ORDER_PAGE_BY_STATUS = `SELECT ${ORDER_COLUMNS} FROM orders
  WHERE owner = ? AND id > ? AND status = ? ORDER BY owner, id LIMIT ?`;

export interface SqliteStoreOptions {
  /** Database file; its folder is created when missing. */
  readonly path: string;
  /** The runtime's SQLite, from `loadSqlite()`. */
  readonly open: SqliteOpener;
  readonly log: Logger;
  /**
   * The store's own time: `DATA_VERSION_TTL_MS`, the lock wait, and whether a hold has run out.
   * Order calls and keyed creates are given their `now` by the app instead. A server uses the
   * system clock everywhere, so they agree; tests pass one fake clock to the app and the store.
   */
  readonly clock?: Clock;
  /**
   * How long a call waits for another process that holds the database's lock; then it fails
   * with `StoreTimeoutError`, and a create that waited is dropped unstored.
   */
  readonly lockWaitMs?: number;
  /**
   * A counter in memory shared with the other connections of this process (the workers'): each
   * adds one when its write transaction ends. A write that finds the file locked tries again as
   * soon as it moves, rather than after `BUSY_POLL_MS`.
   */
  readonly lockReleases?: LockReleases;
}

/** `Atomics.waitAsync` (ES2024): used with `lockReleases` only, which the workers (Bun) pass. */
const { waitAsync } = Atomics as unknown as {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeoutMs: number,
  ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
};

/** A place in shared memory (`Int32Array`, index) moved at the end of every write transaction. */
export interface LockReleases {
  readonly counter: Int32Array;
  readonly index: number;
}

/** A write waiting for the next batch: `run` inside its transaction, settled after its COMMIT. */
interface PendingWrite {
  /** What the write does, for its error's message: `change pet`, `place order`. */
  readonly doing: string;
  readonly run: () => unknown;
  /** When the write is a create with a key: the batch deletes the keys expired by this time. */
  readonly keyExpiryAt?: number;
  /** Epoch ms it was queued, from the store's clock: it is dropped once it waited `lockWaitMs`. */
  readonly at: number;
  resolve(result: unknown): void;
  reject(err: StoreError): void;
}

/**
 * The store in a SQLite file (pets, orders, idempotency keys, API keys, the webhook outbox): WAL
 * journal, `synchronous=FULL`, so a committed write survives a crash of the process or of the
 * machine.
 *
 * Writes are group-committed. Every write that arrives while the event loop is busy is queued
 * into one transaction and resolved after its COMMIT, so durability costs one sync per batch,
 * not one per request. Keyed creates and outbox events ride the same batches. A key is looked up
 * and stored inside the batch's write transaction, so a second create with the same key finds
 * the first.
 */
export class SqliteStore implements DataStore, WithKeyStore {
  readonly #db: SqliteConnection;
  readonly #keyExpiry = new KeyExpirySchedule();
  /**
   * Counts this process's changes of pets once committed, and every change of `data_version`
   * (another's) as a change of every pet.
   */
  readonly #changes = new ChangeCounter();
  /** What the batch being run changes, counted once it commits. */
  #touched: PetSet[] = [];
  readonly #clock: Clock;
  readonly #lockWaitMs: number;
  /** `PRAGMA data_version` as last read: another connection's commit moves it. */
  #dataVersionSeen: unknown;
  #dataVersionReadAt = Number.NEGATIVE_INFINITY;
  #pending: PendingWrite[] = [];
  /** Set while the pending writes wait for another process's lock. */
  #retry: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /**
   * The earliest hold end (of a placed order's hold): from then on an order may be due, and no
   * answer is memoised until the orders are expired.
   */
  #earliestHoldEnd: number;
  /** The expiry `startDueOrderExpiry()` started, while it runs. */
  #expiring: Promise<void> | undefined;
  /** The webhook outbox in this file: its writes are batched with the pets'. */
  readonly outbox: Outbox = sqliteOutbox({
    db: () => this.#db,
    enqueue: (doing, run) => this.#enqueue(doing, run),
    read: (doing, query) => this.#query(doing, query),
  });

  readonly #releases: LockReleases | undefined;

  private constructor(db: SqliteConnection, clock: Clock, lockWaitMs: number, releases: LockReleases | undefined) {
    this.#releases = releases;
    this.#db = db;
    this.#clock = clock;
    this.#lockWaitMs = lockWaitMs;
    this.#earliestHoldEnd = this.#readEarliestHoldEnd();
  }

  /**
   * Opens (creating when needed) the file, sets the pragmas and applies the migrations;
   * throws `StoreOpenError` when any of that fails.
   *
   * @example
   * const store = SqliteStore.open({ path: 'data/petstore.db', open: await loadSqlite(), log })
   */
  static open({
    path,
    open,
    log,
    clock = systemClock,
    lockWaitMs = DEFAULT_LOCK_WAIT_MS,
    lockReleases,
  }: SqliteStoreOptions): SqliteStore {
    const file = resolve(path);
    let db: SqliteConnection | undefined;
    try {
      const created = prepareDataFile(file, log);
      db = open(file);
      db.exec(`PRAGMA busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
      const journal = column(db.prepare('PRAGMA journal_mode = WAL').get(), 'journal_mode');
      db.exec('PRAGMA synchronous = FULL');
      const { migrated, version } = migrate(db, file);
      restrictCreated(created);
      const sqliteVersion = column(db.prepare('SELECT sqlite_version() AS v').get(), 'v');
      db.exec('PRAGMA busy_timeout = 0');
      if (journal !== 'wal')
        log.warn('SQLite could not use WAL; the rollback journal is slower but as durable', { journal });
      log.info('store opened', {
        backend: 'sqlite',
        driver: db.driver,
        path: file,
        sqliteVersion,
        journal,
        synchronous: 'FULL',
        schemaVersion: SCHEMA_VERSION,
        ...(migrated.length > 0 ? { migrated } : {}),
      });
      if (version > SCHEMA_VERSION) {
        log.warn('serving a newer schema, which a later petstore left readable by this one', {
          databaseSchemaVersion: version,
          schemaVersion: SCHEMA_VERSION,
        });
      }
      return new SqliteStore(db, clock, lockWaitMs, lockReleases);
    } catch (err) {
      db?.close();
      if (err instanceof StoreOpenError) throw err;
      throw new StoreOpenError(`--data ${file}: cannot open the SQLite database: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  create(pet: NewPet): Promise<StoredPet> {
    return this.#enqueue(STORE_CALLS.create.doing, () => this.#insert(pet));
  }

  createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult> {
    return this.#enqueue(STORE_CALLS.createOnce.doing, () => this.#insertOnce(pet, once), once.now);
  }

  async get(id: number): Promise<StoredPet | undefined> {
    return this.#retryWhileBusy(STORE_CALLS.get.doing, () => {
      return this.#query(STORE_CALLS.get.doing, () => this.#petRow(id));
    });
  }

  update(id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<UpdateResult> {
    return this.#enqueue(STORE_CALLS.update.doing, () => this.#updateInTransaction(id, patch, ifMatch));
  }

  remove(id: number, ifMatch?: IfMatch): Promise<RemoveResult> {
    return this.#enqueue(STORE_CALLS.remove.doing, () => this.#removeInTransaction(id, ifMatch));
  }

  async list({ limit, status, after = 0 }: ListOptions): Promise<readonly Pet[]> {
    return this.#retryWhileBusy(STORE_CALLS.list.doing, () => {
      const rows = this.#query(STORE_CALLS.list.doing, () =>
        status === undefined
          ? this.#db.prepare(SELECT_PAGE).all(after, limit)
          : this.#db.prepare(SELECT_PAGE_BY_STATUS).all(status, after, limit),
      );
      return rows.map(petFromRow);
    });
  }

  async inventory(): Promise<Inventory> {
    return this.#retryWhileBusy(STORE_CALLS.inventory.doing, () =>
      inventoryFromRows(this.#query(STORE_CALLS.inventory.doing, () => this.#db.prepare(COUNT_BY_STATUS).all())),
    );
  }

  placeOrder(place: PlaceOrder): Promise<PlaceOrderResult> {
    return this.#enqueue(STORE_CALLS.placeOrder.doing, () => this.#placeInTransaction(place));
  }

  async getOrder(owner: string, id: string, now: number): Promise<StoredOrder | undefined> {
    await this.expireDueOrders(now);
    return this.#retryWhileBusy(STORE_CALLS.getOrder.doing, () => {
      const row = this.#query(STORE_CALLS.getOrder.doing, () => this.#db.prepare(ORDER_OF).get(id, owner));
      return row === undefined ? undefined : orderFromRow(row);
    });
  }

  async listOrders(
    owner: string,
    { limit, status, after = '' }: OrderListOptions,
    now: number,
  ): Promise<StoredOrder[]> {
    await this.expireDueOrders(now);
    return this.#retryWhileBusy(STORE_CALLS.listOrders.doing, () =>
      this.#query(STORE_CALLS.listOrders.doing, () =>
        status === undefined
          ? this.#db.prepare(ORDER_PAGE).all(owner, after, limit)
          : this.#db.prepare(ORDER_PAGE_BY_STATUS).all(owner, after, status, limit),
      ).map(orderFromRow),
    );
  }

  closeOrder(owner: string, id: string, to: Closing, now: number): Promise<CloseOrderResult> {
    return this.#enqueue(STORE_CALLS.closeOrder.doing, () => {
      this.#expireDueOrdersIn(now);
      const closedRow = this.#db.prepare(CLOSE_ORDER).get(to, id, owner);
      if (closedRow !== undefined) {
        const closed = orderFromRow(closedRow);
        this.#releasePet(closed.petId, petStatusOnClose(to));
        return { outcome: 'closed', order: closed };
      }
      const row = this.#db.prepare(ORDER_OF).get(id, owner);
      if (row === undefined) return { outcome: 'not_found' };
      const order = orderFromRow(row);
      return { outcome: order.status === to ? 'unchanged' : 'order_closed', order };
    });
  }

  /** Expires the orders whose hold is over, in a write batch, when a read shows there are some. */
  async expireDueOrders(now: number): Promise<number> {
    const due = this.#retryWhileBusy(STORE_CALLS.expireDueOrders.doing, () =>
      this.#query(STORE_CALLS.expireDueOrders.doing, () => this.#db.prepare(ANY_ORDER_DUE).get(now)),
    );
    if (due === undefined) {
      // Another process may have expired them: the earliest hold end is what the file says.
      this.#earliestHoldEnd = this.#readEarliestHoldEnd();
      return 0;
    }
    return await this.#enqueue(STORE_CALLS.expireDueOrders.doing, () => this.#expireDueOrdersIn(now));
  }

  async retireOwner(owner: string): Promise<void> {
    await this.#enqueue(STORE_CALLS.retireOwner.doing, () => {
      for (const row of this.#db.prepare(CANCEL_OWNED).all(owner)) {
        this.#releasePet(Number(column(row, 'pet_id')), 'available');
      }
      this.#db.prepare(RETIRE_OWNER).get(retiredOwner(owner), owner);
    });
  }

  async adoptOwners(moves: readonly OwnerMove[]): Promise<void> {
    if (moves.length === 0) return;
    await this.#enqueue(STORE_CALLS.adoptOwners.doing, () => {
      for (const { from, to } of moves) {
        this.#db.prepare(ADOPT_ORDERS).get(to, from);
        for (const op of KEYED_CREATES) {
          this.#db.prepare(ADOPT_KEYS).get(idempotencyKeySpace(to, op), idempotencyKeySpace(from, op));
        }
      }
    });
  }

  /**
   * Past the earliest hold end, starts expiring the orders due, one run at a time, and returns
   * that run. The earliest hold end counts the orders another process of the file placed (another
   * worker): its commits are seen through `data_version`, within `DATA_VERSION_TTL_MS`.
   */
  startDueOrderExpiry(): Promise<void> | undefined {
    try {
      this.#noticeOtherWriters('read data_version');
    } catch {
      // The file cannot be read. Nothing more is done about it here: the expiry below writes to
      // the same file, so it fails the same way.
    }
    if (this.#clock.now() < this.#earliestHoldEnd) return undefined;
    // The run never rejects: why a failed run does not fail the read is at `startDueOrderExpiry`
    // of `DataStore` (src/store/store.ts).
    this.#expiring ??= this.expireDueOrders(this.#clock.now())
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        this.#expiring = undefined;
      });
    return this.#expiring;
  }

  /**
   * The count of changes of pets: this process's commits, and another's (`PRAGMA data_version`,
   * read at most every `DATA_VERSION_TTL_MS`). Undefined when the file cannot be read, or a hold
   * ran out and its expiry is not yet done: nothing is then memoised by it.
   */
  changeCount(): number | undefined {
    try {
      // A hold that ran out changes pets: nothing is memoised or served till its expiry is counted.
      if (this.#clock.now() >= this.#earliestHoldEnd) return undefined;
      this.#noticeOtherWriters('read data_version');
      return this.#changes.count();
    } catch {
      // The file cannot be read, so what changed is unknown.
      return undefined;
    }
  }

  readsUnchangedSince(since: number, reads: PetSet | undefined): boolean {
    return this.#changes.readsUnchangedSince(since, reads);
  }

  async ping(): Promise<void> {
    this.#query('ping', () => this.#db.prepare('SELECT 1 AS ok').get());
  }

  /** The keys kept in this file (`--keys store`). */
  keyStore(): KeyStore {
    return new SqliteKeyStore(this.#db, () => !this.#closed);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#commit();
    clearTimeout(this.#retry);
    this.#closed = true;
    for (const p of this.#pending.splice(0)) p.reject(new StoreUnavailableError(`${p.doing}: the store is closed`));
    this.#db.close();
  }

  #enqueue<T>(doing: string, run: () => T, keyExpiryAt?: number): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError(`${doing}: the store is closed`));
    return new Promise<T>((settle, reject) => {
      // The batch hands each write the result its own `run` returned.
      const resolve = settle as (result: unknown) => void;
      const at = this.#clock.now();
      const write: PendingWrite =
        keyExpiryAt === undefined
          ? { doing, run, at, resolve, reject }
          : { doing, run, keyExpiryAt, at, resolve, reject };
      if (this.#pending.push(write) === 1 && this.#retry === undefined) setImmediate(() => this.#commit());
    });
  }

  /**
   * Runs every pending write in one transaction; each promise settles after the COMMIT. While
   * another process holds the write lock, the writes wait and the lock is tried every
   * `BUSY_POLL_MS`, up to `lockWaitMs`. A write that fails by itself fails alone: the others run
   * again in the next batch. A database that cannot serve fails them all.
   */
  #commit(): void {
    this.#retry = undefined;
    this.#dropWaitedOut();
    const batch = this.#pending;
    if (batch.length === 0) return;
    const releases = this.#releases;
    // Read before trying the lock, so that a release in between is not missed.
    const released = releases ? Atomics.load(releases.counter, releases.index) : 0;
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      if (isSqliteBusy(err)) {
        this.#retryWhenReleased(released);
        return;
      }
      this.#pending = [];
      for (const p of batch) p.reject(sqliteError(err, p.doing));
      return;
    }
    this.#pending = [];
    this.#touched = [];
    let results: unknown[];
    let running: PendingWrite | undefined;
    try {
      const keyExpiryAt = batch.find((p) => p.keyExpiryAt !== undefined)?.keyExpiryAt;
      if (keyExpiryAt !== undefined && this.#keyExpiry.due(keyExpiryAt)) {
        this.#db.prepare(DROP_EXPIRED_KEYS).get(keyExpiryAt);
      }
      results = batch.map((p) => {
        running = p;
        return p.run();
      });
      running = undefined;
      this.#db.exec('COMMIT');
    } catch (err) {
      rollback(this.#db);
      this.#lockReleased();
      // An expiry in the batch may have moved the earliest hold end on, and the rollback undid it:
      // until the next expiry reads the file again, every read checks for due orders.
      this.#earliestHoldEnd = Number.NEGATIVE_INFINITY;
      const failed: PendingWrite | undefined = running;
      const error = failed && sqliteError(err, failed.doing);
      if (failed === undefined || error === undefined || error instanceof StoreUnavailableError) {
        for (const p of batch) p.reject(sqliteError(err, p.doing));
        return;
      }
      failed.reject(error);
      this.#pending = batch.filter((p) => p !== failed).concat(this.#pending);
      if (this.#pending.length > 0) setImmediate(() => this.#commit());
      return;
    }
    this.#lockReleased();
    // Counted before any caller hears of its write (src/store/change-counter.ts).
    for (const change of this.#touched) this.#changes.changed(change);
    for (const [i, p] of batch.entries()) p.resolve(results[i]);
  }

  /**
   * The pending writes try the lock again after `BUSY_POLL_MS`, or as soon as another connection
   * of this process ends its write transaction (`lockReleases`), whichever comes first.
   */
  #retryWhenReleased(released: number): void {
    const retry = setTimeout(() => this.#commit(), BUSY_POLL_MS);
    this.#retry = retry;
    const releases = this.#releases;
    if (!releases) return;
    const again = () => {
      if (this.#retry !== retry || this.#closed) return;
      clearTimeout(retry);
      this.#commit();
    };
    const wait = waitAsync(releases.counter, releases.index, released, BUSY_POLL_MS);
    if (!wait.async) setImmediate(again);
    else void wait.value.then((result) => result === 'ok' && again());
  }

  /**
   * This connection's write transaction ended: another connection of this process waiting for the
   * lock may try it.
   */
  #lockReleased(): void {
    const releases = this.#releases;
    if (!releases) return;
    Atomics.add(releases.counter, releases.index, 1);
    Atomics.notify(releases.counter, releases.index);
  }

  /** Rejects the queued writes that waited `lockWaitMs` for the lock: none of them is stored. */
  #dropWaitedOut(): void {
    const first = this.#pending[0];
    if (first === undefined || this.#clock.now() - first.at < this.#lockWaitMs) return;
    const since = this.#clock.now() - this.#lockWaitMs;
    const stillWaiting = this.#pending.filter((p) => p.at > since);
    const why = `the database file stayed locked by another process for ${this.#lockWaitMs} ms; nothing was stored`;
    for (const p of this.#pending) if (p.at <= since) p.reject(new StoreTimeoutError(`${p.doing}: ${why}`));
    this.#pending = stillWaiting;
  }

  /**
   * Runs a read now; if another process holds a lock it needs (SQLite in WAL mode rarely makes
   * a reader wait: recovery, a restarting checkpoint), tries again every `BUSY_POLL_MS`.
   */
  #retryWhileBusy<T>(doing: string, read: () => T): T | Promise<T> {
    try {
      return read();
    } catch (err) {
      if (!isSqliteBusy(err)) throw err;
      return this.#retryLater(doing, read, this.#clock.now());
    }
  }

  async #retryLater<T>(doing: string, read: () => T, since: number): Promise<T> {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, BUSY_POLL_MS));
      try {
        return read();
      } catch (err) {
        if (!isSqliteBusy(err)) throw err;
        if (this.#clock.now() - since >= this.#lockWaitMs) {
          throw new StoreTimeoutError(
            `${doing}: the database file stayed locked by another process for ${this.#lockWaitMs} ms`,
            {
              cause: err,
            },
          );
        }
      }
    }
  }

  #insert(pet: NewPet): StoredPet {
    const stored = storedPetFromRow(this.#db.prepare(INSERT).get(pet.name, pet.categoryId, pet.status));
    this.#touched.push({ ids: [stored.id], members: true });
    return stored;
  }

  /**
   * Inside the batch's transaction: pet `id` leaves `pending` for `status`, if it is pending;
   * counted only then.
   */
  #releasePet(id: number, status: 'available' | 'sold'): void {
    const released = this.#db.prepare(RELEASE_PET).get(status, id);
    if (released !== undefined) this.#touched.push({ ids: [id], statuses: true });
  }

  /**
   * Inside the batch's transaction, which holds the file's write lock: first expires the orders
   * whose hold ran out, so `If-Match` is checked against the version that expiry gave the pet;
   * then reads the pet, checks the patch, and writes it.
   */
  #updateInTransaction(id: number, patch: PetPatch, ifMatch: IfMatch | undefined): UpdateResult {
    this.#expireDueOrdersIn(this.#clock.now());
    const current = this.#petRow(id);
    const plan = planUpdate(current, patch, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    const was = current as StoredPet;
    if (plan.statusChanges && this.#heldByOrder(id)) return { outcome: 'on_order', pet: was };
    if (!plan.changed) return { outcome: 'updated', pet: was };
    const { name, categoryId, status } = plan.next;
    this.#touched.push({ ids: [id], statuses: plan.statusChanges });
    return { outcome: 'updated', pet: storedPetFromRow(this.#db.prepare(UPDATE).get(name, categoryId, status, id)) };
  }

  /** Pet `id` and its version as the file holds it, or undefined when there is none. */
  #petRow(id: number): StoredPet | undefined {
    const row = this.#db.prepare(SELECT_ONE).get(id);
    return row === undefined ? undefined : storedPetFromRow(row);
  }

  /** Inside the batch's transaction, as `#updateInTransaction`. */
  #removeInTransaction(id: number, ifMatch: IfMatch | undefined): RemoveResult {
    this.#expireDueOrdersIn(this.#clock.now());
    const current = this.#petRow(id);
    const plan = planRemove(current, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    if (this.#heldByOrder(id)) return { outcome: 'on_order', pet: current as StoredPet };
    this.#db.prepare(DELETE).get(id);
    this.#touched.push({ ids: [id], members: true });
    return { outcome: 'removed' };
  }

  /**
   * Whether an open order holds pet `id` (read in the write transaction): then its status
   * cannot change and it cannot be removed. The orders kept in this file answer it: a pet with
   * no placed order is not held. The caller has expired the holds that ran out.
   */
  #heldByOrder(id: number): boolean {
    const held = this.#db.prepare(PLACED_FOR_PET).get(id);
    return held !== undefined;
  }

  /** In the batch's transaction: the key's order, a conflict, or the pet held and a new order. */
  #placeInTransaction({ owner, petId, holdMs, now, idempotencyKey }: PlaceOrder): PlaceOrderResult {
    this.#expireDueOrdersIn(now);
    if (idempotencyKey !== undefined) {
      const seen = this.#db.prepare(ORDER_BY_KEY).get(owner, idempotencyKey);
      if (seen !== undefined) {
        const order = orderFromRow(seen);
        return order.petId === petId ? { outcome: 'replayed', order } : { outcome: 'conflict' };
      }
    }
    const held = this.#db.prepare(HOLD_PET).get(petId);
    if (held === undefined) {
      const pet = this.#db.prepare(PET_STATUS).get(petId);
      return pet === undefined ? { outcome: 'pet_not_found' } : { outcome: 'pet_unavailable' };
    }
    this.#touched.push({ ids: [petId], statuses: true });
    const order: StoredOrder = { id: newOrderId(now), petId, status: 'placed', placedAt: now, holdUntil: now + holdMs };
    this.#db.prepare(INSERT_ORDER).get(order.id, owner, petId, now, order.holdUntil, idempotencyKey ?? null);
    this.#earliestHoldEnd = Math.min(this.#earliestHoldEnd, order.holdUntil);
    return { outcome: 'placed', order };
  }

  /**
   * Inside the batch's transaction: every placed order whose hold is over `expired`, its pet
   * `available`, `order.expired` recorded; then the earliest hold end is read again.
   */
  #expireDueOrdersIn(now: number): number {
    if (now < this.#earliestHoldEnd) return 0;
    const rows = this.#db.prepare(EXPIRE_DUE).all(now);
    for (const row of rows) {
      const order = orderFromRow(row);
      this.#releasePet(order.petId, 'available');
      const event = orderExpiredEvent(String(column(row, 'owner')), order, now);
      if (event) this.#db.prepare(RECORD).get(event.id, event.consumer, event.type, event.payload, now, now, null);
    }
    this.#earliestHoldEnd = this.#readEarliestHoldEnd();
    return rows.length;
  }

  /** The earliest hold end of a placed order, or +Infinity when none is placed. */
  #readEarliestHoldEnd(): number {
    const at = column(this.#db.prepare(EARLIEST_HOLD_END).get(), 'at');
    return at === null || at === undefined ? Number.POSITIVE_INFINITY : Number(at);
  }

  /** Inside the batch's transaction: the key's first pet, a conflict, or a new pet and its key. */
  #insertOnce(pet: NewPet, once: IdempotentCreate): CreateOnceResult {
    const keySpace = idempotencyKeySpace(once.owner, 'createPet');
    const seen = this.#db.prepare(SELECT_KEY).get(keySpace, once.key, once.now);
    const replayed = seen === undefined ? undefined : replayedPetFromRow(seen);
    if (replayed !== undefined) {
      if (column(seen, 'fingerprint') !== once.fingerprint) return { outcome: 'conflict' };
      return { outcome: 'replayed', pet: replayed };
    }
    const stored = this.#insert(pet);
    this.#db
      .prepare(UPSERT_KEY)
      .get(
        keySpace,
        once.key,
        once.fingerprint,
        stored.id,
        once.now + IDEMPOTENCY_TTL_MS,
        stored.name,
        stored.categoryId,
        stored.status,
        stored.version,
      );
    return { outcome: 'created', pet: stored };
  }

  /**
   * Notices another connection's commits: reads `PRAGMA data_version` again once the last read is
   * `DATA_VERSION_TTL_MS` old, and when it moved counts a change of every pet and reads the
   * earliest hold end again.
   */
  #noticeOtherWriters(doing: string): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    const now = this.#clock.now();
    if (now - this.#dataVersionReadAt >= DATA_VERSION_TTL_MS || now < this.#dataVersionReadAt) {
      const version = column(
        this.#query(doing, () => this.#db.prepare(DATA_VERSION).get()),
        'data_version',
      );
      if (version !== this.#dataVersionSeen) {
        this.#changes.changed(EVERY_PET);
        // Another process committed: it may have placed or expired orders.
        this.#earliestHoldEnd = this.#readEarliestHoldEnd();
      }
      this.#dataVersionSeen = version;
      this.#dataVersionReadAt = now;
    }
  }

  /** Runs `query` on the open store, its SQLite error made the store's (`sqliteError`). */
  #query<T>(doing: string, query: () => T): T {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    try {
      return query();
    } catch (err) {
      throw sqliteError(err, doing);
    }
  }
}
