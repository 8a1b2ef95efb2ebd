/**
 * `petstore keys add|rotate|revoke|list`: key lifecycle on a keys file, for ops. Tokens come
 * from the CSPRNG and are printed once (stdout, alone, so `TOKEN=$(petstore keys add …)`
 * works); the file only ever holds their SHA-256. Every change is made under a lock and
 * written atomically; a running server picks it up on SIGHUP.
 */
import process from 'node:process';
import { SCOPES, type Scope } from '../api/scopes.ts';
import { ConfigError } from '../config.ts';
import { addKey, type NewKey, revokeKey, rotateKeys } from '../gateway/keys/edit.ts';
import { hashToken } from '../gateway/keys/file.ts';
import { KEY_NAME, type KeysDocument, rfc3339 } from '../gateway/keys/schema.ts';
import { readKeysDocument, withLock, writeKeysDocument } from '../gateway/keys/store-file.ts';
import { newToken } from '../gateway/keys/tokens.ts';
import { PLAN_NAMES, type PlanName } from '../gateway/plans.ts';
import { list } from './keys-list.ts';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export const KEYS_USAGE = `Usage:
  petstore keys add    --keys FILE --consumer NAME [--plan PLAN] [--scopes S,S] [--expires WHEN]
                       [--not-before WHEN] [--id ID] [--per-minute N --per-day N]
  petstore keys rotate --keys FILE --consumer NAME --overlap DURATION [--scopes S,S] [--id ID]
  petstore keys revoke --keys FILE --consumer NAME --key ID
  petstore keys list   --keys FILE [--json]
  petstore keys new    --name NAME --plan PLAN   (prints an entry for the {"keys":[...]} form)

add and rotate print the new token alone on stdout (shown once) and its key id on stderr.
PLAN: ${PLAN_NAMES.join(', ')} (needed when add creates the consumer). Scopes: ${SCOPES.join(', ')}
(default: both). WHEN: an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration from now.
DURATION: a number and s, m, h or d (7d). rotate sets the consumer's current keys to expire
after DURATION. The file is written atomically under FILE.lock; send the server SIGHUP after.
`;

type Flags = Map<string, string>;

/** `--name value`, `--name=value` and the boolean flags in `booleans`; refuses anything else. */
function parseFlags(argv: readonly string[], allowed: readonly string[], booleans: readonly string[] = []): Flags {
  const out: Flags = new Map();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (booleans.includes(name) && eq < 0) {
      out.set(name, 'true');
      continue;
    }
    if (!allowed.includes(name)) {
      throw new ConfigError(`unknown option "${name}"; expected ${[...allowed, ...booleans].join(', ')}`);
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ConfigError(`${name}: needs a value`);
    out.set(name, value);
  }
  return out;
}

function required(f: Flags, name: string): string {
  const value = f.get(name);
  if (value === undefined || value === '') throw new ConfigError(`${name}: required\n${KEYS_USAGE}`);
  return value;
}

function nameFlag(f: Flags, name: string): string {
  const value = required(f, name);
  if (!KEY_NAME.test(value)) throw new ConfigError(`${name}: "${value}" must be 1-64 letters, digits, ".", "_" or "-"`);
  return value;
}

/**
 * Milliseconds of a duration such as `7d`, `12h`, `30m` or `90s`.
 *
 * @example
 * durationMs('7d', '--overlap') // 604800000
 */
export function durationMs(text: string, flag: string): number {
  const m = /^([0-9]{1,6})([smhd])$/.exec(text);
  if (!m) throw new ConfigError(`${flag}: "${text}" is not a duration; expected a number and s, m, h or d, e.g. 7d`);
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}

/** An RFC 3339 date-time as given, or a duration from `now` as one. */
function when(f: Flags, flag: string, now: number): string | undefined {
  const text = f.get(flag);
  if (text === undefined) return undefined;
  if (/^[0-9]+[smhd]$/.test(text)) return iso(now + durationMs(text, flag));
  if (Number.isNaN(rfc3339(text))) {
    throw new ConfigError(
      `${flag}: "${text}" is neither an RFC 3339 date-time (2027-02-20T00:00:00Z) nor a duration (7d)`,
    );
  }
  return text;
}

function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function scopesFlag(f: Flags): Scope[] | undefined {
  const text = f.get('--scopes');
  if (text === undefined) return undefined;
  const scopes = text.split(/[,\s]+/).filter(Boolean);
  for (const s of scopes) {
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw new ConfigError(`--scopes: unknown scope "${s}"; expected ${SCOPES.join(', ')}`);
    }
  }
  if (scopes.length === 0) throw new ConfigError(`--scopes: needs at least one of ${SCOPES.join(', ')}`);
  return scopes as Scope[];
}

function countFlag(f: Flags, flag: string): number | undefined {
  const text = f.get(flag);
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]{0,9}$/.test(text)) throw new ConfigError(`${flag}: "${text}" is not a positive whole number`);
  return Number(text);
}

/** A fresh token and the key-file fields that admit it. */
function freshKey(f: Flags, now: number): { token: string; key: NewKey } {
  const token = newToken();
  const id = f.get('--id');
  if (id !== undefined && !KEY_NAME.test(id))
    throw new ConfigError(`--id: "${id}" must be 1-64 letters, digits, ".", "_" or "-"`);
  const scopes = scopesFlag(f);
  const expiresAt = when(f, '--expires', now);
  const notBefore = when(f, '--not-before', now);
  const key: NewKey = {
    sha256: hashToken(token).toString('hex'),
    ...(id !== undefined ? { id } : {}),
    ...(scopes ? { scopes } : {}),
    ...(expiresAt ? { expiresAt } : {}),
    ...(notBefore ? { notBefore } : {}),
  };
  return { token, key };
}

/** Reads, changes and writes the file under its lock; prints the token and id of a new key. */
async function change(
  path: string,
  consumer: string,
  edit: (doc: KeysDocument) => KeysDocument,
  key?: { token: string; key: NewKey },
) {
  await withLock(path, () => writeKeysDocument(path, edit(readKeysDocument(path))));
  if (key) {
    process.stdout.write(`${key.token}\n`);
    const id = key.key.id ?? key.key.sha256.slice(0, 8);
    process.stderr.write(
      `key id: ${id} (consumer ${consumer}; token printed once on stdout; send the server SIGHUP)\n`,
    );
  }
}

async function add(argv: readonly string[], now: number): Promise<number> {
  const f = parseFlags(argv, [
    '--keys',
    '--consumer',
    '--plan',
    '--scopes',
    '--expires',
    '--not-before',
    '--id',
    '--per-minute',
    '--per-day',
  ]);
  const path = required(f, '--keys');
  const consumer = nameFlag(f, '--consumer');
  const plan = f.get('--plan');
  if (plan !== undefined && !(PLAN_NAMES as readonly string[]).includes(plan)) {
    throw new ConfigError(`--plan: "${plan}" is not a plan; expected one of ${PLAN_NAMES.join(', ')}`);
  }
  const perMinute = countFlag(f, '--per-minute');
  const perDay = countFlag(f, '--per-day');
  if ((perMinute === undefined) !== (perDay === undefined))
    throw new ConfigError('--per-minute and --per-day: give both or neither');
  const limits = perMinute !== undefined && perDay !== undefined ? { perMinute, perDay } : undefined;
  const fresh = freshKey(f, now);
  const newConsumer = { ...(plan ? { plan: plan as PlanName } : {}), ...(limits ? { limits } : {}) };
  await change(path, consumer, (doc) => addKey(doc, consumer, newConsumer, fresh.key), fresh);
  return 0;
}

async function rotate(argv: readonly string[], now: number): Promise<number> {
  const f = parseFlags(argv, ['--keys', '--consumer', '--overlap', '--scopes', '--id']);
  const path = required(f, '--keys');
  const consumer = nameFlag(f, '--consumer');
  const overlap = durationMs(required(f, '--overlap'), '--overlap');
  const fresh = freshKey(f, now);
  await change(path, consumer, (doc) => rotateKeys(doc, consumer, now, overlap, fresh.key), fresh);
  process.stderr.write(`the consumer's other keys expire at ${iso(now + overlap)} at the latest\n`);
  return 0;
}

async function revoke(argv: readonly string[]): Promise<number> {
  const f = parseFlags(argv, ['--keys', '--consumer', '--key']);
  const path = required(f, '--keys');
  const consumer = nameFlag(f, '--consumer');
  const id = required(f, '--key');
  await change(path, consumer, (doc) => revokeKey(doc, consumer, id));
  process.stderr.write(`revoked key ${id} of consumer ${consumer}; send the server SIGHUP\n`);
  return 0;
}

/** `petstore keys …` other than `new`; resolves to the exit code. */
export async function keysCommand(sub: string | undefined, argv: readonly string[], now = Date.now()): Promise<number> {
  switch (sub) {
    case 'add':
      return add(argv, now);
    case 'rotate':
      return rotate(argv, now);
    case 'revoke':
      return revoke(argv);
    case 'list':
      return list(parseFlags(argv, ['--keys'], ['--json']), now);
    case 'help':
    case '--help':
    case undefined:
      process.stdout.write(KEYS_USAGE);
      return sub === undefined ? 2 : 0;
    default:
      throw new ConfigError(`unknown command "keys ${sub}"\n${KEYS_USAGE}`);
  }
}
