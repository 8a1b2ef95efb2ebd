import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * One HTTP/1.1 connection written by hand, so a test controls what `fetch` hides: that two
 * requests share a socket, and a body sent in pieces with pauses between them.
 *
 * @example
 * const conn = await RawConnection.open(port)
 * conn.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
 * (await conn.response()).status // 200
 */
export class RawConnection {
  readonly #socket: Socket;
  #buffer = '';
  #wake: (() => void) | undefined;
  /** Resolves when the server (or anyone) closes the socket. */
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      this.#wake?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => this.#wake?.());
    socket.on('error', () => {});
  }

  /** Connects to 127.0.0.1:`port`; rejects with the socket error (e.g. ECONNREFUSED). */
  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  write(text: string): void {
    this.#socket.write(text);
  }

  /** A GET on this connection, answered. */
  async get(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
    const lines = Object.entries({ Host: 'petstore', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    this.write(`GET ${path} HTTP/1.1\r\n${lines.join('')}\r\n`);
    return this.response();
  }

  /** The next whole response on the connection (Content-Length or chunked). */
  async response(timeoutMs = 5_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.#parse();
      if (parsed) return parsed;
      if (this.#socket.destroyed) throw new Error(`connection closed; received ${JSON.stringify(this.#buffer)}`);
      if (Date.now() > deadline)
        throw new Error(`no response in ${timeoutMs} ms; received ${JSON.stringify(this.#buffer)}`);
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  close(): void {
    this.#socket.destroy();
  }

  #parse(): RawResponse | undefined {
    const end = this.#buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine = '', ...headerLines] = this.#buffer.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = this.#buffer.slice(end + 4);
    let body: string;
    let used: number;
    if (headers['transfer-encoding'] === 'chunked') {
      body = '';
      let at = 0;
      for (;;) {
        const eol = rest.indexOf('\r\n', at);
        if (eol < 0) return undefined;
        const size = Number.parseInt(rest.slice(at, eol), 16);
        if (rest.length < eol + 2 + size + 2) return undefined;
        body += rest.slice(eol + 2, eol + 2 + size);
        at = eol + 2 + size + 2;
        if (size === 0) break;
      }
      used = at;
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < length) return undefined;
      body = rest.slice(0, length);
      used = length;
    }
    this.#buffer = rest.slice(used);
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}
