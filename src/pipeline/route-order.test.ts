import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { byRouteOrder } from './route-order.ts';

const COUNT = { path: '/pets/count', answer: 'count' };
const PET = { path: '/pets/:petId', answer: 'pet' };
const LIST = { path: '/pets', answer: 'list' };

/** A Hono app with the entries registered as the service registers its tables. */
function appOf(table: readonly (typeof COUNT)[]) {
  const app = new Hono();
  for (const entry of byRouteOrder(table)) app.get(entry.path, (c) => c.text(entry.answer));
  return app;
}

describe('byRouteOrder', () => {
  test.each([
    ['the static path first', [LIST, COUNT, PET]],
    ['the parameter first', [LIST, PET, COUNT]],
    ['the parameter before the list', [PET, COUNT, LIST]],
  ])('a static path beside a parameter is served whatever the table order: %s', async (_, table) => {
    const app = appOf(table);
    const answers = await Promise.all(
      ['/pets/count', '/pets/7', '/pets'].map(async (path) => (await app.request(path)).text()),
    );
    expect(answers).toEqual(['count', 'pet', 'list']);
  });

  test('entries whose paths do not overlap keep the table order', () => {
    const table = [{ path: '/b' }, { path: '/a' }, { path: '/b/:id' }, { path: '/a/:id' }];
    expect(byRouteOrder(table).map((e) => e.path)).toEqual(['/b', '/a', '/b/:id', '/a/:id']);
  });
});
