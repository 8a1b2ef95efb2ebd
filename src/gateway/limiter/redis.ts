// Rate limits and bans kept in Redis, so every instance using the same Redis enforces one quota
// per consumer. Each decision is one atomic script run (`redis-script.ts`) with the same windows,
// buckets and bans as the in-process `SlidingWindowLimiter`, and the same Decision, so the
// headers are the same.
//
// Time. Without a `clock`, the script reads the Redis server's TIME, one clock for all instances,
// so clock skew between them cannot stretch or shrink a window. Tests pass a fake clock.
import { SpanKind } from '@opentelemetry/api';
import type { Redis } from 'ioredis';
import * as v from 'valibot';
import type { Clock } from '../../core/clock.ts';
import type { Decision, Notice, Outcome } from '../../core/decision.ts';
import { PEER_TEXT_MAX, peerText } from '../../redact.ts';
import { childSpan } from '../../trace/spans.ts';
import { decisionFromCounts, STATE_TTL_MS, type WindowCounts, withNotices } from './in-process.ts';
import type { LimiterEvent, RateLimiter, Subject } from './limiter.ts';
import { DECIDE_SCRIPT, DECIDE_SHA1 } from './redis-script.ts';

/** Key prefix of subjects' states: `petstore:rl:key:con_…`, `petstore:rl:addr:203.0.113.7`. */
const DEFAULT_PREFIX = 'petstore:rl:';

const OUTCOMES: readonly Outcome[] = ['admitted', 'rate_limited', 'key_banned'];
const BAN_ENDED = 1;
const BAN_STARTED = 2;

const Int = v.pipe(v.number(), v.integer());
/** The script's reply; its layout is in `redis-script.ts`'s file header. */
const Reply = v.tuple([
  ...([Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int] as const),
  v.array(Int),
  ...([Int, Int, Int, Int, Int] as const),
]);
const NOTICE_WINDOWS = [undefined, 'day', 'month'] as const;

/** A window's numbers as the script reports them. */
export interface WindowNumbers {
  readonly count: number;
  readonly oldestLeavesAt: number;
  /** When one more unit fits (0 if now). */
  readonly admitAt: number;
}

/** One script run's result, from which a decision and a lease are made. */
export interface ScriptReply {
  readonly outcome: Outcome;
  /** Epoch ms of the run (Redis's clock, or the injected one). */
  readonly now: number;
  /** Epoch ms the request would be admitted or the ban ends (`now` if admitted). */
  readonly until: number;
  readonly minute: WindowNumbers;
  readonly day: WindowNumbers;
  /** The calendar month; meaningful only if the limits have one. */
  readonly month: { readonly count: number; readonly start: number; readonly end: number };
  readonly notices: readonly Notice[];
  /** Units counted by this run: the cost, or a grant's size. */
  readonly granted: number;
  /** Epoch ms the units were counted at: now, or a grant's last millisecond of its term. */
  readonly booked: number;
  /** The day window's bucket offset, which a hand-back names. */
  readonly dayOffset: number;
  /** Other instances holding unused units of the subject now. */
  readonly others: number;
  /** Units this run's hand-backs took back (only runs Redis still records). */
  readonly handedBack: number;
}

/**
 * Units a lease holder hands back from one of its runs, by run id: the grant's unused units, or
 * `all` it counted when its reply was lost.
 */
export interface HandBack {
  readonly run: number;
  readonly units: number | 'all';
}

/** What a lease holder adds to a run (`leases.ts`). */
export interface LeaseArgs {
  /** This instance's id. */
  readonly holder: string;
  /** This run's id among the holder's runs (increasing), which a later hand-back refers to. */
  readonly run: number;
  /** Units wanted; more than the cost asks for a grant. */
  readonly wanted: number;
  /** Units of earlier runs to return to the buckets they were booked in. */
  readonly backs?: readonly HandBack[];
}

export interface RedisLimiterOptions {
  /** The client; commands fail rather than queue while disconnected (`openRedisLimiter()`). */
  client: Redis;
  /** The clock; without it, the Redis server's TIME, one clock for every instance. */
  clock?: Clock;
  /** Prefix of the keys that hold the states. */
  prefix?: string;
  /** Called when a ban starts, and when this instance sees that it has ended. */
  onEvent?: (event: LimiterEvent) => void;
}

/**
 * Sliding-window limits shared through Redis. `decide` rejects when Redis cannot answer; the
 * `FailoverLimiter` around it decides what happens then.
 *
 * @example
 * const limiter = new RedisLimiter({ client: new Redis('redis://127.0.0.1:6379') });
 * await limiter.decide(subject); // { outcome: 'admitted', retryAfter: 0, ... }
 */
export class RedisLimiter implements RateLimiter {
  readonly #client: Redis;
  readonly #clock: Clock | undefined;
  readonly #prefix: string;
  readonly #onEvent: (event: LimiterEvent) => void;
  /** Latest time of the injected clock: it may step back, but the windows must not. */
  #time = Number.NEGATIVE_INFINITY;

  constructor({ client, clock, prefix = DEFAULT_PREFIX, onEvent = () => {} }: RedisLimiterOptions) {
    this.#client = client;
    this.#clock = clock;
    this.#prefix = prefix;
    this.#onEvent = onEvent;
  }

  async decide(subject: Subject, cost = 1): Promise<Decision> {
    return replyDecision(subject, await this.run(subject, cost), 0);
  }

  /**
   * Runs the script once for `subject` and resolves to its reply: a decision, and with `lease`
   * also a grant and hand-backs. Rejects when Redis does not answer.
   */
  async run(subject: Subject, cost: number, lease?: LeaseArgs): Promise<ScriptReply> {
    const { limits, ban } = subject;
    if (this.#clock) this.#time = Math.max(this.#time, this.#clock.now());
    const args = [
      this.#clock ? this.#time : '',
      limits.perMinute,
      limits.perDay,
      // An unbounded threshold never bans: the script's "no ban" is 0.
      Number.isFinite(ban.threshold) ? ban.threshold : 0,
      ban.seconds,
      // Consumers' states never expire nor get evicted (volatile-lru); addresses' do.
      subject.keyless ? STATE_TTL_MS : 0,
      limits.perMonth ?? 0,
      cost,
      subject.thresholds?.join(',') ?? '',
    ];
    const keys = [`${this.#prefix}${subject.id}`];
    if (lease) {
      const backs = (lease.backs ?? []).map((b) => `${b.run}:${b.units === 'all' ? '*' : b.units}`).join(',');
      args.push(lease.holder, lease.wanted, backs, lease.run);
      keys.push(`${this.#prefix}leases:${subject.id}`, `${this.#prefix}runs:${subject.id}`);
    }
    const raw = await this.#run(keys, args);
    const parsed = v.safeParse(Reply, raw);
    if (!parsed.success) {
      // Half the log's bound, so the failover's log line can include it whole.
      const said = peerText(typeof raw === 'string' ? raw : JSON.stringify(raw), PEER_TEXT_MAX / 2);
      throw new TypeError(`unexpected reply from the rate-limit script: ${said}`);
    }
    const [code, now, until, mCount, mOldest, mAdmit, dCount, dOldest, dAdmit, events, bannedUntil, ...rest] =
      parsed.output;
    const [count, start, end, noticed, granted, booked, dayOffset, others, handedBack] = rest;
    const outcome = OUTCOMES[code];
    if (outcome === undefined) throw new TypeError(`unexpected outcome ${code} from the rate-limit script`);
    if (events & BAN_ENDED) this.#onEvent({ type: 'ban_end', subject });
    if (events & BAN_STARTED) this.#onEvent({ type: 'ban_start', subject, until: bannedUntil });
    return {
      outcome,
      now,
      until,
      minute: { count: mCount, oldestLeavesAt: mOldest, admitAt: mAdmit },
      day: { count: dCount, oldestLeavesAt: dOldest, admitAt: dAdmit },
      month: { count, start, end },
      notices: subject.thresholds ? noticesOf(noticed) : [],
      granted,
      booked,
      dayOffset,
      others,
      handedBack,
    };
  }

  /**
   * Sends EVALSHA, falling back to EVAL when Redis lacks the script (restarted, flushed, failed
   * over), in a client span when the request is traced.
   */
  #run(keys: string[], args: (string | number)[]): Promise<unknown> {
    return childSpan('EVALSHA', REDIS_SPAN, () => this.#eval(keys, args), { kind: SpanKind.CLIENT });
  }

  async #eval(keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(DECIDE_SHA1, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      return this.#client.eval(DECIDE_SCRIPT, keys.length, ...keys, ...args);
    }
  }
}

/**
 * Returns the decision a reply gives at `at` (epoch ms on the reply's clock; default its `now`).
 * `unused` units still held by this instance count as remaining, since only it can spend them.
 *
 * @example
 * replyDecision(subject, reply, 0) // what the request that ran the script is answered
 */
export function replyDecision(subject: Subject, reply: ScriptReply, unused: number, at = reply.now): Decision {
  const { limits } = subject;
  const { minute, day, month } = reply;
  const decision = decisionFromCounts(
    reply.outcome,
    limits,
    at,
    reply.outcome === 'admitted' ? at : reply.until,
    counts(minute.count - unused, minute.oldestLeavesAt, minute.admitAt),
    counts(day.count - unused, day.oldestLeavesAt, day.admitAt),
    limits.perMonth === undefined ? undefined : { ...month, count: month.count - unused },
  );
  return reply.notices.length === 0 ? decision : withNotices(decision, reply.notices);
}

/** The script run's span attributes (OpenTelemetry database conventions; no key or arguments). */
const REDIS_SPAN = { 'db.system.name': 'redis', 'db.operation.name': 'EVALSHA' } as const;

/**
 * Parses the script's flat list of notices: (kind, window, threshold, period), with a ban's end in
 * place of the period for a ban.
 */
function noticesOf(flat: readonly number[]): Notice[] {
  const notices: Notice[] = [];
  for (let i = 0; i + 3 < flat.length; i += 4) {
    if (flat[i] === 3) {
      notices.push({ type: 'key.banned', until: flat[i + 3] as number });
      continue;
    }
    const window = NOTICE_WINDOWS[flat[i + 1] as number];
    const period = flat[i + 3] as number;
    if (window === undefined)
      throw new TypeError(`unexpected notice window from the rate-limit script: ${flat[i + 1]}`);
    if (flat[i] === 1) notices.push({ type: 'quota.threshold', window, threshold: flat[i + 2] as number, period });
    else notices.push({ type: 'quota.exhausted', window, period });
  }
  return notices;
}

/** Wraps a window's numbers from the script in the shape `decisionFromCounts` reads. */
function counts(count: number, oldestLeavesAt: number, admitAt: number): WindowCounts {
  return { count, oldestLeavesAt, admitAt: () => admitAt };
}
