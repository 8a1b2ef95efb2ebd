/**
 * Counters for `GET /metrics`, written out in the Prometheus text format (version 0.0.4) by hand.
 *
 * The request path only adds to typed arrays at indexes fixed in advance (operation x status,
 * operation x latency bucket): no label strings, maps or objects are made per request. Text is
 * built only when scraped.
 */
import { PLAN_NAMES } from './gateway/plans.ts';
import { ConsumerMetrics } from './metrics-consumers.ts';

/** Operations requests are counted under: the contract's operationIds, the ops routes, `other`. */
export const OPERATIONS = [
  'listPets',
  'createPet',
  'getPet',
  'healthz',
  'readyz',
  'metrics',
  'docs',
  'openapi',
  'other',
] as const;
export type Operation = (typeof OPERATIONS)[number];
const OP = Object.fromEntries(OPERATIONS.map((name, i) => [name, i])) as Record<Operation, number>;

/** Upper bounds of the latency buckets, in seconds. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const SLOTS = LATENCY_BUCKETS.length + 1; // the last one is +Inf
const STATUSES = 500; // 100..599

/** Plans refusals and bans are counted by: every plan, and `anonymous` for per-address limits. */
export const METRIC_PLANS = [...PLAN_NAMES, 'anonymous'] as const;
/** 429 reasons shown even before they happen; others (the Error body's code) appear once seen. */
const REFUSAL_REASONS = ['rate_limited', 'key_banned'] as const;
export const STORE_OPERATIONS = ['create', 'get', 'list', 'ping'] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** `Content-Type` of the exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The operation a request is counted under, from its method and the Hono route it matched.
 *
 * @example
 * operationOf('GET', '/v1/pets/:petId') // OP.getPet (2)
 */
export function operationOf(method: string, route: string): number {
  switch (route) {
    case '/v1/pets':
      return method === 'GET' || method === 'HEAD' ? OP.listPets : method === 'POST' ? OP.createPet : OP.other;
    case '/v1/pets/:petId':
      return method === 'GET' || method === 'HEAD' ? OP.getPet : OP.other;
    case '/healthz':
      return OP.healthz;
    case '/readyz':
      return OP.readyz;
    case '/metrics':
      return OP.metrics;
  }
  if (route.startsWith('/docs')) return OP.docs;
  if (route.startsWith('/openapi.')) return OP.openapi;
  return OP.other;
}

interface PlanCounts {
  /** 429s by the Error body's code. */
  readonly refused: Map<string, number>;
  bans: number;
}

export interface MetricsOptions {
  version: string;
  runtime: string;
  /** Epoch ms the process started, for `process_start_time_seconds`. */
  startedAt?: number;
}

/**
 * Every counter the service exposes; one instance per process.
 *
 * @example
 * const m = new Metrics({ version: '1.0.0', runtime: 'bun' })
 * m.answered(operationOf('GET', '/v1/pets'), 200, 0.003)
 * m.render() // '# HELP petstore_http_requests_total ...'
 */
export class Metrics {
  readonly #requests = new Float64Array(OPERATIONS.length * STATUSES);
  readonly #buckets = new Float64Array(OPERATIONS.length * SLOTS);
  readonly #sums = new Float64Array(OPERATIONS.length);
  readonly #plans = new Map<string, PlanCounts>(
    METRIC_PLANS.map((p) => [p, { refused: new Map(REFUSAL_REASONS.map((r) => [r, 0])), bans: 0 }]),
  );
  readonly #storeErrors = new Map<string, number>();
  #inFlight = 0;
  #keys: Record<string, number> = {};
  #reloads = { ok: 0, failed: 0 };
  readonly #info: string;
  readonly #startedAt: number;
  /** Per-consumer and per-key series; fed by `countRequests` and the keys (re)load. */
  readonly consumers = new ConsumerMetrics();

  constructor({ version, runtime, startedAt = Date.now() }: MetricsOptions) {
    this.#info = `{version="${escapeLabel(version)}",runtime="${escapeLabel(runtime)}"}`;
    this.#startedAt = startedAt;
  }

  /** A request has arrived. */
  started(): void {
    this.#inFlight++;
  }

  /** A request of operation `op` (from `operationOf`) was answered with `status` after `seconds`. */
  answered(op: number, status: number, seconds: number): void {
    this.#inFlight--;
    const r = op * STATUSES + (status >= 100 && status < 600 ? status - 100 : STATUSES - 1);
    this.#requests[r] = (this.#requests[r] ?? 0) + 1;
    let b = 0;
    while (b < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[b] as number)) b++;
    const h = op * SLOTS + b;
    this.#buckets[h] = (this.#buckets[h] ?? 0) + 1;
    this.#sums[op] = (this.#sums[op] ?? 0) + seconds;
  }

  /** A caller on `plan` was answered 429; `reason` is the Error body's code, e.g. `rate_limited`. */
  refused(plan: string, reason: string): void {
    const refused = this.#plans.get(plan)?.refused;
    refused?.set(reason, (refused.get(reason) ?? 0) + 1);
  }

  /** A ban started for a caller on `plan`. */
  banned(plan: string): void {
    const counts = this.#plans.get(plan);
    if (counts) counts.bans++;
  }

  /** A store call failed; `unavailable` when the store could not serve (disk, connection). */
  storeError(operation: StoreOperation, kind: 'unavailable' | 'error'): void {
    const key = `${operation}",kind="${kind}`;
    this.#storeErrors.set(key, (this.#storeErrors.get(key) ?? 0) + 1);
  }

  /** The keys now loaded, by plan (at start and after each reload). */
  keysLoaded(byPlan: Record<string, number>): void {
    this.#keys = { ...byPlan };
  }

  /** A SIGHUP reload of the keys file succeeded or failed. */
  reloaded(ok: boolean): void {
    this.#reloads[ok ? 'ok' : 'failed']++;
  }

  /** Everything, in the Prometheus text exposition format. */
  render(): string {
    const out: string[] = [];
    const head = (name: string, type: string, help: string) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

    head('petstore_http_requests_total', 'counter', 'HTTP requests answered, by operation and status code.');
    OPERATIONS.forEach((op, i) => {
      for (let s = 0; s < STATUSES; s++) {
        const n = this.#requests[i * STATUSES + s] as number;
        if (n > 0) out.push(`petstore_http_requests_total{operation="${op}",status="${s + 100}"} ${n}`);
      }
    });

    const latency = 'petstore_http_request_duration_seconds';
    head(latency, 'histogram', 'Time from receiving a request to having its response ready, by operation.');
    OPERATIONS.forEach((op, i) => {
      let cumulative = 0;
      const lines: string[] = [];
      for (let b = 0; b < SLOTS; b++) {
        cumulative += this.#buckets[i * SLOTS + b] as number;
        const le = b < LATENCY_BUCKETS.length ? String(LATENCY_BUCKETS[b]) : '+Inf';
        lines.push(`${latency}_bucket{operation="${op}",le="${le}"} ${cumulative}`);
      }
      if (cumulative === 0) return;
      out.push(...lines);
      out.push(
        `${latency}_sum{operation="${op}"} ${this.#sums[i]}`,
        `${latency}_count{operation="${op}"} ${cumulative}`,
      );
    });

    head('petstore_http_requests_in_flight', 'gauge', 'Requests received and not yet answered.');
    out.push(`petstore_http_requests_in_flight ${this.#inFlight}`);

    head('petstore_rate_limited_total', 'counter', '429 responses by plan and reason (the Error code).');
    for (const [plan, c] of this.#plans) {
      for (const [reason, n] of c.refused)
        out.push(`petstore_rate_limited_total{plan="${plan}",reason="${reason}"} ${n}`);
    }
    head('petstore_bans_total', 'counter', 'Temporary bans started, by plan.');
    for (const [plan, c] of this.#plans) out.push(`petstore_bans_total{plan="${plan}"} ${c.bans}`);

    head('petstore_store_errors_total', 'counter', 'Failed store calls, by operation and kind (unavailable or error).');
    for (const op of STORE_OPERATIONS) {
      for (const kind of ['unavailable', 'error']) {
        const key = `${op}",kind="${kind}`;
        out.push(`petstore_store_errors_total{operation="${key}"} ${this.#storeErrors.get(key) ?? 0}`);
      }
    }

    head('petstore_keys', 'gauge', 'API keys loaded, by plan.');
    for (const plan of PLAN_NAMES) out.push(`petstore_keys{plan="${plan}"} ${this.#keys[plan] ?? 0}`);
    head('petstore_keys_reloads_total', 'counter', 'Reloads of the keys file on SIGHUP, by result.');
    out.push(`petstore_keys_reloads_total{result="ok"} ${this.#reloads.ok}`);
    out.push(`petstore_keys_reloads_total{result="failed"} ${this.#reloads.failed}`);
    this.consumers.render(out);

    head('petstore_build_info', 'gauge', 'Version and runtime of this server; always 1.');
    out.push(`petstore_build_info${this.#info} 1`);
    head('process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch, in seconds.');
    out.push(`process_start_time_seconds ${Math.floor(this.#startedAt / 1000)}`);
    return `${out.join('\n')}\n`;
  }
}

/** A label value as the text format wants it: backslash, quote and newline escaped. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
