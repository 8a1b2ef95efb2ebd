/** Start-up time and memory under a flood of keyless clients: the two measurements that are not wrk runs. */
import { spawn } from 'node:child_process';
import { freePort, type Running } from './servers.ts';

/** Median of a list of numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Milliseconds from spawning the binary to its first 200 on an authenticated `GET /v1/pets`,
 * polling as fast as loopback refuses connections; the server is stopped after each run.
 */
export async function startupOnce(binary: string, args: string[], token: string): Promise<number> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/v1/pets?limit=20`;
  const headers = { Authorization: `Bearer ${token}` };
  const started = performance.now();
  const child = spawn(binary, ['--port', String(port), '--host', '127.0.0.1', '--log-format', 'json', ...args], {
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  let elapsed = Number.NaN;
  while (!dead && performance.now() - started < 10_000) {
    try {
      const res = await fetch(url, { headers, keepalive: false });
      await res.arrayBuffer();
      if (res.status === 200) {
        elapsed = performance.now() - started;
        break;
      }
    } catch {
      // Not listening yet.
    }
  }
  child.kill('SIGTERM');
  await exited;
  if (Number.isNaN(elapsed)) throw new Error(`no 200 from ${binary} within 10 s (port ${port})`);
  return elapsed;
}

/**
 * IPv6 documentation addresses (2001:db8::/32), each in a /56 of its own (the product counts
 * IPv6 clients by their /56): only a header value, never a destination.
 */
function address(i: number): string {
  return `2001:db8:${(i >>> 8).toString(16)}:${((i & 0xff) << 8).toString(16)}::1`;
}

/**
 * Sends `count` requests, each with a distinct bad token from a distinct client address
 * (X-Forwarded-For, believed from loopback), `concurrency` at a time; counts the statuses.
 */
export async function flood(server: Running, from: number, count: number, concurrency = 32) {
  const statuses: Record<number, number> = {};
  let next = from;
  const end = from + count;
  const url = `${server.url}/v1/pets?limit=20`;
  const worker = async () => {
    while (next < end) {
      const i = next++;
      const res = await fetch(url, {
        headers: { Authorization: `Bearer psk_bad-${i.toString(36)}`, 'X-Forwarded-For': address(i) },
      });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}
