import { describe, expect, test } from 'bun:test';
import { operationIndex, REQUEST_OPERATIONS } from './labels.ts';
import { Metrics } from './registry.ts';

const samples = async (m: Metrics) => (await m.render()).split('\n').filter((l) => l && !l.startsWith('#'));
const op = (name: string) => REQUEST_OPERATIONS.indexOf(name);

describe('operationIndex', () => {
  test('every operation of the table, every service route and the admin port is a label of its own, the rest other', () => {
    expect(REQUEST_OPERATIONS).toEqual([
      'listPets',
      'createPet',
      'getPet',
      'updatePet',
      'deletePet',
      'getRateLimit',
      'getInventory',
      'placeOrder',
      'listOrders',
      'getOrder',
      'completeOrder',
      'cancelOrder',
      'healthz',
      'readyz',
      'metrics',
      'docs',
      'openapi',
      'admin',
      'other',
    ]);
    expect(REQUEST_OPERATIONS[operationIndex('getPet')]).toBe('getPet');
    expect(REQUEST_OPERATIONS[operationIndex('openapi')]).toBe('openapi');
    expect(REQUEST_OPERATIONS[operationIndex(undefined)]).toBe('other');
    expect(REQUEST_OPERATIONS[operationIndex('noSuchOperation')]).toBe('other');
  });
});

describe('Metrics', () => {
  test('a fresh registry: zeroed plan, store and reload series, build info, start time', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'bun', startedAt: Date.UTC(2026, 10, 22, 12) });
    m.keysLoaded({ free: 2, enterprise: 1 });
    // prom-client separates families with a blank line; the lines themselves are compared exactly.
    expect((await m.render()).replace(/\n\n/g, '\n')).toBe(
      [
        '# HELP petstore_http_requests_total HTTP requests answered, by operation and status code.',
        '# TYPE petstore_http_requests_total counter',
        '# HELP petstore_answer_memo_total Requests of memoised operations (the answer memo), by operation and outcome: hit (a memoised answer, or the read of the same path under way for another request), miss (read from the store).',
        '# TYPE petstore_answer_memo_total counter',
        ...['listPets', 'getPet', 'getInventory'].flatMap((op) => [
          `petstore_answer_memo_total{operation="${op}",outcome="hit"} 0`,
          `petstore_answer_memo_total{operation="${op}",outcome="miss"} 0`,
        ]),
        '# HELP petstore_http_request_duration_seconds Time from receiving a request to having its response ready, by operation.',
        '# TYPE petstore_http_request_duration_seconds histogram',
        '# HELP petstore_http_requests_in_flight Requests received and not yet answered.',
        '# TYPE petstore_http_requests_in_flight gauge',
        'petstore_http_requests_in_flight 0',
        '# HELP petstore_rate_limited_total 429 responses by plan and reason (the Error code).',
        '# TYPE petstore_rate_limited_total counter',
        ...['free', 'pro', 'business', 'enterprise', 'anonymous'].flatMap((p) => [
          `petstore_rate_limited_total{plan="${p}",reason="rate_limited"} 0`,
          `petstore_rate_limited_total{plan="${p}",reason="key_banned"} 0`,
        ]),
        '# HELP petstore_bans_total Temporary bans started, by plan.',
        '# TYPE petstore_bans_total counter',
        ...['free', 'pro', 'business', 'enterprise', 'anonymous'].map((p) => `petstore_bans_total{plan="${p}"} 0`),
        '# HELP petstore_store_errors_total Failed store calls, by operation and kind (timeout, unavailable or error).',
        '# TYPE petstore_store_errors_total counter',
        ...['create', 'get', 'update', 'remove', 'list', 'inventory', 'order', 'ping', 'outbox'].flatMap((o) => [
          `petstore_store_errors_total{operation="${o}",kind="timeout"} 0`,
          `petstore_store_errors_total{operation="${o}",kind="unavailable"} 0`,
          `petstore_store_errors_total{operation="${o}",kind="error"} 0`,
        ]),
        '# HELP petstore_keys API keys loaded, by plan.',
        '# TYPE petstore_keys gauge',
        'petstore_keys{plan="free"} 2',
        'petstore_keys{plan="pro"} 0',
        'petstore_keys{plan="business"} 0',
        'petstore_keys{plan="enterprise"} 1',
        '# HELP petstore_keys_reloads_total Reloads of the keys file on SIGHUP, by result.',
        '# TYPE petstore_keys_reloads_total counter',
        'petstore_keys_reloads_total{result="ok"} 0',
        'petstore_keys_reloads_total{result="failed"} 0',
        '# HELP petstore_ratelimit_would_refuse_total Requests a report-only limit ("enforce": false) served that it would have refused, by consumer and window.',
        '# TYPE petstore_ratelimit_would_refuse_total counter',
        '# HELP petstore_trace_spans_dropped_total Spans never exported, by reason: queue_full (the collector is slow or away), export_failed, ring_overwritten (kept, overwritten in the trace ring before the export read them), tail_capped (kept for their time or their 5xx past --otel-keep-max-per-second).',
        '# TYPE petstore_trace_spans_dropped_total counter',
        'petstore_trace_spans_dropped_total{reason="queue_full"} 0',
        'petstore_trace_spans_dropped_total{reason="export_failed"} 0',
        'petstore_trace_spans_dropped_total{reason="ring_overwritten"} 0',
        'petstore_trace_spans_dropped_total{reason="tail_capped"} 0',
        '# HELP petstore_workers_replaced_total Workers (--workers) that exited unasked and were started again in their place.',
        '# TYPE petstore_workers_replaced_total counter',
        'petstore_workers_replaced_total 0',
        '# HELP petstore_consumer_requests_total Requests answered for a consumer (any of its keys), by status code.',
        '# TYPE petstore_consumer_requests_total counter',
        '# HELP petstore_consumer_refusals_total Requests of a consumer refused, by reason (429 and 403 Error codes, key_revoked, key_expired, key_not_yet_valid).',
        '# TYPE petstore_consumer_refusals_total counter',
        '# HELP petstore_key_last_used_timestamp_seconds When a key was last used (Unix seconds; 0: not since start).',
        '# TYPE petstore_key_last_used_timestamp_seconds gauge',
        '# HELP petstore_key_expiry_timestamp_seconds When a key expires (its expiresAt, Unix seconds); keys without one are absent.',
        '# TYPE petstore_key_expiry_timestamp_seconds gauge',
        '# HELP petstore_webhook_deliveries_total Webhook delivery attempts by consumer, event type and outcome (delivered, retried, failed: given up, dropped: by the outbox bound).',
        '# TYPE petstore_webhook_deliveries_total counter',
        '# HELP petstore_webhook_outbox_events Webhook events in the outbox, by state (pending: to be delivered; failed: given up on, kept until the bound drops them).',
        '# TYPE petstore_webhook_outbox_events gauge',
        'petstore_webhook_outbox_events{state="pending"} 0',
        'petstore_webhook_outbox_events{state="failed"} 0',
        '# HELP petstore_webhook_outbox_oldest_pending_age_seconds Age of the oldest webhook event not yet delivered (0 when none is pending).',
        '# TYPE petstore_webhook_outbox_oldest_pending_age_seconds gauge',
        'petstore_webhook_outbox_oldest_pending_age_seconds 0',
        '# HELP petstore_limiter_script_runs_total Rate-limit script runs in Redis by kind: grant (units beyond the request at hand), hand_back (unused units returned alone), decision (one request).',
        '# TYPE petstore_limiter_script_runs_total counter',
        'petstore_limiter_script_runs_total{kind="grant"} 0',
        'petstore_limiter_script_runs_total{kind="hand_back"} 0',
        'petstore_limiter_script_runs_total{kind="decision"} 0',
        '# HELP petstore_limiter_units_total Quota units taken from Redis by grants (granted) and returned unused (handed_back).',
        '# TYPE petstore_limiter_units_total counter',
        'petstore_limiter_units_total{direction="granted"} 0',
        'petstore_limiter_units_total{direction="handed_back"} 0',
        '# HELP petstore_limiter_grants_outstanding Consumers whose lease on this instance holds unused units now.',
        '# TYPE petstore_limiter_grants_outstanding gauge',
        'petstore_limiter_grants_outstanding 0',
        '# HELP petstore_build_info Version and runtime of this server; always 1.',
        '# TYPE petstore_build_info gauge',
        'petstore_build_info{version="1.0.0",runtime="bun"} 1',
        '# HELP process_start_time_seconds Start time of the process since the Unix epoch, in seconds.',
        '# TYPE process_start_time_seconds gauge',
        'process_start_time_seconds 1795348800',
        '',
      ].join('\n'),
    );
  });

  test('requests by operation and status; a cumulative histogram whose bounds are inclusive', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'node' });
    for (const [status, seconds] of [
      [200, 0.001],
      [200, 0.0011],
      [429, 0.02],
      [200, 30],
    ] as const) {
      m.started();
      m.answered(op('listPets'), status, seconds);
    }
    m.started();
    const lines = await samples(m);
    expect(lines.filter((l) => l.startsWith('petstore_http_requests_total'))).toEqual([
      'petstore_http_requests_total{operation="listPets",status="200"} 3',
      'petstore_http_requests_total{operation="listPets",status="429"} 1',
    ]);
    const latency = 'petstore_http_request_duration_seconds';
    expect(lines.filter((l) => l.startsWith(latency))).toEqual([
      `${latency}_bucket{le="0.001",operation="listPets"} 1`,
      `${latency}_bucket{le="0.0025",operation="listPets"} 2`,
      `${latency}_bucket{le="0.005",operation="listPets"} 2`,
      `${latency}_bucket{le="0.01",operation="listPets"} 2`,
      `${latency}_bucket{le="0.025",operation="listPets"} 3`,
      `${latency}_bucket{le="0.05",operation="listPets"} 3`,
      `${latency}_bucket{le="0.1",operation="listPets"} 3`,
      `${latency}_bucket{le="0.25",operation="listPets"} 3`,
      `${latency}_bucket{le="0.5",operation="listPets"} 3`,
      `${latency}_bucket{le="1",operation="listPets"} 3`,
      `${latency}_bucket{le="2.5",operation="listPets"} 3`,
      `${latency}_bucket{le="5",operation="listPets"} 3`,
      `${latency}_bucket{le="10",operation="listPets"} 3`,
      `${latency}_bucket{le="+Inf",operation="listPets"} 4`,
      `${latency}_sum{operation="listPets"} 30.0221`,
      `${latency}_count{operation="listPets"} 4`,
    ]);
    expect(lines).toContain('petstore_http_requests_in_flight 1');
  });

  test('refusals and bans by plan, store errors by operation and kind, reloads by result', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'deno' });
    m.refused('pro', 'rate_limited');
    m.refused('pro', 'rate_limited');
    m.refused('anonymous', 'key_banned');
    m.refused('no-such-plan', 'key_banned');
    m.banned('anonymous');
    m.storeError('create', 'unavailable');
    m.storeError('list', 'error');
    m.reloaded(true);
    m.reloaded(false);
    m.reloaded(true);
    const lines = await samples(m);
    for (const line of [
      'petstore_rate_limited_total{plan="pro",reason="rate_limited"} 2',
      'petstore_rate_limited_total{plan="anonymous",reason="key_banned"} 1',
      'petstore_bans_total{plan="anonymous"} 1',
      'petstore_bans_total{plan="pro"} 0',
      'petstore_store_errors_total{operation="create",kind="unavailable"} 1',
      'petstore_store_errors_total{operation="list",kind="error"} 1',
      'petstore_store_errors_total{operation="list",kind="unavailable"} 0',
      'petstore_keys_reloads_total{result="ok"} 2',
      'petstore_keys_reloads_total{result="failed"} 1',
    ]) {
      expect(lines).toContain(line);
    }
    expect(lines.some((l) => l.includes('no-such-plan'))).toBe(false);
  });

  test('label values are escaped', async () => {
    const m = new Metrics({ version: '1.0.0-"rc"\\1\n', runtime: 'bun' });
    expect(await samples(m)).toContain('petstore_build_info{version="1.0.0-\\"rc\\"\\\\1\\n",runtime="bun"} 1');
  });
});

describe('latency objectives and the limiter', () => {
  test("each objective's threshold is a bucket bound, once, in order", async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'bun', latencyObjectives: [0.3, 0.1] });
    m.started();
    m.answered(op('getPet'), 200, 0.28);
    const bounds = (await samples(m))
      .filter((l) => l.startsWith('petstore_http_request_duration_seconds_bucket'))
      .map((l) => [l.match(/le="([^"]+)"/)?.[1], Number(l.split(' ')[1])]);
    expect(bounds.slice(5, 10)).toEqual([
      ['0.05', 0],
      ['0.1', 0],
      ['0.25', 0],
      ['0.3', 1],
      ['0.5', 1],
    ]);
    expect(bounds).toHaveLength(15);
  });

  test('where the limiter decides, read when scraped; Redis outages; the table of subjects and whether it is full', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'bun' });
    let backend: 'redis' | 'local' = 'redis';
    const table = { keylessCells: 0, consumers: 0, capacity: 100_000, full: false };
    m.watchLimiter({
      backend: () => backend,
      outages: () => (backend === 'local' ? 1 : 0),
      localDecisions: () => (backend === 'local' ? 42 : 0),
      table,
    });
    const limiterLines = async () =>
      (await samples(m)).filter((l) => l.startsWith('petstore_ratelimit_') && !l.includes('would'));
    expect(await limiterLines()).toEqual([
      'petstore_ratelimit_backend{backend="redis"} 1',
      'petstore_ratelimit_backend{backend="local"} 0',
      'petstore_ratelimit_backend{backend="none"} 0',
      'petstore_ratelimit_redis_outages_total 0',
      'petstore_ratelimit_local_decisions_total 0',
      'petstore_ratelimit_subjects{kind="address"} 0',
      'petstore_ratelimit_subjects{kind="consumer"} 0',
      'petstore_ratelimit_subjects_max 100000',
      'petstore_ratelimit_table_full 0',
    ]);
    backend = 'local';
    Object.assign(table, { keylessCells: 100_000, consumers: 3, full: true });
    expect(await limiterLines()).toEqual([
      'petstore_ratelimit_backend{backend="redis"} 0',
      'petstore_ratelimit_backend{backend="local"} 1',
      'petstore_ratelimit_backend{backend="none"} 0',
      'petstore_ratelimit_redis_outages_total 1',
      'petstore_ratelimit_local_decisions_total 42',
      'petstore_ratelimit_subjects{kind="address"} 100000',
      'petstore_ratelimit_subjects{kind="consumer"} 3',
      'petstore_ratelimit_subjects_max 100000',
      'petstore_ratelimit_table_full 1',
    ]);
  });

  test('without Redis the limiter is in memory and has no outages', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'bun' });
    m.watchLimiter({ backend: () => 'memory', table: { keylessCells: 2, consumers: 1, capacity: 10, full: false } });
    const lines = await samples(m);
    expect(lines.filter((l) => l.startsWith('petstore_ratelimit_backend'))).toEqual([
      'petstore_ratelimit_backend{backend="memory"} 1',
    ]);
    expect(lines.some((l) => l.startsWith('petstore_ratelimit_redis_outages_total'))).toBe(false);
  });
});

describe('per-consumer series', () => {
  const acme = { name: 'acme' };
  test('bounded by the keys loaded, named by key id, kept across a reload for consumers that stay', async () => {
    const m = new Metrics({ version: '1.0.0', runtime: 'bun' });
    m.consumers.load([
      { id: '2026-11', consumer: acme, expiresAt: Date.UTC(2027, 1, 20) },
      { id: '2027-02', consumer: acme },
      { id: 'old', consumer: { name: 'gone' } },
    ]);
    m.consumers.answered('acme', '2026-11', 200, Date.UTC(2026, 10, 22, 12, 0, 0, 900));
    m.consumers.answered('acme', '2027-02', 200, Date.UTC(2026, 10, 22, 12, 0, 5));
    m.consumers.answered('acme', '2027-02', 429, Date.UTC(2026, 10, 22, 12, 0, 6));
    m.consumers.refused('acme', 'rate_limited');
    m.consumers.refused('acme', 'insufficient_scope');
    m.consumers.answered('keyless', 'x', 200, 1);
    m.consumers.refused('keyless', 'rate_limited');
    m.consumers.answered('gone', 'old', 200, 1000);
    m.consumers.load([
      { id: '2026-11', consumer: acme, expiresAt: Date.UTC(2027, 1, 20) },
      { id: '2027-02', consumer: acme },
    ]);
    expect((await samples(m)).filter((l) => /^petstore_(consumer|key)_/.test(l))).toEqual([
      'petstore_consumer_requests_total{consumer="acme",status="200"} 2',
      'petstore_consumer_requests_total{consumer="acme",status="429"} 1',
      'petstore_consumer_refusals_total{consumer="acme",reason="rate_limited"} 1',
      'petstore_consumer_refusals_total{consumer="acme",reason="insufficient_scope"} 1',
      'petstore_key_last_used_timestamp_seconds{consumer="acme",key="2026-11"} 1795348800',
      'petstore_key_last_used_timestamp_seconds{consumer="acme",key="2027-02"} 1795348806',
      'petstore_key_expiry_timestamp_seconds{consumer="acme",key="2026-11"} 1803081600',
    ]);
  });
});
