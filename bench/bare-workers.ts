/**
 * The runtime's floor of `--workers N`: a bare `Bun.serve` answering every request with the bytes
 * the product returned for `GET /v1/pets?limit=20` (as bare-server.ts), served as the product
 * serves: with 1, on the main thread; with more, from that many workers on one port
 * (`reusePort`), the main thread serving nothing. What it costs a request more with 2 than with 1
 * is what two event loops cost the runtime, before anything of the product's.
 *
 * Usage: bun bench/bare-workers.ts RESPONSE.json N   (prints {"port":N} once every worker listens)
 */
import { readFileSync } from 'node:fs';
import { type CapturedResponse, parseCaptured } from './lib/captured.ts';

declare const self: Worker;

interface Start {
  readonly file: string;
  readonly port: number;
}

/** Serves the captured bytes on `port` (0: any), sharing it with the other workers when `reusePort`. */
function serve(file: string, port: number, reusePort: boolean): number {
  const captured: CapturedResponse = parseCaptured(readFileSync(file, 'utf8'));
  const body = Buffer.from(captured.body, 'utf8');
  const server = Bun.serve({
    port,
    hostname: '127.0.0.1',
    development: false,
    reusePort,
    fetch: () => new Response(body, { status: captured.status, headers: captured.headers }),
  });
  return server.port as number;
}

if (Bun.isMainThread) {
  const [file, count = '1'] = process.argv.slice(2);
  if (!file) throw new TypeError('usage: bun bench/bare-workers.ts RESPONSE.json N');
  const workers = Number(count);
  if (workers <= 1) {
    process.stdout.write(`${JSON.stringify({ port: serve(file, 0, false) })}\n`);
  } else {
    // The first worker takes a port, the others join it.
    const start = (port: number) =>
      new Promise<number>((resolve) => {
        const worker = new Worker(import.meta.url);
        worker.onmessage = (event: MessageEvent<number>) => resolve(event.data);
        worker.postMessage({ file, port } satisfies Start);
      });
    const port = await start(0);
    for (let i = 1; i < workers; i++) await start(port);
    process.stdout.write(`${JSON.stringify({ port })}\n`);
  }
} else {
  self.onmessage = (event: MessageEvent<Start>) => {
    self.postMessage(serve(event.data.file, event.data.port, true));
  };
}
