// The Redis limiter with a fallback. While Redis answers, Redis makes every decision. When a
// decision fails, the limiter is marked down (one log line) until a probe reaches Redis again.
// Meanwhile units already leased (`leases.ts`) are spent until their term ends; after that, `open`
// (the default) decides in process, so each instance enforces the quotas alone, and `closed`
// answers `unavailable` (503). Requests never wait for a Redis that is down: only the probe talks
// to it. `status()` tells `/readyz` and `/metrics` where decisions are made now.
import { clearInterval, setInterval } from 'node:timers';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Logger } from '../../log.ts';
import { peerText } from '../../redact.ts';
import type { RateLimiter, Subject, Verdict } from './limiter.ts';

const REDIS_FAIL_MODES = ['open', 'closed'] as const;
/** What the limiter does while Redis is unreachable: local limits (`open`) or 503 (`closed`). */
export type RedisFailMode = (typeof REDIS_FAIL_MODES)[number];

/** How often the shared limiter is probed while it is down. */
const PROBE_INTERVAL_MS = 1_000;

/** Where decisions are made now, and how many were not made by Redis. */
export interface LimiterStatus {
  /** `redis`; `local` while down in fail-open mode; `none` while down in fail-closed mode. */
  readonly backend: 'redis' | 'local' | 'none';
  /** False only while requests are answered 503 (fail-closed mode, Redis down). */
  readonly ready: boolean;
  /** Epoch ms of the last backend change, or of the start. */
  readonly since: number;
  /** Why Redis is not in use, while it is not. */
  readonly reason?: string;
  /** Times Redis was found down since the start. */
  readonly outages: number;
  /** Decisions made by the local limiter instead of Redis since the start. */
  readonly localDecisions: number;
  /** Requests answered 503 because Redis was down, since the start. */
  readonly unavailableDecisions: number;
}

/** A shared limiter that may hold part of the quota locally (`LeaseLimiter`). */
export interface SharedLimiter extends RateLimiter {
  /**
   * Decides from the units this instance holds, without asking the shared store; undefined if it
   * holds too few.
   */
  local?(subject: Subject, cost: number): Verdict | undefined;
}

export interface FailoverLimiterOptions {
  /** The shared limiter (`LeaseLimiter`); a rejected decision marks it down. */
  primary: SharedLimiter;
  /** The in-process limiter used while the shared one is down, in fail-open mode. */
  fallback: RateLimiter;
  /** Resolves when the shared store answers again (Redis PING). */
  probe: () => Promise<unknown>;
  mode?: RedisFailMode;
  log: Logger;
  /** How logs name the shared store, without its password: `redis://cache:6379`. */
  name: string;
  clock?: Clock;
  probeIntervalMs?: number;
  /** Closes the connection to the shared store. */
  close?: () => Promise<unknown>;
  /** The reason logged for a failed decision or probe; default: the error's message. */
  explain?: (err: unknown) => string;
}

/**
 * Sends decisions to the shared limiter while it is up, and to leased units, then the fallback or
 * a 503, while it is down (see the file header).
 *
 * @example
 * const limiter = new FailoverLimiter({ primary: redisLimiter, fallback: new SlidingWindowLimiter(),
 *   probe: () => client.ping(), mode: 'open', log, name: 'redis://cache:6379' });
 * limiter.status() // { backend: 'redis', ready: true, ... }
 */
export class FailoverLimiter implements RateLimiter {
  readonly #primary: SharedLimiter;
  readonly #fallback: RateLimiter;
  readonly #probe: () => Promise<unknown>;
  readonly #mode: RedisFailMode;
  readonly #log: Logger;
  readonly #name: string;
  readonly #clock: Clock;
  readonly #probeIntervalMs: number;
  readonly #close: () => Promise<unknown>;
  readonly #explain: (err: unknown) => string;
  #up = true;
  #since: number;
  #reason: string | undefined;
  #outages = 0;
  #local = 0;
  #unavailable = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #probing = false;
  #closed = false;

  constructor({
    primary,
    fallback,
    probe,
    mode = 'open',
    log,
    name,
    clock = systemClock,
    probeIntervalMs = PROBE_INTERVAL_MS,
    close = async () => {},
    explain = errorText,
  }: FailoverLimiterOptions) {
    this.#primary = primary;
    this.#fallback = fallback;
    this.#probe = probe;
    this.#mode = mode;
    this.#log = log;
    this.#name = name;
    this.#clock = clock;
    this.#probeIntervalMs = probeIntervalMs;
    this.#close = close;
    this.#explain = explain;
    this.#since = clock.now();
  }

  async decide(subject: Subject, cost = 1): Promise<Verdict> {
    if (this.#up) {
      try {
        return await this.#primary.decide(subject, cost);
      } catch (err) {
        this.markDown(this.#explain(err));
      }
    }
    // Units already leased are spent first: Redis has counted them already.
    const held = this.#primary.local?.(subject, cost);
    if (held) return held;
    if (this.#mode === 'closed') {
      this.#unavailable++;
      return { outcome: 'unavailable', reason: this.#reason ?? 'Redis is unreachable' };
    }
    this.#local++;
    return this.#fallback.decide(subject, cost);
  }

  /** Stops using the shared limiter until a probe succeeds; logs only when the state changes. */
  markDown(said: string): void {
    const reason = peerText(said);
    if (this.#closed) return;
    this.#reason = reason;
    if (!this.#up) return;
    this.#up = false;
    this.#since = this.#clock.now();
    this.#outages++;
    const fields = { redis: this.#name, failMode: this.#mode, reason };
    if (this.#mode === 'open') {
      this.#log.warn('rate limiter: Redis unreachable; each instance now enforces the limits on its own', fields);
    } else {
      this.#log.error('rate limiter: Redis unreachable; answering 503 until it is back (--redis-fail closed)', fields);
    }
    this.#timer = setInterval(() => void this.check(), this.#probeIntervalMs);
    this.#timer.unref();
  }

  /** Probes the shared store now; returns true if it is in use, or back in use. */
  async check(): Promise<boolean> {
    if (this.#up) return true;
    if (this.#probing) return false;
    this.#probing = true;
    try {
      await this.#probe();
    } catch (err) {
      this.#reason = peerText(this.#explain(err));
      return false;
    } finally {
      this.#probing = false;
    }
    const downMs = this.#clock.now() - this.#since;
    this.#up = true;
    this.#since = this.#clock.now();
    this.#reason = undefined;
    clearInterval(this.#timer);
    this.#log.info('rate limiter: Redis reachable again; limits are shared again', {
      redis: this.#name,
      downSeconds: Math.round(downMs / 1_000),
    });
    return true;
  }

  status(): LimiterStatus {
    const backend = this.#up ? 'redis' : this.#mode === 'open' ? 'local' : 'none';
    return {
      backend,
      ready: backend !== 'none',
      since: this.#since,
      ...(this.#reason === undefined ? {} : { reason: this.#reason }),
      outages: this.#outages,
      localDecisions: this.#local,
      unavailableDecisions: this.#unavailable,
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#close();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
