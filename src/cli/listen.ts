// --port and --host, where the server listens: LISTEN_OPTIONS, rows of an option table. The
// server's options (src/config.ts) start with them and `petstore healthcheck` reads them too, so
// the healthcheck asks the port and address the server listens on.
import { int, text } from './parsers.ts';

/**
 * Where the server listens, and so where `petstore healthcheck` asks: same flags, environment
 * variables and defaults for both.
 */
export const LISTEN_OPTIONS = {
  port: { flag: '--port', env: 'PORT', arg: 'N', help: 'TCP port to listen on', fallback: 8080, parse: int(0, 65535) },
  host: { flag: '--host', env: 'HOST', arg: 'H', help: 'address to bind', fallback: '0.0.0.0', parse: text },
};
