// Quota leases. An instance on Redis takes a grant of a consumer's quota in one script run, then
// decides locally until the grant is spent or its term ends. A busy key costs one run per term
// instead of one per request.
//
// Never over the limit. A grant is counted in every window as if all its units were spent at the
// end of its term, which is the next whole second. So each unit is counted from before its use
// until at least a window after it, like a single request, and no window is exceeded. Units left
// at the term's end are handed back with the next run, or by the sweep. If an instance dies, its
// units stay counted.
//
// Sizes. A grant is what this instance's recent rate would spend in the rest of the term, at most
// half the room left shared among the holders (`redis-script.ts`), and never past a notice
// threshold. Near a limit a grant shrinks to the request's cost, which is exact and fair across
// instances.
//
// False refusals. A request refused while other instances hold units of the quota counts toward no
// ban and no exhausted notice, and is told to retry when their terms end.
//
// Headers. A local decision shows Redis's counts as of this instance's last run, minus its own
// unused units, so it never promises more than that.
//
// A slow Redis. A run whose reply comes too late fails at once, along with every request waiting
// for it; the failover handles them all (`failover.ts`), so a burst waits for one timeout only.
// Redis may still have run it, so each run carries an id and is handed back whole with the next
// run. A hand-back applies once, to the run recorded under its id, so sending it again changes
// nothing. Redis records only an instance's last counting run: a lost run overlapped by a later one
// (sent before the loss was known, near a limit) stays counted.
//
// Keyless clients are decided per request: their few requests would each cost a run anyway.
import { randomUUID } from 'node:crypto';
import { clearInterval, setInterval } from 'node:timers';
import { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Decision } from '../../core/decision.ts';
import type { RateLimiter, Subject } from './limiter.ts';
import { GrantPace } from './pace.ts';
import { type HandBack, type RedisLimiter, replyDecision, type ScriptReply } from './redis.ts';
import { HAND_BACK_WITHIN_MS, RUN_RECORD_MS } from './redis-script.ts';

/** Consumers whose leases are kept at once: more than a keys file holds. */
const MAX_LEASES = 10_000;
/** The sweep runs twice within `HAND_BACK_WITHIN_MS`, the time the script waits for hand-backs. */
const SWEEP_INTERVAL_MS = HAND_BACK_WITHIN_MS / 2;
/**
 * Hand-backs a lease keeps for runs whose replies were lost; beyond this, the oldest are dropped
 * and their units stay counted.
 */
const MAX_UNCONFIRMED = 16;

/**
 * Kinds of script run: a grant (more units than the request's cost), a hand-back alone, or a
 * single request's decision.
 */
export type RunKind = 'grant' | 'hand_back' | 'decision';

/** Lease counters since start-up, for /metrics. */
export interface LeaseStats {
  readonly runs: Readonly<Record<RunKind, number>>;
  readonly unitsGranted: number;
  readonly unitsHandedBack: number;
  /** Leases holding unused units now, including ended terms not yet handed back. */
  readonly outstanding: number;
}

export interface LeaseLimiterOptions {
  /** The Redis limiter whose script grants, takes back and decides. */
  shared: RedisLimiter;
  /**
   * Whether the sweep may run the script now. False while the failover is not using Redis, so a
   * slow Redis is not sent hand-backs that would only time out. Default: always true.
   */
  online?: () => boolean;
  /** This instance's clock for terms; tests pass the fake one they give `shared`. */
  clock?: Clock;
  /** This instance's id among the holders; random by default. */
  holder?: string;
}

/** One consumer's lease on this instance. */
class Lease {
  readonly subject: Subject;
  /** Unused units of the current grant, or of an ended one not yet handed back. */
  units = 0;
  /** Local epoch ms the term ends; units are spent only before it. */
  expires = Number.NEGATIVE_INFINITY;
  /** The script's clock minus this instance's, measured at the last run (never too small). */
  offset = 0;
  /** The grant's reply with its notices removed (already given); local decisions use it. */
  reply: ScriptReply | undefined;
  /** The id of the run that gave the grant. */
  grant = 0;
  /** Hand-backs of runs whose replies were lost, resent with every run until one is answered. */
  unconfirmed: Unconfirmed[] = [];
  /** The grant request in progress; requests short of units wait for it, and fail with it. */
  pending: Promise<Decision> | undefined;
  /** Sizes the next grant, and says whether requests go one by one until the next term. */
  readonly pace = new GrantPace();

  constructor(subject: Subject) {
    this.subject = subject;
  }

  /**
   * Returns the hand-backs for the next run: the unconfirmed ones, then the grant's unused units,
   * which are removed from the lease.
   */
  handBacks(now: number): Unconfirmed[] {
    // Redis keeps run records for `RUN_RECORD_MS` only; older hand-backs would find none.
    this.unconfirmed = this.unconfirmed.filter((b) => b.since + RUN_RECORD_MS > now);
    const backs = [...this.unconfirmed];
    const { units, reply } = this;
    if (units > 0 && reply) {
      this.units = 0;
      backs.push({ run: this.grant, units, since: now });
    }
    return backs;
  }

  /** Drops the hand-backs a run carried, now that its reply has arrived. */
  confirm(backs: readonly Unconfirmed[]): void {
    if (backs.length > 0) this.unconfirmed = this.unconfirmed.filter((b) => !backs.includes(b));
  }

  /**
   * Keeps a run's hand-backs to resend when its reply was lost, since Redis may or may not have run
   * it. Given `run`, it also adds a hand-back of all that run counted (a no-op if Redis never ran
   * it).
   */
  lost(backs: readonly Unconfirmed[], run: number | undefined, now: number): void {
    // The grant's units were handed back in the lost run, so its reply no longer matches Redis.
    if (this.units === 0) this.reply = undefined;
    const again = backs.filter((b) => !this.unconfirmed.includes(b));
    if (run !== undefined) again.push({ run, units: 'all', since: now });
    this.unconfirmed = [...this.unconfirmed, ...again].slice(-MAX_UNCONFIRMED);
  }
}

/** A hand-back not yet confirmed by a reply, with the local time it was first sent. */
interface Unconfirmed extends HandBack {
  readonly since: number;
}

/**
 * A `RateLimiter` that decides locally from leased units and runs the Redis script only to take or
 * return a grant (see the file header).
 *
 * @example
 * const limiter = new LeaseLimiter({ shared: new RedisLimiter({ client }) });
 * await limiter.decide(subject); // one run per term for a busy key, local decisions between
 */
export class LeaseLimiter implements RateLimiter {
  readonly #shared: RedisLimiter;
  readonly #clock: Clock;
  readonly #holder: string;
  readonly #online: () => boolean;
  readonly #leases: LRUCache<string, Lease>;
  readonly #runs: Record<RunKind, number> = { grant: 0, hand_back: 0, decision: 0 };
  #granted = 0;
  #handedBack = 0;
  /** The last run's id; ids increase with every run. */
  #lastRun = 0;
  /** Latest time seen: the clock may step back, but terms must not stretch. */
  #time: number;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor({ shared, clock = systemClock, holder = randomUUID(), online = () => true }: LeaseLimiterOptions) {
    this.#shared = shared;
    this.#clock = clock;
    this.#holder = holder;
    this.#online = online;
    this.#time = clock.now();
    this.#leases = new LRUCache<string, Lease>({
      max: MAX_LEASES,
      dispose: (lease) => void this.#handBack(lease).catch(() => {}),
    });
  }

  decide(subject: Subject, cost = 1): Decision | Promise<Decision> {
    if (subject.keyless) {
      this.#runs.decision++;
      return this.#shared.decide(subject, cost);
    }
    let lease = this.#leases.get(subject.id);
    if (!lease || lease.subject !== subject) {
      // A reloaded consumer (new limits) gets a new lease; `dispose` hands back the old units.
      lease = new Lease(subject);
      this.#leases.set(subject.id, lease);
    }
    return this.#local(lease, cost) ?? this.#acquire(lease, cost);
  }

  /**
   * Decides from this instance's lease alone, for use while Redis is unreachable; undefined unless
   * the term is live and holds the cost.
   */
  local(subject: Subject, cost: number): Decision | undefined {
    const lease = this.#leases.get(subject.id);
    return lease && lease.subject === subject ? this.#local(lease, cost) : undefined;
  }

  /** Decides from the lease alone; undefined unless the term is live and holds the cost. */
  #local(lease: Lease, cost: number): Decision | undefined {
    const now = this.#now();
    const { reply } = lease;
    if (!reply || now >= lease.expires || lease.units < cost) return undefined;
    lease.units -= cost;
    lease.pace.spent(cost);
    return replyDecision(lease.subject, reply, lease.units, now + lease.offset);
  }

  async #acquire(lease: Lease, cost: number): Promise<Decision> {
    // Near the limit, every request runs the script itself, as without leases.
    if (this.#now() < lease.pace.tightUntil) return this.#run(lease, cost, cost);
    // Otherwise requests that find the lease short wait for the pending grant, then try again;
    // the first to find no grant pending asks for one. If that run fails (Redis slow or gone),
    // every request waiting on it fails at once, and none starts a run of its own.
    while (lease.pending) {
      lease.pace.waiting += cost;
      try {
        await lease.pending;
      } finally {
        lease.pace.waiting -= cost;
      }
      const local = this.#local(lease, cost);
      if (local) return local;
      if (this.#now() < lease.pace.tightUntil) return this.#run(lease, cost, cost);
    }
    const run = this.#run(lease, cost);
    lease.pending = run;
    try {
      return await run;
    } finally {
      lease.pending = undefined;
    }
  }

  /**
   * Runs the script once for `cost`, asking for `wanted` units (by default, the cost plus what the
   * recent rate would spend this term).
   */
  async #run(lease: Lease, cost: number, wanted?: number): Promise<Decision> {
    const sent = this.#now();
    const termLeft = 1_000 - ((sent + lease.offset) % 1_000);
    // Units for the requests expected in the rest of the term; if none, a plain decision.
    const beyond = lease.pace.beyond(sent, termLeft, cost);
    const asked = wanted ?? (cost === 0 ? 0 : cost + beyond);
    const backs = lease.handBacks(sent);
    const run = ++this.#lastRun;
    let reply: ScriptReply;
    try {
      reply = await this.#shared.run(lease.subject, cost, { holder: this.#holder, run, wanted: asked, backs });
    } catch (err) {
      lease.lost(backs, run, sent);
      throw err;
    }
    lease.confirm(backs);
    this.#handedBack += reply.handedBack;
    lease.offset = Math.max(0, reply.now - sent);
    const grant = reply.outcome === 'admitted' && reply.granted > cost;
    if (grant) {
      this.#runs.grant++;
      this.#granted += reply.granted;
      lease.units = reply.granted - cost;
      lease.grant = run;
      lease.expires = reply.booked + 1 - lease.offset;
      lease.reply = { ...reply, notices: [] };
    } else {
      this.#runs.decision++;
      // Keep the reply if a concurrent run took a grant that still has units.
      if (lease.units === 0) lease.reply = undefined;
      // Asked for a grant and got only the cost: room is low until the next term. (On a whole
      // second the term has no time left, so no grant is given whatever the room.)
      if (asked > cost && reply.now % 1_000 !== 0) {
        lease.pace.tightUntil = Math.floor(reply.now / 1_000 + 1) * 1_000 - lease.offset;
      }
    }
    return replyDecision(lease.subject, reply, lease.units);
  }

  /** Hands back a lease's unused units, and those of lost runs, in a separate script run. */
  async #handBack(lease: Lease): Promise<void> {
    const now = this.#now();
    const backs = lease.handBacks(now);
    if (backs.length === 0) return;
    this.#runs.hand_back++;
    let reply: ScriptReply;
    try {
      // This run counts nothing, so if its reply is lost there is no record of it to hand back.
      reply = await this.#shared.run(lease.subject, 0, {
        holder: this.#holder,
        run: ++this.#lastRun,
        wanted: 0,
        backs,
      });
    } catch (err) {
      lease.lost(backs, undefined, now);
      throw err;
    }
    lease.confirm(backs);
    this.#handedBack += reply.handedBack;
  }

  /**
   * While Redis is in use, hands back the units of ended terms not yet handed back, and those of
   * lost runs.
   */
  sweep(): Promise<unknown> {
    if (!this.#online()) return Promise.resolve();
    const now = this.#now();
    const due: Promise<void>[] = [];
    for (const lease of this.#leases.values()) {
      if (lease.pending) continue;
      if ((lease.units > 0 && now >= lease.expires) || lease.unconfirmed.length > 0) due.push(this.#handBack(lease));
    }
    return Promise.allSettled(due);
  }

  /** Starts running the sweep every `SWEEP_INTERVAL_MS`. */
  start(): this {
    this.#timer ??= setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.#timer.unref();
    return this;
  }

  stats(): LeaseStats {
    let outstanding = 0;
    for (const lease of this.#leases.values()) if (lease.units > 0) outstanding++;
    return {
      runs: { ...this.#runs },
      unitsGranted: this.#granted,
      unitsHandedBack: this.#handedBack,
      outstanding,
    };
  }

  /** Stops the sweep and hands back every unused unit. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled([...this.#leases.values()].map((lease) => this.#handBack(lease)));
  }

  #now(): number {
    this.#time = Math.max(this.#time, this.#clock.now());
    return this.#time;
  }
}
