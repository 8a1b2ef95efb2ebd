/**
 * The bench's `workers` scenarios: the same binary with `--workers 1` and `--workers 2`, in the
 * same rounds, on the cached list, a pet, a 401 and a POST. Neither the servers nor wrk are
 * pinned here: the point is what a second core gives, with wrk on the same two cores as an ops
 * team's load balancer is not. Besides req/s and server CPU per request, the supervisor's own CPU
 * per request of `--workers 2` (its thread answers every limiter decision: what bounds the host
 * on many cores), and RSS with 1, 2 and 4 workers. The list's rounds also measure the runtime's
 * floor (`bare1`, `bare2`: bare-workers.ts replaying the list's bytes from 1 and 2 workers), so
 * what a second event loop costs before anything of the product's is known in the same run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metricSum } from '../../test/harness.ts';
import { capture } from './captured.ts';
import { type Running, rssOf, startPrinter } from './servers.ts';
import { LIST, request, SCENARIOS, type Scenario, startSeeded, tokenOf, writeKeys } from './setup.ts';

/** Rounds of each workers scenario: the comparison is a median of paired rounds. */
export const WORKERS_ROUNDS = 8;

/** The product's own `list`, `get`, `401` and `post`, on `--workers 1` and `--workers 2`. */
export const WORKERS_SCENARIOS: Scenario[] = ['list', 'get', '401', 'post'].map((id) => {
  const { label, expect, load } = SCENARIOS.find((s) => s.id === id) as Scenario;
  return {
    id: `workers-${id}`,
    label: `${label}, --workers 1 and 2`,
    expect,
    load,
    servers: id === 'list' ? ['w1', 'w2', 'bare1', 'bare2'] : ['w1', 'w2'],
    data: 'workers',
    unpinned: true,
    rounds: WORKERS_ROUNDS,
  };
});

/** What the workers scenarios saw besides the rounds. */
export interface WorkersFigures {
  /** RSS after the rounds (1 and 2 workers) and after a short load (4), in MiB. */
  readonly rssMiB: { readonly 1: number; readonly 2: number; readonly 4: number };
  /** CPU of `--workers 2`'s supervisor thread per request it served, in µs. */
  readonly supervisorUsPerRequest: number;
  /** Requests `--workers 2` answered over the rounds (from its /metrics). */
  readonly requests: number;
}

export interface WorkersPair {
  readonly servers: { w1: Running; w2: Running; bare1: Running; bare2: Running };
  readonly logs: { w1: string; w2: string };
  /** Stops nothing; measures RSS (starting a `--workers 4` beside them) and the supervisor's share. */
  finish(): Promise<WorkersFigures>;
}

/** Both seeded alike, on files of their own, and the runtime's floor (run by `bun`); started unpinned. */
export async function startWorkersPair(dir: string, cmd: string[], bun: string): Promise<WorkersPair> {
  const keys = writeKeys(dir).file;
  const [w1, w1Log] = await startSeeded(cmd, dir, 'workers-1', keys, ['--workers', '1', '--metrics'], false);
  const [w2, w2Log] = await startSeeded(cmd, dir, 'workers-2', keys, ['--workers', '2', '--metrics'], false);
  const captured = await capture(await request(`${w1.url}${LIST}`, { token: tokenOf('bench') }));
  const responseFile = join(dir, 'workers-response.json');
  writeFileSync(responseFile, JSON.stringify(captured));
  const floor = (n: number) =>
    startPrinter(`bare${n}`, [bun, join(import.meta.dir, '../bare-workers.ts'), responseFile, String(n)]);
  const [bare1, bare2] = [await floor(1), await floor(2)];
  const before = { cpu: supervisorSeconds(w2), requests: await requests(w2) };
  return {
    servers: { w1, w2, bare1, bare2 },
    logs: { w1: w1Log, w2: w2Log },
    finish: async () => {
      const served = (await requests(w2)) - before.requests;
      const supervisor = supervisorSeconds(w2) - before.cpu;
      const [w4] = await startSeeded(cmd, dir, 'workers-4', keys, ['--workers', '4', '--metrics'], false);
      // A few hundred requests on new connections, so that every worker has served.
      for (let i = 0; i < 400; i++) {
        const res = await fetch(`${w4.url}${LIST}`, {
          headers: { Authorization: `Bearer ${tokenOf('bench')}`, Connection: 'close' },
        });
        await res.arrayBuffer();
      }
      const mib = (server: Running) => Math.round((rssOf(server.child.pid ?? 0) / 1024 / 1024) * 10) / 10;
      const rssMiB = { 1: mib(w1), 2: mib(w2), 4: mib(w4) };
      await w4.stop();
      return { rssMiB, supervisorUsPerRequest: (supervisor * 1e6) / Math.max(1, served), requests: served };
    },
  };
}

async function requests(server: Running): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return metricSum(text, /^petstore_http_requests_total\{/);
}

/** utime + stime of the process's main thread (the supervisor), in seconds. */
function supervisorSeconds(server: Running): number {
  const pid = server.child.pid ?? 0;
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
