// The webhook outbox in the SQLite file; its writes join the store's group-committed batches.
import {
  DELIVERED_KEEP_MS,
  type Dropped,
  entryFromRow,
  type Outbox,
  type OutboxStats,
  statsFromRows,
} from '../outbox.ts';
import {
  ANY_DUE,
  COUNT_KEPT,
  claim,
  DROP_OLDEST,
  droppedFromRow,
  PRUNE_DELIVERED,
  RECORD,
  SETTLE,
  STATS,
  settleParams,
} from '../sql/outbox-sql.ts';
import { column } from '../sql/pet-rows.ts';
import { OUTBOX_CALLS } from '../store.ts';
import type { SqliteConnection } from './sqlite-driver.ts';

const CLAIM = claim('');

/** How the store runs a statement: `enqueue` a write in its next batch, or `read` at once. */
interface Runner {
  db(): SqliteConnection;
  enqueue(doing: string, run: () => unknown): Promise<unknown>;
  read<T>(doing: string, query: () => T): T;
}

/** The outbox on the store's connection and batches. */
export function sqliteOutbox({ db, enqueue, read }: Runner): Outbox {
  return {
    record: async (events) => {
      await enqueue(OUTBOX_CALLS.record.doing, () => {
        for (const e of events)
          db()
            .prepare(RECORD)
            .get(e.id, e.consumer, e.type, e.payload, e.createdAt, e.createdAt, e.traceparent ?? null);
      });
    },
    claim: async (claimant, now, claimMs, limit) => {
      // Read first, so an idle delivery loop's poll opens no write transaction.
      if (read(OUTBOX_CALLS.claim.doing, () => db().prepare(ANY_DUE).get(now, now)) === undefined) return [];
      const rows = (await enqueue(OUTBOX_CALLS.claim.doing, () =>
        db()
          .prepare(CLAIM)
          .all(claimant, now + claimMs, now, now, limit, now),
      )) as unknown[];
      return rows.map(entryFromRow).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    },
    settle: async (id, claimant, settlement, now) => {
      await enqueue(OUTBOX_CALLS.settle.doing, () =>
        db()
          .prepare(SETTLE)
          .get(...settleParams(settlement, now), id, claimant),
      );
    },
    trim: async (max, now) =>
      (await enqueue(OUTBOX_CALLS.trim.doing, () => {
        db()
          .prepare(PRUNE_DELIVERED)
          .get(now - DELIVERED_KEEP_MS);
        const over = Number(column(db().prepare(COUNT_KEPT).get(), 'n')) - max;
        return over > 0 ? db().prepare(DROP_OLDEST).all(over).map(droppedFromRow) : [];
      })) as Dropped[],
    stats: async (): Promise<OutboxStats> =>
      statsFromRows(read(OUTBOX_CALLS.stats.doing, () => db().prepare(STATS).all())),
  };
}
