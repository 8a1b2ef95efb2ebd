// The admin API's handlers: consumers, their keys, and the audit trail. Each change is one
// `KeyAdmin.change` with its audit record, checked inside that call against the keys as they are
// at that moment, so of two admins racing to create one name, one gets 201 and the other 409.
import type { Input, KeyHolder } from '../api/operation-types.ts';
import { ApiError } from '../core/api-error.ts';
import type { Clock } from '../core/clock.ts';
import { ADMIN_SCOPE, SCOPES } from '../core/key-scopes.ts';
import type { Reply } from '../core/reply.ts';
import type { Actor, AuditAction } from '../keys/audit.ts';
import {
  addKey,
  asConsumers,
  createConsumer,
  deleteConsumer,
  rotateKeys,
  updateConsumer,
  withTombstone,
} from '../keys/document-edits.ts';
import { KeysFileError } from '../keys/file.ts';
import type { KeyAdmin } from '../keys/key-admin.ts';
import { PLAN_LIMITS } from '../keys/plans.ts';
import { DEFAULT_THRESHOLDS, hashToken, ownersOf } from '../keys/records.ts';
import { type ConsumerEntry, type ConsumerKey, type KeysDocument, keyIdOf, rfc3339 } from '../keys/schemas.ts';
import { newToken } from '../keys/tokens.ts';
import type {
  AuditQuery,
  ConsumerParams,
  ConsumerPatch,
  KeyParams,
  NewConsumer,
  NewKeyBody,
  RotateBody,
} from './schemas.ts';

const JSON_TYPE = 'application/json';

/** What the admin handlers work with, given once at start. */
export interface AdminDeps {
  readonly keyAdmin: KeyAdmin;
  readonly clock: Clock;
  /**
   * Called once a consumer's deletion is in force, with the owners its orders are stored under
   * (`ownersOf` in src/keys/records.ts), so the store retires them (`retireOwner`).
   */
  readonly consumerDeleted?: (owners: readonly string[]) => Promise<void>;
}

type In<Q = unknown, P = unknown, B = unknown> = Input<Q, P, unknown, B>;

/** `GET /consumers`: every consumer with its keys (ids, scopes, dates, state; never a hash). */
export async function listConsumers(_: In, { keyAdmin, clock }: AdminDeps): Promise<Reply> {
  const now = clock.now();
  return json(
    200,
    asConsumers(await keyAdmin.read()).map((c) => consumerOut(c, now)),
  );
}

/** `GET /consumers/{name}`. */
export async function getConsumer(
  { params }: In<unknown, ConsumerParams>,
  { keyAdmin, clock }: AdminDeps,
): Promise<Reply> {
  return json(200, consumerOut(found(await keyAdmin.read(), params.name), clock.now()));
}

/** `POST /consumers`: 201, or 409 when the name is taken. */
export async function postConsumer(input: In<unknown, unknown, NewConsumer>, deps: AdminDeps): Promise<Reply> {
  const { name, ...fields } = input.body;
  if (fields.plan === 'enterprise' && !fields.limits) {
    throw new ApiError('invalid_request', 'limits: is required for the enterprise plan.');
  }
  const doc = await change(input, deps, 'consumer.create', name, undefined, (d) => {
    if (entryOf(d, name)) throw new ApiError('conflict', `A consumer named ${name} exists.`);
    return createConsumer(d, name, fields);
  });
  return json(201, consumerOut(found(doc, name), deps.clock.now()), { Location: `consumers/${name}` });
}

/**
 * `PATCH /consumers/{name}`: changes plan, limits, ban, costs, enforce, webhook or thresholds;
 * null removes a field.
 */
export async function patchConsumer(
  input: In<unknown, ConsumerParams, ConsumerPatch>,
  deps: AdminDeps,
): Promise<Reply> {
  const { name } = input.params;
  notOwnConsumer(input, name);
  const doc = await change(input, deps, 'consumer.update', name, undefined, (d) => {
    const current = found(d, name);
    const limits = input.body.limits === undefined ? current.limits : input.body.limits;
    if ((input.body.plan ?? current.plan) === 'enterprise' && !limits) {
      throw new ApiError('invalid_request', 'limits: is required for the enterprise plan.');
    }
    return updateConsumer(d, name, input.body);
  });
  return json(200, consumerOut(found(doc, name), deps.clock.now()));
}

/** `DELETE /consumers/{name}`: deletes the consumer and all its keys. */
export async function removeConsumer(input: In<unknown, ConsumerParams>, deps: AdminDeps): Promise<Reply> {
  const { name } = input.params;
  notOwnConsumer(input, name);
  let owners: string[] = [];
  await change(input, deps, 'consumer.delete', name, undefined, (d) => {
    owners = ownersOf(found(d, name));
    return deleteConsumer(d, name);
  });
  await deps.consumerDeleted?.(owners);
  return { status: 204 };
}

/** `POST /consumers/{name}/keys`: 201 with the token, which is shown only this once. */
export async function postKey(input: In<unknown, ConsumerParams, NewKeyBody>, deps: AdminDeps): Promise<Reply> {
  const { name } = input.params;
  const { token, key } = freshKey(input.body);
  const id = keyIdOf(key);
  const doc = await change(input, deps, 'key.add', name, id, (d) => {
    unusedId(found(d, name), id);
    return addKey(d, name, {}, withinMaker(input, d, key));
  });
  return json(201, { consumer: name, ...keyOut(keyOf(doc, name, id), deps.clock.now()), token });
}

/**
 * `POST /consumers/{name}/rotate`: adds a key and sets the others to expire after `overlap`; 201
 * with the token.
 */
export async function rotate(input: In<unknown, ConsumerParams, RotateBody>, deps: AdminDeps): Promise<Reply> {
  const { name } = input.params;
  notOwnConsumer(input, name);
  const { overlap, ...given } = input.body;
  const { token, key } = freshKey(given);
  const id = keyIdOf(key);
  const now = deps.clock.now();
  const doc = await change(input, deps, 'key.rotate', name, id, (d) => {
    unusedId(found(d, name), id);
    const rotated = rotateKeys(d, name, now, overlap, key);
    const limit = makerExpiry(input, d);
    if (limit === undefined || !isAdminKey(keyOf(rotated, name, id))) return rotated;
    outlivedBy(found(d, name), limit);
    return rotateKeys(d, name, now, overlap, { ...key, expiresAt: limit });
  });
  return json(201, { consumer: name, ...keyOut(keyOf(doc, name, id), now), token });
}

/** `DELETE /consumers/{name}/keys/{id}`: 204; the consumer and its quota stay. */
export async function revoke(input: In<unknown, KeyParams>, deps: AdminDeps): Promise<Reply> {
  const { name, id } = input.params;
  notOwnConsumer(input, name);
  await change(input, deps, 'key.revoke', name, id, (d) => {
    const key = keyOf(d, name, id);
    const consumer = found(d, name);
    const after = updateKeys(
      d,
      name,
      consumer.keys.filter((k) => keyIdOf(k) !== id),
    );
    return withTombstone(after, { sha256: key.sha256, consumer: name, key: id }, deps.clock.now());
  });
  return { status: 204 };
}

/**
 * `GET /audit?after=&limit=`: the audit trail, oldest first, with `Link: <audit?…>; rel="next"`
 * when more records remain.
 */
export async function listAudit({ query }: In<AuditQuery>, { keyAdmin }: AdminDeps): Promise<Reply> {
  const { after, limit } = query;
  const page = await keyAdmin.audit(after, limit + 1);
  const records = page.slice(0, limit);
  const last = records.at(-1);
  const headers =
    page.length > limit && last ? { Link: `<audit?limit=${limit}&after=${last.id}>; rel="next"` } : undefined;
  return json(200, records, headers);
}

/** Applies `edit` as the admin key of `input`, with its audit record; resolves to the new keys. */
async function change(
  input: In,
  { keyAdmin, clock }: AdminDeps,
  action: AuditAction,
  consumer: string,
  key: string | undefined,
  edit: (doc: KeysDocument) => KeysDocument,
): Promise<KeysDocument> {
  let after: KeysDocument | undefined;
  try {
    await keyAdmin.change(
      {
        actor: actorOf(input.keyHolder),
        action,
        consumer,
        ...(key !== undefined ? { key } : {}),
        edit: (doc) => {
          after = edit(doc);
          return after;
        },
      },
      clock.now(),
    );
  } catch (err) {
    // A change that would make keys the server refuses (a key's notBefore not before its
    // expiresAt, a hash used twice): a 400 with the keys file's message, which names the field.
    if (err instanceof KeysFileError) throw new ApiError('invalid_request', `${err.message}.`);
    throw err;
  }
  return after as KeysDocument;
}

/**
 * Refuses (409) any change, other than adding a key, to the consumer that holds the requesting
 * admin key: its plan, limits, keys' dates or its deletion. Such a change needs another admin key,
 * so no request can lock its own admin out (by a revocation, a quota of 1, or a rotation with no
 * overlap).
 */
function notOwnConsumer(input: In, name: string): void {
  if (input.keyHolder?.consumer !== name) return;
  throw new ApiError(
    'conflict',
    `Consumer ${name} holds the admin key of this request; change it with another admin key.`,
  );
}

/** The requesting admin key's `expiresAt` in `doc`; undefined when it never expires. */
function makerExpiry(input: In, doc: KeysDocument): string | undefined {
  const maker = input.keyHolder;
  return maker && entryOf(doc, maker.consumer)?.keys.find((k) => keyIdOf(k) === maker.id)?.expiresAt;
}

const isAdminKey = (key: { readonly scopes?: readonly string[] | undefined }) =>
  key.scopes?.includes(ADMIN_SCOPE) === true;

/**
 * `key` as the requesting admin key may add it. A new admin key, on any consumer, expires no later
 * than the admin key that makes it: it takes that key's `expiresAt` when it gives none, and a later
 * one is refused (409). So an expiring admin key cannot make admin keys that outlive it.
 */
function withinMaker<K extends { scopes?: readonly string[]; expiresAt?: string }>(
  input: In,
  doc: KeysDocument,
  key: K,
): K {
  if (!isAdminKey(key)) return key;
  const limit = makerExpiry(input, doc);
  if (limit === undefined) return key;
  if (key.expiresAt === undefined) return { ...key, expiresAt: limit };
  if (rfc3339(key.expiresAt) <= rfc3339(limit)) return key;
  throw new ApiError(
    'conflict',
    `The admin key of this request expires at ${limit}; an admin key it makes expires no later.`,
  );
}

/**
 * For a rotation that makes an admin key, asked by an admin key that expires at `limit`: refuses
 * (409) when the consumer holds keys that live longer, since their successor could live only until
 * `limit`. Keys ending by `limit` rotate as usual.
 */
function outlivedBy(consumer: ConsumerEntry, limit: string): void {
  const ends = rfc3339(limit);
  const longer = consumer.keys.filter((k) => k.expiresAt === undefined || rfc3339(k.expiresAt) > ends).map(keyIdOf);
  if (longer.length === 0) return;
  throw new ApiError(
    'conflict',
    `The admin key of this request expires at ${limit}, before key ${longer.join(', ')} of consumer ${consumer.name}; their successor would expire with it. Rotate them with an admin key that outlives them.`,
  );
}

function actorOf(key: KeyHolder | undefined): Actor {
  // The gateway admitted only a key with the admin scope; an audited operation always has one.
  if (!key) throw new TypeError('admin: an audited change without the key that asked');
  return { kind: 'admin', consumer: key.consumer, key: key.id };
}

function freshKey(given: { id?: string; scopes?: ConsumerKey['scopes']; expiresAt?: string; notBefore?: string }) {
  const token = newToken();
  return { token, key: { sha256: hashToken(token).toString('hex'), ...given } };
}

function entryOf(doc: KeysDocument, name: string): ConsumerEntry | undefined {
  return asConsumers(doc).find((c) => c.name === name);
}

function found(doc: KeysDocument, name: string): ConsumerEntry {
  const entry = entryOf(doc, name);
  if (!entry) throw new ApiError('not_found', `No consumer is named ${name}.`);
  return entry;
}

function keyOf(doc: KeysDocument, name: string, id: string): ConsumerKey {
  const key = found(doc, name).keys.find((k) => keyIdOf(k) === id);
  if (!key) throw new ApiError('not_found', `Consumer ${name} has no key ${id}.`);
  return key;
}

function unusedId(consumer: ConsumerEntry, id: string): void {
  if (consumer.keys.some((k) => keyIdOf(k) === id)) {
    throw new ApiError('conflict', `Consumer ${consumer.name} has a key ${id}; choose another id.`);
  }
}

/**
 * `doc` with consumer `name`'s keys replaced (a `{"keys":[...]}` entry moved into consumers first).
 */
function updateKeys(doc: KeysDocument, name: string, keys: ConsumerKey[]): KeysDocument {
  const moved = updateConsumer(doc, name, {});
  return { ...moved, consumers: (moved.consumers ?? []).map((c) => (c.name === name ? { ...c, keys } : c)) };
}

function consumerOut(entry: ConsumerEntry, now: number) {
  const limits = entry.limits ?? PLAN_LIMITS[entry.plan as Exclude<typeof entry.plan, 'enterprise'>];
  return {
    name: entry.name,
    plan: entry.plan,
    limits,
    ...(entry.ban ? { ban: entry.ban } : {}),
    ...(entry.costs ? { costs: entry.costs } : {}),
    ...(entry.enforce !== undefined ? { enforce: entry.enforce } : {}),
    // Only the webhook's URL: its secret can be written but is never read back.
    ...(entry.webhook ? { webhook: { url: entry.webhook.url } } : {}),
    ...(entry.webhook || entry.thresholds ? { thresholds: entry.thresholds ?? DEFAULT_THRESHOLDS } : {}),
    keys: entry.keys.map((k) => keyOut(k, now)),
  };
}

function keyOut(key: ConsumerKey, now: number) {
  const ends = key.expiresAt === undefined ? undefined : rfc3339(key.expiresAt);
  const starts = key.notBefore === undefined ? undefined : rfc3339(key.notBefore);
  const state =
    ends !== undefined && now >= ends ? 'expired' : starts !== undefined && now < starts ? 'pending' : 'active';
  return {
    id: keyIdOf(key),
    scopes: key.scopes ?? [...SCOPES],
    expiresAt: key.expiresAt ?? null,
    notBefore: key.notBefore ?? null,
    state,
  };
}

function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), type: JSON_TYPE, ...(headers ? { headers } : {}) };
}
