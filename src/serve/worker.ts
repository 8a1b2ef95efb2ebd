// A worker's entry point (`--workers` above 1). It serves the API on the port it shares with the
// other workers, and leaves what runs once per host to the supervisor: the limiter
// (src/gateway/limiter/host-limiter.ts), the keys, webhook delivery, the admin API and the log
// stream (except a log file, which it writes itself: `fileWriter`). The host-wide values that
// every request reads are in shared memory: the in-flight slots, the store's change count, and
// whether the host is stopping.
import process from 'node:process';
import { setImmediate } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApp } from '../app.ts';
import { packAsks, RemoteLimiter, unpackAnswers } from '../gateway/gateway.ts';
import { KeyTable } from '../keys/table.ts';
import { batched, createLogger, fileWriter } from '../log.ts';
import { adapter } from './bun.ts';
import { metricsOf, notifierOf, openServerStore } from './resources.ts';
import { appOptionsOf } from './start.ts';
import { keyRecords, type ToWorker, WORKER_STATE, type WorkerStart } from './supervisor.ts';

declare const self: Worker;

const post = (message: unknown) => self.postMessage(message);

async function serve(start: WorkerStart): Promise<void> {
  const { config, index, port, memory } = start;
  // Log lines go straight to the log file if there is one (one whole write() per batch), else to
  // the supervisor.
  const file = fileWriter();
  const logLines = heldLines((text) => {
    if (!file?.(`${text}\n`)) post({ type: 'log', text });
  });
  const log = createLogger({
    level: config.logLevel,
    format: config.logFormat,
    write: logLines.write,
  });
  const state = new Int32Array(memory.state);
  let keyTable = new KeyTable(keyRecords(start.keys));
  let hostStatus = start.hostStatus;
  // The limiter's asks of one event-loop turn go out in one message, and the answers come
  // back in one. A busy consumer's requests are decided here, from the supervisor's grants.
  const limiter = new RemoteLimiter(
    batched((asks) => post({ type: 'decide', ...packAsks(asks) })),
    { grants: start.grants },
  );
  const metrics = await metricsOf(config, adapter);
  metrics?.consumers.load(keyTable.records());
  const rendered = new Map<number, (text: string) => void>();
  let lastRender = 0;
  // `/metrics` on this port shows the whole host's metrics, which the supervisor sums.
  metrics?.renderedBy(
    (openMetrics) =>
      new Promise<string>((resolve) => {
        const id = ++lastRender;
        rendered.set(id, resolve);
        post({ type: 'render', id, openMetrics });
      }),
  );
  const store = await openServerStore(config, log, metrics, { state, workers: start.workers });
  const app = createApp(
    appOptionsOf(config, adapter, {
      store,
      keyTable: () => keyTable,
      limiter,
      log,
      metrics,
      whyNotReady: () => whyNotReady(state, start.workers),
      hostStatus: () => hostStatus,
      hostSlots: { memory: memory.slots, worker: index },
      notify: notifierOf(store, log, () => post({ type: 'wake' })),
    }),
  );
  const server = await adapter.serve({
    fetch: app.fetch,
    port,
    hostname: config.host,
    headerTimeoutSeconds: config.headerTimeoutSeconds,
    idleTimeoutSeconds: config.idleTimeoutSeconds,
    reusePort: true,
  });
  self.onmessage = async (event: MessageEvent<ToWorker>) => {
    const message = event.data;
    if (message.type === 'decided') {
      for (const answer of unpackAnswers(message)) limiter.answer(answer);
      return;
    }
    if (message.type === 'keys') {
      keyTable = new KeyTable(keyRecords(message.keys));
      metrics?.consumers.load(keyTable.records());
      return;
    }
    if (message.type === 'hostStatus') {
      hostStatus = message.hostStatus;
      return;
    }
    if (message.type === 'scrape') {
      post({ type: 'scraped', id: message.id, series: metrics ? await metrics.json() : [] });
      return;
    }
    if (message.type === 'rendered') {
      rendered.get(message.id)?.(message.text);
      rendered.delete(message.id);
      return;
    }
    if (message.type === 'stop') {
      const drained = server.stop(false).then(() => true);
      const late = await Promise.race([drained, sleep(message.deadlineMs).then(() => false)]);
      if (!late) await Promise.race([server.stop(true), sleep(FORCE_STOP_MS)]);
      await store.close().catch(() => {});
      // Flush the drained requests' log lines before the supervisor terminates this worker.
      await new Promise((resolve) => setImmediate(resolve));
      logLines.flush();
      post({ type: 'stopped' });
    }
  };
  // Flush the start-up lines before telling the supervisor, which then logs `listening`.
  await new Promise((resolve) => setImmediate(resolve));
  logLines.flush();
  post({ type: 'listening' });
  crashForTests(start);
}

/**
 * Injects a fault for the supervisor's tests (scripts/e2e/workers.test.ts): with
 * `PETSTORE_TEST_WORKER_CRASH_MS` set, worker 0 (not its replacement) throws an uncaught error
 * that many milliseconds after it starts listening, as a bug would.
 */
function crashForTests({ index, replacement }: WorkerStart): void {
  const after = Number(process.env.PETSTORE_TEST_WORKER_CRASH_MS);
  if (index !== 0 || replacement || !(after > 0)) return;
  setTimeout(() => {
    throw new Error('worker 0 crashed (PETSTORE_TEST_WORKER_CRASH_MS)');
  }, after);
}

/**
 * How long a worker buffers its log lines before it writes them to the log file or sends them to
 * the supervisor, so there is one write or message per interval rather than per line.
 */
const LOG_EVERY_MS = 10;

/**
 * Buffers log lines and passes them to `send` as one joined string every `LOG_EVERY_MS` (a message
 * copies one string faster than many).
 */
function heldLines(send: (text: string) => void): { write(line: string): void; flush(): void } {
  let pending: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join('\n');
    pending = [];
    send(text);
  };
  return {
    write(line) {
      pending.push(line);
      timer ??= setTimeout(flush, LOG_EVERY_MS);
    },
    flush,
  };
}

/** After the drain's deadline, how long closing the remaining connections may take. */
const FORCE_STOP_MS = 1_000;

/** Returns why `/readyz` fails: the host is stopping, or not every worker listens. */
function whyNotReady(state: Int32Array, workers: number): string | undefined {
  if (Atomics.load(state, WORKER_STATE.stopping) !== 0) return 'The server is shutting down.';
  const listening = Atomics.load(state, WORKER_STATE.listening);
  return listening < workers ? `${listening} of ${workers} workers are listening.` : undefined;
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  if (event.data.type !== 'start') return;
  serve(event.data).catch((err: unknown) => {
    post({ type: 'failed', error: err instanceof Error ? err.message : String(err) });
  });
};
post({ type: 'loaded' });
