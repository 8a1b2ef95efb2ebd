// A reverse proxy that breaks the server's responses in one chosen way, for
// `make contract-selftest`: the contract run through it must fail, which proves the suite can.
// Plain Node (not Bun) because Bun's server drops the body of a GET, and Dredd sends some GETs
// with a body on purpose (the 413 and 415 transactions).
//
//   node contract/mutating-proxy.mjs --upstream http://127.0.0.1:8080 --mutation drop-id
//
// prints `listening http://127.0.0.1:PORT` once it accepts connections.

import { createServer, request } from 'node:http';
import { parseArgs } from 'node:util';

const isPet = (v) => v !== null && typeof v === 'object' && 'name' in v && 'categoryId' in v;
/** Applies `fn` to the body's pets, whether the body is one pet or a page of them. */
const eachPet = (body, fn) => (Array.isArray(body) ? body : [body]).filter(isPet).forEach(fn);

/** Each mutation takes `{ status, headers, body }` (body parsed when JSON) and changes it in place. */
export const MUTATIONS = {
  /** Passes everything through: the control run, which must pass. */
  none: () => {},
  /** createPet answers 200 instead of the documented 201. */
  'created-as-200': (res) => {
    if (res.status === 201) res.status = 200;
  },
  /** Pets lose their required `id`. */
  'drop-id': (res) =>
    eachPet(res.body, (pet) => {
      delete pet.id;
    }),
  /** Pets get a `status` outside the PetStatus enum. */
  'status-off-enum': (res) =>
    eachPet(res.body, (pet) => {
      pet.status = 'lost';
    }),
  /** Error bodies are labelled text/plain (Hono's default for a bare error). */
  'error-as-text': (res) => {
    if (res.status >= 400) res.headers['content-type'] = 'text/plain; charset=UTF-8';
  },
  /** Every response loses `X-RateLimit-Remaining`. */
  'drop-ratelimit-remaining': (res) => {
    delete res.headers['x-ratelimit-remaining'];
  },
  /** createPet's 201 loses `Location`. */
  'drop-location': (res) => {
    delete res.headers.location;
  },
  /** getPet's `Sunset` moves a year earlier than the documented constant. */
  'sunset-moved': (res) => {
    if (res.headers.sunset) res.headers.sunset = 'Wed, 05 Dec 2029 00:00:00 GMT';
  },
  /** 429s lose `Retry-After`. */
  'drop-retry-after': (res) => {
    if (res.status === 429) delete res.headers['retry-after'];
  },
};

/**
 * Starts the proxy; resolves with its URL and a `close()`.
 *
 * @example
 * const proxy = await startMutatingProxy({ upstream: 'http://127.0.0.1:8080', mutation: 'drop-id' })
 */
export function startMutatingProxy({ upstream, mutation, port = 0 }) {
  const mutate = MUTATIONS[mutation];
  if (!mutate) throw new Error(`unknown mutation "${mutation}"; one of ${Object.keys(MUTATIONS).join(', ')}`);
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    // Uncompressed answers only: the mutations read and rewrite the JSON body.
    const headers = { ...req.headers, 'accept-encoding': 'identity' };
    const forward = request(
      { hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (up) => {
        const chunks = [];
        up.on('data', (c) => chunks.push(c));
        up.on('end', () => {
          const raw = Buffer.concat(chunks);
          const headers = { ...up.headers };
          const json = /^application\/json\b/.test(headers['content-type'] ?? '');
          const out = { status: up.statusCode ?? 502, headers, body: json && raw.length ? JSON.parse(raw) : raw };
          mutate(out);
          const body = Buffer.isBuffer(out.body) ? out.body : Buffer.from(JSON.stringify(out.body));
          delete out.headers['transfer-encoding'];
          out.headers['content-length'] = String(body.length);
          res.writeHead(out.status, out.headers);
          res.end(body);
        });
      },
    );
    forward.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    req.pipe(forward);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address();
      resolve({ url: `http://127.0.0.1:${bound}`, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { upstream: { type: 'string' }, mutation: { type: 'string' } } });
  if (!values.upstream || !values.mutation) {
    process.stderr.write(`usage: mutating-proxy.mjs --upstream URL --mutation ${Object.keys(MUTATIONS).join('|')}\n`);
    process.exit(2);
  }
  const proxy = await startMutatingProxy({ upstream: values.upstream, mutation: values.mutation });
  process.stdout.write(`listening ${proxy.url}\n`);
}
