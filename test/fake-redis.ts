/**
 * A hostile Redis on loopback: it speaks enough RESP for ioredis to connect (CLIENT, INFO, PING,
 * SELECT, QUIT) and answers every script call (EVALSHA, EVAL) with `reply`, a bulk string, as a
 * broken or malicious server might. It counts the script calls it answered.
 */
import { createServer, type Socket } from 'node:net';

export interface FakeRedis {
  readonly url: string;
  /** How many EVALSHA or EVAL calls it answered. */
  readonly scriptCalls: number;
  close(): Promise<void>;
}

const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
const INFO = bulk('# Server\r\nredis_version:7.2.0\r\n# Persistence\r\nloading:0\r\n');

/** The commands of RESP arrays of bulk strings at the start of `buffer`, and what is left of it. */
function commands(buffer: string): { names: string[]; rest: string } {
  const names: string[] = [];
  let at = 0;
  for (;;) {
    const head = /^\*(\d+)\r\n/.exec(buffer.slice(at));
    if (!head) break;
    let cursor = at + head[0].length;
    const parts: string[] = [];
    for (let i = 0; i < Number(head[1]); i++) {
      const len = /^\$(\d+)\r\n/.exec(buffer.slice(cursor));
      if (!len) return { names, rest: buffer.slice(at) };
      const start = cursor + len[0].length;
      if (buffer.length < start + Number(len[1]) + 2) return { names, rest: buffer.slice(at) };
      parts.push(buffer.slice(start, start + Number(len[1])));
      cursor = start + Number(len[1]) + 2;
    }
    names.push((parts[0] ?? '').toUpperCase());
    at = cursor;
  }
  return { names, rest: buffer.slice(at) };
}

/** Starts the server; `reply` is what every script call gets. */
export async function startFakeRedis(reply: string): Promise<FakeRedis> {
  const answer = bulk(reply);
  let scriptCalls = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      const { names, rest } = commands(pending + chunk);
      pending = rest;
      for (const name of names) {
        if (name === 'EVALSHA' || name === 'EVAL') {
          scriptCalls++;
          socket.write(answer);
        } else if (name === 'INFO') socket.write(INFO);
        else if (name === 'PING') socket.write('+PONG\r\n');
        else socket.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    get scriptCalls() {
      return scriptCalls;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
