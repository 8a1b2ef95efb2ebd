import { readFileSync } from 'node:fs';
import process from 'node:process';
import type { Logger } from '../log.ts';

/** The open-file limit the shipped systemd unit sets (`LimitNOFILE`): one per connection, with room. */
export const RECOMMENDED_OPEN_FILES = 131_072;
/** Below this soft limit the server warns at start: a few tens of thousands of idle clients would exhaust it. */
export const LOW_OPEN_FILES = 65_536;

export interface OpenFileLimit {
  soft: number;
  hard: number;
}

/**
 * The "Max open files" limits in a `/proc/<pid>/limits` text; `unlimited` counts as infinity.
 *
 * @example
 * parseOpenFiles('Max open files            1024                 524288               files') // { soft: 1024, hard: 524288 }
 */
export function parseOpenFiles(limits: string): OpenFileLimit | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(limits);
  if (!m) return undefined;
  const num = (v: string | undefined) => (v === 'unlimited' || v === undefined ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: num(m[1]), hard: num(m[2]) };
}

/**
 * Checks this process's open-file limit at start (Linux; elsewhere undefined). Bun, Node and Deno
 * all raise the soft limit to the hard one themselves when they start (there is no setrlimit in
 * their APIs, and none is needed), so what is left is to tell the operator: a warning when the
 * soft limit is still below the hard one, or below `LOW_OPEN_FILES`, naming the fix.
 *
 * @example
 * checkOpenFiles(log) // { soft: 131072, hard: 131072 }
 */
export function checkOpenFiles(log: Logger): OpenFileLimit | undefined {
  if (process.platform !== 'linux') return undefined;
  let limit: OpenFileLimit | undefined;
  try {
    limit = parseOpenFiles(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
  if (!limit) return undefined;
  if (limit.soft < limit.hard || limit.soft < LOW_OPEN_FILES) {
    log.warn('the open-file limit is low: each connection holds one, and new clients are refused when it is reached', {
      soft: limit.soft,
      hard: limit.hard,
      recommended: RECOMMENDED_OPEN_FILES,
      fix: `LimitNOFILE=${RECOMMENDED_OPEN_FILES} in the systemd unit, or ulimit -n ${RECOMMENDED_OPEN_FILES}`,
    });
  }
  return limit;
}
