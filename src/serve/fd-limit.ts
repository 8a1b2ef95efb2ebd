// The open-file limit, checked at start: openFilesNeeded() computes what the configured server
// needs, and checkOpenFiles() warns, naming the fix, when the process's limit is lower.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import type { Logger } from '../log.ts';

/**
 * The open-file limit the shipped systemd unit sets (`LimitNOFILE`): one per connection, with room.
 */
const RECOMMENDED_OPEN_FILES = 131_072;
/**
 * Descriptors a server needs besides its consumers' connections: its listeners, the store's
 * files or pool, Redis, the runtime's own, and room for clients without a key.
 */
const BASE_OPEN_FILES = 1_024;

/**
 * Returns the open files the configured server needs: `BASE_OPEN_FILES`, and a connection for each
 * request every consumer may have in flight (`--max-in-flight`).
 *
 * @example
 * openFilesNeeded(1, 128) // 1152
 */
export function openFilesNeeded(consumers: number, maxInFlight: number): number {
  return BASE_OPEN_FILES + consumers * maxInFlight;
}

export interface OpenFileLimit {
  soft: number;
  hard: number;
}

/**
 * Reads the "Max open files" limits in a `/proc/<pid>/limits` text; `unlimited` counts as infinity.
 *
 * @example
 * parseOpenFiles('Max open files            1024                 524288               files') // { soft: 1024, hard: 524288 }
 */
function parseOpenFiles(limits: string): OpenFileLimit | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(limits);
  if (!m) return undefined;
  const num = (v: string | undefined) => (v === 'unlimited' || v === undefined ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: num(m[1]), hard: num(m[2]) };
}

/**
 * Returns this process's open-file limit (Linux only; elsewhere undefined) and logs a warning with
 * the fix when the soft limit is below `needed`. Bun, Node and Deno already raise the soft limit
 * to the hard one at start, and have no setrlimit, so a warning is all that is left to do.
 *
 * @example
 * checkOpenFiles(log, openFilesNeeded(3, 128)) // { soft: 131072, hard: 131072 }
 */
export function checkOpenFiles(log: Logger, needed: number): OpenFileLimit | undefined {
  if (process.platform !== 'linux') return undefined;
  let limit: OpenFileLimit | undefined;
  try {
    limit = parseOpenFiles(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
  if (!limit) return undefined;
  if (limit.soft < needed) {
    log.warn(
      'the open-file limit is below what this server needs: each connection holds one, and new clients are refused when none is left',
      {
        soft: limit.soft,
        hard: limit.hard,
        needed,
        recommended: RECOMMENDED_OPEN_FILES,
        fix: `LimitNOFILE=${RECOMMENDED_OPEN_FILES} in the systemd unit, or ulimit -n ${RECOMMENDED_OPEN_FILES}`,
      },
    );
  }
  return limit;
}
