import { describe, expect, test } from 'bun:test';
import { availableCpus, cgroupQuota } from './cpus.ts';

/** A file system of `files`; every other path unreadable. */
const files = (entries: Record<string, string>) => (path: string) => entries[path];

describe('--workers auto: the CPUs this process may use', () => {
  test('a container given 2 CPUs on a 64-core host is 2 (cgroup v2 cpu.max)', () => {
    const read = files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '200000 100000\n' });
    expect(availableCpus(read, 64)).toBe(2);
  });

  test('a fraction of a CPU rounds up; the lowest quota of the cgroup and those above it wins', () => {
    const read = files({
      '/proc/self/cgroup': '0::/system.slice/petstore.service\n',
      '/sys/fs/cgroup/system.slice/petstore.service/cpu.max': '150000 100000',
      '/sys/fs/cgroup/system.slice/cpu.max': 'max 100000',
    });
    expect(cgroupQuota(read)).toBe(2);
    const lower = files({
      '/proc/self/cgroup': '0::/system.slice/petstore.service\n',
      '/sys/fs/cgroup/system.slice/petstore.service/cpu.max': '800000 100000',
      '/sys/fs/cgroup/system.slice/cpu.max': '300000 100000',
    });
    expect(availableCpus(lower, 16)).toBe(3);
  });

  test('no quota: the affinity mask alone; cgroup v1 quotas are read too', () => {
    expect(availableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': 'max 100000' }), 6)).toBe(6);
    const v1 = files({
      '/proc/self/cgroup': '1:cpu:/\n',
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '400000',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
    });
    expect(availableCpus(v1, 8)).toBe(4);
    expect(availableCpus(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1' }), 8)).toBe(8);
  });

  test('an affinity mask narrower than the quota wins, and never less than 1', () => {
    expect(availableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '400000 100000' }), 1)).toBe(
      1,
    );
    expect(availableCpus(files({}), 0)).toBe(1);
  });
});
