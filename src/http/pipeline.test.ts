import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import * as v from 'valibot';
import { defineOperation } from '../api/operation-types.ts';
import type { AppEnv } from '../app-env.ts';
import { ApiError } from '../core/api-error.ts';
import { systemClock } from '../core/clock.ts';
import type { GatewayPass } from '../gateway/gateway.ts';
import { silentLogger } from '../log.ts';
import { apiPipeline, pipeline } from './pipeline.ts';

const base = { log: silentLogger, clock: systemClock, clientAddress: () => '192.0.2.1', maxBodyBytes: 1024 };
/** A gateway that refuses everyone: enough to see which steps a pipeline has. */
const refuseAll: GatewayPass = async () => new ApiError('unauthorized', 'no key');
const ping = {
  id: 'ping',
  method: 'GET',
  path: '/ping',
  weakEtag: false,
  handler: async () => ({ status: 200, body: '{}', type: 'application/json' }),
} as const;
const unkept = defineOperation({ ...ping, memo: false });
const kept = defineOperation({ ...ping, memo: true });
/** An API pipeline's options, without the store's change count. */
const api = { ...base, gateway: refuseAll, deps: {}, allowedMethods: () => undefined };
/** A store whose count never moves: enough for a pipeline to take kept operations. */
const store = { startDueExpiry: () => undefined, changeCount: () => 1, unchanged: () => true };

describe('what each pipeline needs is checked by the compiler', () => {
  test('an app without a table has no operation step, and its notFound never asks for a key', async () => {
    const steps = pipeline(base);
    // @ts-expect-error: a pipeline without the gateway and deps cannot serve an operation.
    expect(steps.operation).toBeUndefined();
    const app = new Hono<AppEnv>();
    app.notFound(steps.notFound);
    const res = await app.request('/v1/pets');
    expect(res.status).toBe(404);
  });

  test("an API pipeline without the store's change count takes only operations that are never kept", async () => {
    const steps = apiPipeline(api);
    expect(typeof steps.operation(unkept)).toBe('function');
    // @ts-expect-error: a kept operation needs the store's change count.
    steps.operation(kept);
    const withCount = apiPipeline({ ...api, changes: store });
    expect(typeof withCount.operation(kept)).toBe('function');
    // @ts-expect-error: the gateway is not optional.
    apiPipeline({ ...base, deps: {}, allowedMethods: () => undefined });
    // Under the API prefix, a path no operation serves meets the gateway first: 401 before 404.
    const app = new Hono<AppEnv>();
    app.notFound(steps.notFound);
    expect((await app.request('/v1/nothing')).status).toBe(401);
  });
});

describe('a kept operation is refused when its route is added', () => {
  const steps = apiPipeline({ ...api, changes: store });

  test('one that reads request headers or a body: its answer is kept by the path and query alone', () => {
    const headers = defineOperation({ ...ping, memo: true, headers: v.object({ 'x-tone': v.string() }) });
    expect(() => steps.operation(headers)).toThrow(
      new TypeError('pipeline: ping reads headers or a body and cannot be kept by its path and query'),
    );
    const body = defineOperation({ ...ping, method: 'POST', memo: true, body: v.object({ name: v.string() }) });
    expect(() => steps.operation(body)).toThrow(
      new TypeError('pipeline: ping reads headers or a body and cannot be kept by its path and query'),
    );
    expect(typeof steps.operation(defineOperation({ ...ping, memo: false, body: v.object({}) }))).toBe('function');
  });

  test("one that reads the quota: its answer is the caller's own", () => {
    const quota = defineOperation({ ...ping, memo: true, readsQuota: true });
    expect(() => steps.operation(quota)).toThrow(new TypeError('pipeline: ping reads the quota and cannot be kept'));
  });
});
