/**
 * The bench's "webhook receiver that never answers" scenario: the list path on two products
 * started alike, with the same consumers and the same crossings recorded, that differ only in
 * their receiver. `petstore`'s answers at once (its outbox is empty when the rounds start);
 * `hooked`'s accepts each delivery and never answers, so its worker holds a full batch of
 * attempts open, times them out after 5 s, retries, and keeps its outbox at the bound the whole
 * time. What a dead receiver costs the API shows as `hooked` against `petstore`: p99 and CPU.
 */
import { metricSum } from '../../test/harness.ts';
import { newSecret, type Receiver, startReceiver } from '../../test/webhook-receiver.ts';
import type { ServerName } from './report.ts';
import type { Running } from './servers.ts';
import { KEYS, LIST, request, type Scenario, startSeeded, tokenOf, writeKeysFile } from './setup.ts';

/** Consumers with a webhook: each crosses 80% and 100% of its day on one request, then is refused once. */
const CONSUMERS = 100;
/** The outbox bound both products run with: below the 300 events the crossings record. */
export const HOOKS_OUTBOX_MAX = 200;
const EVENTS = CONSUMERS * 3;

export const HOOKS_SCENARIO: Scenario = {
  id: 'hooks',
  label: `GET ${LIST} while a webhook receiver never answers`,
  expect: 200,
  servers: ['petstore', 'hooked'],
  data: 'hooks',
  load: { method: 'GET', path: LIST, token: tokenOf('bench'), addresses: 0 },
};

/** The outbox and deliveries of one product, from its /metrics. */
export interface OutboxFigures {
  readonly pending: number;
  readonly failed: number;
  readonly delivered: number;
  readonly retried: number;
  readonly dropped: number;
}

/** What the scenario saw of both outboxes: after the crossings, and after the rounds. */
export interface HooksFigures {
  readonly events: number;
  readonly outboxMax: number;
  /** `hooked`'s receiver: connections accepted and never answered. */
  readonly hanging: number;
  readonly before: Partial<Record<ServerName, OutboxFigures>>;
  readonly after: Partial<Record<ServerName, OutboxFigures>>;
}

export interface HooksFleet {
  readonly servers: Partial<Record<ServerName, Running>>;
  readonly logs: Partial<Record<ServerName, string>>;
  /** The outboxes as the rounds started and now, for the report; then stops the receivers (after the servers). */
  finish(): Promise<HooksFigures>;
}

/**
 * Both products, seeded, with every consumer's crossings recorded; resolves once `petstore`'s
 * receiver has all of them and `hooked`'s worker has the bound's worth pending.
 */
export async function startHooksFleet(dir: string, cmd: string[]): Promise<HooksFleet> {
  const secret = newSecret();
  const answering = await startReceiver(secret, () => 204);
  const dead = await startReceiver(secret, () => 'hang');
  const extra = ['--metrics', '--webhook-outbox-max', String(HOOKS_OUTBOX_MAX)];
  const [petstore, petstoreLog] = await startSeeded(
    cmd,
    dir,
    'hooks-answered',
    keysFor(dir, 'answered', answering, secret),
    extra,
  );
  const [hooked, hookedLog] = await startSeeded(cmd, dir, 'hooks-dead', keysFor(dir, 'dead', dead, secret), extra);
  for (const server of [petstore, hooked]) await cross(server);
  const servers = { petstore, hooked };
  await until(`the answering receiver to be sent all ${EVENTS} events`, async () => {
    const o = await outboxOf(petstore);
    return o.pending === 0 && o.delivered + o.dropped === EVENTS;
  });
  await until(`the dead receiver's outbox to be trimmed to ${HOOKS_OUTBOX_MAX}`, async () => {
    const o = await outboxOf(hooked);
    return o.pending + o.failed <= HOOKS_OUTBOX_MAX && o.dropped > 0 && dead.got.length > 0;
  });
  const before = await figures(servers);
  return {
    servers,
    logs: { petstore: petstoreLog, hooked: hookedLog },
    finish: async () => {
      const after = await figures(servers);
      const hanging = dead.got.length;
      await Promise.all([answering.close(), dead.close()]);
      return { events: EVENTS, outboxMax: HOOKS_OUTBOX_MAX, hanging, before, after };
    },
  };
}

/** The bench keys and CONSUMERS consumers of one request a day, each with a webhook to `receiver`. */
function keysFor(dir: string, name: string, receiver: Receiver, secret: string): string {
  const consumers = Array.from({ length: CONSUMERS }, (_, i) => ({
    name: `hook${i}`,
    plan: 'free',
    limits: { perMinute: 100, perDay: 1 },
    webhook: { url: receiver.url, secret },
  }));
  return writeKeysFile(dir, `keys-hooks-${name}.json`, [...KEYS, ...consumers]).file;
}

/** Each consumer's first request (80% and 100% of its day) and a refused second (the first 429). */
async function cross(server: Running): Promise<void> {
  for (let i = 0; i < CONSUMERS; i++) {
    for (const expected of [200, 429]) {
      const res = await request(`${server.url}${LIST}`, { token: tokenOf(`hook${i}`) });
      await res.arrayBuffer();
      if (res.status !== expected) throw new Error(`hooks: hook${i} answered ${res.status}, not ${expected}`);
    }
  }
}

async function figures(servers: Partial<Record<ServerName, Running>>): Promise<HooksFigures['before']> {
  const out: HooksFigures['before'] = {};
  for (const [name, server] of Object.entries(servers) as [ServerName, Running][]) out[name] = await outboxOf(server);
  return out;
}

/** The outbox's gauges and the delivery counters, summed over consumers and events. */
async function outboxOf(server: Running): Promise<OutboxFigures> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const deliveries = (outcome: string) =>
    metricSum(text, new RegExp(`^petstore_webhook_deliveries_total\\{.*outcome="${outcome}"`));
  return {
    pending: metricSum(text, /^petstore_webhook_outbox_events\{state="pending"\}/),
    failed: metricSum(text, /^petstore_webhook_outbox_events\{state="failed"\}/),
    delivered: deliveries('delivered'),
    retried: deliveries('retried'),
    dropped: deliveries('dropped'),
  };
}

async function until(what: string, done: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`hooks: waited ${ms / 1000} s for ${what}`);
    await Bun.sleep(100);
  }
}
