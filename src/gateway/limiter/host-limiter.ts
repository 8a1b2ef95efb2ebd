// The limiter with `--workers`. Only the supervisor keeps windows, bans and keyless counts; each
// worker asks it by message. So the host decides exactly as a single process would, with the same
// windows, costs, bans and keyless table. With `--redis`, the host runs the script as one instance.
//
// Grants. With the in-process limiter, a worker busy with one consumer is granted units that it
// spends on its own until the second ends, as an instance spends a Redis lease (`leases.ts`). So a
// busy key costs a message or two a second per worker, not one per request. The supervisor counts
// a grant as spent when it makes it (`SlidingWindowLimiter.book`), so no window is exceeded.
//
// A grant's unused units sit in memory shared by the worker and the supervisor; the worker takes
// each with a compare-and-swap. The supervisor takes back what is left when the second ends, when
// the remaining room could not hold a request, and when a ban starts. A grant is at most half the
// remaining room divided among the workers, so near the limit the supervisor decides every request.
// Consumers with quota webhooks, and keyless clients, are never granted units.
//
// A consumer's subject is sent once per worker, then referred to by a number. A keyless client's
// subject is sent whole, since it is made per request.
import { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Decision } from '../../core/decision.ts';
import { currentRequest, inRequest, requestState } from '../../trace/request-state.ts';
import type { RateLimiter, Subject, Verdict } from './limiter.ts';
import { GrantPace } from './pace.ts';

/** A worker's ask: one HTTP request's call to the supervisor's limiter. */
export interface DecideMessage {
  readonly type: 'decide';
  readonly id: number;
  /** The subject's number on this worker; 0 for a keyless client, whose subject is sent whole. */
  readonly ref: number;
  /** Sent with the first message about it, and again if the supervisor has forgotten it. */
  readonly subject?: Subject;
  readonly cost: number;
  /** Units beyond `cost` the worker expects to spend before the second ends: asks for a grant. */
  readonly wanted?: number;
  /** The HTTP request's ids, so that what the decision logs (a ban started) carries them. */
  readonly requestIds?: readonly [requestId: string, traceId?: string, spanId?: string];
}

/** The supervisor's answer. */
export type DecidedMessage =
  | { readonly type: 'decided'; readonly id: number; readonly verdict: Verdict; readonly grant?: Grant }
  | { readonly type: 'decided'; readonly id: number; readonly error: string }
  /** The supervisor does not know (or forgot) the subject's number: resend with the subject. */
  | { readonly type: 'decided'; readonly id: number; readonly unknown: true };

/** Units granted to a worker: the slot of its grant memory that holds what is left, until `end`. */
export interface Grant {
  readonly slot: number;
  readonly units: number;
  /** Epoch ms (a whole second) from which no unit may be spent. */
  readonly end: number;
}

/** An ask waiting for the supervisor's answer. */
interface Waiting {
  resolve(answer: { readonly verdict: Verdict; readonly grant?: Grant }): void;
  reject(err: Error): void;
  readonly ask: DecideMessage;
}

/** Subjects the supervisor remembers per worker: more than a keys file names. */
const KNOWN_SUBJECTS = 20_000;
/** Grants a worker can hold at once (4 bytes each in the memory shared with the supervisor). */
const GRANT_SLOTS = 4_096;
/** Allocates a zeroed grant memory; the supervisor makes one per worker and shares it with it. */
export function grantMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(GRANT_SLOTS * 4);
}

/** One consumer's grant on a worker, and the pace that sizes the next one. */
class WorkerGrant {
  /** The answer that came with the grant; local decisions are based on it. */
  verdict: Decision | undefined;
  slot = 0;
  granted = 0;
  end = Number.NEGATIVE_INFINITY;
  /** The ask for a grant in progress; requests short of units wait for it. */
  pending: Promise<unknown> | undefined;
  /** Sizes the next grant, and says whether requests go one by one until the second ends. */
  readonly pace = new GrantPace();
}

export interface RemoteLimiterOptions {
  /** This worker's grant memory (`grantMemory`); without it the supervisor decides everything. */
  readonly grants?: SharedArrayBuffer;
  /** Tests pass the fake clock of the supervisor's limiter. */
  readonly clock?: Clock;
}

/**
 * The worker's side: a `RateLimiter` that gets its decisions from the supervisor, or from a grant.
 *
 * @example
 * const limiter = new RemoteLimiter((m) => postMessage(m)); onmessage = (e) => limiter.answer(e.data)
 */
export class RemoteLimiter implements RateLimiter {
  readonly #send: (message: DecideMessage) => void;
  readonly #waiting = new Map<number, Waiting>();
  readonly #refs = new WeakMap<Subject, number>();
  /** Subjects by number, to resend one the supervisor has forgotten. */
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

  /** Decides from this worker's grant; undefined unless its second is live and holds the cost. */
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
    // The second ended while taking: the units stay counted but unused, and the supervisor is
    // asked instead.
    if (this.#clock.now() >= kept.end) return undefined;
    kept.pace.spent(cost);
    return spentFrom(verdict, kept.granted - (left - cost));
  }

  /** Asks the supervisor, also for a grant unless one was refused earlier this second. */
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
   * Sends one ask; the subject is included the first time, and always for a keyless client
   * (`ref` 0).
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

  /** Handles the supervisor's answer to an ask. */
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

  /** Resends ask `id` with its subject, which the supervisor has forgotten. */
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

  /** Rejects every waiting ask, because the supervisor will not answer them. */
  fail(reason: string): void {
    for (const { reject } of this.#waiting.values()) reject(new Error(reason));
    this.#waiting.clear();
  }
}

/** A limiter that can count units in advance and take back unspent ones: the in-process one. */
interface Granting {
  decide(subject: Subject, cost?: number): Decision;
  book(subject: Subject, units: number): number | undefined;
  giveBack(subject: Subject, units: number, at: number): void;
}

function granting(limiter: RateLimiter): Granting | undefined {
  return 'book' in limiter && 'giveBack' in limiter ? (limiter as Granting) : undefined;
}

/**
 * The supervisor's view of a worker's grant memory: units left by slot, the free slots, and the
 * newest grant per subject.
 */
class GrantBook {
  readonly units: Int32Array;
  readonly free: number[];
  /** Keyed by subject id, so a reloaded consumer's new subject finds its old subject's grant. */
  readonly newest = new Map<string, GivenGrant>();

  constructor(memory: SharedArrayBuffer) {
    this.units = new Int32Array(memory);
    this.free = Array.from({ length: this.units.length }, (_, i) => this.units.length - 1 - i);
  }
}

/** A grant as the supervisor tracks it until its second ends. */
interface GivenGrant {
  readonly subject: Subject;
  readonly book: GrantBook;
  readonly slot: number;
  /** Epoch ms its units were counted at (`Granting.book`). */
  readonly at: number;
  readonly end: number;
}

export interface HostLimiterOptions {
  /** Workers sharing a consumer's room: a grant is at most half the room divided by this. */
  readonly workers?: number;
  /** The limiter's clock; tests pass a fake one. */
  readonly clock?: Clock;
}

/**
 * The supervisor's side: answers each worker with the host's `limiter`, and grants units when it
 * is the in-process one. Identical subjects from different workers are mapped to one object, so
 * the limiter sees one consumer (a Redis lease is kept per subject object).
 */
export class HostLimiter {
  readonly #limiter: RateLimiter;
  readonly #granting: Granting | undefined;
  readonly #workers: number;
  readonly #clock: Clock;
  readonly #byId = new LRUCache<string, Subject>({ max: KNOWN_SUBJECTS });
  readonly #texts = new WeakMap<Subject, string>();
  /**
   * Grants whose second has not ended, by subject id (so a reloaded consumer's old and new grants
   * are together).
   */
  readonly #live = new Map<string, Set<GivenGrant>>();
  /** The same grants in order of end; they are made in time order, so ends never decrease. */
  readonly #ending: GivenGrant[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(limiter: RateLimiter, { workers = 1, clock = systemClock }: HostLimiterOptions = {}) {
    this.#limiter = limiter;
    this.#granting = granting(limiter);
    this.#workers = workers;
    this.#clock = clock;
  }

  /**
   * Returns the message handler for one worker. It keeps that worker's subjects by number, and uses
   * `grants`, the worker's grant memory (`grantMemory`), if given.
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
   * Decides for a consumer with the in-process limiter, and adds a grant if one was asked for and
   * fits.
   */
  #decideGranting(book: GrantBook, subject: Subject, { id, cost, wanted }: DecideMessage): DecidedMessage {
    const limiter = this.#granting as Granting;
    // Take back what this worker still holds first: it is asking because that is not enough.
    const own = book.newest.get(subject.id);
    if (own) this.#takeBack(own);
    const live = this.#live.get(subject.id);
    if (live && cost > 0 && roomOf(limiter.decide(subject, 0)) < cost) {
      // Never refuse a request while other workers hold unused units: take them back.
      for (const grant of live) this.#takeBack(grant);
    }
    const verdict = limiter.decide(subject, cost);
    if (verdict.outcome === 'key_banned' && live) {
      // Take back all grants, so every worker asks on its next request and learns of the ban.
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

  /** Returns what is left of a grant to the windows it was counted in. */
  #takeBack(grant: GivenGrant): void {
    const left = Atomics.exchange(grant.book.units, grant.slot, 0);
    if (left > 0) (this.#granting as Granting).giveBack(grant.subject, left, grant.at);
  }

  /** Takes back what is left of grants whose second has ended, and frees their slots. */
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

/** Returns the smallest remaining across a decision's windows. */
function roomOf(decision: Decision): number {
  let room = Number.POSITIVE_INFINITY;
  for (const w of decision.windows) room = Math.min(room, w.remaining);
  return room;
}

/** Returns the decision a grant gives: the grant's answer, minus what this worker spent since. */
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
 * One event-loop turn's answers, packed for one message to a worker: each plain verdict (no
 * notices, no grant) as numbers in one `Float64Array`, which is copied in one go, and the rest as
 * objects. Copying nested objects field by field is most of what a message costs.
 */
export interface PackedAnswers {
  readonly packed: Float64Array;
  readonly others: readonly DecidedMessage[];
}

const OUTCOMES = ['admitted', 'rate_limited', 'key_banned'] as const;
const WINDOW_NAMES = ['minute', 'day', 'month'] as const;
/** Numbers per packed answer: id, outcome, now, retryAfter, window count; then 5 per window. */
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
 * One event-loop turn's asks, packed for one message to the supervisor: their numbers in one
 * `Float64Array`, request ids and keyless address groups in one string, and whole subjects
 * alongside. A keyless subject with the same limits and ban as the turn's first keyless one is
 * sent as its address group only.
 */
export interface PackedAsks {
  /**
   * Per ask: id, ref, cost, wanted, and how the subject is sent (`BY_REF`, `WHOLE` or
   * `KEYLESS`).
   */
  readonly packed: Float64Array;
  /**
   * Per ask, newline-separated: its request, trace and span ids (empty if none), then for a
   * `KEYLESS` ask its address group.
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

/** Packs asks for `unpackAsks`. */
export function packAsks(asks: readonly DecideMessage[]): PackedAsks {
  const packed = new Float64Array(asks.length * PER_ASK);
  let text = '';
  const subjects: Subject[] = [];
  let keyless: Pick<Subject, 'limits' | 'ban'> | undefined;
  for (let i = 0, at = 0; i < asks.length; i++, at += PER_ASK) {
    const ask = asks[i] as DecideMessage;
    const { subject, requestIds } = ask;
    let how = BY_REF;
    // No newline before the first ask's lines, so `split` yields no empty first element.
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
 * Returns whether a subject's id is `addr:` followed by its label, as a keyless client's is,
 * without building the string.
 */
function isAddressId({ id, label }: Subject): boolean {
  return id.length === label.length + 5 && id.startsWith('addr:') && id.endsWith(label);
}

/** Returns the asks `packAsks` packed. */
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
