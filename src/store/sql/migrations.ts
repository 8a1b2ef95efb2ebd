// The schema's migrations, one per version, each written for SQLite and PostgreSQL: MIGRATIONS,
// SCHEMA_VERSION, and schemaVerdict(), which says whether this build migrates a database, serves
// it as it is, or refuses it.
import { MAX_ID } from '../../core/pet-records.ts';
import { ANNOUNCES_SETTING, PET_VERSIONS, PETS_CHANNEL } from '../postgres/postgres-changes.ts';
import { StoreOpenError } from '../store-error.ts';

/**
 * One schema change, written for each engine. Versions are applied in order, once (at start-up
 * or by `petstore migrate up`), and recorded in `schema_migrations`. Never edit a released
 * migration: add the next one.
 *
 * Within a major version every migration is additive (columns and tables are removed only in a
 * later major release, once nothing reads them), so the previous release can keep serving the
 * new schema. `readableFrom` is the oldest schema version whose builds can still serve it; it is
 * recorded with the migration, so an older build can read it and decide to serve or refuse
 * (`schemaVerdict`).
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
  /**
   * The oldest build (by its SCHEMA_VERSION) that can serve the schema after this migration;
   * defaults to this version.
   */
  readonly readableFrom?: number;
  /**
   * Indexes built after the migration's transaction: on PostgreSQL with CREATE INDEX CONCURRENTLY
   * (writes go on meanwhile), on SQLite inside it. `on` is the rest of the statement:
   * `ON pets (name)`.
   */
  readonly indexes?: readonly { readonly name: string; readonly on: string }[];
}

const STATUS_CHECK = "status IN ('available', 'pending', 'sold')";
const ORDER_STATUS_CHECK = "status IN ('placed', 'completed', 'cancelled', 'expired')";

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'pets',
    // AUTOINCREMENT (not a bare rowid alias) so the id of a pet never comes back after a crash
    // or deletion; the (status, id) index serves the filtered, id-ordered pages of listPets.
    sqlite: `
      CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL CHECK (name <> ''),
        category_id INTEGER NOT NULL CHECK (category_id BETWEEN 1 AND ${MAX_ID}),
        status TEXT NOT NULL CHECK (${STATUS_CHECK})
      ) STRICT;
      CREATE INDEX pets_status_id ON pets (status, id);`,
    postgres: `
      CREATE TABLE pets (
        id BIGINT GENERATED ALWAYS AS IDENTITY (MAXVALUE ${MAX_ID}) PRIMARY KEY,
        name TEXT NOT NULL CHECK (name <> ''),
        category_id BIGINT NOT NULL CHECK (category_id BETWEEN 1 AND ${MAX_ID}),
        status TEXT NOT NULL CHECK (${STATUS_CHECK})
      );
      CREATE INDEX pets_status_id ON pets (status, id);`,
  },
  {
    version: 2,
    name: 'idempotency_keys',
    // One row per (caller, Idempotency-Key), written in the transaction that inserts its pet.
    // expires_at is epoch ms from the app's clock; expired rows are ignored, then swept lazily.
    // SQLite does not enforce the foreign key (foreign_keys is off); lookups join pets anyway.
    sqlite: `
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER NOT NULL REFERENCES pets (id) ON DELETE CASCADE,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (scope, idempotency_key)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`,
    postgres: `
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id BIGINT NOT NULL REFERENCES pets (id) ON DELETE CASCADE,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (scope, idempotency_key)
      );
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`,
  },
  {
    version: 3,
    name: 'keys',
    // Consumers and keys for --keys store (src/store/key-store.ts): JSON text for limits, ban and
    // scopes, as the keys file writes them; only hashes. keys_state's version moves with each
    // change. keys_audit is append-only: triggers refuse any UPDATE or DELETE.
    sqlite: `
      CREATE TABLE key_consumers (
        name TEXT PRIMARY KEY, plan TEXT NOT NULL, limits TEXT, ban TEXT, position INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE api_keys (
        consumer TEXT NOT NULL REFERENCES key_consumers (name) ON DELETE CASCADE,
        id TEXT NOT NULL, sha256 TEXT NOT NULL UNIQUE, scopes TEXT, expires_at TEXT, not_before TEXT,
        position INTEGER NOT NULL, PRIMARY KEY (consumer, id)
      ) STRICT;
      CREATE TABLE keys_state (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), version INTEGER NOT NULL) STRICT;
      INSERT INTO keys_state (singleton, version) VALUES (1, 0);
      CREATE TABLE keys_audit (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT NOT NULL) STRICT;
      CREATE TRIGGER keys_audit_no_update BEFORE UPDATE ON keys_audit
        BEGIN SELECT RAISE(ABORT, 'keys_audit is append-only'); END;
      CREATE TRIGGER keys_audit_no_delete BEFORE DELETE ON keys_audit
        BEGIN SELECT RAISE(ABORT, 'keys_audit is append-only'); END;`,
    postgres: `
      CREATE TABLE key_consumers (
        name TEXT PRIMARY KEY, plan TEXT NOT NULL, limits TEXT, ban TEXT, position BIGINT NOT NULL
      );
      CREATE TABLE api_keys (
        consumer TEXT NOT NULL REFERENCES key_consumers (name) ON DELETE CASCADE,
        id TEXT NOT NULL, sha256 TEXT NOT NULL UNIQUE, scopes TEXT, expires_at TEXT, not_before TEXT,
        position BIGINT NOT NULL, PRIMARY KEY (consumer, id)
      );
      CREATE TABLE keys_state (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), version BIGINT NOT NULL);
      INSERT INTO keys_state (singleton, version) VALUES (1, 0);
      CREATE TABLE keys_audit (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, record TEXT NOT NULL);
      CREATE FUNCTION keys_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'keys_audit is append-only'; END $$;
      CREATE TRIGGER keys_audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON keys_audit
        FOR EACH STATEMENT EXECUTE FUNCTION keys_audit_append_only();`,
  },
  {
    version: 4,
    name: 'webhook_outbox',
    // Quota notifications waiting to be sent (src/store/outbox.ts). Times are epoch ms; next_at is
    // when a pending event is due (when a delivered one was delivered); claimed_by/claimed_until
    // claim a pending event for one instance's delivery loop. No webhook secret is ever stored.
    sqlite: `
      CREATE TABLE webhook_outbox (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        claimed_by TEXT,
        claimed_until INTEGER,
        last_error TEXT
      ) STRICT;
      CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);`,
    postgres: `
      CREATE TABLE webhook_outbox (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at BIGINT NOT NULL,
        claimed_by TEXT,
        claimed_until BIGINT,
        last_error TEXT
      );
      CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);`,
  },
  {
    version: 5,
    name: 'key_consumer_terms',
    // What a stored consumer sets besides limits and ban, as JSON text like them: costs, enforce
    // (report-only limits), and its quota notifications: webhook (URL and signing secret, kept as
    // a keys file keeps it; the admin API never shows the secret) and thresholds.
    sqlite: `
      ALTER TABLE key_consumers ADD COLUMN costs TEXT;
      ALTER TABLE key_consumers ADD COLUMN enforce TEXT;
      ALTER TABLE key_consumers ADD COLUMN webhook TEXT;
      ALTER TABLE key_consumers ADD COLUMN thresholds TEXT;`,
    postgres: `
      ALTER TABLE key_consumers
        ADD COLUMN costs TEXT, ADD COLUMN enforce TEXT, ADD COLUMN webhook TEXT, ADD COLUMN thresholds TEXT;`,
  },
  {
    version: 6,
    name: 'pets_notify',
    // An operator's UPDATE, DELETE or TRUNCATE notifies the listening instances
    // (src/store/postgres/postgres-changes.ts) when it commits. Inserts are announced by the
    // instance after its commit instead: NOTIFY holds a lock until its transaction commits, so a
    // NOTIFY in every create would make the fleet's creates queue on that lock.
    // SQLite has no listeners: its readers check data_version.
    sqlite: 'SELECT 1;',
    postgres: `
      CREATE FUNCTION petstore_pets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${PETS_CHANNEL}', '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER pets_changed AFTER UPDATE OR DELETE OR TRUNCATE ON pets
        FOR EACH STATEMENT EXECUTE FUNCTION petstore_pets_changed();`,
  },
  {
    version: 7,
    name: 'webhook_outbox_trace',
    // The W3C traceparent of the request that recorded the event, so the delivery's span links
    // to that request's. NULL for events recorded outside a request (key.expiring).
    sqlite: 'ALTER TABLE webhook_outbox ADD COLUMN traceparent TEXT;',
    postgres: 'ALTER TABLE webhook_outbox ADD COLUMN traceparent TEXT;',
  },
  {
    version: 8,
    name: 'pet_versions',
    // Four changes:
    // - A pet's version, moved by every change to it; the strong ETag and If-Match compare it.
    //   SQLite counts per pet from 1. PostgreSQL takes every version from one sequence, so the
    //   listener's heartbeat (src/store/postgres/postgres-changes.ts) sees every write move a
    //   value: the highest version for inserts and updates, the sequence for deletes. Existing
    //   pets get version 1 from a constant default (a volatile one would rewrite the table under
    //   ACCESS EXCLUSIVE); the sequence then starts past 1, so no later write repeats their tag.
    // - A key space (the `scope` column) is per operation as well as per caller
    //   (src/store/idempotency.ts); every key stored before was createPet's.
    // - An idempotency key keeps a copy of the pet its create answered (name, category, status,
    //   version), so a retry answers the same 201 after the pet changed or was deleted, and the
    //   key drops its foreign key to the pet. Existing keys copy their pet as it is now (unchanged
    //   since its create: no pet could change before this schema).
    // - The trigger skips the instances' own writes, which they announce after their commit (the
    //   `${ANNOUNCES_SETTING}` setting of their connections), so the fleet's updates and deletes
    //   do not queue on NOTIFY's lock.
    // SQLite cannot drop a foreign key (node:sqlite enforces them), so the keys' table is rebuilt.
    sqlite: `
      ALTER TABLE pets ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1);
      CREATE TABLE idempotency_keys_new (
        scope TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        pet_name TEXT,
        pet_category_id INTEGER,
        pet_status TEXT,
        pet_version INTEGER,
        PRIMARY KEY (scope, idempotency_key)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO idempotency_keys_new (scope, idempotency_key, fingerprint, pet_id, expires_at,
          pet_name, pet_category_id, pet_status, pet_version)
        SELECT k.scope || '/createPet', k.idempotency_key, k.fingerprint, k.pet_id, k.expires_at,
          p.name, p.category_id, p.status, p.version
        FROM idempotency_keys k LEFT JOIN pets p ON p.id = k.pet_id;
      DROP TABLE idempotency_keys;
      ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
      CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`,
    postgres: `
      CREATE SEQUENCE ${PET_VERSIONS} AS BIGINT MAXVALUE ${MAX_ID};
      ALTER TABLE pets ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
      ALTER TABLE pets ALTER COLUMN version SET DEFAULT nextval('${PET_VERSIONS}');
      SELECT setval('${PET_VERSIONS}', 1) WHERE EXISTS (SELECT 1 FROM pets);
      ALTER SEQUENCE ${PET_VERSIONS} OWNED BY pets.version;
      CREATE INDEX pets_version ON pets (version);
      ALTER TABLE idempotency_keys
        DROP CONSTRAINT IF EXISTS idempotency_keys_pet_id_fkey,
        ADD COLUMN pet_name TEXT, ADD COLUMN pet_category_id BIGINT,
        ADD COLUMN pet_status TEXT, ADD COLUMN pet_version BIGINT;
      UPDATE idempotency_keys SET scope = scope || '/createPet';
      UPDATE idempotency_keys k SET pet_name = p.name, pet_category_id = p.category_id,
          pet_status = p.status, pet_version = p.version
        FROM pets p WHERE p.id = k.pet_id;
      DROP TRIGGER pets_changed ON pets;
      CREATE TRIGGER pets_changed AFTER UPDATE OR DELETE OR TRUNCATE ON pets FOR EACH STATEMENT
        WHEN (current_setting('${ANNOUNCES_SETTING}', true) IS DISTINCT FROM 'on')
        EXECUTE FUNCTION petstore_pets_changed();`,
  },
  {
    version: 9,
    name: 'orders',
    // A new table, so a build of schema 8 can still serve pets beside it (it neither places nor
    // expires orders, and does not protect a pet on order from PATCH or DELETE).
    readableFrom: 8,
    // Orders hold pets: an order and its pet's status change in one transaction, and the unique
    // index on the placed orders' pet_id makes "one open order per pet" the database's rule too.
    // Times are epoch ms on the database's clock (PostgreSQL's now(); on SQLite the host's). An
    // order's owner is the caller's identity; id is random after a time prefix (newOrderId), so it
    // says nothing of volume.
    sqlite: `
      CREATE TABLE orders (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        pet_id INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (${ORDER_STATUS_CHECK}),
        placed_at INTEGER NOT NULL,
        hold_until INTEGER NOT NULL,
        idempotency_key TEXT,
        UNIQUE (owner, idempotency_key)
      ) STRICT;
      CREATE INDEX orders_owner_id ON orders (owner, id);
      CREATE INDEX orders_placed_hold ON orders (hold_until) WHERE status = 'placed';
      CREATE UNIQUE INDEX orders_placed_pet ON orders (pet_id) WHERE status = 'placed';`,
    postgres: `
      CREATE TABLE orders (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        pet_id BIGINT NOT NULL,
        status TEXT NOT NULL CHECK (${ORDER_STATUS_CHECK}),
        placed_at BIGINT NOT NULL,
        hold_until BIGINT NOT NULL,
        idempotency_key TEXT,
        UNIQUE (owner, idempotency_key)
      );
      CREATE INDEX orders_owner_id ON orders (owner, id);
      CREATE INDEX orders_placed_hold ON orders (hold_until) WHERE status = 'placed';
      CREATE UNIQUE INDEX orders_placed_pet ON orders (pet_id) WHERE status = 'placed';`,
  },
  {
    version: 10,
    name: 'consumer_ids',
    // A stored consumer's id (`con_…`), which owns its orders and Idempotency-Keys; created with
    // the consumer and never reused. NULL for consumers stored before this migration; an instance
    // derives their id from the first key and stores it at start (`consumerIdOf` in
    // src/keys/records.ts).
    readableFrom: 8,
    sqlite: `
      ALTER TABLE key_consumers ADD COLUMN id TEXT;
      CREATE UNIQUE INDEX key_consumers_id ON key_consumers (id);`,
    postgres: `
      ALTER TABLE key_consumers ADD COLUMN id TEXT;
      CREATE UNIQUE INDEX key_consumers_id ON key_consumers (id);`,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/**
 * The table of applied migrations, the same on both engines. `readable_from` is the migration's
 * `readableFrom`; NULL in rows written before the column existed, meaning the version itself.
 */
export const SCHEMA_MIGRATIONS_DDL = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    readable_from INTEGER
  )`;

/**
 * A database's schema version and the oldest build that can serve it: the largest
 * `readable_from` (or version, when NULL) among the migrations this build does not know.
 */
export const SCHEMA_STATE_SQL = `
  SELECT coalesce(max(version), 0) AS version,
         coalesce(max(CASE WHEN version > ${SCHEMA_VERSION} THEN coalesce(readable_from, version) END), 0) AS readable_from
  FROM schema_migrations`;

export interface SchemaState {
  /** The database's schema version (0: empty). */
  readonly version: number;
  /**
   * The oldest build (by SCHEMA_VERSION) that can serve it; 0 when this build knows every applied
   * migration.
   */
  readonly readableFrom: number;
}

/**
 * Decides what this build does with a database in `state`: apply `pending` (maybe none), or
 * serve a newer schema that a later release marked readable by this one (`newer`). Throws
 * `StoreOpenError` (exit 2), naming the version needed, when this build cannot serve it.
 *
 * @example
 * schemaVerdict({ version: 0, readableFrom: 0 }, 'data/petstore.db') // { pending: MIGRATIONS, newer: false }
 */
export function schemaVerdict(state: SchemaState, where: string): { pending: readonly Migration[]; newer: boolean } {
  if (state.version <= SCHEMA_VERSION)
    return { pending: MIGRATIONS.filter((m) => m.version > state.version), newer: false };
  if (state.readableFrom <= SCHEMA_VERSION) return { pending: [], newer: true };
  throw new StoreOpenError(
    `${where}: the database has schema version ${state.version}, which a petstore of schema version ` +
      `${state.readableFrom} or later serves; this petstore knows versions up to ${SCHEMA_VERSION}. ` +
      'Run a newer petstore (or restore a backup taken before that migration), or point --data elsewhere.',
  );
}

/** The `readable_from` a migration is recorded with. */
export const readableFromOf = (m: Migration) => m.readableFrom ?? m.version;
