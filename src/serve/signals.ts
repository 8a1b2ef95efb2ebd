// The process's signal handlers, installed once at start: handleSignals() makes SIGHUP reload the
// keys, and SIGTERM and SIGINT drain the servers, close the store and exit.
import process from 'node:process';
import type { Logger } from '../log.ts';
import type { RunningServer } from './adapter.ts';

/** After the shutdown deadline, how long closing the remaining connections may take. */
const FORCE_STOP_MS = 1_000;

export interface SignalOptions {
  log: Logger;
  /** Reloads the keys on SIGHUP (the caller logs and counts the outcome). */
  reload(): void;
  /** The listening servers, drained on SIGTERM/SIGINT. */
  servers: readonly RunningServer[];
  /** How long the drain may take before open connections are closed. */
  shutdownSeconds: number;
  /** Called once when the drain starts, so `/readyz` reports the server as stopping. */
  onStopping(): void;
  /** Closes what the servers used (store, shared limiter) after the drain. */
  close(): Promise<void>;
}

/**
 * Installs the process's signal handlers. SIGHUP reloads the keys (it is always handled, since its
 * default action ends the process). SIGTERM and SIGINT stop accepting, wait for requests in
 * flight until the deadline, close the remaining connections, call `close` and exit.
 *
 * @example
 * handleSignals({ log, reload, servers: [server], shutdownSeconds: 10, onStopping, close })
 */
export function handleSignals({ log, reload, servers, shutdownSeconds, onStopping, close }: SignalOptions): void {
  process.on('SIGHUP', reload);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    onStopping();
    log.info('shutting down', { signal, deadlineSeconds: shutdownSeconds });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), shutdownSeconds * 1000);
    });
    const drained = Promise.all(servers.map((s) => s.stop(false))).then(() => true);
    if (!(await Promise.race([drained, deadline]))) {
      log.warn('shutdown deadline passed; closing open connections', { deadlineSeconds: shutdownSeconds });
      const forced = Promise.all(servers.map((s) => s.stop(true)));
      await Promise.race([forced, new Promise((resolve) => setTimeout(resolve, FORCE_STOP_MS))]);
    }
    clearTimeout(timer);
    await close();
    log.info('stopped');
    // Exit 0 unless a failure set the exit code (a worker that cannot be replaced sets 1).
    process.exit(process.exitCode ?? 0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
