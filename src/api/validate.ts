// Step 7's input: reads an operation's input from the request (path, query, headers, JSON body)
// and checks it with the operation's valibot schemas; a failure is a 400 (or 415) naming the field.
import type { Context } from 'hono';
import * as v from 'valibot';
import { ApiError, notJson } from '../core/api-error.ts';
import { duplicateMember } from '../core/json-syntax.ts';
import type { RateLimitStatus } from '../core/rate-limit-status.ts';
import { JSON_TYPE } from '../core/reply.ts';
import { echoed } from '../redact.ts';
import { roundedMember } from './json-numbers.ts';
import type { Input, KeyHolder, Operation } from './operation-types.ts';
import { MUST_BE } from './schemas.ts';

type Target = 'json' | 'query' | 'param' | 'header';
type AnySchema = v.GenericSchema;

/** The longest part of a client's field name that an error message repeats. */
const ECHO_MAX = 64;

/** The 400 for a body that is not a JSON object (an array, a string, `null`, ...). */
export const NOT_AN_OBJECT = 'body: must be a JSON object.';
/** The 400 for a body that does not parse as JSON (malformed, truncated, empty). */
export const NOT_JSON = 'body: must be a JSON object; this is not valid JSON.';

/**
 * Returns the reader of `op`'s input: path parameters, query, headers and JSON body, validated by
 * the operation's schemas. The reader throws a 400 naming the first invalid field (`MUST_BE`).
 * Unknown query parameters are ignored; unknown body fields are refused. Without a body the
 * reader is synchronous.
 *
 * @example
 * const read = inputReader(operation)
 * const input = await read(c, 'con_0123…:acme', undefined, undefined) // { query: { limit: 20 }, params: undefined, ... }
 * // GET /pets?limit=0 -> throws ApiError 400 "limit: must be an integer from 1 to 100."
 */
export function inputReader<D>(
  op: Operation<D>,
): (
  c: Context,
  owner: string,
  quota: RateLimitStatus | undefined,
  keyHolder: KeyHolder | undefined,
) => Input | Promise<Input> {
  const mustBe = op.mustBe ?? MUST_BE;
  const query = op.query && checker('query', op.query, mustBe);
  const params = op.params && checker('param', op.params, mustBe);
  const headers = op.headers && checker('header', op.headers, mustBe);
  const body = op.body && checker('json', op.body, mustBe);
  const types = op.bodyTypes ?? JSON_TYPES;
  // A PATCH refused for its media type lists the types it accepts (RFC 5789, section 3.1).
  const refused = op.method === 'PATCH' ? notJson(types, { 'Accept-Patch': types.join(', ') }) : notJson(types);
  // The same object shape for every operation; its fields are checked in the order written:
  // query, path, headers, then the body. `keyHolder` is `undefined` except for audited operations
  // (the admin API's).
  const fromRequest = (
    c: Context,
    owner: string,
    quota: RateLimitStatus | undefined,
    keyHolder: KeyHolder | undefined,
    value?: unknown,
  ): Input => ({
    query: query?.(queryOf(c)),
    params: params?.(c.req.param()),
    headers: headers?.(c.req.header()),
    body: body?.(value),
    owner,
    quota,
    keyHolder,
  });
  if (!body) return fromRequest;
  return async function withBody(c, owner, quota, keyHolder) {
    if (!isMediaType(c.req.header('content-type'), types)) throw refused;
    // Order of checks: the media type (415) and the JSON syntax (400) while reading the body; then
    // the query, path and headers; the body's fields last.
    const value = parseJsonBody(await c.req.arrayBuffer(), mustBe);
    return fromRequest(c, owner, quota, keyHolder, value);
  };
}

/** The query from Hono's `c.req.queries()`: one value as a string, a repeated one as an array. */
function queryOf(c: Context): Record<string, string | string[]> {
  const value: Record<string, string | string[]> = {};
  for (const [name, values] of Object.entries(c.req.queries()))
    value[name] = values.length === 1 ? (values[0] ?? '') : values;
  return value;
}

/** Parses `value` with `schema`, or throws the 400 that names the first wrong field. */
function checker(
  target: Target,
  schema: AnySchema,
  mustBe: Readonly<Record<string, string>>,
): (value: unknown) => unknown {
  const fields = 'entries' in schema && isRecord(schema.entries) ? Object.keys(schema.entries) : [];
  return function check(value) {
    if (target === 'json' && !isRecord(value)) throw new ApiError('invalid_request', NOT_AN_OBJECT);
    const result = v.safeParse(schema, value);
    if (result.success) return result.output;
    throw new ApiError('invalid_request', describeIssue(target, value, schema, fields, result.issues[0], mustBe));
  };
}

/**
 * Returns a plain-words message for the field that failed and how. It never uses valibot's text
 * (`Invalid type: Expected ... but received Array`) and never quotes the value.
 */
function describeIssue(
  target: Target,
  input: unknown,
  schema: AnySchema,
  fields: string[],
  issue: v.BaseIssue<unknown>,
  mustBe: Readonly<Record<string, string>>,
): string {
  const key = issue.path?.[0]?.key;
  if (typeof key !== 'string') return target === 'json' ? NOT_AN_OBJECT : `${target}: is not valid.`;
  const field = target === 'header' ? headerName(key) : echoed(key, ECHO_MAX);
  const path = issue.path ?? [];
  if (issue.expected === 'never') {
    // An unknown member: name it (escaped, up to ECHO_MAX) and list the fields its object has.
    const inner = path.slice(1).map((item) => echoed(String(item.key), ECHO_MAX));
    const known =
      path.length > 1
        ? fieldsAt(
            schema,
            path.slice(0, -1).map((item) => item.key),
          )
        : fields;
    const where = path.length > 1 ? [field, ...inner.slice(0, -1)].join('.') : 'the body';
    return `${[field, ...inner].join('.')}: is not a field of ${where}; its fields are ${known.join(', ')}.`;
  }
  // A check with its own message (e.g. a webhook URL's problem) uses it, prefixed by the field.
  if (issue.type === 'raw_check' && path.every((item) => typeof item.key === 'string')) {
    return `${path.map((item) => echoed(String(item.key), ECHO_MAX)).join('.')}: ${issue.message}.`;
  }
  const allowed = mustBe[field];
  if (allowed === undefined) return `${field}: is not valid.`;
  const given = isRecord(input) ? input[key] : undefined;
  // A repeated query parameter reaches here as an array of its values.
  if (target === 'query' && Array.isArray(given)) return `${field}: must be given once, as ${allowed}.`;
  if (given === undefined) return `${field}: is required; must be ${allowed}.`;
  return `${field}: must be ${allowed}.`;
}

/**
 * Returns the fields of the object schema at `keys` inside `schema`, looking through optional and
 * nullable wrappers.
 */
function fieldsAt(schema: unknown, keys: readonly unknown[]): string[] {
  let at = schema;
  for (const key of keys) {
    while (isRecord(at) && 'wrapped' in at) at = at.wrapped;
    at = isRecord(at) && isRecord(at.entries) ? at.entries[String(key)] : undefined;
  }
  while (isRecord(at) && 'wrapped' in at) at = at.wrapped;
  return isRecord(at) && isRecord(at.entries) ? Object.keys(at.entries) : [];
}

/** Spells a lower-cased header name as clients and the contract do: `Idempotency-Key`. */
function headerName(lowerCased: string): string {
  return lowerCased.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Decodes UTF-8 and throws on any invalid byte sequence, where `text()` would put U+FFFD. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/** In a `u` regex a surrogate pair is one code point, so this finds only unpaired surrogates. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Parses the body as RFC 8259 asks. Throws a 400 for bytes that are not UTF-8 (rather than
 * storing U+FFFD in their place), for an unpaired surrogate escape such as `"\ud800"` (no UTF-8
 * response could return it unchanged), for a repeated member, and for a top-level member whose
 * number JSON.parse rounds to an integer the client did not send, when `mustBe` names that member.
 */
function parseJsonBody(bytes: ArrayBuffer, mustBe: Readonly<Record<string, string>>): unknown {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    throw new ApiError('invalid_request', 'body: must be UTF-8; this has bytes that are not UTF-8.');
  }
  let value: unknown;
  try {
    // Valid UTF-8 can hold an unpaired surrogate only through a `\u` escape, so check only then.
    value = text.includes('\\u') ? JSON.parse(text, refuseLoneSurrogates) : JSON.parse(text);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('invalid_request', NOT_JSON);
  }
  // JSON.parse keeps the last of a repeated member, which would mislead a reader that takes the
  // first.
  const repeated = duplicateMember(text, value);
  if (repeated) {
    throw new ApiError('invalid_request', `${echoed(repeated.path, ECHO_MAX)}: is given twice; send each field once.`);
  }
  // A number that JSON.parse rounded to an integer would pass the schema and be stored as a value
  // the client never sent: refuse it with the field's own message.
  const rounded = roundedMember(text);
  const allowed = rounded === undefined ? undefined : mustBe[rounded];
  if (allowed !== undefined) throw new ApiError('invalid_request', `${rounded}: must be ${allowed}.`);
  return value;
}

function refuseLoneSurrogates(key: string, value: unknown): unknown {
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new ApiError('invalid_request', 'body: must not hold an unpaired UTF-16 surrogate escape such as \\ud800.');
  }
  return value;
}

const JSON_TYPES: readonly string[] = [JSON_TYPE];

/** Whether `contentType`'s media type is `application/json`. */
export function isJson(contentType: string | undefined): boolean {
  return isMediaType(contentType, JSON_TYPES);
}

/** Whether `contentType`'s media type, parameters aside, is one of `types`. */
function isMediaType(contentType: string | undefined, types: readonly string[]): boolean {
  const type = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return type !== undefined && types.includes(type);
}
