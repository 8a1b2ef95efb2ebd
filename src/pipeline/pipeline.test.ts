import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import * as v from 'valibot';
import { pipelineSteps } from '../../test/pipeline-steps.ts';
import { testApp } from '../../test/testing.ts';
import { defineOperation } from '../api/operation-types.ts';
import type { AppEnv } from '../app-env.ts';
import { ApiError } from '../core/api-error.ts';
import { systemClock } from '../core/clock.ts';
import type { AdmissionCheck } from '../gateway/gateway.ts';
import { silentLogger } from '../log.ts';
import { serviceRouteHandlers, tableRouteHandlers } from './pipeline.ts';

const base = { log: silentLogger, clock: systemClock, clientAddress: () => '192.0.2.1', maxBodyBytes: 1024 };
/** A gateway that refuses everyone: enough to see which steps a pipeline has. */
const refuseAll: AdmissionCheck = async () => new ApiError('unauthorized', 'no key');
const ping = {
  id: 'ping',
  method: 'GET',
  path: '/ping',
  weakEtag: false,
  waitsForDueOrderExpiry: false,
  handler: async () => ({ status: 200, body: '{}', type: 'application/json' }),
} as const;
const unmemoised = defineOperation({ ...ping, memo: false });
const memoised = defineOperation({ ...ping, memo: true });
const holdsFirst = defineOperation({ ...ping, memo: false, waitsForDueOrderExpiry: true });
/** A table pipeline's options, without the store's change count. */
const api = { ...base, admissionCheck: refuseAll, deps: {}, allowedMethods: () => undefined };
/** A store whose count never moves: enough for a pipeline to take memoised operations. */
const store = { startDueOrderExpiry: () => undefined, changeCount: () => 1, readsUnchangedSince: () => true };

describe('what each pipeline needs is checked by the compiler', () => {
  test('an app without a table has no operation step, and its serveUnmatched never asks for a key', async () => {
    const handlers = serviceRouteHandlers(base);
    // @ts-expect-error: a pipeline without the admission check and deps cannot serve an operation.
    expect(handlers.operation).toBeUndefined();
    const app = new Hono<AppEnv>();
    app.notFound(handlers.serveUnmatched);
    const res = await app.request('/v1/pets');
    expect(res.status).toBe(404);
  });

  test('a table pipeline without the store takes only operations that are never memoised and expire no due orders first', async () => {
    const handlers = tableRouteHandlers(api);
    expect(typeof handlers.handlerFor(unmemoised)).toBe('function');
    // @ts-expect-error: a memoised operation needs the store's change count.
    const addMemoised = () => handlers.handlerFor(memoised);
    // @ts-expect-error: an operation that waits for the due orders' expiry needs the store.
    const addHoldsFirst = () => handlers.handlerFor(holdsFirst);
    // What the compiler refuses is refused at start-up too, when the route is added.
    expect(addMemoised).toThrow(new TypeError('pipeline: ping is memoised, but the pipeline has no store'));
    expect(addHoldsFirst).toThrow(
      new TypeError("pipeline: ping waits for the due orders' expiry, but the pipeline has no store"),
    );
    const withCount = tableRouteHandlers({ ...api, changesAndExpiry: store });
    expect(typeof withCount.handlerFor(memoised)).toBe('function');
    expect(typeof withCount.handlerFor(holdsFirst)).toBe('function');
    // @ts-expect-error: the admission check is not optional.
    tableRouteHandlers({ ...base, deps: {}, allowedMethods: () => undefined });
    // Under the API prefix, a path no operation serves meets the gateway first: 401 before 404.
    const app = new Hono<AppEnv>();
    app.notFound(handlers.serveUnmatched);
    expect((await app.request('/v1/nothing')).status).toBe(401);
  });
});

describe('a memoised operation is refused when its route is added', () => {
  const handlers = tableRouteHandlers({ ...api, changesAndExpiry: store });

  test('one that reads request headers or a body: its answer is memoised by the path and query alone', () => {
    const headers = defineOperation({ ...ping, memo: true, headers: v.object({ 'x-tone': v.string() }) });
    expect(() => handlers.handlerFor(headers)).toThrow(
      new TypeError('pipeline: ping reads headers or a body and cannot be memoised by its path and query'),
    );
    const body = defineOperation({ ...ping, method: 'POST', memo: true, body: v.object({ name: v.string() }) });
    expect(() => handlers.handlerFor(body)).toThrow(
      new TypeError('pipeline: ping reads headers or a body and cannot be memoised by its path and query'),
    );
    expect(typeof handlers.handlerFor(defineOperation({ ...ping, memo: false, body: v.object({}) }))).toBe('function');
  });

  test("one that reads the quota: its answer is the caller's own", () => {
    const quota = defineOperation({ ...ping, memo: true, readsQuota: true });
    expect(() => handlers.handlerFor(quota)).toThrow(
      new TypeError('pipeline: ping reads the quota and cannot be memoised'),
    );
  });

  test("one that is audited: its input carries the caller's key", () => {
    const audited = defineOperation({ ...ping, memo: true, audited: true });
    expect(() => handlers.handlerFor(audited)).toThrow(
      new TypeError('pipeline: ping is audited per caller and cannot be memoised'),
    );
  });
});

/** The step names the call tree in pipeline.ts's header gives, each step's first, in order. */
const listedSteps = (): string[] => pipelineSteps().map((step) => step.name);

describe("a request's checks answer in the order pipeline.ts's call tree gives its steps", () => {
  test('each refusal comes before those of the steps listed after it', async () => {
    const origin = 'https://app.example';
    const { app, auth } = testApp({ corsOrigins: [origin] });
    const json = { 'Content-Type': 'application/json' };
    const tooLarge = JSON.stringify({ name: 'x'.repeat(70 * 1024) });
    const preflight = { Origin: origin, 'Access-Control-Request-Method': 'POST' };
    const post = (path: string, headers: Record<string, string>, body: string) =>
      app.request(path, { method: 'POST', headers: { ...json, ...headers }, body });
    // Each request fails every check from its step on; it gets the first one's answer.
    const answered: [string, number][] = [
      ['handleRequest', (await post(`/v1/pets?q=${'x'.repeat(9000)}`, {}, tooLarge)).status],
      ['addCorsHeaders', (await app.request('/v1/pets', { method: 'OPTIONS', headers: preflight })).status],
      ['passGateway', (await post('/v1/pets', {}, tooLarge)).status],
      ['checkBodyLimits', (await post('/v1/pets', auth(), tooLarge)).status],
      ['runHandler', (await post('/v1/pets', auth(), '{"name":7}')).status],
    ];
    expect(answered).toEqual([
      ['handleRequest', 414],
      ['addCorsHeaders', 204],
      ['passGateway', 401],
      ['checkBodyLimits', 413],
      ['runHandler', 400],
    ]);
    const listed = listedSteps();
    const names = answered.map(([name]) => name);
    expect(names.filter((name) => listed.includes(name))).toEqual(names);
    expect(names.map((name) => listed.indexOf(name))).toEqual(
      names.map((name) => listed.indexOf(name)).sort((a, b) => a - b),
    );
  });

  test("a deprecated operation's headers come after the gateway and before the body's check", async () => {
    const { app, auth } = testApp();
    const withBody = { 'Content-Type': 'application/json', 'Content-Length': String(70 * 1024) };
    const refused = await app.request('/v1/pets/1', { headers: withBody });
    const tooLarge = await app.request('/v1/pets/1', { headers: { ...withBody, ...auth() } });
    expect([refused.status, refused.headers.has('deprecation')]).toEqual([401, false]);
    expect([tooLarge.status, tooLarge.headers.has('deprecation')]).toEqual([413, true]);
    const listed = listedSteps();
    expect(listed.indexOf('passGateway')).toBeLessThan(listed.indexOf('addDeprecationHeaders'));
    expect(listed.indexOf('addDeprecationHeaders')).toBeLessThan(listed.indexOf('checkBodyLimits'));
  });
});
