import process from 'node:process';
import { keysCommand } from './cli/keys.ts';
import { ConfigError } from './config.ts';
import { KEY_NAME, KeysFileError } from './gateway/keys/file.ts';
import { newKeyEntry } from './gateway/keys/tokens.ts';
import { PLAN_NAMES, type PlanName } from './gateway/plans.ts';

const HEALTHCHECK_TIMEOUT_MS = 3000;

/** Reads `--flag value` pairs of a subcommand, refusing anything not in `allowed`. */
function flags(argv: readonly string[], allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i] as string;
    const value = argv[i + 1];
    if (!allowed.includes(name)) throw new ConfigError(`unknown option "${name}"; expected ${allowed.join(', ')}`);
    if (value === undefined) throw new ConfigError(`${name}: needs a value`);
    out.set(name, value);
  }
  return out;
}

/** `petstore keys new --name N --plan P`: prints the token once, and the entry for the keys file. */
function keysNew(argv: readonly string[]): number {
  const f = flags(argv, ['--name', '--plan']);
  const name = f.get('--name');
  const plan = f.get('--plan') ?? 'free';
  if (!name || !KEY_NAME.test(name)) {
    throw new ConfigError('--name: needs 1-64 letters, digits, ".", "_" or "-"');
  }
  if (!(PLAN_NAMES as readonly string[]).includes(plan))
    throw new ConfigError(`--plan: expected one of ${PLAN_NAMES.join(', ')}`);
  const { token, entry } = newKeyEntry(name, plan as PlanName);
  const withLimits = plan === 'enterprise' ? { ...entry, limits: { perMinute: 5000, perDay: 1000000 } } : entry;
  process.stdout.write(
    [
      `Token (shown once; give it to the client, store it nowhere else): ${token}`,
      `Keys file entry (add it to "keys"${plan === 'enterprise' ? '; set the limits you agreed' : ''}):`,
      JSON.stringify(withLimits),
      '',
    ].join('\n'),
  );
  return 0;
}

/** Bind addresses that mean "every interface": the check then asks the loopback one. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]']);

/**
 * `petstore healthcheck`: exit 0 when the local server answers /healthz with 200, else 1.
 * Without flags it asks where the server would listen with the same environment (`PORT`, and
 * `HOST` unless that is a wildcard), so a container's HEALTHCHECK needs no arguments.
 */
async function healthcheck(argv: readonly string[]): Promise<number> {
  const f = flags(argv, ['--port', '--host']);
  const port = f.get('--port') ?? process.env.PORT ?? '8080';
  if (!/^[0-9]{1,5}$/.test(port) || Number(port) > 65535) {
    throw new ConfigError(`${f.has('--port') ? '--port' : 'PORT'}: expected a port number, got "${port}"`);
  }
  const envHost = process.env.HOST ?? '';
  const host = f.get('--host') ?? (WILDCARD_HOSTS.has(envHost) ? '127.0.0.1' : envHost);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`;
  // Silent when healthy; otherwise one line on stderr, which a container's health log keeps.
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
    // Bun says ECONNREFUSED in the error, Node in its cause, Deno "Connection refused" in its cause's message.
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

/** Subcommands other than serving. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (command === 'keys' && sub === 'new') return keysNew(rest);
  if (command === 'keys') return keysCommandOrFail(sub, rest);
  if (command === 'healthcheck') return healthcheck(argv.slice(1));
  throw new ConfigError(`unknown command "${argv.join(' ')}"`);
}

/** A keys command; a failure other than bad usage or a bad file (a held lock, a full disk) exits 1 with its message. */
async function keysCommandOrFail(sub: string | undefined, argv: readonly string[]): Promise<number> {
  try {
    return await keysCommand(sub, argv);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof KeysFileError) throw err;
    process.stderr.write(`petstore keys ${sub}: ${(err as Error).message}\n`);
    return 1;
  }
}
