// The supervisor of `--workers N`. The main thread serves no API request. It starts N workers
// (src/serve/worker.ts) that share the port (`SO_REUSEPORT`), and it owns what runs once per host:
// the limiter, the keys, webhook delivery, the admin API, metrics, the log and the signals. A
// worker that exits when not asked to is logged, counted and replaced.
import { Buffer } from 'node:buffer';
import type { Config } from '../config.ts';
import {
  clearWorker,
  type DecidedMessage,
  grantMemory,
  HostLimiter,
  type HostSlotsMemory,
  hostSlotsMemory,
  type LimiterStatus,
  type PackedAnswers,
  type PackedAsks,
  packAnswers,
  type RateLimiter,
  unpackAsks,
} from '../gateway/gateway.ts';
import type { KeyRecord } from '../keys/records.ts';
import type { KeyTable } from '../keys/table.ts';
import { batched, type Logger } from '../log.ts';
import type { Metrics } from '../metrics/registry.ts';
import { POOL_SIZE } from '../store/postgres/postgres-url.ts';
import { COMPILED } from '../version.ts';
import type { RunningServer } from './adapter.ts';

/** Indexes into the workers' shared state (`WorkerMemory.state`), one 32-bit integer each. */
export const WORKER_STATE = {
  /** Not 0 once the host is stopping: `/readyz` fails on every worker. */
  stopping: 0,
  /** Workers listening now (counted by the supervisor). */
  listening: 1,
  /** Moved by every worker's store writes (src/store/wrappers/shared-change-count.ts). */
  storeChanges: 2,
  /** Bumped as a worker's SQLite write transaction ends: a worker waiting for the lock retries. */
  lockReleases: 3,
} as const;
/** The shared state's length: one integer for each index of `WORKER_STATE`. */
const SHARED_LENGTH = Object.keys(WORKER_STATE).length;

/** The memory the supervisor makes once and every worker is handed. */
export interface WorkerMemory {
  readonly state: SharedArrayBuffer;
  readonly slots: HostSlotsMemory;
}

/**
 * Returns the worker module's location. In a compiled binary it is the entry point's path
 * relative to src/ (scripts/lib/build-info.sh, `compile_entries`); from source, it is beside
 * this file.
 */
function workerEntry(): string {
  return COMPILED ? './serve/worker.ts' : new URL('./worker.ts', import.meta.url).href;
}

/** Allocates the shared memory of `count` workers, zeroed. */
export function workerMemory(count: number): WorkerMemory {
  return {
    state: new SharedArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT),
    slots: hostSlotsMemory(count),
  };
}

/** What a worker is started with. */
export interface WorkerStart {
  readonly type: 'start';
  readonly index: number;
  readonly workers: number;
  /** Whether it takes the place of one that exited. */
  readonly replacement: boolean;
  /** The host's status now, if the supervisor reports one (then again every `STATUS_EVERY_MS`). */
  readonly hostStatus?: HostStatus;
  readonly config: Config;
  /** The port the supervisor checked is free. */
  readonly port: number;
  readonly keys: readonly KeyRecord[];
  readonly memory: WorkerMemory;
  /**
   * Its grant memory (src/gateway/limiter/host-limiter.ts): a new one for each worker started, so a
   * replacement never spends a dead one's units.
   */
  readonly grants: SharedArrayBuffer;
}

/** What the supervisor sends a worker. */
export type ToWorker =
  | WorkerStart
  /** The limiter's answers to one batch of asks (`decide`). */
  | ({ readonly type: 'decided' } & PackedAnswers)
  | { readonly type: 'keys'; readonly keys: readonly KeyRecord[] }
  | { readonly type: 'stop'; readonly deadlineMs: number }
  /** The part of `/readyz` only the supervisor knows: the limiter's state, the keys' freshness. */
  | { readonly type: 'hostStatus'; readonly hostStatus: HostStatus }
  /** Asks for the worker's metric series, to sum them (`Metrics.sumWith`). */
  | { readonly type: 'scrape'; readonly id: number }
  /** The host's `/metrics`, which the worker asked for. */
  | { readonly type: 'rendered'; readonly id: number; readonly text: string };

/** What a worker sends the supervisor. */
type FromWorker =
  /** The worker's asks to the limiter from one event-loop turn, in one message. */
  | ({ readonly type: 'decide' } & PackedAsks)
  /** Its module is loaded and it handles messages, so it can be sent its start message now. */
  | { readonly type: 'loaded' }
  | { readonly type: 'listening' }
  | { readonly type: 'failed'; readonly error: string }
  /** The worker's log lines from one batch, joined by newlines. */
  | { readonly type: 'log'; readonly text: string }
  | { readonly type: 'wake' }
  | { readonly type: 'stopped' }
  | { readonly type: 'scraped'; readonly id: number; readonly series: MetricJson }
  /** The worker serves `/metrics` (`--metrics` on the API's port) and asks for the host's text. */
  | { readonly type: 'render'; readonly id: number; readonly openMetrics: boolean };

/**
 * The host's part of `/readyz`: the state of the limiter and the keys, which only the process that
 * holds them knows. `startServer()` (src/serve/start.ts) builds it from the Redis limiter's
 * `status()` and `LiveKeys.problem()`. Without workers the app reads it at each `/readyz`; with
 * workers, the supervisor sends it to every worker every `STATUS_EVERY_MS`.
 */
export interface HostStatus {
  /** Where the rate limiter decides now (with `--redis`). */
  readonly limiterStatus?: LimiterStatus;
  /** Why the keys in force may be out of date (with `--keys store`), or undefined. */
  readonly keysProblem?: string;
}

/** How often the workers are sent the host's status: a worker's `/readyz` is at most this stale. */
const STATUS_EVERY_MS = 250;

/** One registry's series as prom-client's JSON. */
type MetricJson = Awaited<ReturnType<Metrics['json']>>;

/** How long a scrape waits for a worker's series; a stopping or stuck worker is left out. */
const SCRAPE_WAIT_MS = 1_000;

/**
 * Returns the key records a worker received, with each hash made a `Buffer` again: a message
 * delivers a `Buffer` as a plain `Uint8Array`, and the key table needs its hex.
 */
export function keyRecords(records: readonly KeyRecord[]): KeyRecord[] {
  return records.map((r) => ({ ...r, hash: Buffer.from(r.hash.buffer, r.hash.byteOffset, r.hash.byteLength) }));
}

/**
 * Returns a worker's share of an instance's PostgreSQL pool (`POOL_SIZE`): at least 2, so one
 * slow query never holds a worker's only connection.
 */
export function poolShare(workers: number): number {
  return Math.max(2, Math.ceil(POOL_SIZE / workers));
}

export interface WorkerPoolOptions {
  readonly count: number;
  readonly config: Config;
  readonly port: number;
  /** The keys in force now, which a starting worker is sent. */
  readonly keyTable: () => KeyTable;
  /** The host's limiter, which makes every worker's decisions. */
  readonly limiter: RateLimiter;
  readonly log: Logger;
  /** Writes a worker's log lines to the process's single log stream. */
  readonly lines: (line: string) => void;
  /** Called when a worker records webhook events, so the delivery loop checks now. */
  readonly wake: () => void;
  /** Made by `workerMemory` before the store opens, as the supervisor's store writes to it too. */
  readonly memory: WorkerMemory;
  /** With `--redis` or `--keys store`: the limiter's state and the keys' freshness (`/readyz`). */
  readonly hostStatus?: () => HostStatus;
  /** The supervisor's metrics (`--metrics`, `--metrics-port`): summed with the workers' series. */
  readonly metrics?: Metrics;
  /** Called when a worker cannot be replaced: the process stops rather than serve with fewer. */
  readonly lost: (reason: string) => void;
}

interface Running {
  readonly worker: Worker;
  listening: boolean;
  stopped: Promise<void>;
}

/**
 * The workers, seen by the signal handlers as one `RunningServer`: `stop()` drains them all.
 *
 * @example
 * const pool = await WorkerPool.start({
 *   count: 4, config, port, memory, keyTable, limiter, log, lines, wake, lost,
 * })
 */
export class WorkerPool implements RunningServer {
  readonly port: number;
  readonly memory: WorkerMemory;
  readonly #options: WorkerPoolOptions;
  readonly #hostLimiter: HostLimiter;
  readonly #state: Int32Array;
  readonly #running: (Running | undefined)[];
  readonly #scrapes = new Map<number, (series: MetricJson) => void>();
  #lastScrape = 0;
  #stopping = false;

  private constructor(options: WorkerPoolOptions) {
    this.#options = options;
    this.port = options.port;
    this.memory = options.memory;
    this.#state = new Int32Array(this.memory.state);
    this.#hostLimiter = new HostLimiter(options.limiter, { workers: options.count });
    this.#running = Array.from({ length: options.count }, () => undefined);
    options.metrics?.sumWith(() => this.#scrape());
    const { hostStatus } = options;
    if (hostStatus) {
      const timer = setInterval(
        () => this.#broadcast({ type: 'hostStatus', hostStatus: hostStatus() }),
        STATUS_EVERY_MS,
      );
      timer.unref?.();
    }
  }

  #broadcast(message: ToWorker): void {
    for (const running of this.#running) running?.worker.postMessage(message);
  }

  /** Starts every worker and resolves once all listen; if one fails, stops the rest and rejects. */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    try {
      await Promise.all(pool.#running.map((_, index) => pool.#spawn(index)));
    } catch (err) {
      await pool.stop(true);
      throw err;
    }
    return pool;
  }

  /** Workers listening now. */
  get listening(): number {
    return Atomics.load(this.#state, WORKER_STATE.listening);
  }

  /** Sends every worker the keys in force now. */
  keysChanged(table: KeyTable): void {
    this.#broadcast({ type: 'keys', keys: table.all() });
  }

  /**
   * Tells every worker to stop accepting and drain within the grace period; with `force`,
   * terminates them at once instead.
   */
  async stop(force = false): Promise<void> {
    this.#stopping = true;
    Atomics.store(this.#state, WORKER_STATE.stopping, 1);
    const running = this.#running.filter((r): r is Running => r !== undefined);
    if (force) {
      for (const r of running) r.worker.terminate();
    } else {
      const deadlineMs = this.#options.config.shutdownSeconds * 1_000;
      for (const r of running) r.worker.postMessage({ type: 'stop', deadlineMs } satisfies ToWorker);
    }
    await Promise.all(running.map((r) => r.stopped));
  }

  /** Renders the host's `/metrics`, for a worker that serves it. */
  async #render(openMetrics: boolean): Promise<string> {
    const { metrics } = this.#options;
    if (!metrics) return '';
    return openMetrics ? metrics.renderOpenMetrics() : metrics.render();
  }

  /**
   * Collects every listening worker's series, leaving out those that do not answer within
   * `SCRAPE_WAIT_MS`.
   */
  #scrape(): Promise<MetricJson[]> {
    const running = this.#running.filter((r): r is Running => r?.listening === true);
    return Promise.all(
      running.map(
        (r) =>
          new Promise<MetricJson>((resolve) => {
            const id = ++this.#lastScrape;
            const timer = setTimeout(() => {
              this.#scrapes.delete(id);
              resolve([]);
            }, SCRAPE_WAIT_MS);
            this.#scrapes.set(id, (series) => {
              clearTimeout(timer);
              this.#scrapes.delete(id);
              resolve(series);
            });
            r.worker.postMessage({ type: 'scrape', id } satisfies ToWorker);
          }),
      ),
    );
  }

  /** Starts worker `index`; resolves once it listens. */
  #spawn(index: number, replacement = false): Promise<void> {
    const { config, port, keyTable, log, lines, wake } = this.#options;
    const worker = new Worker(workerEntry());
    let listened: () => void = () => {};
    let failed: (err: Error) => void = () => {};
    const listening = new Promise<void>((resolve, reject) => {
      listened = resolve;
      failed = reject;
    });
    let exited: () => void = () => {};
    const running: Running = {
      worker,
      listening: false,
      stopped: new Promise<void>((resolve) => {
        exited = resolve;
      }),
    };
    this.#running[index] = running;
    const grants = grantMemory();
    const decide = this.#hostLimiter.forWorker(
      batched((answers: DecidedMessage[]) =>
        worker.postMessage({ type: 'decided', ...packAnswers(answers) } satisfies ToWorker),
      ),
      grants,
    );
    worker.onmessage = (event: MessageEvent<FromWorker>) => {
      const message = event.data;
      switch (message.type) {
        case 'loaded':
          // Wait for `loaded`: a message sent before the worker's module runs could be lost.
          return start();
        case 'decide':
          for (const ask of unpackAsks(message)) decide(ask);
          return;
        case 'log':
          return lines(message.text);
        case 'wake':
          return wake();
        case 'listening':
          running.listening = true;
          Atomics.add(this.#state, WORKER_STATE.listening, 1);
          return listened();
        case 'failed':
          failed(new Error(message.error));
          worker.terminate();
          return;
        case 'stopped':
          worker.terminate();
          return;
        case 'scraped':
          this.#scrapes.get(message.id)?.(message.series);
          return;
        case 'render':
          void this.#render(message.openMetrics).then((text) =>
            worker.postMessage({ type: 'rendered', id: message.id, text } satisfies ToWorker),
          );
          return;
      }
    };
    worker.addEventListener('error', (event) => {
      log.error('worker failed', { worker: index, error: (event as ErrorEvent).message });
    });
    worker.addEventListener('close', () => {
      if (running.listening) Atomics.sub(this.#state, WORKER_STATE.listening, 1);
      running.listening = false;
      exited();
      failed(new Error(`worker ${index} exited before it listened`));
      if (this.#running[index] === running) this.#running[index] = undefined;
      if (this.#stopping) return;
      // It exited without being asked: free its in-flight slots and start another in its place.
      clearWorker(this.memory.slots, index);
      this.#options.metrics?.workerReplaced();
      log.error('worker exited; starting another in its place', { worker: index });
      this.#spawn(index, true).catch((err: unknown) => {
        this.#options.lost(`worker ${index} could not be replaced: ${String(err)}`);
      });
    });
    const start = () =>
      worker.postMessage({
        type: 'start',
        index,
        workers: this.#running.length,
        replacement,
        ...(this.#options.hostStatus ? { hostStatus: this.#options.hostStatus() } : {}),
        config,
        port,
        keys: keyTable().all(),
        memory: this.memory,
        grants,
      } satisfies ToWorker);
    return listening;
  }
}
