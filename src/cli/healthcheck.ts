// `petstore healthcheck`: exit 0 when the local server answers /healthz with 200, else 1.
// Without flags it asks where the server would listen with the same environment (`PORT`, and
// `HOST` unless that is a wildcard), so a container's HEALTHCHECK needs no arguments.
import process from 'node:process';
import { httpOrigin } from '../core/http-origin.ts';
import { LISTEN_OPTIONS } from './listen.ts';
import { HELP, subcommand } from './options.ts';
import { checked, wholeNumber } from './parsers.ts';

const HEALTHCHECK_TIMEOUT_MS = 3000;

/** Bind addresses that mean "every interface": the check then asks the loopback one. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]']);

export const HEALTHCHECK = subcommand(
  {
    name: 'healthcheck',
    summary: `Exits 0 when the local server answers GET /healthz with 200 within ${HEALTHCHECK_TIMEOUT_MS / 1000} s, else 1.`,
    options: {
      port: {
        ...LISTEN_OPTIONS.port,
        help: 'the port the server listens on',
        parse: checked('a port number', wholeNumber(0, 65535)),
      },
      host: {
        ...LISTEN_OPTIONS.host,
        help: 'the address to ask; a wildcard address asks 127.0.0.1',
        shownDefault: '127.0.0.1',
      },
      help: HELP,
    },
  },
  (o) => healthcheck(WILDCARD_HOSTS.has(o.host) ? '127.0.0.1' : o.host, o.port),
);

/**
 * Resolves to 0, silently, when the server at `host`:`port` answers /healthz with 200. Else to 1,
 * with one line on stderr that a container's health log keeps: refused, no answer in time, or the
 * status and the body's message.
 */
async function healthcheck(host: string, port: number): Promise<number> {
  const url = `${httpOrigin(host, port)}/healthz`;
  const unhealthy = (reason: string) => {
    process.stderr.write(`petstore healthcheck: ${url}: ${reason}\n`);
    return 1;
  };
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(HEALTHCHECK_TIMEOUT_MS) });
  } catch (err) {
    const { name, message, code, cause } = err as Error & {
      code?: string;
      cause?: { code?: string; message?: string };
    };
    if (name === 'TimeoutError') return unhealthy(`no answer within ${HEALTHCHECK_TIMEOUT_MS / 1000} s`);
    // Bun says ECONNREFUSED in the error, Node in its cause, Deno "Connection refused" in its
    // cause's message.
    if (/refused/i.test(`${code} ${message} ${cause?.code} ${cause?.message}`)) {
      return unhealthy('connection refused: is the server running, on this port and host?');
    }
    return unhealthy(message);
  }
  if (res.status === 200) return 0;
  const body: unknown = await res.json().catch(() => undefined);
  const said = body && typeof body === 'object' && 'message' in body ? `: ${String(body.message)}` : '';
  return unhealthy(`answered ${res.status}${said}`);
}
