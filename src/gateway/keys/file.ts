import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { type BanPolicy, type Limits, PLAN_LIMITS, PLAN_NAMES, type PlanName } from '../plans.ts';

/** A key's name as the keys file and `petstore keys new` accept it: what logs show. */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const Quota = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000_000));

const KeyEntry = v.pipe(
  v.strictObject({
    name: v.pipe(v.string(), v.regex(KEY_NAME, 'must be 1-64 letters, digits, ".", "_" or "-"')),
    sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits')),
    plan: v.picklist(PLAN_NAMES, `must be one of ${PLAN_NAMES.join(', ')}`),
    limits: v.optional(v.strictObject({ perMinute: Quota, perDay: Quota })),
    ban: v.optional(
      v.strictObject({ threshold: v.optional(Quota), seconds: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
    ),
  }),
  v.forward(
    v.check((e) => e.plan !== 'enterprise' || e.limits !== undefined, 'required for the enterprise plan'),
    ['limits'],
  ),
);

const KeysFile = v.strictObject({ keys: v.array(KeyEntry) });

/**
 * Whose quota a key counts against: the per-consumer state (windows, ban, in-flight cap) is keyed
 * by this name, never by a token or hash, so every key of a consumer shares one quota.
 */
export interface Consumer {
  readonly name: string;
  readonly plan: PlanName;
  readonly limits: Limits;
  readonly ban?: BanPolicy;
}

/** One API key as the gateway knows it: never the token, only its SHA-256. */
export interface KeyRecord {
  /** Names the key in logs, metrics and the keys CLI; a `{"keys":[...]}` entry's id is its name. */
  readonly id: string;
  readonly hash: Buffer;
  readonly consumer: Consumer;
}

export class KeysFileError extends Error {
  override name = 'KeysFileError';
}

/**
 * Parses and validates a keys file's text; throws `KeysFileError` naming the entry and field.
 *
 * @example
 * parseKeys('{"keys":[{"name":"acme","sha256":"9f86…","plan":"free"}]}')
 */
export function parseKeys(text: string): KeyRecord[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new KeysFileError(`not valid JSON: ${(err as Error).message}`);
  }
  const result = v.safeParse(KeysFile, json);
  if (!result.success) throw new KeysFileError(describe(result.issues[0], json));
  const seen = new Map<string, number>();
  const hashes = new Set<string>();
  return result.output.keys.map((entry, i) => {
    if (seen.has(entry.name)) {
      throw new KeysFileError(`keys[${i}] ("${entry.name}").name: duplicate of keys[${seen.get(entry.name)}]`);
    }
    if (hashes.has(entry.sha256)) throw new KeysFileError(`keys[${i}] ("${entry.name}").sha256: used by another key`);
    seen.set(entry.name, i);
    hashes.add(entry.sha256);
    const limits = entry.limits ?? PLAN_LIMITS[entry.plan as Exclude<PlanName, 'enterprise'>];
    // A `{"keys":[...]}` entry is a consumer of its own with a single key, both named by its name.
    const consumer: Consumer = { name: entry.name, plan: entry.plan, limits, ...(entry.ban ? { ban: entry.ban } : {}) };
    return { id: entry.name, hash: Buffer.from(entry.sha256, 'hex'), consumer };
  });
}

/**
 * What is wrong with a keys file's permission bits, or undefined when nothing is. Writable by
 * group or others is the worse: whoever can write the file can add a key. Readable by others
 * shows every key's name, plan and hash (hashes of random tokens, but still an inventory).
 * Readable by the group is fine: `root:petstore 0640` is the usual way to hand it to a service.
 *
 * @example
 * keysFileExposure(0o100644) // 'readable by every user (mode 0644); run chmod 600 or 640 on it'
 */
export function keysFileExposure(mode: number): string | undefined {
  const bits = (mode & 0o777).toString(8).padStart(4, '0');
  if (mode & 0o022)
    return `writable by group or others (mode ${bits}): anyone who can write it can add a key; run chmod 600 on it`;
  if (mode & 0o004) return `readable by every user (mode ${bits}); run chmod 600 or 640 on it`;
  return undefined;
}

/** SHA-256 of a token, as stored in the keys file. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function describe(issue: v.BaseIssue<unknown>, json: unknown): string {
  let where = '';
  (issue.path ?? []).forEach((item, depth) => {
    if (typeof item.key === 'number') {
      where += `[${item.key}]`;
      if (depth === 1) where += entryName(json, item.key);
    } else {
      where += `${where ? '.' : ''}${String(item.key)}`;
    }
  });
  const message = issue.received === 'undefined' ? 'required' : issue.message;
  return `${where || 'file'}: ${message}`;
}

function entryName(json: unknown, index: number): string {
  const keys = (json as { keys?: Array<{ name?: unknown }> }).keys;
  const name = keys?.[index]?.name;
  return typeof name === 'string' ? ` ("${name}")` : '';
}
