// The webhook series for `GET /metrics`: deliveries by consumer, event and outcome, and the
// outbox's depth and oldest pending age as the delivery loop last read them. Consumer names
// come from the outbox, which only the keys file's consumers fill, so the series stay bounded.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { OutboxStats } from '../store/outbox.ts';
import type { WebhookReport } from '../webhooks/delivery-loop.ts';

/**
 * What the delivery loop (`DeliveryLoop`) reports, as prom-client series; one instance inside
 * `Metrics`.
 *
 * @example
 * metrics.webhooks.delivery('acme', 'quota.threshold', 'delivered')
 */
export class WebhookMetrics implements WebhookReport {
  #deliveries: Counter<'consumer' | 'event' | 'outcome'> | undefined;
  #stats: OutboxStats = { pending: 0, failed: 0, oldestPendingAt: undefined };
  #readAt = 0;

  register(registry: Registry): void {
    const registers = [registry];
    this.#deliveries = new Counter({
      name: 'petstore_webhook_deliveries_total',
      help: 'Webhook delivery attempts by consumer, event type and outcome (delivered, retried, failed: given up, dropped: by the outbox bound).',
      labelNames: ['consumer', 'event', 'outcome'] as const,
      registers,
    });
    const read = () => this.#stats;
    const age = () => {
      const oldest = this.#stats.oldestPendingAt;
      return oldest === undefined ? 0 : Math.max(0, (this.#readAt - oldest) / 1_000);
    };
    new Gauge({
      name: 'petstore_webhook_outbox_events',
      help: 'Webhook events in the outbox, by state (pending: to be delivered; failed: given up on, kept until the bound drops them).',
      labelNames: ['state'] as const,
      registers,
      // With workers, only the supervisor delivers: show its values, not a sum with workers' zeros.
      aggregator: 'max',
      collect() {
        this.set({ state: 'pending' }, read().pending);
        this.set({ state: 'failed' }, read().failed);
      },
    });
    new Gauge({
      name: 'petstore_webhook_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest webhook event not yet delivered (0 when none is pending).',
      registers,
      aggregator: 'max',
      collect() {
        this.set(age());
      },
    });
  }

  delivery(consumer: string, event: string, outcome: 'delivered' | 'retried' | 'failed' | 'dropped'): void {
    this.#deliveries?.inc({ consumer, event, outcome });
  }

  outbox(stats: OutboxStats, now: number): void {
    this.#stats = stats;
    this.#readAt = now;
  }
}
