// The limiter of a process with workers. The supervisor alone keeps every window, ban and keyless
// client's count, and each worker asks it by message. So the host decides exactly as one event
// loop would: the same windows, costs, bans and keyless clients' table. With `--redis` the host's
// script runs are those of one instance.
//
// Grants. With the in-process limiter, a worker kept busy by one consumer is granted units it
// spends alone until the second ends, as an instance spends a Redis lease (`leases.ts`). So a busy
// key costs a message or two a second per worker, not one a request. The supervisor counts a grant
// as spent when it makes it (`SlidingWindowLimiter.book`), so no window is exceeded.
//
// A grant's unused units sit in memory the worker shares with the supervisor. The worker takes
// each with a compare-and-swap. The supervisor takes back what is left when the second ends, when
// the room left would not hold a request, and when a ban starts. A grant is at most half the room
// left shared among the workers, so near the limit every request is decided by the supervisor.
// Consumers with quota webhooks and keyless clients are never granted units.
//
// A consumer's subject is sent once per worker, then named by a number. A keyless client's is sent
// whole, since it is made per request.
import { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Decision } from '../../core/decision.ts';
import { currentRequest, inRequest, requestState } from '../../trace/request-state.ts';
import type { RateLimiter, Subject, Verdict } from './limiter.ts';
import { GrantPace } from './pace.ts';

/** A worker's question. */
export interface DecideMessage {
  readonly type: 'decide';
  readonly id: number;
  /** The subject's number on this worker; 0 for a keyless client's, sent whole. */
  readonly ref: number;
  /** Sent with the first question about it (and again when the supervisor has forgotten it). */
  readonly subject?: Subject;
  readonly cost: number;
  /**
   * Units beyond `cost` the worker would spend by itself before the second ends: a grant asked for.
   */
  readonly wanted?: number;
  /** The request's ids, so what the decision logs (a ban started) carries them as on one worker. */
  readonly requestIds?: readonly [requestId: string, traceId?: string, spanId?: string];
}

/** The supervisor's answer. */
export type DecidedMessage =
  | { readonly type: 'decided'; readonly id: number; readonly verdict: Verdict; readonly grant?: Grant }
  | { readonly type: 'decided'; readonly id: number; readonly error: string }
  /** The subject's number is not known (forgotten): ask again with the subject. */
  | { readonly type: 'decided'; readonly id: number; readonly unknown: true };

/** Units granted to a worker: the slot of its grant memory that holds those left, until `end`. */
export interface Grant {
  readonly slot: number;
  readonly units: number;
  /** Epoch ms (a whole second) from which none may be spent. */
  readonly end: number;
}

/** A question waiting for its answer. */
interface Waiting {
  resolve(answer: { readonly verdict: Verdict; readonly grant?: Grant }): void;
  reject(err: Error): void;
  readonly ask: DecideMessage;
}

/** Subjects the supervisor remembers per worker: more than a keys file names. */
const KNOWN_SUBJECTS = 20_000;
/** Grants a worker holds at once (4 bytes each in the memory it shares with the supervisor). */
const GRANT_SLOTS = 4_096;
/**
 * Allocates a worker's grant memory, zeroed: the supervisor makes one per worker started and shares
 * it with that worker.
 */
export function grantMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(GRANT_SLOTS * 4);
}

/** One consumer's grant on a worker, and what sizes the next. */
class WorkerGrant {
  /** The answer that gave the grant: what local decisions are written from. */
  verdict: Decision | undefined;
  slot = 0;
  granted = 0;
  end = Number.NEGATIVE_INFINITY;
  /** The question under way that asked for a grant: requests short of units wait for it. */
  pending: Promise<unknown> | undefined;
  /** What the next grant asks for, and whether requests ask one by one until the second ends. */
  readonly pace = new GrantPace();
}

export interface RemoteLimiterOptions {
  /** This worker's grant memory (`grantMemory`); without it every decision is asked for. */
  readonly grants?: SharedArrayBuffer;
  /** Tests pass the fake clock of the supervisor's limiter. */
  readonly clock?: Clock;
}

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
  /** Subject numbers not yet sent with their subject. */
  readonly #unsent = new Set<number>();
  /** Grants and rates by subject number. */
  readonly #grants = new LRUCache<number, WorkerGrant>({ max: KNOWN_SUBJECTS });
  readonly #units: Int32Array | undefined;
  readonly #clock: Clock;
  #lastId = 0;
  #lastRef = 0;

  constructor(send: (message: DecideMessage) => void, { grants, clock = systemClock }: RemoteLimiterOptions = {}) {
    this.#send = send;
    this.#units = grants ? new Int32Array(grants) : undefined;
    this.#clock = clock;
  }

  decide(subject: Subject, cost = 1): Verdict | Promise<Verdict> {
    if (subject.keyless) return this.#ask(subject, 0, cost, 0).then(verdictOf);
    const ref = this.#refOf(subject);
    if (!this.#units || cost === 0) return this.#ask(subject, ref, cost, 0).then(verdictOf);
    let kept = this.#grants.get(ref);
    if (!kept) {
      kept = new WorkerGrant();
      this.#grants.set(ref, kept);
    }
    return this.#local(kept, cost) ?? this.#acquire(subject, ref, kept, cost);
  }

  /**
   * Returns a decision from this worker's grant, when its second is not over and it holds the cost.
   */
  #local(kept: WorkerGrant, cost: number): Decision | undefined {
    const units = this.#units;
    const { verdict } = kept;
    if (!units || !verdict || this.#clock.now() >= kept.end) return undefined;
    let left = Atomics.load(units, kept.slot);
    for (;;) {
      if (left < cost) return undefined;
      const seen = Atomics.compareExchange(units, kept.slot, left, left - cost);
      if (seen === left) break;
      left = seen;
    }
    // Taken as the second ended: it stays counted, unused, and the request is asked for.
    if (this.#clock.now() >= kept.end) return undefined;
    kept.pace.spent(cost);
    return spentFrom(verdict, kept.granted - (left - cost));
  }

  /** Asks the supervisor: for a grant as well, unless one asked for this second was not given. */
  async #acquire(subject: Subject, ref: number, kept: WorkerGrant, cost: number): Promise<Verdict> {
    const { pace } = kept;
    while (kept.pending && this.#clock.now() >= pace.tightUntil) {
      pace.waiting += cost;
      try {
        await kept.pending.catch(() => {});
      } finally {
        pace.waiting -= cost;
      }
      const local = this.#local(kept, cost);
      if (local) return local;
    }
    const now = this.#clock.now();
    if (now < pace.tightUntil) {
      pace.spent(cost);
      return verdictOf(await this.#ask(subject, ref, cost, 0));
    }
    const asked = this.#ask(subject, ref, cost, pace.beyond(now, 1_000 - (now % 1_000), cost));
    kept.pending = asked;
    try {
      const { verdict, grant } = await asked;
      if (grant && verdict.outcome !== 'unavailable') {
        kept.verdict = verdict;
        kept.slot = grant.slot;
        kept.granted = grant.units;
        kept.end = grant.end;
      } else pace.tightUntil = Math.floor(now / 1_000 + 1) * 1_000;
      return verdict;
    } finally {
      kept.pending = undefined;
    }
  }

  #refOf(subject: Subject): number {
    const ref = this.#refs.get(subject);
    if (ref !== undefined) return ref;
    const made = ++this.#lastRef;
    this.#refs.set(subject, made);
    this.#subjects.set(made, subject);
    this.#unsent.add(made);
    return made;
  }

  /**
   * Sends one question; the subject goes whole with the first about it (and always a keyless
   * client's, `ref` 0).
   */
  #ask(subject: Subject, ref: number, cost: number, wanted: number) {
    const id = ++this.#lastId;
    const now = currentRequest();
    const requestIds = now ? ([now.requestId, now.traceId, now.spanId] as const) : undefined;
    const whole = ref === 0 || this.#unsent.delete(ref);
    const ask: DecideMessage = {
      type: 'decide',
      id,
      ref,
      ...(whole ? { subject } : {}),
      cost,
      ...(wanted > 0 ? { wanted } : {}),
      requestIds,
    };
    return new Promise<{ readonly verdict: Verdict; readonly grant?: Grant }>((resolve, reject) => {
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
    else waiting.resolve(message);
  }

  /** Asks question `id` again, with its subject, which the supervisor forgot. */
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

/** A limiter that counts units ahead and takes back those unspent: the in-process one. */
interface Granting {
  decide(subject: Subject, cost?: number): Decision;
  book(subject: Subject, units: number): number | undefined;
  giveBack(subject: Subject, units: number, at: number): void;
}

function granting(limiter: RateLimiter): Granting | undefined {
  return 'book' in limiter && 'giveBack' in limiter ? (limiter as Granting) : undefined;
}

/**
 * A worker's grant memory as the supervisor keeps it: the units left by slot, the slots free, its
 * newest grant per subject.
 */
class GrantBook {
  readonly units: Int32Array;
  readonly free: number[];
  /** By subject id, so that a reloaded consumer's new subject finds the grant of its old one. */
  readonly newest = new Map<string, GivenGrant>();

  constructor(memory: SharedArrayBuffer) {
    this.units = new Int32Array(memory);
    this.free = Array.from({ length: this.units.length }, (_, i) => this.units.length - 1 - i);
  }
}

/** A grant as the supervisor keeps it until its second ends. */
interface GivenGrant {
  readonly subject: Subject;
  readonly book: GrantBook;
  readonly slot: number;
  /** Epoch ms its units were counted at (`Granting.book`). */
  readonly at: number;
  readonly end: number;
}

export interface HostLimiterOptions {
  /** Workers sharing the room left of a consumer: a grant is at most half of it over this many. */
  readonly workers?: number;
  /** The clock of the limiter (tests pass a fake one). */
  readonly clock?: Clock;
}

/**
 * The supervisor's side: answers each worker's questions with the host's `limiter`, and grants
 * units when it is the in-process one. A consumer's subject is the same object whichever worker
 * sent it (when its content is the same), so the limiter sees one consumer (a Redis lease is kept
 * per subject).
 */
export class HostLimiter {
  readonly #limiter: RateLimiter;
  readonly #granting: Granting | undefined;
  readonly #workers: number;
  readonly #clock: Clock;
  readonly #byId = new LRUCache<string, Subject>({ max: KNOWN_SUBJECTS });
  readonly #texts = new WeakMap<Subject, string>();
  /**
   * Grants whose second has not ended, by subject id (a reloaded consumer's old grants with its new
   * ones).
   */
  readonly #live = new Map<string, Set<GivenGrant>>();
  /** The same, by end (made in time order, so their ends never decrease). */
  readonly #ending: GivenGrant[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(limiter: RateLimiter, { workers = 1, clock = systemClock }: HostLimiterOptions = {}) {
    this.#limiter = limiter;
    this.#granting = granting(limiter);
    this.#workers = workers;
    this.#clock = clock;
  }

  /**
   * Returns what answers a worker's questions, with its subjects by number (made per worker,
   * dropped with it), and with `grants`, its grant memory (`grantMemory`).
   */
  forWorker(send: (message: DecidedMessage) => void, grants?: SharedArrayBuffer): (message: DecideMessage) => void {
    const refs = new LRUCache<number, Subject>({ max: KNOWN_SUBJECTS });
    const book = grants && this.#granting ? new GrantBook(grants) : undefined;
    return (message) => {
      let subject: Subject | undefined;
      if (message.subject) {
        subject = message.ref === 0 ? message.subject : this.#canonical(message.subject);
        if (message.ref !== 0) refs.set(message.ref, subject);
      } else subject = refs.get(message.ref);
      if (!subject) return send({ type: 'decided', id: message.id, unknown: true });
      const { id, requestIds } = message;
      const on = subject;
      const decide = () =>
        book && !on.keyless ? this.#decideGranting(book, on, message) : this.#limiter.decide(on, message.cost);
      let answer: Verdict | Promise<Verdict> | DecidedMessage;
      try {
        answer = requestIds ? inRequest(requestState(...requestIds), decide) : decide();
      } catch (err) {
        return send({ type: 'decided', id, error: String(err) });
      }
      if ('type' in answer) return send(answer);
      if (!(answer instanceof Promise)) return send({ type: 'decided', id, verdict: answer });
      answer.then(
        (v) => send({ type: 'decided', id, verdict: v }),
        (err: unknown) => send({ type: 'decided', id, error: String(err) }),
      );
    };
  }

  /**
   * Returns a consumer's decision with the in-process limiter, and a grant when one was asked for
   * and fits.
   */
  #decideGranting(book: GrantBook, subject: Subject, { id, cost, wanted }: DecideMessage): DecidedMessage {
    const limiter = this.#granting as Granting;
    // What this worker still holds goes back first: it asks because that does not hold the cost.
    const own = book.newest.get(subject.id);
    if (own) this.#takeBack(own);
    const live = this.#live.get(subject.id);
    if (live && cost > 0 && roomOf(limiter.decide(subject, 0)) < cost) {
      // No request refused while units lie unused on other workers: they are taken back.
      for (const grant of live) this.#takeBack(grant);
    }
    const verdict = limiter.decide(subject, cost);
    if (verdict.outcome === 'key_banned' && live) {
      // Every worker asks from its next request on, and is told of the ban.
      for (const grant of live) this.#takeBack(grant);
    }
    const grant =
      verdict.outcome === 'admitted' && wanted && !subject.thresholds
        ? this.#grant(book, subject, Math.min(wanted, Math.floor(roomOf(verdict) / (2 * this.#workers))))
        : undefined;
    return grant ? { type: 'decided', id, verdict, grant } : { type: 'decided', id, verdict };
  }

  #grant(book: GrantBook, subject: Subject, units: number): Grant | undefined {
    if (units <= 0) return undefined;
    const slot = book.free.pop();
    if (slot === undefined) return undefined;
    const at = (this.#granting as Granting).book(subject, units);
    if (at === undefined) {
      book.free.push(slot);
      return undefined;
    }
    Atomics.store(book.units, slot, units);
    const given: GivenGrant = { subject, book, slot, at, end: Math.ceil(at / 1_000) * 1_000 };
    book.newest.set(subject.id, given);
    let live = this.#live.get(subject.id);
    if (!live) {
      live = new Set();
      this.#live.set(subject.id, live);
    }
    live.add(given);
    this.#ending.push(given);
    this.#schedule();
    return { slot, units, end: given.end };
  }

  /** Takes back what is left of a grant, into the windows it was counted in. */
  #takeBack(grant: GivenGrant): void {
    const left = Atomics.exchange(grant.book.units, grant.slot, 0);
    if (left > 0) (this.#granting as Granting).giveBack(grant.subject, left, grant.at);
  }

  /** Takes back what is left of the grants whose second has ended, and frees their slots. */
  sweep(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    for (let first = this.#ending[0]; first && first.end <= now; first = this.#ending[0]) {
      this.#ending.shift();
      this.#takeBack(first);
      first.book.free.push(first.slot);
      const { id } = first.subject;
      if (first.book.newest.get(id) === first) first.book.newest.delete(id);
      const live = this.#live.get(id);
      live?.delete(first);
      if (live?.size === 0) this.#live.delete(id);
    }
    this.#schedule();
  }

  #schedule(): void {
    const first = this.#ending[0];
    if (this.#timer || !first) return;
    this.#timer = setTimeout(() => this.sweep(), Math.max(0, first.end - this.#clock.now()) + 1);
    this.#timer.unref?.();
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

/** Returns the units every window of a decision still holds. */
function roomOf(decision: Decision): number {
  let room = Number.POSITIVE_INFINITY;
  for (const w of decision.windows) room = Math.min(room, w.remaining);
  return room;
}

/**
 * Returns what a decision from a grant shows: the grant's answer, less what this worker spent of it
 * since.
 */
function spentFrom(verdict: Decision, used: number): Decision {
  return {
    outcome: verdict.outcome,
    now: verdict.now,
    retryAfter: 0,
    windows: verdict.windows.map((w) => ({ ...w, remaining: Math.max(0, w.remaining - used) })),
  };
}

function verdictOf(answer: { readonly verdict: Verdict }): Verdict {
  return answer.verdict;
}

/**
 * A turn's answers as they cross to the worker: each plain verdict (admitted or refused, no
 * notices, no grant) as numbers in one `Float64Array`, which a message copies at once; the
 * others as objects. Copying nested objects field by field is most of what a message costs.
 */
export interface PackedAnswers {
  readonly packed: Float64Array;
  readonly others: readonly DecidedMessage[];
}

const OUTCOMES = ['admitted', 'rate_limited', 'key_banned'] as const;
const WINDOW_NAMES = ['minute', 'day', 'month'] as const;
/** Numbers per packed answer: id, outcome, now, retryAfter, windows; then 5 per window. */
const HEAD = 5;
const PER_WINDOW = 5;

/** Packs answers for `unpackAnswers`. */
export function packAnswers(answers: readonly DecidedMessage[]): PackedAnswers {
  const plain: Decision[] = [];
  const ids: number[] = [];
  const others: DecidedMessage[] = [];
  let length = 0;
  for (const answer of answers) {
    if ('verdict' in answer && !answer.grant && answer.verdict.outcome !== 'unavailable' && !answer.verdict.notices) {
      plain.push(answer.verdict);
      ids.push(answer.id);
      length += HEAD + PER_WINDOW * answer.verdict.windows.length;
    } else others.push(answer);
  }
  const packed = new Float64Array(length);
  let at = 0;
  plain.forEach((verdict, i) => {
    packed[at] = ids[i] as number;
    packed[at + 1] = OUTCOMES.indexOf(verdict.outcome);
    packed[at + 2] = verdict.now;
    packed[at + 3] = verdict.retryAfter;
    packed[at + 4] = verdict.windows.length;
    at += HEAD;
    for (const w of verdict.windows) {
      packed[at] = WINDOW_NAMES.indexOf(w.name);
      packed[at + 1] = w.seconds;
      packed[at + 2] = w.limit;
      packed[at + 3] = w.remaining;
      packed[at + 4] = w.reset;
      at += PER_WINDOW;
    }
  });
  return { packed, others };
}

/** Returns the answers `packAnswers` packed. */
export function unpackAnswers({ packed, others }: PackedAnswers): DecidedMessage[] {
  const answers: DecidedMessage[] = [...others];
  for (let at = 0; at < packed.length; ) {
    const id = packed[at] as number;
    const outcome = OUTCOMES[packed[at + 1] as number] ?? 'admitted';
    const now = packed[at + 2] as number;
    const retryAfter = packed[at + 3] as number;
    const count = packed[at + 4] as number;
    at += HEAD;
    const windows: Decision['windows'][number][] = [];
    for (let i = 0; i < count; i++, at += PER_WINDOW) {
      windows.push({
        name: WINDOW_NAMES[packed[at] as number] ?? 'minute',
        seconds: packed[at + 1] as number,
        limit: packed[at + 2] as number,
        remaining: packed[at + 3] as number,
        reset: packed[at + 4] as number,
      });
    }
    answers.push({ type: 'decided', id, verdict: { outcome, now, windows, retryAfter } });
  }
  return answers;
}

/**
 * A turn's questions as they cross to the supervisor: their numbers in one `Float64Array`, the
 * request ids and keyless clients' address groups in one string, and the subjects sent whole
 * beside them. A keyless client's subject differs from the turn's first keyless client's only in
 * its address group, so only that is sent.
 */
export interface PackedAsks {
  /**
   * Per question: id, ref, cost, wanted, and how its subject comes (`BY_REF`, `WHOLE`, `KEYLESS`).
   */
  readonly packed: Float64Array;
  /**
   * Per question, newline-separated: its request, trace and span ids (empty when none), then a
   * keyless client's address group.
   */
  readonly text: string;
  readonly subjects: readonly Subject[];
  /** The limits and ban of the turn's keyless clients. */
  readonly keyless?: Pick<Subject, 'limits' | 'ban'>;
}

const BY_REF = 0;
const WHOLE = 1;
const KEYLESS = 2;
const PER_ASK = 5;

/** Packs questions for `unpackAsks`. */
export function packAsks(asks: readonly DecideMessage[]): PackedAsks {
  const packed = new Float64Array(asks.length * PER_ASK);
  let text = '';
  const subjects: Subject[] = [];
  let keyless: Pick<Subject, 'limits' | 'ban'> | undefined;
  for (let i = 0, at = 0; i < asks.length; i++, at += PER_ASK) {
    const ask = asks[i] as DecideMessage;
    const { subject, requestIds } = ask;
    let how = BY_REF;
    // The first line of each question goes without a newline before it: split gives them back in
    // order.
    text += `${i === 0 ? '' : '\n'}${requestIds?.[0] ?? ''}\n${requestIds?.[1] ?? ''}\n${requestIds?.[2] ?? ''}`;
    if (subject?.keyless && isAddressId(subject)) {
      keyless ??= { limits: subject.limits, ban: subject.ban };
      if (keyless.limits === subject.limits && keyless.ban === subject.ban) {
        how = KEYLESS;
        text += `\n${subject.label}`;
      }
    }
    if (subject && how === BY_REF) {
      how = WHOLE;
      subjects.push(subject);
    }
    packed[at] = ask.id;
    packed[at + 1] = ask.ref;
    packed[at + 2] = ask.cost;
    packed[at + 3] = ask.wanted ?? 0;
    packed[at + 4] = how;
  }
  return { packed, text, subjects, ...(keyless ? { keyless } : {}) };
}

/**
 * Returns whether a subject's id is `addr:` and its label, as a keyless client's is (checked
 * without making the string).
 */
function isAddressId({ id, label }: Subject): boolean {
  return id.length === label.length + 5 && id.startsWith('addr:') && id.endsWith(label);
}

/** Returns the questions `packAsks` packed. */
export function unpackAsks({ packed, text, subjects, keyless }: PackedAsks): DecideMessage[] {
  const strings = text.split('\n');
  const asks: DecideMessage[] = [];
  let s = 0;
  let whole = 0;
  for (let at = 0; at < packed.length; at += PER_ASK) {
    const id = packed[at] as number;
    const ref = packed[at + 1] as number;
    const cost = packed[at + 2] as number;
    const wanted = packed[at + 3] as number;
    const how = packed[at + 4] as number;
    const requestId = strings[s] ?? '';
    const traceId = strings[s + 1] || undefined;
    const spanId = strings[s + 2] || undefined;
    s += 3;
    let subject: Subject | undefined;
    if (how === WHOLE) subject = subjects[whole++];
    else if (how === KEYLESS && keyless) {
      const label = strings[s++] ?? '';
      subject = {
        id: `addr:${label}`,
        keyless: true,
        plan: 'anonymous',
        label,
        limits: keyless.limits,
        ban: keyless.ban,
      };
    }
    const requestIds = requestId === '' ? undefined : ([requestId, traceId, spanId] as const);
    asks.push(
      subject
        ? wanted
          ? { type: 'decide', id, ref, subject, cost, wanted, requestIds }
          : { type: 'decide', id, ref, subject, cost, requestIds }
        : wanted
          ? { type: 'decide', id, ref, cost, wanted, requestIds }
          : { type: 'decide', id, ref, cost, requestIds },
    );
  }
  return asks;
}
