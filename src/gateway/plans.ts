/** Quotas of one caller: the sliding windows' sizes in requests. */
export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
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

export const DEFAULT_BAN: BanPolicy = { seconds: 15 * 60 };

/** Requests one key may have in flight at once unless `--max-in-flight` says otherwise (wrk's 64 connections fit twice). */
export const DEFAULT_MAX_IN_FLIGHT = 128;
