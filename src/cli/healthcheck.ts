/**
 * `petstore healthcheck`: exit 0 when the local server answers /healthz with 200, else 1.
 * Without flags it asks where the server would listen with the same environment (`PORT`, and
 * `HOST` unless that is a wildcard), so a container's HEALTHCHECK needs no arguments.
 */
import { OPTIONS } from '../config.ts';
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
        ...OPTIONS.port,
        help: 'the port the server listens on',
        parse: checked('a port number', wholeNumber(0, 65535)),
      },
      host: {
        ...OPTIONS.host,
        help: 'the address to ask; a wildcard address asks 127.0.0.1',
        shownDefault: '127.0.0.1',
      },
      help: HELP,
    },
  },
  (o) => healthcheck(WILDCARD_HOSTS.has(o.host) ? '127.0.0.1' : o.host, o.port),
);

/** 0 when the server at `host`:`port` answers /healthz with 200, else 1. */
async function healthcheck(host: string, port: number): Promise<number> {
  try {
    const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`, {
      signal: AbortSignal.timeout(HEALTHCHECK_TIMEOUT_MS),
    });
    return res.status === 200 ? 0 : 1;
  } catch {
    return 1;
  }
}
