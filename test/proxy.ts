/**
 * A TCP proxy on loopback for tests: passes bytes both ways, and while `delay` is set holds each
 * chunk going one way (`replies`: from the server; `requests`: to it) that long, in order. `cut()`
 * drops every connection through it at once, without a word to either side: a network gone.
 */
import { createConnection, createServer, type Socket } from 'node:net';

export type ProxyDirection = 'requests' | 'replies';

export interface TcpProxy {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** Ms each chunk of `direction` is held from now on; 0 passes them on at once. */
  delay: number;
  /** Destroys every connection through it; new ones are still accepted. */
  cut(): void;
  close(): void;
}

/**
 * @example
 * const proxy = await tcpProxy({ host: '127.0.0.1', port: 6379 }, 'replies');
 * proxy.delay = 700; // Redis runs each command in time, its answers come 0.7 s late
 */
export async function tcpProxy(
  target: { host: string; port: number },
  direction: ProxyDirection,
  delayMs = 0,
): Promise<TcpProxy> {
  let delay = delayMs;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    const [from, to] = direction === 'replies' ? [upstream, client] : [client, upstream];
    // The other way passes at once.
    to.pipe(from);
    const queue: { at: number; chunk: Buffer }[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const drain = () => {
      timer = undefined;
      while (queue.length > 0 && (queue[0] as { at: number }).at <= Date.now()) {
        to.write((queue.shift() as { chunk: Buffer }).chunk);
      }
      if (queue.length > 0) timer = setTimeout(drain, (queue[0] as { at: number }).at - Date.now());
    };
    from.on('data', (chunk: Buffer) => {
      queue.push({ at: Math.max(Date.now() + delay, queue.at(-1)?.at ?? 0), chunk });
      timer ??= setTimeout(drain, 0);
    });
    const close = () => {
      clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  const port = await new Promise<number>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    port,
    get delay() {
      return delay;
    },
    set delay(ms: number) {
      delay = ms;
    },
    cut,
    close() {
      server.close();
      cut();
    },
  };
}
