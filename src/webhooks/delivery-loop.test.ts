import { afterEach, expect, test } from 'bun:test';
import { newSecret, type Receiver, startReceiver } from '../../test/webhook-receiver.ts';
import { parseKeys } from '../keys/file.ts';
import { createLogger } from '../log.ts';
import { MemoryOutbox } from '../store/outbox.ts';
import { DeliveryLoop, type WebhookReport } from './delivery-loop.ts';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

function keysFor(url: string | undefined, secret: string) {
  return parseKeys(
    JSON.stringify({
      consumers: [
        { name: 'acme', plan: 'pro', ...(url ? { webhook: { url, secret } } : {}), keys: [{ sha256: 'a'.repeat(64) }] },
      ],
    }),
  );
}

function recorder() {
  const outcomes: string[] = [];
  const report: WebhookReport = {
    delivery: (consumer, event, outcome) => outcomes.push(`${consumer} ${event} ${outcome}`),
    outbox: () => {},
  };
  return { outcomes, report };
}

/** Runs passes until the outbox holds nothing pending (each pass waits for its attempts). */
async function drain(delivery: DeliveryLoop, outbox: MemoryOutbox) {
  for (let i = 0; i < 50 && (await outbox.stats()).pending > 0; i++) {
    delivery.wake();
    await new Promise((r) => setTimeout(r, 20));
  }
}

const EVENT = {
  id: 'msg_1',
  consumer: 'acme',
  type: 'quota.threshold',
  payload: '{"type":"quota.threshold"}',
  createdAt: 0,
};

test('a receiver that keeps answering 503: retried through the schedule, then failed and counted; the secret never logged', async () => {
  const secret = newSecret();
  const hooks = await startReceiver(secret, () => 503);
  receivers.push(hooks);
  const outbox = new MemoryOutbox();
  await outbox.record([EVENT]);
  const lines: string[] = [];
  const { outcomes, report } = recorder();
  const keys = keysFor(hooks.url, secret);
  const delivery = new DeliveryLoop({
    outbox,
    keys: () => keys,
    log: createLogger({ write: (l) => lines.push(l) }),
    report,
    delays: [1, 1],
    pollMs: 60_000,
  });
  await drain(delivery, outbox);
  await delivery.stop();
  expect(hooks.got.map((r) => [r.id, r.status, r.body?.type])).toEqual([
    ['msg_1', 503, 'quota.threshold'],
    ['msg_1', 503, 'quota.threshold'],
    ['msg_1', 503, 'quota.threshold'],
  ]);
  expect(outcomes).toEqual([
    'acme quota.threshold retried',
    'acme quota.threshold retried',
    'acme quota.threshold failed',
  ]);
  expect(await outbox.stats()).toEqual({ pending: 0, failed: 1, oldestPendingAt: undefined });
  expect(lines.map((l) => JSON.parse(l).msg)).toEqual([
    'webhook attempt failed; retrying',
    'webhook attempt failed; retrying',
    'webhook failed; no more attempts',
  ]);
  expect(JSON.parse(lines[2] as string)).toMatchObject({
    consumer: 'acme',
    event: 'quota.threshold',
    attempt: 3,
    error: 'HTTP 503',
  });
  expect(lines.join('\n')).not.toContain(secret.slice(6));
});

test('a consumer whose webhook was removed has its events failed at once', async () => {
  const outbox = new MemoryOutbox();
  await outbox.record([EVENT]);
  const { outcomes, report } = recorder();
  const keys = keysFor(undefined, '');
  const delivery = new DeliveryLoop({
    outbox,
    keys: () => keys,
    log: createLogger({ write: () => {} }),
    report,
    pollMs: 60_000,
  });
  await drain(delivery, outbox);
  await delivery.stop();
  expect(outcomes).toEqual(['acme quota.threshold failed']);
});

test('an expired order of a consumer without a webhook is dropped, not failed: nothing is warned', async () => {
  const outbox = new MemoryOutbox();
  await outbox.record([{ ...EVENT, id: 'msg_order', type: 'order.expired' }]);
  const { outcomes, report } = recorder();
  const keys = keysFor(undefined, '');
  const lines: string[] = [];
  const delivery = new DeliveryLoop({
    outbox,
    keys: () => keys,
    log: createLogger({ write: (l) => lines.push(l) }),
    report,
    pollMs: 60_000,
  });
  await drain(delivery, outbox);
  await delivery.stop();
  expect(outcomes).toEqual(['acme order.expired dropped']);
  expect(lines.filter((l) => l.includes('"level":"warn"'))).toEqual([]);
  expect(await outbox.stats()).toEqual({ pending: 0, failed: 1, oldestPendingAt: undefined });
});
