import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { type ConversionConfig, toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { badRequestExamples } from '../../contract/examples.ts';
import { deref, type JsonSchema, loadContract, toDraft07 } from '../../contract/json-schema.cjs';
import { failingStore } from '../../test/fake-store.ts';
import { testApp } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { ErrorBody } from '../core/api-error.ts';
import { NewOrder, OrderStatus } from '../core/order-records.ts';
import { MAX_ID, NAME_MAX_LENGTH, NewPet, Pet, PetStatus } from '../core/pet-records.ts';
import { RateLimitStatus } from '../core/rate-limit-status.ts';
import { SlidingWindowLimiter } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { CURSOR_PATTERN, MUST_BE, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from './schemas.ts';
import { NOT_AN_OBJECT, NOT_JSON } from './validate.ts';

const doc = loadContract(join(import.meta.dir, '../../contract/openapi.yaml'));

/** A contract schema as draft-07, keeping `default` (it is behaviour: the server applies it). */
const fromContract = (name: string) =>
  normalise(toDraft07(doc, { $ref: `#/components/schemas/${name}` }, { keep: ['default'] }));

/**
 * The valibot name check counts Unicode code points, as JSON Schema's `maxLength` does, but
 * to-json-schema cannot know that. It is converted to `maxLength` only if it behaves like one:
 * 100 emoji (200 UTF-16 units) pass, 101 characters fail. Any other custom check fails the test.
 */
const overrideAction: ConversionConfig['overrideAction'] = ({ valibotAction, jsonSchema }) => {
  if (valibotAction.type !== 'check') return undefined;
  const check = valibotAction as unknown as v.CheckAction<string, string>;
  const behavesAsMaxLength =
    check.requirement('😀'.repeat(NAME_MAX_LENGTH)) &&
    !check.requirement('😀'.repeat(NAME_MAX_LENGTH + 1)) &&
    !check.requirement('a'.repeat(NAME_MAX_LENGTH + 1));
  if (!behavesAsMaxLength)
    throw new Error(
      `a check in src/core/pet-records.ts or src/api/schemas.ts has no JSON Schema equivalent: ${check.message}`,
    );
  return { ...jsonSchema, maxLength: NAME_MAX_LENGTH };
};

const fromValibot = (schema: v.GenericSchema) =>
  normalise(toJsonSchema(schema, { errorMode: 'throw', overrideAction }) as JsonSchema);

/** Drops what does not validate and sorts what is unordered, so equal schemas compare equal. */
function normalise(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(normalise);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$schema' || key === 'description') continue;
    out[key] = key === 'required' || key === 'enum' ? [...(value as string[])].sort() : normalise(value);
  }
  return out;
}

describe('the valibot schemas and the contract agree', () => {
  test.each([
    ['PetStatus', PetStatus],
    ['NewPet', NewPet],
    ['Pet', Pet],
    ['Error', ErrorBody],
    ['RateLimitStatus', RateLimitStatus],
    ['OrderStatus', OrderStatus],
    ['NewOrder', NewOrder],
  ] as const)('%s', (name, schema) => {
    expect(fromValibot(schema)).toEqual(fromContract(name));
  });

  test('the parameters carry the same limits as src/core/pet-records.ts and src/api/schemas.ts', () => {
    const Limits = v.object({ schema: v.record(v.string(), v.unknown()) });
    const { components, paths } = v.parse(
      v.object({
        components: v.object({ parameters: v.object({ limit: Limits, cursor: Limits }) }),
        paths: v.object({ '/pets/{petId}': v.object({ get: v.object({ parameters: v.tuple([Limits]) }) }) }),
      }),
      doc,
    );
    expect(components.parameters.limit.schema).toMatchObject({
      minimum: 1,
      maximum: PAGE_SIZE_MAX,
      default: PAGE_SIZE_DEFAULT,
    });
    expect(components.parameters.cursor.schema.pattern).toBe(CURSOR_PATTERN.source);
    expect(paths['/pets/{petId}'].get.parameters[0].schema).toMatchObject({ minimum: 1, maximum: MAX_ID });
  });
});

describe("the contract's 400 examples are the server's messages, word for word", () => {
  const cases = badRequestExamples();

  test.each(cases)('$name: $method $path', async ({ method, path, body, expected }) => {
    const t = testApp({ keys: [{ name: 'qa', plan: 'business' }] });
    const res = await t.app.request(`/v1${path}`, {
      method,
      headers: { ...t.auth(), 'Content-Type': 'application/json' },
      body,
    });
    expect(await res.json()).toEqual(expected);
    expect(res.status).toBe(400);
  });

  test('every kind of message the server builds is among them', () => {
    const messages = new Set(cases.map((c) => c.expected.message));
    const kinds = [
      NOT_AN_OBJECT,
      NOT_JSON,
      'categoryId: must be ',
      'categoryId: is required; must be ',
      'name: must be ',
      'name: is required; must be ',
      'limit: must be ',
      'limit: must be given once, as ',
      'status: must be ',
      'status: must be given once, as ',
      'cursor: must be ',
      'petId: must be ',
      ': is not a field of the body; its fields are ',
    ];
    for (const kind of kinds) expect([kind, [...messages].some((m) => m.includes(kind))]).toEqual([kind, true]);
    const fields = Object.keys(MUST_BE).filter((f) => f !== 'Idempotency-Key');
    for (const field of fields) {
      expect([field, [...messages].some((m) => m === `${field}: must be ${MUST_BE[field]}.`)]).toEqual([field, true]);
    }
  });
});

describe('the documented 500, which no black-box test can provoke', () => {
  const failing = failingStore(() => new Error('disk on fire'), { pingOk: true });

  const token = 'psk_contract-test-500';
  const keys = new KeyTable(
    parseKeys(JSON.stringify({ keys: [{ name: 'qa', plan: 'pro', sha256: hashToken(token).toString('hex') }] })),
  );
  const app = createApp({
    store: failing,
    keyTable: () => keys,
    limiter: new SlidingWindowLimiter({ clock: { now: Date.now } }),
  });

  test.each([
    ['GET', '/v1/pets', 'listPets'],
    ['POST', '/v1/pets', 'createPet'],
    ['GET', '/v1/pets/1', 'getPet'],
  ])('%s %s answers the Error body with the rate-limit headers', async (method, path) => {
    const res = await app.request(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: method === 'POST' ? JSON.stringify({ name: 'Rex', categoryId: 1 }) : undefined,
    });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(v.parse(ErrorBody, await res.json())).toEqual({
      code: 'internal_error',
      message: 'The server failed to handle the request.',
      status: 500,
    });
    // Optional on a 500 (a failure may come before the limiter decided); here it came after.
    const documented = v.parse(
      v.object({ headers: v.record(v.string(), v.unknown()) }),
      deref(doc, { $ref: '#/components/responses/InternalError' }),
    );
    for (const name of Object.keys(documented.headers)) expect(res.headers.get(name)).not.toBeNull();
  });
});
