// The PostgreSQL backend (--data with a PostgreSQL URL): PostgresStore keeps pets, orders,
// Idempotency-Keys and the webhook outbox in one database that every instance of a fleet shares,
// each write durable before it is answered.
import postgres from 'postgres';
import { type Closing, petStatusOnClose, type StoredOrder } from '../../core/order-records.ts';
import type { Inventory, NewPet, Pet, PetPatch, StoredPet } from '../../core/pet-records.ts';
import type { IfMatch } from '../../core/preconditions.ts';
import type { PetSet } from '../../core/reply.ts';
import type { Logger } from '../../log.ts';
import { peerText } from '../../redact.ts';
import { EVERY_PET, NO_PET, type PetChange } from '../change-counter.ts';
import { planRemove, planUpdate } from '../change-rules.ts';
import { IDEMPOTENCY_TTL_MS, idempotencyKeySpace, KEYED_CREATES, KeyExpirySchedule } from '../idempotency.ts';
import type { KeyStore, WithKeyStore } from '../key-store.ts';
import { newOrderId, ORDER_COLUMNS, orderExpiredEvent, orderFromRow, retiredOwner } from '../order-rows.ts';
import type { Outbox } from '../outbox.ts';
import { SCHEMA_VERSION } from '../sql/migrations.ts';
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
import { StoreOpenError, StoreTimeoutError, StoreUnavailableError } from '../store-error.ts';
import { DEFAULT_STORE_TIMEOUT_MS } from '../wrappers/bound-and-traced.ts';
import { PostgresKeyStore } from './key-store-postgres.ts';
import { ANNOUNCES_SETTING, announce, HEARTBEAT_LOCK_WAIT_MS, PET_VERSIONS, PetChanges } from './postgres-changes.ts';
import { postgresError } from './postgres-errors.ts';
import { migratePostgres } from './postgres-migrate.ts';
import { OUTBOX, postgresOutbox } from './postgres-outbox.ts';
import { transaction } from './postgres-transaction.ts';
import { describeData, POOL_SIZE } from './postgres-url.ts';

/** Now on the database's clock, in epoch ms: every instance holds by it, whatever its own clock. */
const NOW_MS = 'floor(extract(epoch FROM now()) * 1000)::bigint';
/**
 * `sql.unsafe`'s option for a frequent statement: prepared once per connection, then one round
 * trip per call. Without it, each call first spends a round trip describing the statement.
 */
const PREPARED = { prepare: true };
/** A pet's next version: every change takes one from the sequence. */
const NEXT_VERSION = `nextval('${PET_VERSIONS}')`;

/**
 * Pet $1 and whether an open order holds it: `hold_due` is null when none does, else whether the
 * hold has ended. The partial unique index `orders_placed_pet` allows one open order per pet.
 */
export const PET_AND_HOLD = `SELECT ${STORED_PET_COLUMNS},
  (SELECT hold_until <= ${NOW_MS} FROM orders WHERE pet_id = $1 AND status = 'placed') AS hold_due
  FROM pets WHERE id = $1`;
/** Pet $4 changed to name $1, category $2, status $3, only if its version is still $5. */
export const UPDATE_IF_VERSION = `UPDATE pets SET name = $1, category_id = $2, status = $3, version = ${NEXT_VERSION}
  WHERE id = $4 AND version = $5 RETURNING ${STORED_PET_COLUMNS}`;
/**
 * Sets pet $3's name to $1 and category to $2 (null keeps it), only if its version is $4 (null:
 * any), the values differ, and no hold on it has ended (that hold must expire first). No row
 * back means one of those failed or the pet is missing; the slower paths then find out which.
 */
export const RENAME_IF_VERSION = `UPDATE pets SET name = coalesce($1::text, name),
    category_id = coalesce($2::bigint, category_id), version = ${NEXT_VERSION}
  WHERE id = $3 AND ($4::bigint IS NULL OR version = $4::bigint)
    AND (name <> coalesce($1::text, name) OR category_id <> coalesce($2::bigint, category_id))
    AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = $3 AND status = 'placed' AND hold_until <= ${NOW_MS})
  RETURNING ${STORED_PET_COLUMNS}`;
/**
 * Places order $2 of owner $3 on pet $1, holding it $4 ms. The pet moves from available to
 * pending by a conditional write, and the order is stored only if it did; concurrent orders wait
 * for the pet's row lock, then find it pending, so a pet is sold once. No row back: the pet is
 * missing or not available.
 */
export const PLACE_IF_AVAILABLE = `WITH held AS (
    UPDATE pets SET status = 'pending', version = ${NEXT_VERSION} WHERE id = $1 AND status = 'available' RETURNING id
  )
  INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until)
  SELECT $2::text, $3::text, id, 'placed', ${NOW_MS}, ${NOW_MS} + $4::bigint FROM held
  RETURNING ${ORDER_COLUMNS}`;
/**
 * Closes order $2 of owner $3 as $1 and moves its pet from pending to $4, only if the order is
 * placed and its hold has not ended. It locks the order's row before the pet's, the order every
 * writer uses. No row back: the order is missing, closed, or due to expire.
 */
export const CLOSE_IF_PLACED = `WITH closed AS (
    UPDATE orders SET status = $1 WHERE id = $2 AND owner = $3 AND status = 'placed' AND hold_until > ${NOW_MS}
    RETURNING ${ORDER_COLUMNS}
  ), released AS (
    UPDATE pets SET status = $4, version = ${NEXT_VERSION} WHERE id = (SELECT pet_id FROM closed) AND status = 'pending'
  )
  SELECT ${ORDER_COLUMNS} FROM closed`;

/** The listening connection's `application_name`, as `pg_stat_activity` shows it. */
export const LISTENER_NAME = 'petstore listener';
/**
 * Seconds before a connection that failed may be tried again. postgres.js's default grows with
 * every failure up to 20 s, which would leave a returned server unused for seconds after an
 * outage; while the server is unreachable, `BoundAndTracedStore` already limits the attempts to one
 * probe at a time.
 */
const RECONNECT_DELAY_SECONDS = 0.1;
/**
 * The store is closed after the HTTP server has finished its requests, so no query is left to
 * wait for; the bound is for postgres.js's end(), which can hang after a lost connection
 * (porsager/postgres#1097).
 */
const CLOSE_TIMEOUT_SECONDS = 1;
/**
 * How long connections may keep timing out before the pool is replaced. After a server stops
 * mid-startup, postgres.js can keep a pool whose every reconnect times out even once the server
 * is healthy (porsager/postgres#1193); a fresh pool connects at once. A server that really is
 * unreachable costs one new pool per period, and the old one is ended.
 */
const RENEW_AFTER_TIMEOUTS_MS = 5_000;
/** SQLSTATE unique_violation. */
const UNIQUE_VIOLATION = '23505';
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database?sslmode=...` */
  readonly url: string;
  readonly log: Logger;
  /**
   * `--store-timeout` in ms: a connection attempt gives up after it, and the server cancels a
   * statement that runs longer (`statement_timeout`), so a query stuck behind a lock frees its
   * pool connection instead of holding it.
   */
  readonly timeoutMs?: number;
  /** Connections of the pool; default `POOL_SIZE`, a worker's share of it with `--workers`. */
  readonly poolSize?: number;
}

/**
 * Pets in PostgreSQL, shared by every instance pointed at the same database. Each create is one
 * autocommit INSERT with `synchronous_commit=on` forced for the session, so it resolves only
 * after the server has flushed the commit to its WAL (and to synchronous standbys if any).
 * A create with an `Idempotency-Key` is one transaction holding an advisory lock on the key,
 * so concurrent creates with the same key, from any instance, take turns.
 */
export class PostgresStore implements DataStore, WithKeyStore {
  /** The pool pets and the outbox use now; `#renew` replaces it. */
  #pool: postgres.Sql;
  readonly #newPool: () => postgres.Sql;
  /** The pool given to the key store, which keeps it, so `#timedOut` never ends it. */
  #keptPool: postgres.Sql | undefined;
  /** When connections began timing out with no success since; undefined otherwise. */
  #timingOutSince: number | undefined;
  /** Every pet write of the fleet, heard through LISTEN; `changeCount()` reads it. */
  readonly #changes: PetChanges;
  readonly #keyExpiry = new KeyExpirySchedule();
  /** The webhook outbox in this database, shared by every instance; its writes are durable. */
  readonly outbox: Outbox = postgresOutbox({
    sql: () => this.#sql,
    query: (doing, run) => this.#query(doing, run),
    write: (doing, run) => this.#write(doing, run),
  });
  readonly #timeoutMs: number;
  /**
   * When the earliest hold of a placed order ends, on this instance's clock. Every sweep reads it
   * and every order placed here lowers it. From then on nothing is memoised until the due orders
   * are expired.
   */
  #earliestHoldEnd = Number.NEGATIVE_INFINITY;
  #expiring: Promise<void> | undefined;

  private constructor(newPool: () => postgres.Sql, sql: postgres.Sql, changes: PetChanges, timeoutMs: number) {
    this.#newPool = newPool;
    this.#pool = sql;
    this.#changes = changes;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Connects, applies the migrations under an advisory lock (instances starting together take
   * turns) and checks the server's durability settings; throws `StoreOpenError` on failure.
   *
   * @example
   * const url = 'postgres://petstore@127.0.0.1:5432/petstore'
   * const store = await PostgresStore.open({ url, log })
   */
  static async open({
    url,
    log,
    timeoutMs = DEFAULT_STORE_TIMEOUT_MS,
    poolSize = POOL_SIZE,
  }: PostgresStoreOptions): Promise<PostgresStore> {
    const where = `--data ${describeData(url)}`;
    /** The store once made, so announcements use its current pool. */
    let announcing: PostgresStore | undefined;
    const options = {
      connect_timeout: timeoutMs / 1_000,
      backoff: () => RECONNECT_DELAY_SECONDS,
      fetch_types: false,
      onnotice: (notice: postgres.Notice) => log.debug('postgres notice', { message: peerText(notice.message) }),
    };
    const newPool = () =>
      postgres(url, {
        ...options,
        max: poolSize,
        // Force synchronous_commit on: a server configured with it off acknowledges commits it can
        // lose. ANNOUNCES_SETTING keeps the trigger quiet: these writes are announced after commit.
        connection: {
          application_name: 'petstore',
          synchronous_commit: 'on',
          statement_timeout: timeoutMs,
          [ANNOUNCES_SETTING]: 'on',
        },
        // int8 columns (id, category_id) as numbers: the schema bounds them to 2^53 - 1.
        types: { bigint: { to: 20, from: [20], serialize: (n: number) => String(n), parse: (s: string) => Number(s) } },
      });
    let sql: postgres.Sql;
    try {
      sql = newPool();
    } catch (err) {
      throw new StoreOpenError(`${where}: ${peerText(err)}`, { cause: err });
    }
    try {
      // Migrate on a connection of its own, so session settings and locks stay off the pool.
      const migrator = postgres(url, { ...options, max: 1, connection: { application_name: 'petstore migrate' } });
      const { migrated, version } = await migratePostgres(migrator, where, {
        retrying: (m, attempt) =>
          log.warn('a migration waits for a lock held by others; retrying', { migration: m.version, attempt }),
      }).finally(() => migrator.end({ timeout: 5 }));
      if (version > SCHEMA_VERSION) {
        log.warn('serving a newer schema, which a later petstore left readable by this one', {
          databaseSchemaVersion: version,
          schemaVersion: SCHEMA_VERSION,
        });
      }
      const [settings] =
        await sql`SELECT current_setting('fsync') AS fsync, current_setting('server_version') AS version`;
      if (column(settings, 'fsync') !== 'on') {
        log.warn('PostgreSQL runs with fsync=off: a server crash can lose acknowledged pets', {
          data: describeData(url),
        });
      }
      log.info('store opened', {
        backend: 'postgres',
        data: describeData(url),
        serverVersion: column(settings, 'version'),
        synchronousCommit: 'on',
        schemaVersion: SCHEMA_VERSION,
        ...(migrated.length > 0 ? { migrated } : {}),
      });
      // The listener gets its own connection, never closed for idleness or age: a pooled one
      // would come and go, and its LISTEN with it.
      const changes = new PetChanges(
        (handlers) =>
          postgres(url, {
            ...options,
            ...handlers,
            max: 1,
            idle_timeout: 0,
            max_lifetime: null,
            connection: {
              application_name: LISTENER_NAME,
              statement_timeout: timeoutMs,
              lock_timeout: HEARTBEAT_LOCK_WAIT_MS,
            },
          }),
        (payload) => announce(announcing ? announcing.#sql : sql, payload),
        log,
      );
      await changes.start();
      const store = new PostgresStore(newPool, sql, changes, timeoutMs);
      await store.#readEarliestHoldEnd();
      announcing = store;
      return store;
    } catch (err) {
      await sql.end({ timeout: 0 }).catch(() => {});
      if (err instanceof StoreOpenError) throw err;
      // A server that is down or unreachable is not a configuration error: exit 1, so a
      // supervisor restarts the process until the database is up (exit 2 is never restarted).
      if (postgresError(err, where) instanceof StoreUnavailableError) {
        throw new StoreUnavailableError(`${where}: cannot reach the PostgreSQL server: ${peerText(err)}`, {
          cause: err,
        });
      }
      throw new StoreOpenError(`${where}: cannot open the PostgreSQL database: ${peerText(err)}`, {
        cause: err,
      });
    }
  }

  async create(pet: NewPet): Promise<StoredPet> {
    const rows = await this.#changing(
      STORE_CALLS.create.doing,
      (rows) => ({ ids: rows.map((row) => Number(column(row, 'id'))), members: true }),
      () => this.#sql`
        INSERT INTO pets (name, category_id, status) VALUES (${pet.name}, ${pet.categoryId}, ${pet.status})
        RETURNING ${this.#sql.unsafe(STORED_PET_COLUMNS)}`,
    );
    return storedPetFromRow(rows[0]);
  }

  async createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult> {
    const { key, fingerprint, now } = once;
    const keySpace = idempotencyKeySpace(once.owner, 'createPet');
    const started = performance.now();
    const dropExpiredKeys = this.#keyExpiry.due(now);
    return this.#changing(
      STORE_CALLS.createOnce.doing,
      (result) => (result.outcome === 'created' ? { ids: [result.pet.id], members: true } : NO_PET),
      () =>
        transaction(this.#sql, async (tx): Promise<CreateOnceResult> => {
          // Lock on a 64-bit hash of the key; a collision only makes two keys wait for each other.
          await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`${keySpace}\n${key}`}, 0))`;
          // Past the time bound the caller has had its 503, "outcome unknown". A create that gets
          // the lock only after that stores nothing, so the real outcome is "not stored".
          if (performance.now() - started >= this.#timeoutMs) {
            throw new StoreTimeoutError(`store pet: no turn within ${this.#timeoutMs} ms; nothing was stored`);
          }
          if (dropExpiredKeys) await tx`DELETE FROM idempotency_keys WHERE expires_at <= ${now}`;
          const [seen] = await tx`
          SELECT k.fingerprint, ${tx.unsafe(REPLAYED_PET)}
          FROM idempotency_keys k LEFT JOIN pets p ON p.id = k.pet_id
          WHERE k.scope = ${keySpace} AND k.idempotency_key = ${key} AND k.expires_at > ${now}`;
          const replayed = seen ? replayedPetFromRow(seen) : undefined;
          if (replayed) {
            if (column(seen, 'fingerprint') !== fingerprint) return { outcome: 'conflict' };
            return { outcome: 'replayed', pet: replayed };
          }
          const [row] = await tx`
          INSERT INTO pets (name, category_id, status) VALUES (${pet.name}, ${pet.categoryId}, ${pet.status})
          RETURNING ${tx.unsafe(STORED_PET_COLUMNS)}`;
          const stored = storedPetFromRow(row);
          await tx`
          INSERT INTO idempotency_keys
            (scope, idempotency_key, fingerprint, pet_id, expires_at, pet_name, pet_category_id, pet_status, pet_version)
          VALUES (${keySpace}, ${key}, ${fingerprint}, ${stored.id}, ${now + IDEMPOTENCY_TTL_MS},
            ${stored.name}, ${stored.categoryId}, ${stored.status}, ${stored.version})
          ON CONFLICT (scope, idempotency_key) DO UPDATE
          SET fingerprint = excluded.fingerprint, pet_id = excluded.pet_id, expires_at = excluded.expires_at,
            pet_name = excluded.pet_name, pet_category_id = excluded.pet_category_id,
            pet_status = excluded.pet_status, pet_version = excluded.pet_version`;
          return { outcome: 'created', pet: stored };
        }),
    );
  }

  async get(id: number): Promise<StoredPet | undefined> {
    const rows = await this.#query(
      STORE_CALLS.get.doing,
      () => this.#sql`SELECT ${this.#sql.unsafe(STORED_PET_COLUMNS)} FROM pets WHERE id = ${id}`,
    );
    return rows.length === 0 ? undefined : storedPetFromRow(rows[0]);
  }

  /**
   * Tries the fast paths first: a name or category change in one statement (`#renameAtOnce`),
   * then a read and a write conditional on the version read (`#updateAtOnce`). Otherwise one
   * transaction expires the pet's due holds, locks its row, checks it and writes a new version.
   */
  async update(id: number, patch: PetPatch, ifMatch?: IfMatch): Promise<UpdateResult> {
    // Count the status as changed even for a rename: expiring a due hold first may change it.
    return this.#changing(
      STORE_CALLS.update.doing,
      { ids: [id], statuses: true },
      async () =>
        (await this.#renameAtOnce(id, patch, ifMatch)) ??
        (await this.#updateAtOnce(id, patch, ifMatch)) ??
        this.#updateInTransaction(id, patch, ifMatch),
    );
  }

  /**
   * `update` in one statement (`RENAME_IF_VERSION`) when the patch sets only name or category
   * (so no transition or open order to check) and If-Match has at most one version. Returns
   * undefined when nothing was written; the slower paths then tell why.
   */
  async #renameAtOnce(id: number, patch: PetPatch, ifMatch: IfMatch | undefined): Promise<UpdateResult | undefined> {
    if (patch.status !== undefined || (patch.name === undefined && patch.categoryId === undefined)) return undefined;
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch.length !== 1) return undefined;
    const version = ifMatch === undefined || ifMatch === '*' ? null : ifMatch[0];
    const params = [patch.name ?? null, patch.categoryId ?? null, id, version ?? null];
    const [changed] = await this.#sql.unsafe(RENAME_IF_VERSION, params, PREPARED);
    return changed ? { outcome: 'updated', pet: storedPetFromRow(changed) } : undefined;
  }

  /**
   * `update` in two autocommit statements: read the pet and its open order, check them, then
   * write only if the version is unchanged (every pet write and every order placed or closed on
   * it moves the version). Returns undefined when the pet's hold has ended (it must expire first)
   * or the pet changed between the two statements; the transaction then decides.
   */
  async #updateAtOnce(id: number, patch: PetPatch, ifMatch: IfMatch | undefined): Promise<UpdateResult | undefined> {
    const [row] = await this.#sql.unsafe(PET_AND_HOLD, [id], PREPARED);
    const hold = row ? column(row, 'hold_due') : null;
    if (hold === true) return undefined;
    const current = row ? storedPetFromRow(row) : undefined;
    const plan = planUpdate(current, patch, ifMatch);
    if (plan.outcome !== 'apply') return plan;
    const was = current as StoredPet;
    if (plan.statusChanges && hold !== null) return { outcome: 'on_order', pet: was };
    if (!plan.changed) return { outcome: 'updated', pet: was };
    const { name, categoryId, status } = plan.next;
    const [changed] = await this.#sql.unsafe(UPDATE_IF_VERSION, [name, categoryId, status, id, was.version], PREPARED);
    return changed ? { outcome: 'updated', pet: storedPetFromRow(changed) } : undefined;
  }

  /** `update` in one transaction that locks the pet's open order, then the pet. */
  #updateInTransaction(id: number, patch: PetPatch, ifMatch: IfMatch | undefined): Promise<UpdateResult> {
    const cols = this.#sql.unsafe(STORED_PET_COLUMNS);
    return transaction(this.#sql, async (tx): Promise<UpdateResult> => {
      // Expire this pet's ended hold first (order row, then pet row, the lock order every writer
      // uses), so If-Match is checked against the version the expiry gave it.
      await this.#expireDueOrdersIn(tx, id);
      const [row] = await tx`SELECT ${cols} FROM pets WHERE id = ${id} FOR UPDATE`;
      const current = row ? storedPetFromRow(row) : undefined;
      const plan = planUpdate(current, patch, ifMatch);
      if (plan.outcome !== 'apply') return plan;
      const was = current as StoredPet;
      if (plan.statusChanges && (await this.#heldByOrder(tx, id))) return { outcome: 'on_order', pet: was };
      if (!plan.changed) return { outcome: 'updated', pet: was };
      const { name, categoryId, status } = plan.next;
      const [changed] = await tx`
        UPDATE pets SET name = ${name}, category_id = ${categoryId}, status = ${status},
          version = ${tx.unsafe(NEXT_VERSION)} WHERE id = ${id} RETURNING ${cols}`;
      return { outcome: 'updated', pet: storedPetFromRow(changed) };
    });
  }

  /**
   * One transaction, as in `update`. The removal takes a version from the sequence too, so every
   * instance's heartbeat sees it even if its announcement is lost. The identity column never
   * gives out the id again.
   */
  async remove(id: number, ifMatch?: IfMatch): Promise<RemoveResult> {
    const cols = this.#sql.unsafe(STORED_PET_COLUMNS);
    return this.#changing(STORE_CALLS.remove.doing, { ids: [id], members: true }, () =>
      transaction(this.#sql, async (tx): Promise<RemoveResult> => {
        // Expire this pet's ended hold first (order row, then pet row, the lock order every writer
        // uses), so If-Match is checked against the version the expiry gave it.
        await this.#expireDueOrdersIn(tx, id);
        const [row] = await tx`SELECT ${cols} FROM pets WHERE id = ${id} FOR UPDATE`;
        const current = row ? storedPetFromRow(row) : undefined;
        const plan = planRemove(current, ifMatch);
        if (plan.outcome !== 'apply') return plan;
        if (await this.#heldByOrder(tx, id)) return { outcome: 'on_order', pet: current as StoredPet };
        // A removal takes a version too: every write moves the sequence, which is how other
        // instances learn that pets changed (src/store/postgres/postgres-changes.ts).
        await tx`DELETE FROM pets WHERE id = ${id} RETURNING ${tx.unsafe(NEXT_VERSION)}`;
        return { outcome: 'removed' };
      }),
    );
  }

  async list({ limit, status, after = 0 }: ListOptions): Promise<Pet[]> {
    const cols = this.#sql.unsafe(PET_COLUMNS);
    const rows = await this.#query(STORE_CALLS.list.doing, () =>
      status === undefined
        ? this.#sql`SELECT ${cols} FROM pets WHERE id > ${after} ORDER BY id LIMIT ${limit}`
        : this.#sql`SELECT ${cols} FROM pets WHERE status = ${status} AND id > ${after} ORDER BY id LIMIT ${limit}`,
    );
    return rows.map(petFromRow);
  }

  async inventory(): Promise<Inventory> {
    return inventoryFromRows(await this.#query(STORE_CALLS.inventory.doing, () => this.#sql.unsafe(COUNT_BY_STATUS)));
  }

  /**
   * Without an `Idempotency-Key` and with the pet available, one statement
   * (`PLACE_IF_AVAILABLE`). Otherwise one transaction expires the pet's ended hold, looks up the
   * key's order, holds the pet and stores the order.
   */
  placeOrder(place: PlaceOrder): Promise<PlaceOrderResult> {
    const started = performance.now();
    return this.#changing(
      STORE_CALLS.placeOrder.doing,
      { ids: [place.petId], statuses: true },
      async () =>
        (place.idempotencyKey === undefined ? await this.#placeAtOnce(place) : undefined) ??
        this.#placeInTransaction(place, started),
    );
  }

  /** `placeOrder` in one statement; undefined when the pet was not available. */
  async #placeAtOnce({ owner, petId, holdMs }: PlaceOrder): Promise<PlaceOrderResult | undefined> {
    let row: unknown;
    try {
      [row] = await this.#sql.unsafe(PLACE_IF_AVAILABLE, [petId, newOrderId(), owner, holdMs], PREPARED);
    } catch (err) {
      // The pet is available yet has an open order (rows of earlier releases, which did not hold
      // pets on order): the transaction path expires that order if its hold has ended.
      if (err instanceof postgres.PostgresError && err.code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
    if (row === undefined) return undefined;
    return { outcome: 'placed', order: this.#placed(orderFromRow(row)) };
  }

  #placeInTransaction(
    { owner, petId, holdMs, idempotencyKey }: PlaceOrder,
    started: number,
  ): Promise<PlaceOrderResult> {
    return transaction(this.#sql, async (tx): Promise<PlaceOrderResult> => {
      if (idempotencyKey !== undefined) {
        // Retries with the same key wait for each other, so the second finds the first's order.
        await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`order\n${owner}\n${idempotencyKey}`}, 0))`;
        if (performance.now() - started >= this.#timeoutMs) {
          throw new StoreTimeoutError(`place order: no turn within ${this.#timeoutMs} ms; nothing was stored`);
        }
      }
      // Expire this pet's ended hold first, so the pet can be ordered again at once and a retry
      // of the old order answers it expired, not placed.
      await this.#expireDueOrdersIn(tx, petId);
      if (idempotencyKey !== undefined) {
        const [seen] =
          await tx`SELECT ${tx.unsafe(ORDER_COLUMNS)} FROM orders WHERE owner = ${owner} AND idempotency_key = ${idempotencyKey}`;
        if (seen) {
          const order = orderFromRow(seen);
          return order.petId === petId ? { outcome: 'replayed', order } : { outcome: 'conflict' };
        }
      }
      // Conditional write, so a pet is sold once: concurrent orders wait for this row's lock,
      // then find it pending and change nothing.
      const [held] = await tx`UPDATE pets SET status = 'pending', version = ${tx.unsafe(NEXT_VERSION)}
        WHERE id = ${petId} AND status = 'available' RETURNING id`;
      if (!held) {
        const [pet] = await tx`SELECT status FROM pets WHERE id = ${petId}`;
        return pet ? { outcome: 'pet_unavailable' } : { outcome: 'pet_not_found' };
      }
      const [row] = await tx`
        INSERT INTO orders (id, owner, pet_id, status, placed_at, hold_until, idempotency_key)
        VALUES (${newOrderId()}, ${owner}, ${petId}, 'placed', ${tx.unsafe(NOW_MS)}, ${tx.unsafe(NOW_MS)} + ${holdMs},
          ${idempotencyKey ?? null})
        RETURNING ${tx.unsafe(ORDER_COLUMNS)}`;
      return { outcome: 'placed', order: this.#placed(orderFromRow(row)) };
    });
  }

  /** An order placed here lowers the earliest hold end known (on this instance's clock). */
  #placed(order: StoredOrder): StoredOrder {
    this.#earliestHoldEnd = Math.min(this.#earliestHoldEnd, Date.now() + (order.holdUntil - order.placedAt));
    return order;
  }

  async getOrder(owner: string, id: string): Promise<StoredOrder | undefined> {
    const read = () =>
      this.#query(
        STORE_CALLS.getOrder.doing,
        () =>
          this.#sql`SELECT ${this.#sql.unsafe(ORDER_COLUMNS)}, hold_until <= ${this.#sql.unsafe(NOW_MS)} AS due
          FROM orders WHERE id = ${id} AND owner = ${owner}`,
      );
    let [row] = await read();
    if (row && column(row, 'status') === 'placed' && column(row, 'due') === true) {
      await this.expireDueOrders();
      [row] = await read();
    }
    return row ? orderFromRow(row) : undefined;
  }

  async listOrders(owner: string, { limit, status, after = '' }: OrderListOptions): Promise<StoredOrder[]> {
    const [due] = await this.#query(
      STORE_CALLS.listOrders.doing,
      () => this.#sql`SELECT 1 AS due FROM orders
        WHERE owner = ${owner} AND status = 'placed' AND hold_until <= ${this.#sql.unsafe(NOW_MS)} LIMIT 1`,
    );
    if (due) await this.expireDueOrders();
    const cols = this.#sql.unsafe(ORDER_COLUMNS);
    const rows = await this.#query(STORE_CALLS.listOrders.doing, () =>
      status === undefined
        ? this
            .#sql`SELECT ${cols} FROM orders WHERE owner = ${owner} AND id > ${after} ORDER BY owner, id LIMIT ${limit}`
        : this.#sql`SELECT ${cols} FROM orders WHERE owner = ${owner} AND id > ${after} AND status = ${status}
            ORDER BY owner, id LIMIT ${limit}`,
    );
    return rows.map(orderFromRow);
  }

  /**
   * One statement (`CLOSE_IF_PLACED`) when the order is placed and its hold has not ended;
   * otherwise one transaction locks the order, expires it if its hold has ended, and answers.
   */
  closeOrder(owner: string, id: string, to: Closing): Promise<CloseOrderResult> {
    return this.#changing(
      STORE_CALLS.closeOrder.doing,
      (result) => (result.outcome === 'not_found' ? NO_PET : { ids: [result.order.petId], statuses: true }),
      async () => (await this.#closeAtOnce(owner, id, to)) ?? this.#closeInTransaction(owner, id, to),
    );
  }

  /** `closeOrder` in one statement; undefined when the transaction must decide. */
  async #closeAtOnce(owner: string, id: string, to: Closing): Promise<CloseOrderResult | undefined> {
    const [row] = await this.#sql.unsafe(CLOSE_IF_PLACED, [to, id, owner, petStatusOnClose(to)], PREPARED);
    return row === undefined ? undefined : { outcome: 'closed', order: orderFromRow(row) };
  }

  #closeInTransaction(owner: string, id: string, to: Closing): Promise<CloseOrderResult> {
    return transaction(this.#sql, async (tx): Promise<CloseOrderResult> => {
      const [row] = await tx`SELECT ${tx.unsafe(ORDER_COLUMNS)}, hold_until <= ${tx.unsafe(NOW_MS)} AS due
        FROM orders WHERE id = ${id} AND owner = ${owner} FOR UPDATE`;
      if (!row) return { outcome: 'not_found' };
      let order = orderFromRow(row);
      if (order.status === 'placed' && column(row, 'due') === true) {
        await this.#expireDueOrdersIn(tx, order.petId);
        order = { ...order, status: 'expired' };
      }
      if (order.status !== 'placed') return { outcome: order.status === to ? 'unchanged' : 'order_closed', order };
      const [closed] =
        await tx`UPDATE orders SET status = ${to} WHERE id = ${id} RETURNING ${tx.unsafe(ORDER_COLUMNS)}`;
      await tx`UPDATE pets SET status = ${petStatusOnClose(to)}, version = ${tx.unsafe(NEXT_VERSION)}
        WHERE id = ${order.petId} AND status = 'pending'`;
      return { outcome: 'closed', order: orderFromRow(closed) };
    });
  }

  async retireOwner(owner: string): Promise<void> {
    await this.#changing(STORE_CALLS.retireOwner.doing, EVERY_PET, () =>
      transaction(this.#sql, async (tx) => {
        const rows =
          await tx`UPDATE orders SET status = 'cancelled' WHERE owner = ${owner} AND status = 'placed' RETURNING pet_id`;
        for (const row of rows) {
          await tx`UPDATE pets SET status = 'available', version = ${tx.unsafe(NEXT_VERSION)}
            WHERE id = ${Number(column(row, 'pet_id'))} AND status = 'pending'`;
        }
        await tx`UPDATE orders SET owner = ${retiredOwner(owner)}, idempotency_key = NULL WHERE owner = ${owner}`;
      }),
    );
  }

  async adoptOwners(moves: readonly OwnerMove[]): Promise<void> {
    if (moves.length === 0) return;
    // Only owners change, no pet.
    await this.#changing(STORE_CALLS.adoptOwners.doing, NO_PET, () =>
      transaction(this.#sql, async (tx) => {
        for (const { from, to } of moves) {
          // An order whose Idempotency-Key `to` already uses stays with `from`: moving it would
          // give `to` two orders with one key, and (owner, idempotency_key) is unique.
          await tx`
            UPDATE orders o SET owner = ${to}
            WHERE o.owner = ${from} AND (o.idempotency_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM orders mine WHERE mine.owner = ${to} AND mine.idempotency_key = o.idempotency_key))`;
          for (const op of KEYED_CREATES) {
            const [keySpace, heir] = [idempotencyKeySpace(from, op), idempotencyKeySpace(to, op)];
            await tx`
              UPDATE idempotency_keys k SET scope = ${heir}
              WHERE k.scope = ${keySpace} AND NOT EXISTS (
                SELECT 1 FROM idempotency_keys mine WHERE mine.scope = ${heir} AND mine.idempotency_key = k.idempotency_key)`;
          }
        }
      }),
    );
  }

  /** Expires the placed orders whose hold is over on the database's clock; `now` is not used. */
  async expireDueOrders(): Promise<number> {
    const [due] = await this.#query(
      STORE_CALLS.expireDueOrders.doing,
      () => this.#sql`SELECT min(hold_until) - ${this.#sql.unsafe(NOW_MS)} AS due_in
        FROM orders WHERE status = 'placed'`,
    );
    const dueIn = column(due, 'due_in');
    if (dueIn === null || dueIn === undefined || Number(dueIn) > 0) {
      this.#earliestHoldEnd = holdEndIn(dueIn);
      return 0;
    }
    const expired = await this.#changing(STORE_CALLS.expireDueOrders.doing, EVERY_PET, () =>
      transaction(this.#sql, (tx) => this.#expireDueOrdersIn(tx)),
    );
    await this.#readEarliestHoldEnd();
    return expired;
  }

  /** Reads when the earliest hold of a placed order ends (`#earliestHoldEnd`). */
  async #readEarliestHoldEnd(): Promise<void> {
    const [next] = await this.#query(
      STORE_CALLS.expireDueOrders.doing,
      () =>
        this.#sql`SELECT min(hold_until) - ${this.#sql.unsafe(NOW_MS)} AS due_in FROM orders WHERE status = 'placed'`,
    );
    this.#earliestHoldEnd = holdEndIn(column(next, 'due_in'));
  }

  /**
   * Whether an open order holds pet `id`; if so, its status cannot change and it cannot be
   * removed. Call it inside the transaction that holds the pet's row lock, after expiring its
   * ended hold.
   */
  async #heldByOrder(tx: postgres.TransactionSql, id: number): Promise<boolean> {
    const [held] = await tx`SELECT 1 AS held FROM orders WHERE pet_id = ${id} AND status = 'placed'`;
    return held !== undefined;
  }

  /**
   * In `tx`, expires the placed orders whose hold is over (only `petId`'s, when given), makes
   * their pets available and records `order.expired`. PostgreSQL re-checks the UPDATE's condition
   * under the row lock, so instances expiring at once expire each order, and record it, once.
   */
  async #expireDueOrdersIn(tx: postgres.TransactionSql, petId?: number): Promise<number> {
    const now = tx.unsafe(NOW_MS);
    const rows = await (petId === undefined
      ? tx`UPDATE orders SET status = 'expired' WHERE status = 'placed' AND hold_until <= ${now}
          RETURNING owner, ${tx.unsafe(ORDER_COLUMNS)}, ${now} AS now`
      : tx`UPDATE orders SET status = 'expired' WHERE pet_id = ${petId} AND status = 'placed' AND hold_until <= ${now}
          RETURNING owner, ${tx.unsafe(ORDER_COLUMNS)}, ${now} AS now`);
    for (const row of rows) {
      const order = orderFromRow(row);
      await tx`UPDATE pets SET status = 'available', version = ${tx.unsafe(NEXT_VERSION)}
          WHERE id = ${order.petId} AND status = 'pending'`;
      const event = orderExpiredEvent(String(column(row, 'owner')), order, Number(column(row, 'now')));
      if (event) {
        await tx.unsafe(OUTBOX.record, [
          event.id,
          event.consumer,
          event.type,
          event.payload,
          event.createdAt,
          event.createdAt,
          null,
        ]);
      }
    }
    return rows.length;
  }

  /**
   * Once the earliest known hold has ended, starts expiring the due orders, one run at a time,
   * and returns that run.
   */
  startDueOrderExpiry(): Promise<void> | undefined {
    if (Date.now() < this.#earliestHoldEnd) return undefined;
    // The run never rejects: why a failed run does not fail the read is at `startDueOrderExpiry`
    // of `DataStore` (src/store/store.ts).
    this.#expiring ??= this.expireDueOrders()
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
   * Moves with every pet write by any instance (this one's at once, another's when its
   * notification arrives); undefined while this instance is not listening or has not caught up
   * (src/store/postgres/postgres-changes.ts). Reads no connection.
   */
  changeCount(): number | undefined {
    // Once the earliest known hold has ended, pets may be about to change: memoise nothing until
    // the due orders are expired (by `startDueOrderExpiry()`'s run or another instance's write).
    if (Date.now() >= this.#earliestHoldEnd) return undefined;
    return this.#changes.version();
  }

  readsUnchangedSince(since: number, reads: PetSet | undefined): boolean {
    return this.#changes.readsUnchangedSince(since, reads);
  }

  async ping(): Promise<void> {
    await this.#query('ping', () => this.#sql`SELECT 1`);
  }

  /** The keys kept in this database (`--keys store`), shared by every instance on it. */
  keyStore(): KeyStore {
    this.#keptPool = this.#sql;
    return new PostgresKeyStore(this.#sql, postgresError);
  }

  async close(): Promise<void> {
    await this.#changes.close();
    const pools = new Set([this.#sql, this.#keptPool].filter((p) => p !== undefined));
    await Promise.all([...pools].map((p) => p.end({ timeout: CLOSE_TIMEOUT_SECONDS })));
  }

  get #sql(): postgres.Sql {
    return this.#pool;
  }

  async #query<T>(doing: string, run: () => Promise<T>): Promise<T> {
    return this.#settled(doing, run, false);
  }

  async #write<T>(doing: string, run: () => Promise<T>): Promise<T> {
    return this.#settled(doing, run, true);
  }

  async #settled<T>(doing: string, run: () => Promise<T>, write: boolean): Promise<T> {
    try {
      const result = await run();
      this.#timingOutSince = undefined;
      return result;
    } catch (err) {
      if (typeof err === 'object' && err !== null && 'code' in err && err.code === 'CONNECT_TIMEOUT') this.#timedOut();
      throw postgresError(err, doing, write);
    }
  }

  /** Records a connect timeout; after `RENEW_AFTER_TIMEOUTS_MS` of them, replaces the pool. */
  #timedOut(): void {
    const now = Date.now();
    this.#timingOutSince ??= now;
    if (now - this.#timingOutSince < RENEW_AFTER_TIMEOUTS_MS) return;
    this.#timingOutSince = now;
    const old = this.#pool;
    this.#pool = this.#newPool();
    if (old !== this.#keptPool) void old.end({ timeout: 0 }).catch(() => {});
  }

  /**
   * Runs a write of pets and counts what it changed (`change`, or computed from the result) as
   * soon as it settles, before the caller sees the result; other instances hear of it after the
   * commit. A failed write may still have committed, so it is counted too: as every pet when only
   * the result would have said which.
   */
  async #changing<T>(doing: string, change: PetChange | ((result: T) => PetChange), run: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await this.#write(doing, run);
    } catch (err) {
      this.#changes.written(typeof change === 'function' ? EVERY_PET : change);
      throw err;
    }
    this.#changes.written(typeof change === 'function' ? change(result) : change);
    return result;
  }
}

/**
 * Converts `due_in` (ms until the earliest hold ends on the database's clock; null when no order
 * is placed) to this host's clock, so a host clock behind the database's does not keep memoised
 * answers past the hold's end.
 */
function holdEndIn(dueIn: unknown): number {
  return dueIn === null || dueIn === undefined ? Number.POSITIVE_INFINITY : Date.now() + Number(dueIn);
}
