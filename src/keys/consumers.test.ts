import { describe, expect, test } from 'bun:test';
import { KeysFileError, parseKeys } from './file.ts';
import { rfc3339 } from './schemas.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const acme = (keys: unknown[], extra: object = {}) => ({ name: 'acme', plan: 'pro', ...extra, keys });
const doc = (consumers: unknown[], keys?: unknown[]) => JSON.stringify({ consumers, ...(keys ? { keys } : {}) });

describe('the consumers form', () => {
  test('keys of a consumer share one Consumer; ids default to the hash prefix; limits override the plan', () => {
    const [legacy, k1, k2] = parseKeys(
      JSON.stringify({
        keys: [{ name: 'old', sha256: C, plan: 'free' }],
        consumers: [
          acme(
            [
              { id: '2026-11', sha256: A, scopes: ['pets:read'], expiresAt: '2027-02-20T00:00:00Z' },
              { sha256: B, notBefore: '2027-02-13T00:00:00+01:00' },
            ],
            { limits: { perMinute: 500, perDay: 20000 } },
          ),
        ],
      }),
    );
    expect(legacy).toMatchObject({
      id: 'old',
      scopes: ['pets:read', 'pets:write', 'orders:read', 'orders:write'],
      consumer: { name: 'old' },
    });
    expect(k1).toMatchObject({ id: '2026-11', scopes: ['pets:read'], expiresAt: Date.UTC(2027, 1, 20) });
    expect(k1?.notBefore).toBeUndefined();
    expect(k2).toMatchObject({
      id: 'bbbbbbbb',
      scopes: ['pets:read', 'pets:write', 'orders:read', 'orders:write'],
      notBefore: Date.UTC(2027, 1, 12, 23),
    });
    expect(k1?.consumer).toBe(k2?.consumer as never);
    expect(k1?.consumer).toEqual({
      id: 'con_097190f174413eabfe7a6b4831a511c2',
      adopts: 'key:acme',
      name: 'acme',
      plan: 'pro',
      limits: { perMinute: 500, perDay: 20000 },
      costs: {},
      enforce: true,
    });
  });

  test('a consumer is owned by its id: its own, else derived from its name and first key; a legacy entry adopts its name', () => {
    const own = 'con_0123456789abcdef0123456789abcdef';
    const [legacy, mine, derived, again] = parseKeys(
      JSON.stringify({
        keys: [{ name: 'old', sha256: C, plan: 'free' }],
        consumers: [
          { id: own, ...acme([{ sha256: A }]) },
          { name: 'shop', plan: 'free', keys: [{ sha256: B }] },
          { name: 'zoo', plan: 'free', keys: [] },
        ],
      }),
    ).map((k) => k.consumer);
    expect(legacy).toMatchObject({ id: 'con_879164b7f93dc4422a6962fef2bd57b4', adopts: 'key:old' });
    expect(mine?.id).toBe(own);
    expect(mine?.adopts).toBeUndefined();
    // The same name with another first key (a consumer made again) is another id.
    const [remade] = parseKeys(doc([acme([{ sha256: B }])]));
    expect(remade?.consumer).toMatchObject({ id: 'con_1d8a11d1bf1af0be848f379e8e4c8323', adopts: 'key:acme' });
    expect(derived?.id).toMatch(/^con_[0-9a-f]{32}$/);
    expect(again).toBeUndefined(); // zoo has no key, so no record
    expect(() =>
      parseKeys(
        doc([
          { id: own, ...acme([{ sha256: A }]) },
          { id: own, name: 'shop', plan: 'free', keys: [] },
        ]),
      ),
    ).toThrow(
      new KeysFileError(
        `consumers[1] ("shop").id: "${own}" is also the id of consumer "acme"; each consumer needs its own`,
      ),
    );
    expect(() => parseKeys(doc([{ id: 'con_x', ...acme([{ sha256: A }]) }]))).toThrow(
      new KeysFileError('consumers[0] ("acme").id: must be "con_" and 32 lowercase hex digits, got "con_x"'),
    );
  });

  test("a consumer without limits takes its plan's", () => {
    const [k] = parseKeys(doc([{ name: 'x', plan: 'free', keys: [{ sha256: A }] }]));
    expect(k?.consumer.limits).toEqual({ perMinute: 60, perDay: 1000 });
  });

  test.each([
    [
      doc([acme([{ sha256: A, expiresAt: '2027-13-01' }])]),
      'consumers[0] ("acme").keys[0].expiresAt: must be an RFC 3339 date-time such as 2027-02-20T00:00:00Z, got "2027-13-01"',
    ],
    [
      doc([acme([{ sha256: A, notBefore: '2027-02-30T00:00:00Z' }])]),
      'consumers[0] ("acme").keys[0].notBefore: must be an RFC 3339 date-time such as 2027-02-20T00:00:00Z, got "2027-02-30T00:00:00Z"',
    ],
    [
      doc([acme([{ sha256: A, scopes: ['pets:read', 'pets:admin'] }])]),
      'consumers[0] ("acme").keys[0].scopes[1]: must be one of pets:read, pets:write, orders:read, orders:write, admin, got "pets:admin"',
    ],
    [
      doc([acme([{ sha256: A }, { sha256: A }])]),
      'consumers[0] ("acme").keys[1].sha256: "aaaaaaaa…" is also the hash of consumers[0] ("acme").keys[0]',
    ],
    [
      doc([acme([{ sha256: A }])], [{ name: 'old', sha256: A, plan: 'free' }]),
      'consumers[0] ("acme").keys[0].sha256: "aaaaaaaa…" is also the hash of keys[0] ("old")',
    ],
    [
      doc([
        acme([
          { id: 'k', sha256: A },
          { id: 'k', sha256: B },
        ]),
      ]),
      'consumers[0] ("acme").keys[1].id: "k" is also the id of another key of "acme"',
    ],
    [
      doc([acme([{ sha256: A }])], [{ name: 'acme', sha256: B, plan: 'free' }]),
      'consumers[0] ("acme").name: "acme" is also the name of keys[0] ("acme"), a {"keys":[...]} entry; each consumer needs its own name',
    ],
    [
      doc([acme([{ sha256: A }]), acme([{ sha256: B }])]),
      'consumers[1] ("acme").name: "acme" is also the name of consumers[0] ("acme"); each consumer needs its own name',
    ],
    [
      doc([acme([{ sha256: A, notBefore: '2027-02-20T00:00:00Z', expiresAt: '2027-02-20T00:00:00Z' }])]),
      'consumers[0] ("acme").keys[0].notBefore: "2027-02-20T00:00:00Z" is not before expiresAt "2027-02-20T00:00:00Z"',
    ],
    [doc([{ name: 'e', plan: 'enterprise', keys: [] }]), 'consumers[0] ("e").limits: required for the enterprise plan'],
    [doc([acme([{ sha256: A, token: 'psk_x' }])]), 'consumers[0] ("acme").keys[0].token: '],
  ])('refuses %s', (text, message) => {
    expect(() => parseKeys(text)).toThrow(KeysFileError);
    expect(() => parseKeys(text)).toThrow(message);
  });
});

test.each([
  ['2027-02-20T00:00:00Z', Date.UTC(2027, 1, 20)],
  ['2027-02-20T01:30:00.5+01:30', Date.UTC(2027, 1, 20, 0, 0, 0, 500)],
  ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
  ['2027-02-29T00:00:00Z', Number.NaN],
  ['2027-02-20', Number.NaN],
  ['2027-02-20T24:00:00Z', Number.NaN],
  ['2027-02-20 00:00:00Z', Number.NaN],
])('rfc3339(%p) = %p', (text, ms) => {
  expect(rfc3339(text)).toBe(ms);
});
