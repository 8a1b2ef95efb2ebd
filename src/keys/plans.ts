// The plans: names and quotas (`PLAN_NAMES`, `PLAN_LIMITS`, `Limits`), costs per operation,
// report-only and bans (`Terms`, `BanPolicy`). `costProblem()` finds a cost no quota admits.
import { COSTED_OPERATIONS } from '../core/operation-ids.ts';

/**
 * One caller's quotas, in units of cost (a request to an operation that costs 5 uses 5): sliding
 * minute and day windows, and optionally the calendar month (UTC).
 */
export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
  readonly perMonth?: number;
}

/** What each operation costs, by `operationId`; one not named costs 1. */
export type Costs = Readonly<Record<string, number>>;

/** What a plan or consumer sets besides its quotas. */
export interface Terms {
  /** Costs per operation (getRateLimit always costs 0, whatever this says). */
  readonly costs?: Costs;
  /**
   * False: report-only. The windows are counted and reported as if enforced, but nothing is
   * refused for them and no ban starts; each request that would have been refused is counted
   * (`petstore_ratelimit_would_refuse_total`) and logged. Default true.
   */
  readonly enforce?: boolean;
}

/** What happens to a caller that keeps sending after a 429. */
export interface BanPolicy {
  /** Refusals within one minute that start a ban; defaults to the per-minute quota. */
  readonly threshold?: number;
  /** Length of the ban in seconds. */
  readonly seconds: number;
}

export const PLAN_NAMES = ['free', 'pro', 'business', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** Quotas of the plans with fixed numbers; enterprise keys carry theirs in the keys file. */
export const PLAN_LIMITS: Readonly<Record<Exclude<PlanName, 'enterprise'>, Limits>> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};

/**
 * Costs and enforcement per plan. No plan sets either; consumers set their own `costs` and
 * `enforce` in the keys file. An entry here would apply to every consumer of the plan.
 */
export const PLAN_TERMS: Readonly<Record<PlanName, Terms>> = { free: {}, pro: {}, business: {}, enterprise: {} };

/**
 * What is wrong with `costs` under `limits`, as `field: message` (the field prefixed by `where`),
 * or undefined. Refuses an operation that `costs` may not name, and a cost above any quota, since
 * such a request could never be admitted.
 *
 * @example
 * costProblem('plans.pro', { perMinute: 10, perDay: 100 }, { createPet: 20 })
 * // 'plans.pro.costs.createPet: 20 is more than the perMinute quota (10), so no such request could ever be admitted'
 */
export function costProblem(where: string, limits: Limits, costs: Costs | undefined): string | undefined {
  for (const [id, cost] of Object.entries(costs ?? {})) {
    const field = `${where ? `${where}.` : ''}costs.${id}`;
    if (!COSTED_OPERATIONS.includes(id)) {
      return `${field}: must name an operation that costs something: ${COSTED_OPERATIONS.join(', ')}`;
    }
    for (const quota of ['perMinute', 'perDay', 'perMonth'] as const) {
      const q = limits[quota];
      if (q !== undefined && cost > q) {
        return `${field}: ${cost} is more than the ${quota} quota (${q}), so no such request could ever be admitted`;
      }
    }
  }
  return undefined;
}

// Checked when the module loads: each plan's costs fit its quotas.
for (const [plan, limits] of Object.entries(PLAN_LIMITS)) {
  const problem = costProblem(`plans.${plan}`, limits, PLAN_TERMS[plan as PlanName].costs);
  if (problem) throw new TypeError(problem);
}

/** The ban when `--ban-seconds` is not given: 15 minutes. */
export const DEFAULT_BAN: BanPolicy = { seconds: 15 * 60 };

/**
 * Requests one consumer (all its keys together) may have in flight at once, unless
 * `--max-in-flight` sets another number. A client's connection pool with a request on each fits; a
 * runaway client is refused (429) long before it holds every connection the host can serve.
 */
export const DEFAULT_MAX_IN_FLIGHT = 128;
