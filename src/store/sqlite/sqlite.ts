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

/** How long opening the file and migrating it wait for another process that holds the lock. */
const OPEN_BUSY_TIMEOUT_MS = 5_000;
/**
 * After opening, SQLite's own busy wait is off, because it sleeps inside the call and would block
 * the event loop and every other request. A statement that finds the file locked by another
 * process is retried every `BUSY_POLL_MS` instead, up to `lockWaitMs`.
 */
const BUSY_POLL_MS = 10;
/** The default of `lockWaitMs`. */
const DEFAULT_LOCK_WAIT_MS = 5_000;

const INSERT = `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${STORED_PET_COLUMNS}`;
const SELECT_ONE = `SELECT ${STORED_PET_COLUMNS} FROM pets WHERE id = ?`;
const UPDATE = `UPDATE pets SET name = ?, category_id = ?, status = ?, version = version + 1 WHERE id = ?
  RETURNING ${STORED_PET_COLUMNS}`;
/** AUTOINCREMENT (migration `pets`) never reuses a removed pet's id. */
const DELETE = 'DELETE FROM pets WHERE id = ?';
const SELECT_PAGE = `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`;
const SELECT_PAGE_BY_STATUS = `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`;
/** Changes when another connection commits, so `changeCount()` sees other processes' writes. */
const DATA_VERSION = 'PRAGMA data_version';
/**
 * How long a `data_version` read is trusted. The statement costs more than a read by id
 * (bench/README.md#measured-costs-behind-the-codes-choices), so it runs at most this often. This
 * process's own commits move `changeCount()` at once; only another process's commit (a hand edit
 * with `sqlite3`, or a second instance, which docs/operations.md advises against) can go unseen,
 * for at most this long.
 */
export const DATA_VERSION_TTL_MS = 100;
/**
 * The unexpired key and the pet its create answered (`REPLAYED_PET`). The `scope` column holds
 * the key space (`idempotencyKeySpace` of the owner and createPet).
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
/** Conditional write: only an available pet becomes pending, so one order holds it. */
const HOLD_PET =
  "UPDATE pets SET status = 'pending', version = version + 1 WHERE id = ? AND status = 'available' RETURNING id";
const PET_STATUS = 'SELECT status FROM pets WHERE id = ?';
const INSERT_ORDER = `INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until, idempotency_key)
  VALUES (?, ?, ?, 'placed', ?, ?, ?)`;
/** Closes the owner's order only if it is placed; no row back means `ORDER_OF` must tell why. */
const CLOSE_ORDER = `UPDATE orders SET status = ? WHERE id = ? AND owner = ? AND status = 'placed'
  RETURNING ${ORDER_COLUMNS}`;
/** Moves a pet an order held from pending to `status` (sold, or available again). */
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
   * The store's clock, for `DATA_VERSION_TTL_MS`, the lock wait and whether a hold has ended.
   * Order calls and keyed creates get their `now` from the app instead. A server uses the system
   * clock for both, so they agree; tests pass the same fake clock to the app and the store.
   */
  readonly clock?: Clock;
  /**
   * How long a call waits for another process that holds the database's lock before it fails
   * with `StoreTimeoutError`; a write that times out this way is not stored.
   */
  readonly lockWaitMs?: number;
  /**
   * A shared-memory counter that every worker's connection increments when its write transaction
   * ends. A write that finds the file locked retries as soon as it moves, rather than after
   * `BUSY_POLL_MS`.
   */
  readonly lockReleases?: LockReleases;
}

/** `Atomics.waitAsync` (ES2024), used only with `lockReleases`, which the workers (Bun) pass. */
const { waitAsync } = Atomics as unknown as {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeoutMs: number,
  ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
};

/** A counter in shared memory (`Int32Array`, index), incremented when a write transaction ends. */
export interface LockReleases {
  readonly counter: Int32Array;
  readonly index: number;
}

/** A write queued for the next batch: `run` runs inside its transaction; settled after COMMIT. */
interface PendingWrite {
  /** What the write does, for its error's message: `change pet`, `place order`. */
  readonly doing: string;
  readonly run: () => unknown;
  /** For a keyed create: the batch first deletes the keys expired by this time. */
  readonly keyExpiryAt?: number;
  /** When it was queued (epoch ms, the store's clock); dropped after waiting `lockWaitMs`. */
  readonly at: number;
  resolve(result: unknown): void;
  reject(err: StoreError): void;
}

/**
 * The store in a SQLite file (pets, orders, idempotency keys, API keys, the webhook outbox), with
 * a WAL journal and `synchronous=FULL`, so a committed write survives a process or machine crash.
 *
 * Writes are group-committed: the writes that arrive while the event loop is busy share one
 * transaction and resolve after its COMMIT, so durability costs one sync per batch, not per
 * request. Keyed creates and outbox events join the same batches. A key is looked up and stored
 * inside the batch's write transaction, so a second create with the same key finds the first.
 */
export class SqliteStore implements DataStore, WithKeyStore {
  readonly #db: SqliteConnection;
  readonly #keyExpiry = new KeyExpirySchedule();
  /**
   * Counts this process's pet changes once committed, and counts a move of `data_version`
   * (another process's commit) as a change of every pet.
   */
  readonly #changes = new ChangeCounter();
  /** What the running batch changes; counted once it commits. */
  #touched: PetSet[] = [];
  readonly #clock: Clock;
  readonly #lockWaitMs: number;
  /** `PRAGMA data_version` as last read; another connection's commit moves it. */
  #dataVersionSeen: unknown;
  #dataVersionReadAt = Number.NEGATIVE_INFINITY;
  #pending: PendingWrite[] = [];
  /** Set while the pending writes wait for another process to release the lock. */
  #retry: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /**
   * When the earliest hold of a placed order ends. From then on an order may be due, and nothing
   * is memoised until the due orders are expired.
   */
  #earliestHoldEnd: number;
  /** The expiry run `startDueOrderExpiry()` started, while it runs. */
  #expiring: Promise<void> | undefined;
  /** The webhook outbox in this file; its writes share the pets' batches. */
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
   * Opens the file (creating it when missing), sets the pragmas and applies the migrations;
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

  /** Expires the orders whose hold is over, in a write batch, if a read first finds any. */
  async expireDueOrders(now: number): Promise<number> {
    const due = this.#retryWhileBusy(STORE_CALLS.expireDueOrders.doing, () =>
      this.#query(STORE_CALLS.expireDueOrders.doing, () => this.#db.prepare(ANY_ORDER_DUE).get(now)),
    );
    if (due === undefined) {
      // Another process may have expired them: re-read the earliest hold end from the file.
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
   * Once the earliest hold has ended, starts expiring the due orders, one run at a time, and
   * returns that run. The earliest hold end includes orders placed by another process on the file
   * (another worker), seen through `data_version` within `DATA_VERSION_TTL_MS`.
   */
  startDueOrderExpiry(): Promise<void> | undefined {
    try {
      this.#noticeOtherWriters('read data_version');
    } catch {
      // The file cannot be read. Ignore it here: the expiry below uses the same file and fails
      // the same way.
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
   * The change count: this process's commits, and other processes' (`PRAGMA data_version`, read
   * at most every `DATA_VERSION_TTL_MS`). Undefined, so nothing is memoised, when the file cannot
   * be read or a hold has ended and its expiry is not yet done.
   */
  changeCount(): number | undefined {
    try {
      // An ended hold is about to change pets: memoise nothing until its expiry is counted.
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

  /**
   * Async though it awaits nothing, so a failed query (the store closed, the file unreadable)
   * rejects, as `DataStore.ping` says, rather than throwing at its caller.
   */
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
      // The batch resolves each write with what its own `run` returned.
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
   * another process holds the write lock, the writes wait and retry every `BUSY_POLL_MS`, up to
   * `lockWaitMs`. A write that fails on its own is rejected alone and the others run again in the
   * next batch; a database that cannot serve rejects them all.
   */
  #commit(): void {
    this.#retry = undefined;
    this.#dropWaitedOut();
    const batch = this.#pending;
    if (batch.length === 0) return;
    const releases = this.#releases;
    // Read before trying the lock, so a release in between is not missed.
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
      // An expiry in the batch may have moved the earliest hold end later, and the rollback undid
      // that expiry: until the next expiry re-reads the file, every read checks for due orders.
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
    // Count the changes before any caller sees its result (src/store/change-counter.ts).
    for (const change of this.#touched) this.#changes.changed(change);
    for (const [i, p] of batch.entries()) p.resolve(results[i]);
  }

  /**
   * Retries the pending writes after `BUSY_POLL_MS`, or as soon as another worker's connection
   * ends its write transaction (`lockReleases`), whichever comes first.
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

  /** Call when this connection's write transaction ends, to wake other workers' waiting writes. */
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
   * Runs a read now; if another process holds a lock it needs (rare in WAL mode: recovery, a
   * restarting checkpoint), retries every `BUSY_POLL_MS`, up to `lockWaitMs`.
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

  /** Inside the batch's transaction: moves pet `id` from pending to `status`, counted if it did. */
  #releasePet(id: number, status: 'available' | 'sold'): void {
    const released = this.#db.prepare(RELEASE_PET).get(status, id);
    if (released !== undefined) this.#touched.push({ ids: [id], statuses: true });
  }

  /**
   * Inside the batch's transaction (which holds the write lock): expires the ended holds first,
   * so `If-Match` is checked against the version the expiry gave the pet; then reads the pet,
   * checks the patch and writes it.
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

  /** Pet `id` with its version, or undefined when there is none. */
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
   * Whether a placed order holds pet `id`; if so, its status cannot change and it cannot be
   * removed. Call it in the write transaction, after expiring the ended holds.
   */
  #heldByOrder(id: number): boolean {
    const held = this.#db.prepare(PLACED_FOR_PET).get(id);
    return held !== undefined;
  }

  /**
   * In the batch's transaction: the key's earlier order (`replayed`) or a `conflict`, else a new
   * order (`placed`), or `pet_not_found`, or `pet_unavailable` when the pet is not `available`.
   */
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
   * Inside the batch's transaction: expires every placed order whose hold is over, makes its pet
   * available and records `order.expired`; then re-reads the earliest hold end.
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

  /** When the earliest hold of a placed order ends, or +Infinity when none is placed. */
  #readEarliestHoldEnd(): number {
    const at = column(this.#db.prepare(EARLIEST_HOLD_END).get(), 'at');
    return at === null || at === undefined ? Number.POSITIVE_INFINITY : Number(at);
  }

  /** Inside the batch's transaction: the key's earlier pet, a conflict, or a new pet and key. */
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
   * Picks up other connections' commits: once the last read is `DATA_VERSION_TTL_MS` old, re-reads
   * `PRAGMA data_version`; if it moved, counts a change of every pet and re-reads the earliest hold
   * end. Throws when the store is closed or the file cannot be read.
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
        // Another process committed; it may have placed or expired orders.
        this.#earliestHoldEnd = this.#readEarliestHoldEnd();
      }
      this.#dataVersionSeen = version;
      this.#dataVersionReadAt = now;
    }
  }

  /** Runs `query` on the open store, turning a SQLite error into a StoreError (`sqliteError`). */
  #query<T>(doing: string, query: () => T): T {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    try {
      return query();
    } catch (err) {
      throw sqliteError(err, doing);
    }
  }
}
