import type { MiddlewareHandler } from 'hono';
import { validator } from 'hono/validator';
import * as v from 'valibot';
import { ApiError, notJson, tooLarge } from './errors.ts';

type Target = 'json' | 'query' | 'param' | 'header';
type AnySchema = v.GenericSchema;

const WHERE: Record<Target, string> = {
  json: 'body',
  query: 'query parameter',
  param: 'path parameter',
  header: 'header',
};

/**
 * The one validation hook: valibot's first issue becomes a 400 naming the field.
 *
 * @example
 * app.get('/pets', validate('query', ListQuery), (c) => c.json(c.req.valid('query')))
 */
export function validate<T extends Target, S extends AnySchema>(target: T, schema: S) {
  return validator(target, (value: unknown) => {
    if (target === 'json' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw new ApiError('invalid_request', 'body: must be a JSON object');
    }
    const result = v.safeParse(schema, value);
    if (result.success) return result.output as v.InferOutput<S>;
    throw new ApiError('invalid_request', describeIssue(target, result.issues[0]));
  });
}

function describeIssue(target: Target, issue: v.BaseIssue<unknown>): string {
  const where = WHERE[target];
  const path = v.getDotPath(issue);
  if (!path) return `${where}: ${issue.message}`;
  if (issue.expected === 'never') return `${where}: unknown field "${path}"`;
  if (issue.received === 'undefined') return `${where} "${path}": required`;
  return `${where} "${path}": ${issue.message}`;
}

/** Decodes UTF-8 and throws on any invalid byte sequence, where `text()` would put U+FFFD. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/** In a `u` regex a surrogate pair is one code point, so this finds only unpaired surrogates. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Refuses a body that is not `application/json` with 415 before anything reads it, then reads
 * it once as RFC 8259 asks: bytes that are not UTF-8 are a 400 (never silently replaced by
 * U+FFFD and stored), and so is a string holding an unpaired surrogate escape such as
 * `"\ud800"`, which no UTF-8 response could give back unchanged. The parsed value is left where
 * Hono's `json` validator reads it, so the body is parsed once.
 */
export function requireJson(): MiddlewareHandler {
  return async function requireJson(c, next) {
    if (!isJson(c.req.header('content-type'))) {
      throw notJson();
    }
    const value = parseJsonBody(await c.req.arrayBuffer());
    c.req.bodyCache.json = Promise.resolve(value);
    await next();
  };
}

function parseJsonBody(bytes: ArrayBuffer): unknown {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    throw new ApiError('invalid_request', 'body: is not valid UTF-8');
  }
  try {
    // Only a `\u` escape can make an unpaired surrogate out of valid UTF-8: check only then.
    return text.includes('\\u') ? JSON.parse(text, refuseLoneSurrogates) : JSON.parse(text);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('invalid_request', 'Malformed JSON in request body');
  }
}

function refuseLoneSurrogates(key: string, value: unknown): unknown {
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new ApiError('invalid_request', 'body: a string holds an unpaired UTF-16 surrogate escape');
  }
  return value;
}

/**
 * A body sent with GET or HEAD is held to the same rules as any other: at most `maxSize` bytes
 * (413) and `application/json` (415). The runtimes hand Hono no body for these methods, so
 * `bodyLimit` never sees one; the declared `Content-Length` and `Content-Type` decide.
 */
export function bodyOnGet(maxSize: number): MiddlewareHandler {
  return async function bodyOnGet(c, next) {
    const length = c.req.header('content-length');
    const hasBody =
      c.req.raw.body !== null ||
      (length !== undefined && length !== '0') ||
      c.req.header('transfer-encoding') !== undefined;
    if ((c.req.method === 'GET' || c.req.method === 'HEAD') && hasBody) {
      if (Number(length) > maxSize) {
        throw tooLarge(maxSize);
      }
      if (!isJson(c.req.header('content-type'))) throw notJson();
    }
    await next();
  };
}

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}
