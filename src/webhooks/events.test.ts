import { expect, test } from 'bun:test';
import type { Decision } from '../core/decision.ts';
import { parseKeys } from '../keys/file.ts';
import { eventId, expiringEvents, noticeEvents } from './events.ts';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const DAY = 86_400_000;
const EXPIRES = Date.UTC(2027, 1, 20);
const keys = parseKeys(
  JSON.stringify({
    consumers: [
      {
        name: 'acme',
        plan: 'pro',
        webhook: { url: 'https://hooks.example/q', secret: SECRET },
        keys: [{ id: 'k1', sha256: 'a'.repeat(64), expiresAt: '2027-02-20T00:00:00Z' }],
      },
      { name: 'quiet', plan: 'pro', keys: [{ id: 'k2', sha256: 'b'.repeat(64), expiresAt: '2027-02-20T00:00:00Z' }] },
    ],
  }),
);
const acme = keys[0]?.consumer;
if (!acme) throw new TypeError('the keys above have a consumer acme');

test('a threshold crossed: the Standard Webhooks body with the window numbers; the id says what it is about', () => {
  const now = Date.UTC(2026, 10, 22, 12);
  const decision: Decision = {
    outcome: 'admitted',
    now: now / 1_000,
    retryAfter: 0,
    windows: [
      { name: 'minute', seconds: 60, limit: 300, remaining: 290, reset: now / 1_000 + 60 },
      { name: 'day', seconds: 86_400, limit: 10, remaining: 2, reset: now / 1_000 + 3_600 },
    ],
    notices: [{ type: 'quota.threshold', window: 'day', threshold: 80, period: 20_779 }],
  };
  const [event] = noticeEvents(acme, decision, now);
  expect(event).toEqual({
    id: eventId('quota.threshold', 'acme', 'day', 20_779, 80),
    consumer: 'acme',
    type: 'quota.threshold',
    createdAt: now,
    payload: JSON.stringify({
      type: 'quota.threshold',
      timestamp: '2026-11-22T12:00:00.000Z',
      data: { consumer: 'acme', window: 'day', limit: 10, used: 8, reset: now / 1_000 + 3_600, threshold: 80 },
    }),
  });
  expect(event?.id).toMatch(/^msg_[0-9a-f]{32}$/);
  expect(event?.payload).not.toContain(SECRET);
});

test('key.expiring: nothing before 7 days, the 7-day notice, then the 1-day one; only keys of consumers with a webhook', () => {
  const at = (now: number) => expiringEvents(keys, now).map((e) => [e.consumer, JSON.parse(e.payload).data.days, e.id]);
  expect(at(EXPIRES - 7 * DAY - 1)).toEqual([]);
  expect(at(EXPIRES - 7 * DAY)).toEqual([['acme', 7, eventId('key.expiring', 'acme', 'k1', EXPIRES, 7)]]);
  expect(at(EXPIRES - 2 * DAY)).toEqual([['acme', 7, eventId('key.expiring', 'acme', 'k1', EXPIRES, 7)]]);
  expect(at(EXPIRES - 1 * DAY)).toEqual([['acme', 1, eventId('key.expiring', 'acme', 'k1', EXPIRES, 1)]]);
  expect(at(EXPIRES)).toEqual([]);
  expect(JSON.parse(expiringEvents(keys, EXPIRES - DAY)[0]?.payload ?? '{}').data).toEqual({
    consumer: 'acme',
    key: 'k1',
    expiresAt: EXPIRES / 1_000,
    days: 1,
  });
});
