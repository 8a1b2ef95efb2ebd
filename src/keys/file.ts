// The keys file's reader: `parseKeys()` turns its JSON into the `KeyRecord`s the gateway looks up,
// checked entry by entry and across entries; a failure is a `KeysFileError` naming the field.
// `keysFileExposure()` says when the file's permissions show it to other users.
import * as v from 'valibot';
import { describeJsonError, duplicateMember, jsonSyntaxError } from '../core/json-syntax.ts';
import { ADMIN_SCOPE, SCOPES } from '../core/key-scopes.ts';
import { echoed } from '../redact.ts';
import { costProblem, PLAN_LIMITS, PLAN_TERMS, type PlanName } from './plans.ts';
import {
  type Consumer,
  type ConsumerFields,
  consumerIdOf,
  DEFAULT_THRESHOLDS,
  derivedConsumerId,
  type KeyRecord,
  legacyOwnerOf,
  newConsumerId,
} from './records.ts';
import { type ConsumerKey, KeysDocument, keyIdOf, rfc3339 } from './schemas.ts';

export { KEY_NAME } from './schemas.ts';

/** Longest part of a bad string value a message repeats. */
const QUOTED_MAX = 120;

export class KeysFileError extends Error {
  override name = 'KeysFileError';
}

/**
 * Parses and validates a keys file's text into its document; throws `KeysFileError` naming
 * the entry, the field and the bad value, or for bad JSON the file, line and column with the
 * line quoted. Cross-entry checks are `parseKeys`'s.
 *
 * @example
 * parseDocument('{"consumers":[{"name":"acme","plan":"pro","keys":[]}]}').consumers?.[0]?.name // 'acme'
 */
export function parseDocument(text: string, file?: string): KeysDocument {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    const syntax = jsonSyntaxError(text);
    throw new KeysFileError(syntax ? describeJsonError(syntax, file) : `not valid JSON: ${(err as Error).message}`);
  }
  const repeated = duplicateMember(text, json);
  if (repeated) {
    const { line, column, path } = repeated;
    throw new KeysFileError(
      `${file ? `${file}:` : 'line '}${line}${file ? ':' : ', column '}${column}: ${path} is given twice in one object; keep one`,
    );
  }
  const result = v.safeParse(KeysDocument, json);
  if (!result.success) throw new KeysFileError(describe(result.issues[0]));
  if (!result.output.keys && !result.output.consumers) throw new KeysFileError('keys: required (or consumers)');
  return result.output;
}

/**
 * The keys of a keys file's text, validated; throws `KeysFileError` naming the entry, the field
 * and the bad value.
 *
 * @example
 * parseKeys('{"keys":[{"name":"acme","sha256":"9f86…","plan":"free"}]}')
 */
export function parseKeys(text: string, file?: string): KeyRecord[] {
  return keyRecords(parseDocument(text, file));
}

/**
 * The keys of a validated document, after the checks across entries: unique consumer names
 * (over both forms), unique hashes, unique key ids within a consumer, notBefore before expiresAt;
 * then the tombstones of revoked keys (with `revokedAt`), for the hashes no key holds.
 */
export function keyRecords(doc: KeysDocument): KeyRecord[] {
  const owners = new Map<string, string>(); // consumer name -> where it is defined
  const hashes = new Map<string, string>(); // hash -> where it is used
  const records: KeyRecord[] = [];
  const ids = new Map<string, string>(); // consumer id -> the consumer's name
  const claimName = (name: string, where: string) => {
    const first = owners.get(name);
    if (first !== undefined) {
      throw new KeysFileError(
        `${where}.name: "${name}" is also the name of ${first}; each consumer needs its own name`,
      );
    }
    owners.set(name, where);
  };
  const add = (key: ConsumerKey, id: string, consumer: Consumer, where: string, ids?: Set<string>) => {
    const other = hashes.get(key.sha256);
    if (other !== undefined) {
      throw new KeysFileError(`${where}.sha256: "${key.sha256.slice(0, 8)}…" is also the hash of ${other}`);
    }
    hashes.set(key.sha256, where);
    if (ids?.has(id))
      throw new KeysFileError(`${where}.id: "${id}" is also the id of another key of "${consumer.name}"`);
    ids?.add(id);
    const record = toRecord(key, id, consumer);
    if (record.expiresAt !== undefined && record.notBefore !== undefined && record.notBefore >= record.expiresAt) {
      throw new KeysFileError(`${where}.notBefore: "${key.notBefore}" is not before expiresAt "${key.expiresAt}"`);
    }
    records.push(record);
  };
  (doc.keys ?? []).forEach((entry, i) => {
    const where = `keys[${i}] ("${entry.name}")`;
    claimName(entry.name, `${where}, a {"keys":[...]} entry`);
    const id = derivedConsumerId(entry.name, entry.sha256);
    ids.set(id, entry.name);
    add(entry, entry.name, consumerOf(entry, where, id, legacyOwnerOf(entry.name)), where);
  });
  const consumers = new Map<string, Consumer>();
  (doc.consumers ?? []).forEach((entry, i) => {
    const where = `consumers[${i}] ("${entry.name}")`;
    claimName(entry.name, where);
    const id = consumerIdOf(entry) ?? newConsumerId();
    const holder = ids.get(id);
    if (holder !== undefined) {
      throw new KeysFileError(
        `${where}.id: "${id}" is also the id of consumer "${holder}"; each consumer needs its own`,
      );
    }
    ids.set(id, entry.name);
    const derived = entry.keys[0] && id === derivedConsumerId(entry.name, entry.keys[0].sha256);
    const consumer = consumerOf(entry, where, id, derived ? legacyOwnerOf(entry.name) : undefined);
    consumers.set(entry.name, consumer);
    const keyIds = new Set<string>();
    entry.keys.forEach((key, k) => {
      add(key, keyIdOf(key), consumer, `${where}.keys[${k}]`, keyIds);
    });
    const mixed = entry.keys.findIndex((key) => isAdmin(key) !== isAdmin(entry.keys[0] as ConsumerKey));
    if (mixed > 0) {
      throw new KeysFileError(
        `${where}.keys[${mixed}]: admin keys and public keys cannot share a consumer (they would share its quota and ban); give admin keys a consumer of their own`,
      );
    }
  });
  (doc.revoked ?? []).forEach((t, i) => {
    if (hashes.has(t.sha256)) return;
    hashes.set(t.sha256, `revoked[${i}]`);
    const consumer =
      consumers.get(t.consumer) ?? consumerOf({ name: t.consumer, plan: 'free' }, `revoked[${i}]`, newConsumerId());
    records.push({ ...toRecord(t, t.key, consumer), scopes: [], revokedAt: rfc3339(t.revokedAt) });
  });
  return records;
}

/** True for a key with the admin scope (which it holds alone). */
function isAdmin(key: ConsumerKey): boolean {
  return key.scopes?.includes(ADMIN_SCOPE) === true;
}

/** The consumer of an entry: its plan's terms, overridden by its own; costs must fit its quotas. */
function consumerOf(entry: ConsumerFields & { name: string }, where: string, id: string, adopts?: string): Consumer {
  const limits = entry.limits ?? PLAN_LIMITS[entry.plan as Exclude<PlanName, 'enterprise'>];
  const plan = PLAN_TERMS[entry.plan];
  const costs = { ...plan.costs, ...entry.costs };
  const problem = costProblem(where, limits, costs);
  if (problem) throw new KeysFileError(problem);
  return {
    id,
    ...(adopts !== undefined ? { adopts } : {}),
    name: entry.name,
    plan: entry.plan,
    limits,
    ...(entry.ban ? { ban: entry.ban } : {}),
    costs,
    enforce: entry.enforce ?? plan.enforce ?? true,
    ...(entry.webhook
      ? {
          webhook: { url: entry.webhook.url, secret: entry.webhook.secret },
          thresholds: entry.thresholds ? [...entry.thresholds].sort((a, b) => a - b) : DEFAULT_THRESHOLDS,
        }
      : {}),
  };
}

function toRecord(key: ConsumerKey, id: string, consumer: Consumer): KeyRecord {
  return {
    id,
    hash: Buffer.from(key.sha256, 'hex'),
    consumer,
    scopes: key.scopes ? [...new Set(key.scopes)] : [...SCOPES],
    ...(key.expiresAt !== undefined ? { expiresAt: rfc3339(key.expiresAt) } : {}),
    ...(key.notBefore !== undefined ? { notBefore: rfc3339(key.notBefore) } : {}),
  };
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

/** `where: message`, with the entry's name after its index and the bad value quoted. */
function describe(issue: v.BaseIssue<unknown>): string {
  let where = '';
  let list: unknown;
  (issue.path ?? []).forEach((item, depth) => {
    if (depth === 0) list = item.value;
    if (typeof item.key === 'number') {
      where += `[${item.key}]`;
      if (depth === 1) where += entryName(list, item.key);
    } else {
      where += `${where ? '.' : ''}${String(item.key)}`;
    }
  });
  if (issue.received === 'undefined') return `${where || 'file'}: required`;
  const input = issue.input;
  // Under `webhook`, a message repeats only the URL, never another value, even a wrong one: it may
  // be a real secret in the wrong place.
  const secret = issue.path?.some((item) => item.key === 'webhook') === true && issue.path?.at(-1)?.key !== 'url';
  const quoted = secret
    ? ''
    : typeof input === 'string'
      ? `, got "${/^[0-9a-f]{64}$/.test(input) ? `${input.slice(0, 8)}…` : echoed(input, QUOTED_MAX)}"`
      : typeof input === 'number' || typeof input === 'boolean'
        ? `, got ${JSON.stringify(input)}`
        : '';
  return `${where || 'file'}: ${issue.message}${quoted}`;
}

function entryName(list: unknown, index: number): string {
  const entry: unknown = Array.isArray(list) ? list[index] : undefined;
  const name = entry && typeof entry === 'object' && 'name' in entry ? entry.name : undefined;
  return typeof name === 'string' ? ` ("${name}")` : '';
}
