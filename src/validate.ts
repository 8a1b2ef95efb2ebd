import type { MiddlewareHandler } from 'hono';
import { validator } from 'hono/validator';
import * as v from 'valibot';
import { ApiError } from './errors.ts';

type Target = 'json' | 'query' | 'param';
type AnySchema = v.GenericSchema;

const WHERE: Record<Target, string> = { json: 'body', query: 'query parameter', param: 'path parameter' };

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

/** Refuses a body that is not `application/json` with 415 before anything reads it. */
export function requireJson(): MiddlewareHandler {
  return async function requireJson(c, next) {
    const type = c.req.header('content-type')?.split(';', 1)[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      throw new ApiError('unsupported_media_type', 'The request body must be application/json.');
    }
    await next();
  };
}
