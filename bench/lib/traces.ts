/**
 * The bench's trace scenario: the list path on the product without an endpoint (ids in the log
 * lines, the `traceresponse` header and the request state all paid), on the base build and on
 * three products of the same build exporting to a live OTLP/HTTP receiver: one sampling 1% of
 * new traces (`parentbased_traceidratio`), one sampling none with the tail rules on (every
 * request recorded into the ring, none slow or failed, so none exported), one every request.
 * The receiver answers each export at once with an empty `ExportTraceServiceResponse`, as a
 * collector does, without decoding it.
 */
import type { Server } from 'bun';
import type { ServerName } from './report.ts';
import type { Running } from './servers.ts';
import { LIST, type Scenario, startSeeded, tokenOf } from './setup.ts';

export const TRACES_SCENARIO: Scenario = {
  id: 'traces',
  label: `GET ${LIST}: no trace endpoint, 1% exported, ratio 0 with the tail rules on, every request exported`,
  expect: 200,
  servers: ['petstore', 'base', 'traced1', 'tracedtail', 'tracedall'],
  data: 'traces',
  paired: ['petstore', 'traced1', 'tracedtail', 'tracedall'],
  // At 1% the span and export code runs some 300 times a second, and JavaScriptCore takes
  // minutes to settle the code it shares with every request: a short warm-up measures mostly
  // that (bench/README.md#what-tracing-costs), so the 1%-sampled product is warmed 45 s.
  warmup: { traced1: 45 },
  load: { method: 'GET', path: LIST, token: tokenOf('bench'), addresses: 0 },
};

/** What the receiver got over the whole scenario. */
export interface TracesFigures {
  readonly exports: number;
  readonly bytes: number;
  /** Spans each exporting product dropped (its /metrics), after the rounds. */
  readonly dropped: Partial<Record<ServerName, number>>;
  /** The same, by reason (`queue_full`, `ring_overwritten`, …). */
  readonly droppedBy: Partial<Record<ServerName, Record<string, number>>>;
}

export interface TracesFleet {
  readonly servers: Partial<Record<ServerName, Running>>;
  readonly logs: Partial<Record<ServerName, string>>;
  /** The receiver's figures and the products' drops, read while they run. */
  finish(): Promise<TracesFigures>;
  /** Stops the receiver (after the servers). */
  close(): void;
}

/** The three products (and the base build when given), each on its own seeded file. */
export async function startTracesFleet(
  dir: string,
  cmd: string[],
  keysFile: string,
  base: string | undefined,
): Promise<TracesFleet> {
  let exports = 0;
  let bytes = 0;
  const receiver: Server<undefined> = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      bytes += (await req.arrayBuffer()).byteLength;
      exports++;
      return new Response(new Uint8Array(0), { headers: { 'Content-Type': 'application/x-protobuf' } });
    },
  });
  // All four count on /metrics (the exporting ones' drops are read from it), so they differ only in tracing.
  const metrics = ['--metrics'];
  const endpoint = [...metrics, '--otel-endpoint', `http://127.0.0.1:${receiver.port}`];
  const [petstore, petstoreLog] = await startSeeded(cmd, dir, 'traces-none', keysFile, metrics);
  const [traced1, traced1Log] = await startSeeded(cmd, dir, 'traces-1pct', keysFile, [
    ...endpoint,
    ...['--otel-sampler', 'parentbased_traceidratio', '--otel-sampler-arg', '0.01'],
  ]);
  // The tail rules as shipped, spelled out: 5xx kept, and requests slower than 0.1 s (none here).
  const [tracedtail, tracedtailLog] = await startSeeded(cmd, dir, 'traces-tail', keysFile, [
    ...endpoint,
    ...['--otel-sampler', 'parentbased_traceidratio', '--otel-sampler-arg', '0'],
    ...['--otel-keep-slower-than', '0.1', '--otel-keep-errors', 'true'],
  ]);
  const [tracedall, tracedallLog] = await startSeeded(cmd, dir, 'traces-all', keysFile, endpoint);
  const servers: Partial<Record<ServerName, Running>> = { petstore, traced1, tracedtail, tracedall };
  const logs: Partial<Record<ServerName, string>> = {
    petstore: petstoreLog,
    traced1: traced1Log,
    tracedtail: tracedtailLog,
    tracedall: tracedallLog,
  };
  if (base) {
    const [running, baseLog] = await startSeeded([base], dir, 'traces-base', keysFile, metrics);
    servers.base = running;
    logs.base = baseLog;
  }
  return {
    servers,
    logs,
    finish: async () => {
      const dropped: TracesFigures['dropped'] = {};
      const droppedBy: TracesFigures['droppedBy'] = {};
      for (const name of ['traced1', 'tracedtail', 'tracedall'] as const) {
        const text = await (await fetch(`${servers[name]?.url}/metrics`)).text();
        const by: Record<string, number> = {};
        for (const line of text.split('\n').filter((l) => l.startsWith('petstore_trace_spans_dropped_total'))) {
          const reason = /reason="([^"]*)"/.exec(line)?.[1] ?? '';
          by[reason] = (by[reason] ?? 0) + Number(line.split(' ').pop());
        }
        droppedBy[name] = by;
        dropped[name] = Object.values(by).reduce((sum, n) => sum + n, 0);
      }
      return { exports, bytes, dropped, droppedBy };
    },
    close: () => void receiver.stop(true),
  };
}
