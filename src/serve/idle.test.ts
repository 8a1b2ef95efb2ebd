import { describe, expect, test } from 'bun:test';
import { connect } from 'node:net';
import type { RuntimeAdapter } from './adapter.ts';

/**
 * Sends `request` on a fresh connection and keeps it open; resolves with the answer's status
 * line ('' if none came) and how long after the answer the server closed the connection.
 */
function exchange(port: number, request: string): Promise<{ status: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let answeredAt = 0;
    socket.on('data', (d: Buffer) => {
      received += d.toString();
      answeredAt ||= Date.now();
    });
    socket.on('error', () => {});
    socket.on('close', () =>
      resolve({ status: received.split('\r\n')[0] ?? '', closedAfterMs: answeredAt ? Date.now() - answeredAt : -1 }),
    );
    socket.write(request);
  });
}

const IDLE_SECONDS = 1;

/** A server with a 1 s idle timeout whose every answer takes `waitMs`. */
async function slowServer(adapter: RuntimeAdapter, waitMs: number) {
  return adapter.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeoutSeconds: IDLE_SECONDS,
    headerTimeoutSeconds: IDLE_SECONDS,
    fetch: async () => {
      await Bun.sleep(waitMs);
      return new Response('{}', { headers: { 'Content-Type': 'application/json' } });
    },
  });
}

// Bun keeps time in ticks of about 4 s: its idle timeout of 1 s fires 1 to 5 s after the last byte.
describe.each([
  ['bun', 5_500, () => import('./bun.ts')],
  ['node', 2_000, () => import('./node.ts')],
] as const)('%s adapter: the idle timeout and a request waiting for the server', (_, waitMs, load) => {
  test('a GET waiting longer than the idle timeout is answered; the idle connection is closed after', async () => {
    const { adapter } = await load();
    const server = await slowServer(adapter, waitMs);
    try {
      const { status, closedAfterMs } = await exchange(server.port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(status).toBe('HTTP/1.1 200 OK');
      // Kept alive after the answer, then closed for idleness: the timer runs again.
      expect(closedAfterMs).toBeGreaterThanOrEqual(0);
    } finally {
      await server.stop(true);
    }
  }, 20_000);
});
