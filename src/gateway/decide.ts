import type { Caller } from './caller.ts';
import type { Consumer } from './keys/file.ts';
import type { Decision, RateLimiter, Subject } from './limiter/limiter.ts';
import { type BanPolicy, DEFAULT_BAN, PLAN_LIMITS } from './plans.ts';
import { SuspectAddresses } from './suspects.ts';

export interface DeciderOptions {
  limiter: RateLimiter;
  /** Ban applied when a consumer sets none of its own, and to client addresses. */
  ban?: BanPolicy;
}

/**
 * The limiter's verdict for a caller: a consumer is counted against its consumer's quota, a
 * caller without a valid key against its address's. From an address refused for failed keys, a
 * valid key is first sent through the address's limits until the address is admitted again: a
 * 200 among 429s would tell a guesser which guess won.
 *
 * @example
 * const decide = decider({ limiter })
 * const decision = await decide(caller) // { outcome: 'admitted', ... }
 */
export function decider({ limiter, ban = DEFAULT_BAN }: DeciderOptions): (caller: Caller) => Promise<Decision> {
  const subjects = new WeakMap<Consumer, Subject>();
  const consumerSubject = (consumer: Consumer): Subject => {
    let subject = subjects.get(consumer);
    if (!subject) {
      const policy = consumer.ban ?? ban;
      subject = {
        id: `key:${consumer.name}`,
        plan: consumer.plan,
        label: consumer.name,
        limits: consumer.limits,
        ban: { seconds: policy.seconds, threshold: policy.threshold ?? consumer.limits.perMinute },
      };
      subjects.set(consumer, subject);
    }
    return subject;
  };
  const anonymousBan = { seconds: ban.seconds, threshold: ban.threshold ?? PLAN_LIMITS.free.perMinute };
  const addressSubject = (address: string): Subject => ({
    id: `addr:${address}`,
    plan: 'anonymous',
    label: address,
    limits: PLAN_LIMITS.free,
    ban: anonymousBan,
  });
  const suspects = new SuspectAddresses();

  return async function decide(caller) {
    const { address } = caller;
    if (caller.kind === 'address') {
      const decision = await limiter.decide(addressSubject(address));
      if (decision.outcome !== 'admitted') suspects.mark(address);
      return decision;
    }
    if (suspects.size > 0 && suspects.has(address)) {
      const guard = await limiter.decide(addressSubject(address));
      if (guard.outcome !== 'admitted') {
        suspects.mark(address);
        return guard;
      }
      suspects.clear(address);
    }
    return limiter.decide(consumerSubject(caller.consumer));
  };
}
