import { request } from 'node:http';
import { connect } from 'node:net';

export interface Answer {
  readonly status: number;
  /** Header names in lower case, as sent (no decoding, no joining by the client). */
  readonly headers: Record<string, string>;
  /** The body bytes as sent: still compressed when the server compressed them. */
  readonly body: Buffer;
}

/**
 * One request through `node:http`, which (unlike `fetch`) neither adds `Accept-Encoding` nor
 * decodes the body, and shows a HEAD answer's `Content-Length` as sent.
 *
 * @example
 * const res = await send(port, 'HEAD', '/healthz')
 */
export function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = String(v);
        resolve({ status: res.statusCode ?? 0, headers: flat, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface Upload {
  /** Everything the server wrote back, as text. */
  readonly received: string;
  /** The socket error the client saw, if any (EPIPE, ECONNRESET: the server hung up). */
  readonly error: string | undefined;
  /** Body bytes the client got written before it stopped. */
  readonly sent: number;
}

/**
 * A client that sends the whole body of `bytes` (declared with `Content-Length`, or chunked)
 * whatever the server answers meanwhile, as a plain HTTP/1.1 client does, then waits for the
 * answer. What the server wrote is collected as it arrives, so a response followed by a reset
 * still shows; a response lost to the reset does not.
 */
export function upload(
  port: number,
  head: string,
  bytes: number,
  { chunked = false, waitMs = 5_000 } = {},
): Promise<Upload> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let error: string | undefined;
    let sent = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ received, error, sent });
    };
    // Done once the body is sent and a whole answer is in (a Content-Length body after the head).
    const check = () => {
      const end = received.indexOf('\r\n\r\n');
      const length = /content-length: *(\d+)/i.exec(received)?.[1];
      if (end >= 0 && length !== undefined && received.length >= end + 4 + Number(length) && sent >= bytes) finish();
    };
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      check();
    });
    socket.on('error', (e) => {
      error = String(e);
    });
    socket.on('close', finish);
    socket.on('connect', async () => {
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`;
      socket.write(`${head}${framing}\r\n\r\n`);
      const piece = Buffer.alloc(64 * 1024, 0x20);
      while (sent < bytes && !socket.destroyed) {
        const size = Math.min(piece.length, bytes - sent);
        const part = piece.subarray(0, size);
        const wire = chunked
          ? Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), part, Buffer.from('\r\n')])
          : part;
        sent += size;
        if (socket.write(wire)) continue;
        // A server that stopped reading leaves the client stuck: give up sending after a while.
        const drained = await new Promise<boolean>((r) => {
          socket.once('drain', () => r(true));
          setTimeout(() => r(false), waitMs);
        });
        if (!drained) break;
      }
      if (chunked && !socket.destroyed) socket.write('0\r\n\r\n');
      check();
      setTimeout(finish, waitMs);
    });
  });
}
