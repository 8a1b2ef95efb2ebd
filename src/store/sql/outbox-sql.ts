// The outbox's statements, written once for both engines with `?` parameters (`numbered` turns
// them into PostgreSQL's `$1`…). Times are epoch ms. A claim is one conditional UPDATE that takes
// only rows still pending and unclaimed, so two delivery loops racing for a row never both get
// it; on PostgreSQL `FOR UPDATE SKIP LOCKED` also lets them take different rows at once.
import type { Dropped, Settlement } from '../outbox.ts';
import { column } from './pet-rows.ts';

/** Parameters: id, consumer, type, payload, created_at, next_at, traceparent. */
export const RECORD = `INSERT INTO webhook_outbox (id, consumer, type, payload, created_at, next_at, traceparent)
  VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`;

const DUE_ROW = "status = 'pending' AND next_at <= ? AND coalesce(claimed_until, 0) <= ?";

/** Whether any event is due; a read, so an idle delivery loop's poll writes nothing. */
export const ANY_DUE = `SELECT 1 AS due FROM webhook_outbox WHERE ${DUE_ROW} LIMIT 1`;

/** Parameters: claimant, claim end, now, now, limit, now. */
export const claim = (lock: '' | 'FOR UPDATE SKIP LOCKED') => `UPDATE webhook_outbox
  SET claimed_by = ?, claimed_until = ?
  WHERE id IN (SELECT id FROM webhook_outbox WHERE ${DUE_ROW} ORDER BY created_at, id LIMIT ? ${lock})
    AND status = 'pending' AND coalesce(claimed_until, 0) <= ?
  RETURNING id, consumer, type, payload, created_at, attempts, traceparent`;

/** Parameters: status, next_at, last_error, id, claimant. */
export const SETTLE = `UPDATE webhook_outbox
  SET status = ?, attempts = attempts + 1, next_at = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL
  WHERE id = ? AND claimed_by = ?`;

export const PRUNE_DELIVERED = "DELETE FROM webhook_outbox WHERE status = 'delivered' AND next_at <= ?";
export const COUNT_KEPT = "SELECT count(*) AS n FROM webhook_outbox WHERE status <> 'delivered'";
/** Failed events first, then pending ones, oldest first. */
export const DROP_OLDEST = `DELETE FROM webhook_outbox WHERE id IN (
    SELECT id FROM webhook_outbox WHERE status <> 'delivered'
    ORDER BY CASE status WHEN 'failed' THEN 0 ELSE 1 END, created_at, id LIMIT ?)
  RETURNING consumer, type`;
export const STATS = `SELECT status, count(*) AS n, min(created_at) AS oldest FROM webhook_outbox
  WHERE status <> 'delivered' GROUP BY status`;

/** SETTLE's first three parameters: status, next_at, last_error. */
export function settleParams(settlement: Settlement, now: number): [string, number, string | null] {
  if (settlement.outcome === 'retry') return ['pending', settlement.at, settlement.error];
  return [settlement.outcome, now, settlement.outcome === 'failed' ? settlement.error : null];
}

/** Turns a row that DROP_OLDEST returned into a `Dropped`. */
export function droppedFromRow(row: unknown): Dropped {
  return { consumer: String(column(row, 'consumer')), type: String(column(row, 'type')) };
}

/**
 * Replaces `?` parameters with PostgreSQL's numbered ones.
 *
 * @example
 * numbered('SELECT ? + ?') // 'SELECT $1 + $2'
 */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
