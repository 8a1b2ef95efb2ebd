// The limiter's question for one request: `decider()` turns a caller and a cost into the
// subject the limiter counts (a consumer's id, a keyless client's address group) and asks it.
import { LRUCache } from 'lru-cache';
import { addressGroup, DEFAULT_IPV6_PREFIX } from '../core/addresses.ts';
import { type BanPolicy, DEFAULT_BAN, PLAN_LIMITS } from '../keys/plans.ts';
import type { Consumer } from '../keys/records.ts';
import type { Caller } from './caller.ts';
import type { RateLimiter, Subject, Verdict } from './limiter/limiter.ts';

/**
 * A consumer's limiter subject id, `key:con_…`: by its id, as orders are owned, so a consumer made
 * again under the same name is another party, with fresh windows and no ban. The id names a
 * consumer with all its keys, not one API key. It names limiter state only, never rows (unlike a
 * legacy owner's `key:<name>`, ARCHITECTURE.md's glossary). The `key:` prefix stays because the id
 * is the Redis key of the consumer's windows and ban (`petstore:rl:key:con_…`), shared by every
 * instance of a fleet (an older release's too during a rolling upgrade) and outliving their
 * restarts: another prefix would start every consumer's windows afresh and lift its ban at the
 * upgrade, and split its counts between the old and the new instances while both serve.
 */
function consumerSubjectId(consumer: Consumer): string {
  return `key:${consumer.id}`;
}

/**
 * Consumers whose limiter subject is cached, the least recently used evicted: a cache's size, not a
 * limit on consumers (`--keys store` has no bound), since an evicted consumer's subject is built
 * again at its next request, and the limiter keeps its windows by the subject's id.
 */
const MAX_SUBJECTS = 10_000;

export interface DeciderOptions {
  limiter: RateLimiter;
  /** Ban applied when a consumer sets none of its own, and to client addresses. */
  ban?: BanPolicy;
  /**
   * IPv6 callers without a valid key are counted by this prefix of their address (`--ipv6-prefix`).
   */
  ipv6Prefix?: number;
}

/**
 * Returns the function that asks the limiter's verdict for a caller. A consumer is counted against
 * its own quota only. A keyless client is counted against its address (an IPv6 address by its
 * `ipv6Prefix` group). What an address did without a key never counts against a valid key sent from
 * it, so a neighbour behind the same NAT cannot lock a key out (SECURITY.md).
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
  // By the consumer as loaded: a reload makes new consumer objects, so a changed quota or ban is
  // never read from an old subject; the bound keeps what reloads leave behind from growing.
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
        // Only a consumer with somewhere to send them has its crossings noticed.
        ...(consumer.webhook && consumer.thresholds ? { thresholds: consumer.thresholds } : {}),
      };
      subjects.set(consumer, subject);
    }
    return subject;
  };
  const keylessBan = { seconds: ban.seconds, threshold: ban.threshold ?? PLAN_LIMITS.free.perMinute };
  const addressSubject = (address: string): Subject => {
    const group = addressGroup(address, ipv6Prefix);
    // `anonymous`: the plan label of keyless clients (ARCHITECTURE.md's glossary).
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
