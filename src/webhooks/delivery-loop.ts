// The delivery loop: off the request path, it polls the outbox, claims the events that are due,
// sends each one signed to its consumer's current webhook, and records the result: delivered,
// retried later (`schedule.ts`), or failed. It also keeps the outbox bounded and scans the keys
// for `key.expiring`. A slow or down receiver costs the loop time, never a request.
//
// The URL and secret are read from the keys at send time and never stored in the outbox, so the
// events of a consumer whose webhook was removed fail.
import { randomUUID } from 'node:crypto';
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import type { Attributes } from '@opentelemetry/api';
import { type Clock, systemClock } from '../core/clock.ts';
import type { Consumer, KeyRecord } from '../keys/records.ts';
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';
import { ORDER_EXPIRED } from '../store/order-rows.ts';
import type { Outbox, OutboxEntry, OutboxStats } from '../store/outbox.ts';
import { clientSpan } from '../trace/spans.ts';
import { expiringEvents } from './events.ts';
import { nextAttemptAt, RETRY_DELAYS_MS } from './schedule.ts';
import { type AttemptResult, PUBLIC_TARGETS, SEND_TIMEOUT_MS, send, type Targets } from './sender.ts';

/**
 * A delivery's span attributes (OpenTelemetry's HTTP client conventions): the receiver's host
 * and port, never its path or query (a receiver's URL may carry a token), nor the secret.
 */
function deliveryAttributes(entry: OutboxEntry, url: string): Attributes {
  const { hostname, port, protocol } = new URL(url);
  return {
    'http.request.method': 'POST',
    'server.address': hostname,
    'server.port': port === '' ? (protocol === 'https:' ? 443 : 80) : Number(port),
    'petstore.consumer.name': entry.consumer,
    'petstore.webhook.event': entry.type,
    'petstore.webhook.attempt': entry.attempts + 1,
  };
}

/** A delivery's outcome on its span: the receiver's status; Error unless it answered 2xx. */
const DELIVERY_SPAN = {
  outcome: (r: AttemptResult): Attributes => (r.status === undefined ? {} : { 'http.response.status_code': r.status }),
  error: (r: AttemptResult) => (r.ok ? undefined : r.error),
};

/** How often the loop polls the outbox when nothing wakes it. */
const POLL_MS = 1_000;
/** Events claimed per pass, sent in parallel. */
const BATCH = 16;
/**
 * How long a claim lasts: three times a pass, whose parallel attempts each end within
 * `SEND_TIMEOUT_MS`. Events claimed by an instance that died wait this long at most.
 */
const CLAIM_MS = 15_000;
/** How often keys are scanned for `key.expiring`. */
const EXPIRY_SCAN_MS = 60 * 60_000;
/** Undelivered events kept at most, unless configured (`--webhook-outbox-max`). */
const DEFAULT_OUTBOX_MAX = 10_000;

/** What the loop reports, for `/metrics` (src/metrics/webhook-series.ts). */
export interface WebhookReport {
  /** An attempt's result: `delivered`, `retried`, `failed` (given up), `dropped` (outbox full). */
  delivery(consumer: string, event: string, outcome: 'delivered' | 'retried' | 'failed' | 'dropped'): void;
  /** The outbox as last read. */
  outbox(stats: OutboxStats, now: number): void;
}

export interface DeliveryLoopOptions {
  outbox: Outbox;
  /** The keys now loaded: where each consumer's webhook is found at send time. */
  keys: () => readonly KeyRecord[];
  log: Logger;
  clock?: Clock;
  report?: WebhookReport;
  /** Delays before each retry (`PETSTORE_WEBHOOK_RETRY_SECONDS` in tests). */
  delays?: readonly number[];
  /** Undelivered events kept at most. */
  maxOutbox?: number;
  timeoutMs?: number;
  pollMs?: number;
  /**
   * Where attempts may connect (public addresses, and the private ranges `--webhook-allow-cidr`
   * allows).
   */
  targets?: Targets;
}

/**
 * @example
 * const delivery = new DeliveryLoop({ outbox: store.outbox, keys: () => table.records(), log });
 * delivery.start(); … delivery.wake(); … await delivery.stop();
 */
export class DeliveryLoop {
  readonly #o: Required<Omit<DeliveryLoopOptions, 'report'>> & { report?: WebhookReport };
  /** Names this instance's claims (`claimed_by`). */
  readonly #claimant = randomUUID();
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #lastScan = Number.NEGATIVE_INFINITY;
  #stopped = false;
  /** Aborts the attempts in progress on `stop`; they stay due for whichever instance runs next. */
  readonly #stop = new AbortController();
  /**
   * The reason the outbox cannot be read, while it cannot; logged once when the failure starts
   * and once when it ends.
   */
  #failing: string | undefined;

  constructor({
    clock = systemClock,
    delays = RETRY_DELAYS_MS,
    maxOutbox = DEFAULT_OUTBOX_MAX,
    timeoutMs = SEND_TIMEOUT_MS,
    pollMs = POLL_MS,
    targets = PUBLIC_TARGETS,
    ...rest
  }: DeliveryLoopOptions) {
    this.#o = { clock, delays, maxOutbox, timeoutMs, pollMs, targets, ...rest };
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#o.pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Runs a pass now (e.g. after an event was recorded), or right after the current pass ends. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pass()
      .then(() => {
        if (this.#failing === undefined) return;
        this.#failing = undefined;
        this.#o.log.info('webhooks: the outbox can be read again');
      })
      .catch((err: unknown) => {
        if (this.#failing !== undefined) return;
        this.#failing = peerText(err);
        this.#o.log.warn('webhooks: the outbox cannot be read; deliveries wait', { error: this.#failing });
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          setTimeout(() => this.wake(), 0);
        }
      });
  }

  /**
   * Stops polling, aborts the attempts in progress (they stay pending) and waits until their
   * results are stored.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#stop.abort();
    await this.#running;
  }

  async #pass(): Promise<void> {
    const { outbox, clock, maxOutbox, report } = this.#o;
    const now = clock.now();
    if (now - this.#lastScan >= EXPIRY_SCAN_MS) {
      this.#lastScan = now;
      const expiring = expiringEvents(this.#o.keys(), now);
      if (expiring.length > 0) await outbox.record(expiring);
    }
    const due = await outbox.claim(this.#claimant, now, CLAIM_MS, BATCH);
    if (due.length > 0) {
      const consumers = new Map<string, Consumer>();
      for (const key of this.#o.keys()) consumers.set(key.consumer.name, key.consumer);
      await Promise.all(due.map((entry) => this.#deliver(entry, consumers.get(entry.consumer))));
    }
    let stats = await outbox.stats();
    if (stats.pending + stats.failed > maxOutbox) {
      for (const d of await outbox.trim(maxOutbox, clock.now())) report?.delivery(d.consumer, d.type, 'dropped');
      stats = await outbox.stats();
    }
    report?.outbox(stats, clock.now());
    if (due.length === BATCH) this.#again = true;
  }

  async #deliver(entry: OutboxEntry, consumer: Consumer | undefined): Promise<void> {
    const { outbox, clock, log, report, delays, timeoutMs, targets } = this.#o;
    const webhook = consumer?.webhook;
    const result: AttemptResult = webhook
      ? await clientSpan(
          'POST',
          deliveryAttributes(entry, webhook.url),
          entry.traceparent,
          (traceparent) =>
            send(
              {
                id: entry.id,
                payload: entry.payload,
                url: webhook.url,
                secret: webhook.secret,
                at: clock.now(),
                ...(traceparent ? { traceparent } : {}),
              },
              timeoutMs,
              this.#stop.signal,
              targets,
            ),
          DELIVERY_SPAN,
        )
      : { ok: false, error: 'the consumer has no webhook now' };
    const now = clock.now();
    const fields = { consumer: entry.consumer, event: entry.type, id: entry.id, attempt: entry.attempts + 1 };
    // An expired order is recorded for every consumer; for one without a webhook there is
    // nothing to deliver to, which is not a failure (no warning, no failed count).
    if (!webhook && entry.type === ORDER_EXPIRED) {
      await outbox.settle(entry.id, this.#claimant, { outcome: 'failed', error: 'the consumer has no webhook' }, now);
      report?.delivery(entry.consumer, entry.type, 'dropped');
      log.debug('webhook event dropped: its consumer has no webhook', fields);
      return;
    }
    if (result.ok) {
      await outbox.settle(entry.id, this.#claimant, { outcome: 'delivered' }, now);
      report?.delivery(entry.consumer, entry.type, 'delivered');
      return;
    }
    // Aborted by `stop`: due again at once, for another instance now or this one after a restart.
    const at = this.#stop.signal.aborted ? now : webhook ? nextAttemptAt(entry.attempts + 1, now, delays) : undefined;
    if (at === undefined) {
      await outbox.settle(entry.id, this.#claimant, { outcome: 'failed', error: result.error }, now);
      report?.delivery(entry.consumer, entry.type, 'failed');
      log.warn('webhook failed; no more attempts', { ...fields, error: result.error });
      return;
    }
    await outbox.settle(entry.id, this.#claimant, { outcome: 'retry', at, error: result.error }, now);
    report?.delivery(entry.consumer, entry.type, 'retried');
    log.info('webhook attempt failed; retrying', {
      ...fields,
      error: result.error,
      retryAt: new Date(at).toISOString(),
    });
  }
}
