// `decider()` turns a caller and a cost into a limiter call: it builds the subject the limiter
// counts (a consumer's id, or a keyless client's address group) and asks for a verdict.
import { LRUCache } from 'lru-cache';
import { addressGroup, DEFAULT_IPV6_PREFIX } from '../core/addresses.ts';
import { type BanPolicy, DEFAULT_BAN, PLAN_LIMITS } from '../keys/plans.ts';
import type { Consumer } from '../keys/records.ts';
import type { Caller } from './caller.ts';
import type { RateLimiter, Subject, Verdict } from './limiter/limiter.ts';

/**
 * A consumer's limiter subject id, `key:con_…`. It uses the consumer's id, not its name, so a
 * consumer re-created under the same name starts with fresh windows and no ban; it covers all the
 * consumer's keys. It names limiter state only, never rows (unlike a legacy owner's `key:<name>`,
 * ARCHITECTURE.md's glossary). Keep the `key:` prefix: the id is part of the Redis key of the
 * windows and ban (`petstore:rl:key:con_…`), shared by every instance and release in a fleet, so
 * changing it would reset every consumer's windows, lift bans, and split counts during a rolling
 * upgrade.
 */
function consumerSubjectId(consumer: Consumer): string {
  return `key:${consumer.id}`;
}

/**
 * How many consumers' subjects are cached (LRU). This is not a limit on consumers: an evicted
 * subject is rebuilt on the next request, and the limiter keeps windows by the subject's id.
 */
const MAX_SUBJECTS = 10_000;

export interface DeciderOptions {
  limiter: RateLimiter;
  /** The ban for a consumer that sets none, and for keyless client addresses. */
  ban?: BanPolicy;
  /** Keyless IPv6 callers are counted by this prefix of their address (`--ipv6-prefix`). */
  ipv6Prefix?: number;
}

/**
 * Returns a function that asks the limiter for a caller's verdict. A consumer counts against its
 * own quota only; a keyless client counts against its address group. Keyless traffic never counts
 * against a valid key from the same address, so a neighbour behind the same NAT cannot lock a key
 * out (SECURITY.md).
 *
 * @example
 * const decide = decider({ limiter })
 * const verdict = await decide(caller, 1) // { outcome: 'admitted', ... }
 */
export function decider({
  limiter,
  ban = DEFAULT_BAN,
  ipv6Prefix = DEFAULT_IPV6_PREFIX,
}: DeciderOptions): (caller: Caller, cost: number) => Promise<Verdict> {
  // Keyed by the consumer object: a reload makes new objects, so a changed quota or ban is never
  // read from a stale subject, and the bound drops the old ones.
  const subjects = new LRUCache<Consumer, Subject>({ max: MAX_SUBJECTS });
  const consumerSubject = (consumer: Consumer): Subject => {
    let subject = subjects.get(consumer);
    if (!subject) {
      const policy = consumer.ban ?? ban;
      subject = {
        id: consumerSubjectId(consumer),
        keyless: false,
        plan: consumer.plan,
        label: consumer.name,
        limits: consumer.limits,
        // Report-only limits never start a ban: a threshold of 0 bans nobody.
        ban: {
          seconds: policy.seconds,
          threshold: consumer.enforce ? (policy.threshold ?? consumer.limits.perMinute) : 0,
        },
        // Thresholds only for a consumer with a webhook to notify.
        ...(consumer.webhook && consumer.thresholds ? { thresholds: consumer.thresholds } : {}),
      };
      subjects.set(consumer, subject);
    }
    return subject;
  };
  const keylessBan = { seconds: ban.seconds, threshold: ban.threshold ?? PLAN_LIMITS.free.perMinute };
  const addressSubject = (address: string): Subject => {
    const group = addressGroup(address, ipv6Prefix);
    return {
      id: `addr:${group}`,
      keyless: true,
      plan: 'anonymous',
      label: group,
      limits: PLAN_LIMITS.free,
      ban: keylessBan,
    };
  };

  return async function decide(caller, cost) {
    return caller.kind === 'consumer'
      ? limiter.decide(consumerSubject(caller.consumer), cost)
      : limiter.decide(addressSubject(caller.address), cost);
  };
}
