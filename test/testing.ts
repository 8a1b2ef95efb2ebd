import { Hono } from 'hono';
import { createApp } from '../src/app.ts';
import type { AppEnv } from '../src/app-env.ts';
import { type Clock, systemClock } from '../src/core/clock.ts';
import type { ServiceRoute } from '../src/core/service-route.ts';
import { SlidingWindowLimiter } from '../src/gateway/gateway.ts';
import { parseKeys } from '../src/keys/file.ts';
import type { PlanName } from '../src/keys/plans.ts';
import { hashToken } from '../src/keys/records.ts';
import { KeyTable } from '../src/keys/table.ts';
import type { Logger } from '../src/log.ts';
import { silentLogger } from '../src/log.ts';
import type { Metrics } from '../src/metrics/registry.ts';
import { serviceRouteHandlers } from '../src/pipeline/pipeline.ts';
import { MemoryStore } from '../src/store/memory-store.ts';
import type { DataStore } from '../src/store/store.ts';

/** A clock the test moves by hand. */
export function fakeClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

export interface TestKey {
  name: string;
  plan: PlanName;
  limits?: { perMinute: number; perDay: number; perMonth?: number };
  costs?: Record<string, number>;
  enforce?: boolean;
  scopes?: string[];
  ban?: { seconds: number; threshold?: number };
}

/** A token for a test key, derived from its name so tests can rebuild it. */
export const tokenFor = (name: string) => `psk_test-token-for-${name}`;

/** The app with an in-memory store, a fake clock and the given keys (default: one free key). */
export function testApp({
  keys = [{ name: 'acme', plan: 'free' }] as TestKey[],
  log = silentLogger as Logger,
  start = undefined as number | undefined,
  metrics = undefined as Metrics | undefined,
  experimental = false,
  orderHoldMs = undefined as number | undefined,
  /** The store on the test's clock; a `MemoryStore` when absent. */
  storeOn = undefined as ((clock: Clock) => DataStore) | undefined,
  /** Origins whose pages may call the API (`--cors-origin`). */
  corsOrigins = [] as readonly string[],
} = {}) {
  const clock = fakeClock(start);
  const store = storeOn ? storeOn(clock) : new MemoryStore({ clock });
  let table = new KeyTable(
    parseKeys(
      JSON.stringify({ keys: keys.map((k) => ({ ...k, sha256: hashToken(tokenFor(k.name)).toString('hex') })) }),
    ),
  );
  const limiter = new SlidingWindowLimiter({ clock });
  const app = createApp({
    store,
    keyTable: () => table,
    limiter,
    clock,
    log,
    metrics,
    experimental,
    ...(orderHoldMs === undefined ? {} : { orderHoldMs }),
    clientAddress: () => '192.0.2.1',
    corsOrigins,
  });
  const auth = (name = keys[0]?.name ?? 'acme') => ({ Authorization: `Bearer ${tokenFor(name)}` });
  /** Serves a keys document from now on, as a reload of the keys file does. */
  const reload = (doc: object) => {
    table = new KeyTable(parseKeys(JSON.stringify(doc)));
  };
  return { app, clock, store, auth, reload };
}

/**
 * An app serving only `routes` (service routes: health, docs, metrics) through the pipeline's
 * answer path, for their unit tests.
 */
export function routesApp(routes: readonly ServiceRoute[]) {
  const handlers = serviceRouteHandlers({
    log: silentLogger,
    clock: systemClock,
    clientAddress: () => '192.0.2.1',
    maxBodyBytes: 1024,
  });
  const app = new Hono<AppEnv>();
  for (const route of routes) app.get(route.path, handlers.serviceRoute(route));
  app.notFound(handlers.serveUnmatched);
  app.onError(handlers.onError);
  return app;
}
