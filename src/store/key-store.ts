// Consumers and their keys kept in the data store (`--keys store`), shared by every instance on
// the database. These are plain rows, validated when loaded (`src/keys/store-watch.ts`). Every
// change is one transaction, serialized across instances: it rewrites the consumers it changes,
// appends its audit records (triggers keep them append-only) and moves the version every
// instance watches.

/** A key as stored: its hash, never its token. */
export interface StoredKey {
  readonly id?: string;
  readonly sha256: string;
  readonly scopes?: readonly string[];
  readonly expiresAt?: string;
  readonly notBefore?: string;
}

/** A consumer as stored, in the keys file's `consumers` form. */
export interface StoredConsumer {
  /** Its id (`con_…`); absent for a consumer stored before consumers had ids (`consumer_ids`). */
  readonly id?: string;
  readonly name: string;
  readonly plan: string;
  readonly limits?: unknown;
  readonly ban?: unknown;
  readonly costs?: unknown;
  readonly enforce?: unknown;
  /**
   * Where quota notifications go, with the secret that signs them (stored as in a keys file, never
   * shown).
   */
  readonly webhook?: unknown;
  readonly thresholds?: unknown;
  readonly keys: readonly StoredKey[];
}

/** The consumers after one change, and the audit records (JSON objects) that describe it. */
export interface KeysEdit {
  readonly consumers: readonly StoredConsumer[];
  readonly records: readonly object[];
}

export interface KeyStore {
  /** The keys' version; it moves with every change, from any instance. */
  version(): Promise<number>;
  /** Every consumer and key, in creation order, with the version they were read at. */
  read(): Promise<{ version: number; consumers: StoredConsumer[] }>;
  /**
   * Applies `edit` to the current consumers in one transaction, serialized with every other
   * change. `edit` may throw to change nothing (the error is rethrown), or return the consumers
   * unchanged and no records. Resolves once durably committed.
   */
  change(edit: (consumers: StoredConsumer[]) => KeysEdit): Promise<void>;
  /** Up to `limit` audit records after record `after`, oldest first, each with its id. */
  audit(after: number, limit: number): Promise<{ id: number; record: object }[]>;
  /**
   * Calls `changed` when another instance may have changed the keys (PostgreSQL's NOTIFY);
   * resolves to a function that stops listening.
   */
  listen(changed: () => void): Promise<() => Promise<void>>;
}

/** A store that also keeps keys (SQLite and PostgreSQL; not `:memory:`). */
export interface WithKeyStore {
  keyStore(): KeyStore;
}

/**
 * The key store of `store`, or of its `backend` when it is wrapped; undefined for a store that
 * keeps no keys (`:memory:`).
 *
 * @example
 * const keys = keyStoreOf(await openStore(data, log))
 */
export function keyStoreOf(store: object & { readonly backend?: object }): KeyStore | undefined {
  const backend = store.backend ?? store;
  return 'keyStore' in backend && typeof backend.keyStore === 'function'
    ? (backend as WithKeyStore).keyStore()
    : undefined;
}

/** The NOTIFY channel of key changes on PostgreSQL. */
export const KEYS_CHANNEL = 'petstore_keys';

/** One row per consumer and per key, as the migrations define them. */
export interface ConsumerRow {
  id: string | null;
  name: string;
  plan: string;
  limits: string | null;
  ban: string | null;
  costs: string | null;
  enforce: string | null;
  webhook: string | null;
  thresholds: string | null;
}

/** The columns of a consumer held as JSON text, or NULL when the consumer does not set it. */
const JSON_COLUMNS = ['limits', 'ban', 'costs', 'enforce', 'webhook', 'thresholds'] as const;
export interface KeyRow {
  consumer: string;
  id: string;
  sha256: string;
  scopes: string | null;
  expires_at: string | null;
  not_before: string | null;
}

/** Builds the consumers from their rows and their keys' rows, both read in position order. */
export function consumersOf(consumerRows: readonly unknown[], keyRows: readonly unknown[]): StoredConsumer[] {
  const keys = new Map<string, StoredKey[]>();
  for (const raw of keyRows) {
    const row = raw as KeyRow;
    const list = keys.get(row.consumer) ?? [];
    list.push({
      id: row.id,
      sha256: row.sha256,
      ...(row.scopes !== null ? { scopes: JSON.parse(row.scopes) as string[] } : {}),
      ...(row.expires_at !== null ? { expiresAt: row.expires_at } : {}),
      ...(row.not_before !== null ? { notBefore: row.not_before } : {}),
    });
    keys.set(row.consumer, list);
  }
  return consumerRows.map((raw) => {
    const row = raw as ConsumerRow;
    const fields: Record<string, unknown> = {};
    for (const column of JSON_COLUMNS) {
      const text = row[column];
      if (text !== null && text !== undefined) fields[column] = JSON.parse(text) as unknown;
    }
    const id = row.id ?? undefined;
    return { ...(id ? { id } : {}), name: row.name, plan: row.plan, ...fields, keys: keys.get(row.name) ?? [] };
  });
}

/**
 * The row changes that turn `before` into `after`: the consumers to delete, and those to write
 * (`isNew`: inserted after the others; otherwise updated in place). A written consumer's keys are
 * deleted and written again.
 */
export function rowChanges(
  before: readonly StoredConsumer[],
  after: readonly StoredConsumer[],
): { removed: string[]; written: { consumer: ConsumerRow; keys: KeyRow[]; isNew: boolean }[] } {
  const was = new Map(before.map((c) => [c.name, JSON.stringify(c)]));
  const names = new Set(after.map((c) => c.name));
  const removed = before.filter((c) => !names.has(c.name)).map((c) => c.name);
  const written = after
    .filter((c) => was.get(c.name) !== JSON.stringify(c))
    .map((c) => ({
      isNew: !was.has(c.name),
      consumer: {
        id: c.id ?? null,
        name: c.name,
        plan: c.plan,
        limits: jsonColumn(c.limits),
        ban: jsonColumn(c.ban),
        costs: jsonColumn(c.costs),
        enforce: jsonColumn(c.enforce),
        webhook: jsonColumn(c.webhook),
        thresholds: jsonColumn(c.thresholds),
      },
      keys: c.keys.map((k) => ({
        consumer: c.name,
        id: k.id ?? k.sha256.slice(0, 8),
        sha256: k.sha256,
        scopes: k.scopes === undefined ? null : JSON.stringify(k.scopes),
        expires_at: k.expiresAt ?? null,
        not_before: k.notBefore ?? null,
      })),
    }));
  return { removed, written };
}

function jsonColumn(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}
