import { describe, expect, test } from 'bun:test';
import { KeysFileError, parseKeys } from './file.ts';
import { costProblem, PLAN_LIMITS, PLAN_TERMS } from './plans.ts';

const A = 'a'.repeat(64);
const consumer = (fields: Record<string, unknown>) =>
  JSON.stringify({ consumers: [{ name: 'acme', plan: 'pro', keys: [{ sha256: A }], ...fields }] });

describe('monthly quotas, costs and report-only in the keys file', () => {
  test("a consumer's terms: its own costs over its plan's, enforce by default, perMonth beside the others", () => {
    const [k] = parseKeys(
      consumer({ limits: { perMinute: 100, perDay: 1000, perMonth: 20000 }, costs: { createPet: 5 }, enforce: false }),
    );
    expect(k?.consumer).toEqual({
      id: 'con_097190f174413eabfe7a6b4831a511c2',
      adopts: 'key:acme',
      name: 'acme',
      plan: 'pro',
      limits: { perMinute: 100, perDay: 1000, perMonth: 20000 },
      costs: { createPet: 5 },
      enforce: false,
    });
    const [plain] = parseKeys(consumer({}));
    expect([plain?.consumer.costs, plain?.consumer.enforce, plain?.consumer.limits.perMonth]).toEqual([
      {},
      true,
      undefined,
    ]);
  });

  test.each([
    [
      { costs: { createPets: 5 } },
      'consumers[0] ("acme").costs.createPets: must name an operation that costs something: listPets, createPet, getPet, updatePet, deletePet, getInventory, placeOrder, listOrders, getOrder, completeOrder, cancelOrder, got "createPets"',
    ],
    [
      { costs: { getRateLimit: 1 } },
      'consumers[0] ("acme").costs.getRateLimit: must name an operation that costs something: listPets, createPet, getPet, updatePet, deletePet, getInventory, placeOrder, listOrders, getOrder, completeOrder, cancelOrder, got "getRateLimit"',
    ],
    [
      { costs: { createPet: 0 } },
      'consumers[0] ("acme").costs.createPet: must be an integer from 1 to 1000000000, got 0',
    ],
    [
      { costs: { createPet: 1.5 } },
      'consumers[0] ("acme").costs.createPet: must be an integer from 1 to 1000000000, got 1.5',
    ],
    [
      { costs: { createPet: 301 } },
      'consumers[0] ("acme").costs.createPet: 301 is more than the perMinute quota (300), so no such request could ever be admitted',
    ],
    [
      { limits: { perMinute: 100, perDay: 1000, perMonth: 40 }, costs: { listPets: 50 } },
      'consumers[0] ("acme").costs.listPets: 50 is more than the perMonth quota (40), so no such request could ever be admitted',
    ],
    [
      { limits: { perMinute: 100, perDay: 1000, perMonth: 0 } },
      'consumers[0] ("acme").limits.perMonth: must be an integer from 1 to 1000000000, got 0',
    ],
    [{ enforce: 'no' }, 'consumers[0] ("acme").enforce: must be true or false, got "no"'],
  ])('refuses %j', (fields, message) => {
    expect(() => parseKeys(consumer(fields))).toThrow(KeysFileError);
    expect(() => parseKeys(consumer(fields))).toThrow(message);
  });

  test('a {"keys":[...]} entry takes the same terms', () => {
    const text = JSON.stringify({
      keys: [{ name: 'old', sha256: A, plan: 'free', costs: { listPets: 2 }, enforce: false }],
    });
    expect(parseKeys(text)[0]?.consumer).toMatchObject({ costs: { listPets: 2 }, enforce: false });
  });
});

test("every seed plan's terms fit its quotas, and none sets a month, costs or report-only", () => {
  for (const [plan, limits] of Object.entries(PLAN_LIMITS)) {
    expect([plan, costProblem(plan, limits, PLAN_TERMS[plan as keyof typeof PLAN_LIMITS].costs)]).toEqual([
      plan,
      undefined,
    ]);
    expect([plan, limits.perMonth]).toEqual([plan, undefined]);
  }
  expect(Object.values(PLAN_TERMS)).toEqual([{}, {}, {}, {}]);
});
