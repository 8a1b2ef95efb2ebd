import { expect, test } from 'bun:test';
import { isUnder } from './paths.ts';

test.each([
  ['/admin/v1', true],
  ['/admin/v1/', true],
  ['/admin/v1/keys/k1', true],
  ['/admin/v10', false],
  ['/admin/v', false],
  ['/admin', false],
  ['/v1/admin/v1', false],
])('isUnder("/admin/v1", %p) is %p', (path, expected) => {
  expect(isUnder('/admin/v1', path)).toBe(expected);
});
