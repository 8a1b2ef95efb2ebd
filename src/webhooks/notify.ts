// The gateway's side of the outbox: when a decision carries notices (a threshold crossed, a
// ban), their events are stored durably before the request is answered. Only such a request
// waits (one group commit on SQLite, one flushed INSERT on PostgreSQL): the one that caused the
// notice, and the later one the limiter gives the same notice to again (`notices.ts`), whose
// write of the same ids stores nothing if the first succeeded. Other requests pay nothing, and
// no request ever waits for a receiver.
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
  /** Called once the events are durable, so the delivery loop sends them at once. */
  recorded?: () => void;
}

/**
 * Returns the function the gateway calls for a decision with notices. It resolves once the events
 * are in the outbox; if the store refuses them it logs the error and still resolves, since the
 * request is answered anyway and the notice's second recording may find the store back.
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
