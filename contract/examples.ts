// The contract's 400 examples as requests and answers. Each example's `summary` is a request
// (`METHOD /path` relative to /v1, then the raw JSON body if any) and its `value` the exact Error
// body the server answers to it. src/api/contract.test.ts (the app) and contract/messages.test.ts
// (the binary) send them all, so the documented messages and the real ones cannot drift apart.
import { join } from 'node:path';
import * as v from 'valibot';
import { deref, loadContract } from './json-schema.cjs';

const ErrorExample = v.object({
  summary: v.string(),
  value: v.object({ code: v.literal('invalid_request'), message: v.string(), status: v.literal(400) }),
});
const WithExamples = v.object({
  content: v.object({ 'application/json': v.object({ examples: v.record(v.string(), ErrorExample) }) }),
});
const REQUEST = /^(GET|POST) (\/\S*)(?: (.+))?$/;

export interface BadRequestExample {
  name: string;
  method: 'GET' | 'POST';
  /** Relative to /v1, e.g. `/pets?limit=0`. */
  path: string;
  body: string | undefined;
  expected: { code: 'invalid_request'; message: string; status: 400 };
}

/**
 * Every example of the 400 responses `BadRequest` (listPets, createPet), `GetPetBadRequest` and
 * `OrderBadRequest` (the orders' operations).
 *
 * @example
 * for (const ex of badRequestExamples()) await fetch(`${base}/v1${ex.path}`, { method: ex.method, body: ex.body })
 */
export function badRequestExamples(file = join(import.meta.dir, 'openapi.yaml')): BadRequestExample[] {
  const doc = loadContract(file);
  return ['BadRequest', 'GetPetBadRequest', 'OrderBadRequest'].flatMap((response) => {
    const { content } = v.parse(WithExamples, deref(doc, { $ref: `#/components/responses/${response}` }));
    return Object.entries(content['application/json'].examples).map(([name, { summary, value }]) => {
      const m = REQUEST.exec(summary);
      if (!m) throw new Error(`${response} example ${name}: summary is not "METHOD /path [body]": ${summary}`);
      return { name, method: m[1] as 'GET' | 'POST', path: m[2] as string, body: m[3], expected: value };
    });
  });
}
