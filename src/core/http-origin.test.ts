import { expect, test } from 'bun:test';
import { httpOrigin } from './http-origin.ts';

test.each([
  ['::', 'http://[::]:8080'],
  ['::1', 'http://[::1]:8080'],
  ['2001:db8::7', 'http://[2001:db8::7]:8080'],
  ['127.0.0.1', 'http://127.0.0.1:8080'],
  ['0.0.0.0', 'http://0.0.0.0:8080'],
  ['localhost', 'http://localhost:8080'],
])('httpOrigin(%p, 8080) is %p', (host, expected) => {
  expect(httpOrigin(host, 8080)).toBe(expected);
});
