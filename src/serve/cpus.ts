// The CPUs this process may use, from its affinity mask and its cgroup's CPU quota:
// availableCpus() is how many workers `--workers auto` starts; cgroupQuota() reads the quota.
import { readFileSync } from 'node:fs';
import os from 'node:os';

/** Reads a file's text, or undefined when it cannot be read. */
export type ReadText = (path: string) => string | undefined;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * Returns how many CPUs this process may use, at least 1: those its affinity mask allows
 * (`os.availableParallelism()` reads the mask under Bun, Deno and Node), or its cgroup's CPU quota
 * when that is lower, as in a container given fewer CPUs than the host has.
 *
 * @example
 * availableCpus() // 2 in a container run with --cpus 2
 */
export function availableCpus(read: ReadText = readText, affinity: number = os.availableParallelism()): number {
  const quota = cgroupQuota(read);
  return Math.max(1, Math.min(affinity, quota ?? Number.POSITIVE_INFINITY));
}

/**
 * Returns the lowest CPU quota of the process's cgroup and the cgroups above it, rounded up to
 * whole CPUs (a fractional quota gets one more worker, which is not always busy); undefined when
 * none is set. Reads cgroup v2's `cpu.max` (`max 100000`, or `150000 100000`) and v1's
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us`.
 */
export function cgroupQuota(read: ReadText = readText): number | undefined {
  const membership = read('/proc/self/cgroup') ?? '';
  const v2 = /^0::(.*)$/m.exec(membership)?.[1]?.trim();
  let lowest: number | undefined;
  const take = (cpus: number | undefined) => {
    if (cpus !== undefined && cpus > 0) lowest = lowest === undefined ? cpus : Math.min(lowest, cpus);
  };
  if (v2 !== undefined) {
    // Inside a container the cgroup's own directory is the root of /sys/fs/cgroup.
    const parts = v2.split('/').filter(Boolean);
    for (let depth = parts.length; depth >= 0; depth--) {
      const dir = ['/sys/fs/cgroup', ...parts.slice(0, depth)].join('/');
      take(quotaOf(read(`${dir}/cpu.max`)));
    }
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  if (quota > 0 && period > 0) take(Math.ceil(quota / period));
  return lowest;
}

/** Returns the whole CPUs of a `cpu.max` text; undefined for `max` or an unreadable file. */
function quotaOf(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').trim().split(/\s+/);
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? Math.ceil(q / p) : undefined;
}
