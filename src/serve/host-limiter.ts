/**
 * The limiter of a process with workers: one owner, the supervisor, holds every window, ban and
 * stranger's count (the in-process limiter, or the Redis one with its leases), and each worker
 * asks it for each decision by message. One owner makes the decisions exactly those of one
 * event loop: the same windows, costs, bans, report-only keys and strangers' table, for the host;
 * and with `--redis` the host's script runs are those of one instance.
 *
 * A consumer's subject is sent once per worker and named by a number after that; a stranger's is
 * sent whole (it is made per request).
 */
import { LRUCache } from 'lru-cache';
import type { RateLimiter, Subject, Verdict } from '../gateway/index.ts';
import { currentScope, inScope, requestScope } from '../trace/scope.ts';

/** A worker's question. */
export interface DecideMessage {
  readonly type: 'decide';
  readonly id: number;
  /** The subject's number on this worker; 0 for a stranger's, sent whole. */
  readonly ref: number;
  /** Sent with the first question about it (and again when the supervisor has forgotten it). */
  readonly subject?: Subject;
  readonly cost: number;
  /** The request's ids, so what the decision logs (a ban started) carries them as on one worker. */
  readonly scope?: readonly [requestId: string, traceId?: string, spanId?: string];
}

/** The supervisor's answer. */
export type DecidedMessage =
  | { readonly type: 'decided'; readonly id: number; readonly verdict: Verdict }
  | { readonly type: 'decided'; readonly id: number; readonly error: string }
  /** The subject's number is not known (forgotten): ask again with the subject. */
  | { readonly type: 'decided'; readonly id: number; readonly unknown: true };

/** A question waiting for its answer. */
interface Waiting {
  resolve(verdict: Verdict): void;
  reject(err: Error): void;
  readonly ask: DecideMessage;
}

/** Subjects the supervisor remembers per worker: more than a keys file names. */
const KNOWN_SUBJECTS = 20_000;

/**
 * The worker's side: a `RateLimiter` whose decisions are the supervisor's.
 *
 * @example
 * const limiter = new RemoteLimiter((m) => postMessage(m)); onmessage = (e) => limiter.answer(e.data)
 */
export class RemoteLimiter implements RateLimiter {
  readonly #send: (message: DecideMessage) => void;
  readonly #waiting = new Map<number, Waiting>();
  readonly #refs = new WeakMap<Subject, number>();
  /** The subjects by number, for a supervisor that forgot one. */
  readonly #subjects = new LRUCache<number, Subject>({ max: KNOWN_SUBJECTS });
  #lastId = 0;
  #lastRef = 0;

  constructor(send: (message: DecideMessage) => void) {
    this.#send = send;
  }

  decide(subject: Subject, cost = 1): Promise<Verdict> {
    const id = ++this.#lastId;
    const now = currentScope();
    const scope = now ? ([now.requestId, now.traceId, now.spanId] as const) : undefined;
    let ask: DecideMessage;
    if (subject.plan === 'anonymous') ask = { type: 'decide', id, ref: 0, subject, cost, scope };
    else {
      const ref = this.#refs.get(subject);
      if (ref !== undefined) ask = { type: 'decide', id, ref, cost, scope };
      else {
        const made = ++this.#lastRef;
        this.#refs.set(subject, made);
        this.#subjects.set(made, subject);
        ask = { type: 'decide', id, ref: made, subject, cost, scope };
      }
    }
    return new Promise<Verdict>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject, ask });
      this.#send(ask);
    });
  }

  /** Takes the supervisor's answer to a question. */
  answer(message: DecidedMessage): void {
    const waiting = this.#waiting.get(message.id);
    if (!waiting) return;
    if ('unknown' in message) {
      this.#askAgain(message.id, waiting);
      return;
    }
    this.#waiting.delete(message.id);
    if ('error' in message) waiting.reject(new Error(message.error));
    else waiting.resolve(message.verdict);
  }

  /** The supervisor forgot the subject of question `id`: asked again, the subject with it. */
  #askAgain(id: number, waiting: Waiting): void {
    const subject = waiting.ask.subject ?? this.#subjects.get(waiting.ask.ref);
    if (waiting.ask.subject || !subject) {
      this.#waiting.delete(id);
      waiting.reject(new Error('the supervisor does not know the subject'));
      return;
    }
    const again: DecideMessage = { ...waiting.ask, subject };
    this.#waiting.set(id, { ...waiting, ask: again });
    this.#send(again);
  }

  /** Rejects every question still waiting: the supervisor will not answer them. */
  fail(reason: string): void {
    for (const { reject } of this.#waiting.values()) reject(new Error(reason));
    this.#waiting.clear();
  }
}

/**
 * The supervisor's side for one worker: answers its questions with the host's `limiter`. A
 * consumer's subject is the same object whichever worker sent it (when its content is the same),
 * so the limiter sees one consumer (a Redis lease is kept per subject).
 */
export class LimiterOwner {
  readonly #limiter: RateLimiter;
  readonly #byId = new LRUCache<string, Subject>({ max: KNOWN_SUBJECTS });
  readonly #texts = new WeakMap<Subject, string>();

  constructor(limiter: RateLimiter) {
    this.#limiter = limiter;
  }

  /** A worker's subjects by number: made per worker (`forWorker`), dropped with it. */
  forWorker(send: (message: DecidedMessage) => void): (message: DecideMessage) => void {
    const refs = new LRUCache<number, Subject>({ max: KNOWN_SUBJECTS });
    return (message) => {
      let subject: Subject | undefined;
      if (message.subject) {
        subject = message.ref === 0 ? message.subject : this.#canonical(message.subject);
        if (message.ref !== 0) refs.set(message.ref, subject);
      } else subject = refs.get(message.ref);
      if (!subject) return send({ type: 'decided', id: message.id, unknown: true });
      const { id } = message;
      let verdict: Verdict | Promise<Verdict>;
      const on = subject;
      const decide = () => this.#limiter.decide(on, message.cost);
      try {
        const { scope } = message;
        verdict = scope ? inScope(requestScope(...scope), decide) : decide();
      } catch (err) {
        return send({ type: 'decided', id, error: String(err) });
      }
      if (!(verdict instanceof Promise)) return send({ type: 'decided', id, verdict });
      verdict.then(
        (v) => send({ type: 'decided', id, verdict: v }),
        (err: unknown) => send({ type: 'decided', id, error: String(err) }),
      );
    };
  }

  #canonical(subject: Subject): Subject {
    const text = JSON.stringify(subject);
    const known = this.#byId.get(subject.id);
    if (known && this.#texts.get(known) === text) return known;
    this.#byId.set(subject.id, subject);
    this.#texts.set(subject, text);
    return subject;
  }
}
