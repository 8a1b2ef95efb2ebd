// SqliteKeyStore: with --keys store on SQLite, the consumers and keys live in the database file,
// each change one write transaction. SQLite has no notifications, so KeysStoreWatcher polls the
// version.
import { consumersOf, type KeyStore, type KeysEdit, rowChanges, type StoredConsumer } from '../key-store.ts';
import { column } from '../sql/pet-rows.ts';
import { StoreUnavailableError, sqliteError } from '../store-error.ts';
import type { SqliteConnection } from './sqlite-driver.ts';

const VERSION = 'SELECT version FROM keys_state WHERE singleton = 1';
const CONSUMERS =
  'SELECT id, name, plan, limits, ban, costs, enforce, webhook, thresholds FROM key_consumers ORDER BY position';
const KEYS = 'SELECT consumer, id, sha256, scopes, expires_at, not_before FROM api_keys ORDER BY consumer, position';

/**
 * The keys in the SQLite file. Each change is one `BEGIN IMMEDIATE` transaction, which takes the
 * write lock (also against a `petstore keys` run in another process) and runs synchronously, so
 * nothing else in this process interleaves; `synchronous=FULL` makes its COMMIT durable.
 */
export class SqliteKeyStore implements KeyStore {
  readonly #db: SqliteConnection;
  readonly #open: () => boolean;

  constructor(db: SqliteConnection, open: () => boolean) {
    this.#db = db;
    this.#open = open;
  }

  async version(): Promise<number> {
    return Number(
      column(
        this.#run('read keys version', () => this.#db.prepare(VERSION).get()),
        'version',
      ),
    );
  }

  async read(): Promise<{ version: number; consumers: StoredConsumer[] }> {
    return this.#run('read keys', () => this.#readNow());
  }

  async change(edit: (consumers: StoredConsumer[]) => KeysEdit): Promise<void> {
    // What `edit` throws (a 404, a 409, a bad change) is the caller's: rethrow it unchanged.
    let refused: { err: unknown } | undefined;
    this.#run('change keys', () => {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        const { consumers } = this.#readNow();
        let result: KeysEdit;
        try {
          result = edit(consumers);
        } catch (err) {
          refused = { err };
          this.#db.exec('ROLLBACK');
          return;
        }
        const { removed, written } = rowChanges(consumers, result.consumers);
        for (const name of removed) {
          this.#db.prepare('DELETE FROM api_keys WHERE consumer = ?').get(name);
          this.#db.prepare('DELETE FROM key_consumers WHERE name = ?').get(name);
        }
        for (const { consumer: c, keys, isNew } of written) {
          if (isNew) {
            this.#db
              .prepare(
                'INSERT INTO key_consumers (id, name, plan, limits, ban, costs, enforce, webhook, thresholds, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(position), 0) + 1 FROM key_consumers))',
              )
              .get(c.id, c.name, c.plan, c.limits, c.ban, c.costs, c.enforce, c.webhook, c.thresholds);
          } else {
            this.#db
              .prepare(
                'UPDATE key_consumers SET id = ?, plan = ?, limits = ?, ban = ?, costs = ?, enforce = ?, webhook = ?, thresholds = ? WHERE name = ?',
              )
              .get(c.id, c.plan, c.limits, c.ban, c.costs, c.enforce, c.webhook, c.thresholds, c.name);
          }
          this.#db.prepare('DELETE FROM api_keys WHERE consumer = ?').get(c.name);
          keys.forEach((k, position) => {
            this.#db
              .prepare(
                'INSERT INTO api_keys (consumer, id, sha256, scopes, expires_at, not_before, position) VALUES (?, ?, ?, ?, ?, ?, ?)',
              )
              .get(k.consumer, k.id, k.sha256, k.scopes, k.expires_at, k.not_before, position);
          });
        }
        for (const record of result.records)
          this.#db.prepare('INSERT INTO keys_audit (record) VALUES (?)').get(JSON.stringify(record));
        if (removed.length > 0 || written.length > 0 || result.records.length > 0) {
          this.#db.prepare('UPDATE keys_state SET version = version + 1 WHERE singleton = 1').get();
        }
        this.#db.exec('COMMIT');
      } catch (err) {
        if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
        throw err;
      }
    });
    if (refused) throw refused.err;
  }

  async audit(after: number, limit: number): Promise<{ id: number; record: object }[]> {
    const rows = this.#run('read keys audit', () =>
      this.#db.prepare('SELECT id, record FROM keys_audit WHERE id > ? ORDER BY id LIMIT ?').all(after, limit),
    );
    return rows.map((row) => ({
      id: Number(column(row, 'id')),
      record: JSON.parse(String(column(row, 'record'))) as object,
    }));
  }

  /** A no-op: SQLite has no notifications, so the caller polls the version. */
  async listen(): Promise<() => Promise<void>> {
    return async () => {};
  }

  #readNow(): { version: number; consumers: StoredConsumer[] } {
    const version = Number(column(this.#db.prepare(VERSION).get(), 'version'));
    return { version, consumers: consumersOf(this.#db.prepare(CONSUMERS).all(), this.#db.prepare(KEYS).all()) };
  }

  #run<T>(doing: string, work: () => T): T {
    if (!this.#open()) throw new StoreUnavailableError('the store is closed');
    try {
      return work();
    } catch (err) {
      throw sqliteError(err, doing);
    }
  }
}
