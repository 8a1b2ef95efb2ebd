import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A fresh Standard Webhooks secret. */
export function newSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
}

/** One request the receiver got, verified against the secret. */
export interface Received {
  readonly id: string;
  /** Epoch ms it arrived. */
  readonly at: number;
  /** The status answered. */
  readonly status: number;
  /** The `traceparent` the sender sent with it, if any. */
  readonly traceparent: string | undefined;
  /** The verified body, or undefined when the signature did not verify. */
  readonly body: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
}

/** How the receiver answers a request: a status, or `'hang'` (never answers). */
export type Answer = number | 'hang';

export interface Receiver {
  readonly url: string;
  readonly port: number;
  /** Every request so far, in arrival order. */
  readonly got: Received[];
  /** The verified bodies answered 2xx, in arrival order. */
  delivered(): Received[];
  /** Resolves once `n` deliveries arrived; rejects after `ms`. */
  waitFor(n: number, ms: number): Promise<Received[]>;
  close(): Promise<void>;
}

/**
 * A real HTTP receiver on loopback that verifies each request with `standardwebhooks`, as an
 * integrator's would, and answers as `answer` says (200 unless told otherwise).
 *
 * @example
 * const r = await startReceiver(secret); … await r.waitFor(2, 10_000)
 */
export async function startReceiver(
  secret: string,
  answer: (request: number) => Answer = () => 200,
  port = 0,
): Promise<Receiver> {
  const verifier = new Webhook(secret);
  const got: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(req.headers[h] ?? '')]),
      );
      let body: Received['body'];
      try {
        body = verifier.verify(text, headers) as Received['body'];
      } catch {
        body = undefined;
      }
      const reply = answer(got.length);
      const traceparent = req.headers.traceparent as string | undefined;
      got.push({
        id: headers['webhook-id'] ?? '',
        at: Date.now(),
        status: reply === 'hang' ? 0 : reply,
        traceparent,
        body,
      });
      if (reply === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(body ? reply : 400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  const delivered = () => got.filter((r) => r.body && r.status >= 200 && r.status < 300);
  return {
    url: `http://127.0.0.1:${bound}/hooks`,
    port: bound,
    got,
    delivered,
    async waitFor(n, ms) {
      const until = Date.now() + ms;
      while (delivered().length < n) {
        if (Date.now() > until) {
          throw new Error(`receiver: ${delivered().length} of ${n} deliveries within ${ms} ms: ${JSON.stringify(got)}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return delivered();
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port free now (for a receiver that starts later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
