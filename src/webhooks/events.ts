// Builds the webhook events stored in the outbox: one per notice a decision carries, and one per
// key about to expire. Each event's id is a hash of what it is about (consumer, window, period,
// threshold; a ban's end; a key's expiry), so the same event recorded twice (by two instances
// while Redis was down, or by a repeated scan) is one outbox row and one delivery.
//
// Bodies follow the Standard Webhooks shape: `{"type", "timestamp", "data"}`; times in `data`
// are Unix seconds, as in the rate-limit headers and `GET /v1/rate_limit`.
import { createHash } from 'node:crypto';
import type { Decision, Notice } from '../core/decision.ts';
import type { Consumer, KeyRecord } from '../keys/records.ts';
import type { OutboxEvent } from '../store/outbox.ts';

const DAY_MS = 86_400_000;
/** Days before a key's `expiresAt` that `key.expiring` is sent. */
const EXPIRY_NOTICE_DAYS = [7, 1] as const;

/**
 * An event id derived from what the event is about, the same on every instance: `msg_` and 32
 * hex digits.
 *
 * @example
 * eventId('quota.threshold', 'acme', 'day', 20779, 80) // 'msg_…'
 */
export function eventId(...about: readonly (string | number)[]): string {
  return `msg_${createHash('sha256').update(about.join('\n')).digest('hex').slice(0, 32)}`;
}

function body(type: string, at: number, data: Record<string, unknown>): string {
  return JSON.stringify({ type, timestamp: new Date(at).toISOString(), data });
}

/**
 * The outbox events for `decision.notices` of `consumer`, created at `at` (epoch ms).
 *
 * @example
 * noticeEvents(consumer, decision, Date.now()) // [{ id: 'msg_…', type: 'quota.threshold', … }]
 */
export function noticeEvents(consumer: Consumer, decision: Decision, at: number): OutboxEvent[] {
  return (decision.notices ?? []).map((notice) => record(consumer.name, notice, decision, at));
}

function record(name: string, notice: Notice, decision: Decision, at: number): OutboxEvent {
  const event = (id: string, data: Record<string, unknown>): OutboxEvent => ({
    id,
    consumer: name,
    type: notice.type,
    payload: body(notice.type, at, { consumer: name, ...data }),
    createdAt: at,
  });
  if (notice.type === 'key.banned') {
    return event(eventId(notice.type, name, notice.until), { until: Math.ceil(notice.until / 1_000) });
  }
  const window = decision.windows.find((w) => w.name === notice.window);
  const limit = window?.limit ?? 0;
  const numbers = { window: notice.window, limit, used: limit - (window?.remaining ?? 0), reset: window?.reset ?? 0 };
  if (notice.type === 'quota.exhausted') {
    return event(eventId(notice.type, name, notice.window, notice.period), numbers);
  }
  const { threshold } = notice;
  return event(eventId(notice.type, name, notice.window, notice.period, threshold), { ...numbers, threshold });
}

/**
 * `key.expiring` events for each key, of a consumer with a webhook, that expires within 7 days or
 * within 1 day (only the nearer notice). The delivery loop's periodic scan records them.
 *
 * @example
 * expiringEvents(keys.records(), Date.now())
 */
export function expiringEvents(keys: readonly KeyRecord[], now: number): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  for (const key of keys) {
    const { expiresAt, consumer } = key;
    if (expiresAt === undefined || !consumer.webhook || now >= expiresAt) continue;
    const days = [...EXPIRY_NOTICE_DAYS].reverse().find((d) => now >= expiresAt - d * DAY_MS);
    if (days === undefined) continue;
    const type = 'key.expiring';
    events.push({
      id: eventId(type, consumer.name, key.id, expiresAt, days),
      consumer: consumer.name,
      type,
      payload: body(type, now, {
        consumer: consumer.name,
        key: key.id,
        expiresAt: Math.floor(expiresAt / 1_000),
        days,
      }),
      createdAt: now,
    });
  }
  return events;
}
