// The webhook outbox in PostgreSQL, shared by every instance on the database: its statements,
// and the Outbox a PostgresStore serves through its own pool and error handling.
import type postgres from 'postgres';
import { DELIVERED_KEEP_MS, entryFromRow, type Outbox, statsFromRows } from '../outbox.ts';
import {
  ANY_DUE,
  COUNT_KEPT,
  claim,
  DROP_OLDEST,
  droppedFromRow,
  numbered,
  PRUNE_DELIVERED,
  RECORD,
  SETTLE,
  STATS,
  settleParams,
} from '../sql/outbox-sql.ts';
import { column } from '../sql/pet-rows.ts';
import { OUTBOX_CALLS } from '../store.ts';
import { transaction } from './postgres-transaction.ts';

/** The outbox's statements with PostgreSQL's numbered parameters. */
export const OUTBOX = {
  record: numbered(RECORD),
  anyDue: numbered(ANY_DUE),
  claim: numbered(claim('FOR UPDATE SKIP LOCKED')),
  settle: numbered(SETTLE),
  prune: numbered(PRUNE_DELIVERED),
  countKept: COUNT_KEPT,
  dropOldest: numbered(DROP_OLDEST),
  stats: STATS,
};

/** How the store runs a statement: `query` for a read, `write` for a change. */
interface Runner {
  /** The store's current pool (the store may replace it). */
  sql(): postgres.Sql;
  query<T>(doing: string, run: () => Promise<T>): Promise<T>;
  write<T>(doing: string, run: () => Promise<T>): Promise<T>;
}

/** The outbox on the store's pool; each write is durable before it resolves, like a create. */
export function postgresOutbox({ sql, query, write }: Runner): Outbox {
  return {
    record: async (events) => {
      await write(OUTBOX_CALLS.record.doing, () =>
        transaction(sql(), async (tx) => {
          for (const e of events) {
            await tx.unsafe(OUTBOX.record, [
              e.id,
              e.consumer,
              e.type,
              e.payload,
              e.createdAt,
              e.createdAt,
              e.traceparent ?? null,
            ]);
          }
        }),
      );
    },
    claim: async (claimant, now, claimMs, limit) => {
      const due = await query(OUTBOX_CALLS.claim.doing, () => sql().unsafe(OUTBOX.anyDue, [now, now]));
      if (due.length === 0) return [];
      const rows = await write(OUTBOX_CALLS.claim.doing, () =>
        sql().unsafe(OUTBOX.claim, [claimant, now + claimMs, now, now, limit, now]),
      );
      return rows.map(entryFromRow).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    },
    settle: async (id, claimant, settlement, now) => {
      await write(OUTBOX_CALLS.settle.doing, () =>
        sql().unsafe(OUTBOX.settle, [...settleParams(settlement, now), id, claimant]),
      );
    },
    trim: async (max, now) =>
      write(OUTBOX_CALLS.trim.doing, () =>
        transaction(sql(), async (tx) => {
          await tx.unsafe(OUTBOX.prune, [now - DELIVERED_KEEP_MS]);
          const [kept] = await tx.unsafe(OUTBOX.countKept);
          const over = Number(column(kept, 'n')) - max;
          if (over <= 0) return [];
          const rows = await tx.unsafe(OUTBOX.dropOldest, [over]);
          return rows.map(droppedFromRow);
        }),
      ),
    stats: async () => statsFromRows(await query(OUTBOX_CALLS.stats.doing, () => sql().unsafe(OUTBOX.stats))),
  };
}
