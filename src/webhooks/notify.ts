// The gateway's side of the outbox: a decision that crossed something has its events recorded
// durably before the request's answer is sent. Only a request whose decision carries notices
// waits (one group commit on SQLite, one flushed INSERT on PostgreSQL): the crossing one, and
// the one the limiter gives them to once more 30 s later (`notices.ts`), whose write of the same
// ids records nothing when the first was kept. Every other request pays nothing, and no request
// ever waits for a receiver.
import type { Clock } from '../core/clock.ts';
import type { Decision } from '../core/decision.ts';
import type { Consumer } from '../keys/records.ts';
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';
import type { Outbox } from '../store/outbox.ts';
import { currentTraceParent } from '../trace/spans.ts';
import { noticeEvents } from './events.ts';

export interface NotifierOptions {
  outbox: Outbox;
  log: Logger;
  clock: Clock;
  /** Told once the events are durable, so the delivery loop sends them at once. */
  recorded?: () => void;
}

/**
 * What the gateway calls for a decision with notices: resolves once they are in the outbox (or
 * logged when the store refuses them: the request itself is answered all the same, and the
 * notices' second time may find the store back).
 *
 * @example
 * const notify = notifier({ outbox: store.outbox, log, clock, recorded: () => delivery.wake() })
 * createAdmissionCheck({ …, notify })
 */
export function notifier({ outbox, log, clock, recorded }: NotifierOptions) {
  return async function notify(consumer: Consumer, decision: Decision): Promise<void> {
    // The request's trace goes with its events: each delivery's span links back to it.
    const traceparent = currentTraceParent();
    const noticed = noticeEvents(consumer, decision, clock.now());
    const events = traceparent ? noticed.map((e) => ({ ...e, traceparent })) : noticed;
    try {
      await outbox.record(events);
      recorded?.();
    } catch (err) {
      log.error('webhook events could not be recorded', {
        consumer: consumer.name,
        events: events.map((e) => e.type),
        error: peerText(err),
      });
    }
  };
}
