/**
 * Rate limits and bans kept in Redis, so that every instance pointed at the same Redis enforces
 * one quota per key. Each decision is one atomic script run (`redis-script.ts`): the same
 * windows, buckets and bans as the in-process `SlidingWindowLimiter`, answered as the same
 * Decision, so the headers do not change.
 *
 * Time. Without a `clock`, the script reads the Redis server's TIME: one clock for all
 * instances, so their skew cannot stretch or shrink a window. Tests pass a fake clock.
 */
import { SpanKind } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import * as v from 'valibot';
import type { Clock } from '../../core/clock.ts';
import type { Decision, Notice, Outcome } from '../../core/decision.ts';
import type { Logger } from '../../log.ts';
import { redactUrl } from '../../redact.ts';
import { childSpan } from '../../trace/spans.ts';
import { FailoverLimiter, type RedisFailMode } from './failover.ts';
import type { LimiterEvent, RateLimiter, Subject } from './limiter.ts';
import { decisionFromCounts, STATE_TTL_MS, type WindowCounts, withNotices } from './memory.ts';
import { DECIDE_SCRIPT, DECIDE_SHA1 } from './redis-script.ts';

/** Where subjects' states live: `petstore:rl:key:acme`, `petstore:rl:addr:203.0.113.7`. */
export const DEFAULT_PREFIX = 'petstore:rl:';

/** A decision Redis has not answered in this long fails, and the limiter fails over. */
const COMMAND_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 2_000;
/**
 * Reconnection attempts back off to this, and go on for as long as the process runs; with the
 * probe made on reconnecting, limits are shared again within about this long of Redis's return.
 */
const MAX_RECONNECT_DELAY_MS = 1_000;

const OUTCOMES: readonly Outcome[] = ['admitted', 'rate_limited', 'key_banned'];
const BAN_ENDED = 1;
const BAN_STARTED = 2;

const Int = v.pipe(v.number(), v.integer());
/** The script's reply; see the top of `redis-script.ts`. */
const Reply = v.tuple([Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, v.array(Int)]);
const NOTICE_WINDOWS = [undefined, 'day', 'month'] as const;

export interface RedisLimiterOptions {
  /** A connected client; commands fail rather than queue while it is not (`openRedis`). */
  client: Redis;
  /** Where time comes from; without it the Redis server's TIME, one clock for every instance. */
  clock?: Clock;
  /** Prefix of the keys that hold the states. */
  prefix?: string;
  /** Told when a ban starts and when it is seen to have ended (by this instance). */
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
  /** Latest time of the injected clock seen: it may step back, the windows must not. */
  #time = Number.NEGATIVE_INFINITY;

  constructor({ client, clock, prefix = DEFAULT_PREFIX, onEvent = () => {} }: RedisLimiterOptions) {
    this.#client = client;
    this.#clock = clock;
    this.#prefix = prefix;
    this.#onEvent = onEvent;
  }

  async decide(subject: Subject, cost = 1): Promise<Decision> {
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
      subject.plan === 'anonymous' ? STATE_TTL_MS : 0,
      limits.perMonth ?? 0,
      cost,
      subject.thresholds?.join(',') ?? '',
    ];
    const raw = await this.#run(`${this.#prefix}${subject.id}`, args);
    const parsed = v.safeParse(Reply, raw);
    if (!parsed.success) throw new TypeError(`unexpected reply from the rate-limit script: ${JSON.stringify(raw)}`);
    const [code, now, until, mCount, mOldest, mAdmit, dCount, dOldest, dAdmit, events, bannedUntil, ...rest] =
      parsed.output;
    const [count, start, end, noticed] = rest;
    const outcome = OUTCOMES[code];
    if (outcome === undefined) throw new TypeError(`unexpected outcome ${code} from the rate-limit script`);
    if (events & BAN_ENDED) this.#onEvent({ type: 'ban_end', subject });
    if (events & BAN_STARTED) this.#onEvent({ type: 'ban_start', subject, until: bannedUntil });
    const decision = decisionFromCounts(
      outcome,
      limits,
      now,
      until,
      counts(mCount, mOldest, mAdmit),
      counts(dCount, dOldest, dAdmit),
      limits.perMonth === undefined ? undefined : { count, start, end },
    );
    if (!subject.thresholds) return decision;
    return withNotices(decision, noticesOf(noticed));
  }

  /**
   * EVALSHA, and EVAL when Redis does not have the script (restarted, flushed, failed over), in
   * a client span of the request's trace when it is recorded.
   */
  #run(key: string, args: (string | number)[]): Promise<unknown> {
    return childSpan('EVALSHA', REDIS_SPAN, () => this.#eval(key, args), { kind: SpanKind.CLIENT });
  }

  async #eval(key: string, args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(DECIDE_SHA1, 1, key, ...args);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      return this.#client.eval(DECIDE_SCRIPT, 1, key, ...args);
    }
  }
}

/** The Redis run's span attributes (OpenTelemetry's database conventions; never the key or arguments). */
const REDIS_SPAN = { 'db.system.name': 'redis', 'db.operation.name': 'EVALSHA' } as const;

/** The script's flat list of notices (kind, window, threshold, period; a ban's end for a period) as Notices. */
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

/** A window as the script reported it, in the shape `decisionFromCounts` reads. */
function counts(count: number, oldestLeavesAt: number, admitAt: number): WindowCounts {
  return { count, oldestLeavesAt, admitAt: () => admitAt };
}

export interface OpenRedisLimiterOptions {
  /** `redis://[:password@]host:port[/db]`, or `rediss://` for TLS. */
  url: string;
  mode: RedisFailMode;
  /** The in-process limiter used while Redis is down in fail-open mode. */
  fallback: RateLimiter;
  log: Logger;
  onEvent?: (event: LimiterEvent) => void;
}

/**
 * Connects to Redis and returns the shared limiter with its failover. An unreachable Redis does
 * not stop the start: the limiter starts down (logged) and takes Redis up when a probe finds it.
 * Commands are never queued while disconnected, so no request waits for a Redis that is down.
 *
 * @example
 * const limiter = await openRedisLimiter({ url: 'redis://cache:6379', mode: 'open', fallback, log });
 */
export async function openRedisLimiter({
  url,
  mode,
  fallback,
  log,
  onEvent,
}: OpenRedisLimiterOptions): Promise<FailoverLimiter> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    connectionName: 'petstore',
    retryStrategy: (attempt) => Math.min(attempt * 200, MAX_RECONNECT_DELAY_MS),
  });
  // Failures surface through decisions and probes, logged once per change of state, with the
  // socket's own error: a refused command only says "Connection is closed."
  let socketError: string | undefined;
  client.on('error', (err: Error) => {
    socketError = err.message;
  });
  client.on('ready', () => {
    socketError = undefined;
  });
  const explain = (err: unknown) => socketError ?? (err instanceof Error ? err.message : String(err));
  const name = redactUrl(url);
  const limiter = new FailoverLimiter({
    primary: new RedisLimiter({ client, onEvent }),
    fallback,
    probe: () => client.ping(),
    mode,
    log,
    name,
    close: () => client.quit().catch(() => client.disconnect()),
    explain,
  });
  // A lost connection is noticed at once, not at the next request, and a new one is taken up at
  // once, not at the next probe: /readyz stays truthful.
  client.on('close', () => limiter.markDown(explain(new Error('Connection is closed.'))));
  client.on('ready', () => void limiter.check());
  try {
    await client.connect();
    log.info('rate limiter: limits and bans are shared through Redis', { redis: name, failMode: mode });
  } catch (err) {
    limiter.markDown(explain(err));
  }
  return limiter;
}
