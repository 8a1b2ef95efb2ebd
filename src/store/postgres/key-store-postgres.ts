// PostgresKeyStore: with --keys store on PostgreSQL, the consumers and keys live in the database,
// shared by every instance; each change is one transaction, announced by NOTIFY.
import type postgres from 'postgres';
import {
  consumersOf,
  KEYS_CHANNEL,
  type KeyStore,
  type KeysEdit,
  rowChanges,
  type StoredConsumer,
} from '../key-store.ts';
import { column } from '../sql/pet-rows.ts';
import { transaction } from './postgres-transaction.ts';

/**
 * The keys in PostgreSQL, shared by every instance on the database. A change is one transaction
 * under an advisory lock, so changes from any instance take turns and audit ids follow commit
 * order; its NOTIFY is sent at COMMIT. The store's sessions set `synchronous_commit=on`, so the
 * commit is durable before it resolves.
 */
export class PostgresKeyStore implements KeyStore {
  readonly #sql: postgres.Sql;
  readonly #error: (err: unknown, doing: string) => Error;

  /** `error` classifies a failure as the pet store does (unavailable or not). */
  constructor(sql: postgres.Sql, error: (err: unknown, doing: string) => Error) {
    this.#sql = sql;
    this.#error = error;
  }

  async version(): Promise<number> {
    const [row] = await this.#query(
      'read keys version',
      () => this.#sql`SELECT version FROM keys_state WHERE singleton = 1`,
    );
    return Number(column(row, 'version'));
  }

  async read(): Promise<{ version: number; consumers: StoredConsumer[] }> {
    return this.#query('read keys', () =>
      transaction(this.#sql, async (tx) => readAll(tx), 'ISOLATION LEVEL REPEATABLE READ READ ONLY'),
    );
  }

  async change(edit: (consumers: StoredConsumer[]) => KeysEdit): Promise<void> {
    let refused: { err: unknown } | undefined;
    await this.#query('change keys', () =>
      transaction(this.#sql, async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(hashtext('petstore keys'))`;
        const { consumers } = await readAll(tx);
        let result: KeysEdit;
        try {
          result = edit(consumers);
        } catch (err) {
          refused = { err };
          return; // nothing written: the transaction commits empty
        }
        const { removed, written } = rowChanges(consumers, result.consumers);
        for (const name of removed) await tx`DELETE FROM key_consumers WHERE name = ${name}`;
        for (const { consumer: c, keys, isNew } of written) {
          if (isNew) {
            await tx`
              INSERT INTO key_consumers (id, name, plan, limits, ban, costs, enforce, webhook, thresholds, position)
              VALUES (${c.id}, ${c.name}, ${c.plan}, ${c.limits}, ${c.ban}, ${c.costs}, ${c.enforce}, ${c.webhook}, ${c.thresholds},
                (SELECT coalesce(max(position), 0) + 1 FROM key_consumers))`;
          } else {
            await tx`
              UPDATE key_consumers SET id = ${c.id}, plan = ${c.plan}, limits = ${c.limits}, ban = ${c.ban}, costs = ${c.costs},
                enforce = ${c.enforce}, webhook = ${c.webhook}, thresholds = ${c.thresholds}
              WHERE name = ${c.name}`;
          }
          await tx`DELETE FROM api_keys WHERE consumer = ${c.name}`;
          for (const [position, k] of keys.entries()) {
            await tx`
              INSERT INTO api_keys (consumer, id, sha256, scopes, expires_at, not_before, position)
              VALUES (${k.consumer}, ${k.id}, ${k.sha256}, ${k.scopes}, ${k.expires_at}, ${k.not_before}, ${position})`;
          }
        }
        for (const record of result.records)
          await tx`INSERT INTO keys_audit (record) VALUES (${JSON.stringify(record)})`;
        if (removed.length > 0 || written.length > 0 || result.records.length > 0) {
          const [row] = await tx`UPDATE keys_state SET version = version + 1 WHERE singleton = 1 RETURNING version`;
          await tx`SELECT pg_notify(${KEYS_CHANNEL}, ${String(column(row, 'version'))})`;
        }
      }),
    );
    if (refused) throw refused.err;
  }

  async audit(after: number, limit: number): Promise<{ id: number; record: object }[]> {
    const rows = await this.#query(
      'read keys audit',
      () => this.#sql`SELECT id, record FROM keys_audit WHERE id > ${after} ORDER BY id LIMIT ${limit}`,
    );
    return rows.map((row) => ({
      id: Number(column(row, 'id')),
      record: JSON.parse(String(column(row, 'record'))) as object,
    }));
  }

  /**
   * LISTENs on a connection of its own, which postgres.js reopens and re-listens on after a loss;
   * the caller's version check catches any notification missed meanwhile.
   */
  async listen(changed: () => void): Promise<() => Promise<void>> {
    const { unlisten } = await this.#query('listen for key changes', () =>
      this.#sql.listen(KEYS_CHANNEL, () => changed(), changed),
    );
    return async () => {
      await unlisten().catch(() => {});
    };
  }

  async #query<T>(doing: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw this.#error(err, doing);
    }
  }
}

async function readAll(tx: postgres.TransactionSql): Promise<{ version: number; consumers: StoredConsumer[] }> {
  const [state] = await tx`SELECT version FROM keys_state WHERE singleton = 1`;
  const consumers =
    await tx`SELECT id, name, plan, limits, ban, costs, enforce, webhook, thresholds FROM key_consumers ORDER BY position`;
  const keys =
    await tx`SELECT consumer, id, sha256, scopes, expires_at, not_before FROM api_keys ORDER BY consumer, position`;
  return { version: Number(column(state, 'version')), consumers: consumersOf(consumers, keys) };
}
