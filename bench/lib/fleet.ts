/**
 * The bench's `fleet` scenario: the cached list on the same binary twice, in the same rounds,
 * `petstore` alone (limits in process) and `redis` on a throwaway Redis (scripts/with-redis.sh),
 * where quota leases (src/gateway/limiter/leases.ts) keep the bench key, far from its limit, to
 * about one script run a second. What Redis costs the product shows as `redis` against
 * `petstore`: server CPU per request, and the script runs per request from its /metrics.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { metricSum } from '../../test/harness.ts';
import type { Running } from './servers.ts';
import { LIST, type Scenario, startSeeded, tokenOf, writeKeys } from './setup.ts';

const WITH_REDIS = join(import.meta.dir, '../../scripts/with-redis.sh');

export const FLEET_SCENARIO: Scenario = {
  id: 'fleet',
  label: `GET ${LIST} with --redis (quota leases) and without`,
  expect: 200,
  servers: ['petstore', 'redis'],
  data: 'fleet',
  load: { method: 'GET', path: LIST, token: tokenOf('bench'), addresses: 0 },
};

/** What the scenario saw of the Redis side: requests and script runs, from the product's /metrics. */
export interface FleetFigures {
  readonly requests: number;
  readonly scriptRuns: number;
}

export interface FleetPair {
  readonly servers: { petstore: Running; redis: Running };
  readonly logs: { petstore: string; redis: string };
  /** The figures over the rounds. */
  finish(): Promise<FleetFigures>;
  /** Stops Redis (after the servers). */
  close(): void;
}

/** Both products seeded alike, one of them on a Redis started here. */
export async function startFleetPair(dir: string, cmd: string[]): Promise<FleetPair> {
  const exports = execFileSync(WITH_REDIS, ['start'], { encoding: 'utf8' });
  const value = (name: string) => new RegExp(`${name}=(\\S+)`).exec(exports)?.[1]?.replace(/^'|'$/g, '') ?? '';
  const url = value('PETSTORE_TEST_REDIS_URL');
  const redisDir = value('PETSTORE_TEST_REDIS_DIR');
  if (!url || !redisDir) throw new Error(`bench: scripts/with-redis.sh start said: ${exports}`);
  const keys = writeKeys(dir).file;
  const [petstore, petstoreLog] = await startSeeded(cmd, dir, 'fleet-alone', keys, ['--metrics']);
  const [redis, redisLog] = await startSeeded(cmd, dir, 'fleet-redis', keys, ['--metrics', '--redis', url]);
  const before = await figures(redis);
  return {
    servers: { petstore, redis },
    logs: { petstore: petstoreLog, redis: redisLog },
    finish: async () => {
      const after = await figures(redis);
      return { requests: after.requests - before.requests, scriptRuns: after.scriptRuns - before.scriptRuns };
    },
    close: () => void execFileSync(WITH_REDIS, ['stop', redisDir]),
  };
}

async function figures(server: Running): Promise<FleetFigures> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return {
    requests: metricSum(text, /^petstore_http_requests_total\{operation="listPets"/),
    scriptRuns: metricSum(text, /^petstore_limiter_script_runs_total/),
  };
}
