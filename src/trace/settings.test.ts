import { describe, expect, test } from 'bun:test';
import { parsePairs, tracesUrl } from './settings.ts';

describe('OTEL_* settings', () => {
  test('key=value pairs, trimmed and percent-decoded; a pair without a key is refused', () => {
    expect(parsePairs('x-token=abc, tenant=a%20b,,empty=')).toEqual({ 'x-token': 'abc', tenant: 'a b', empty: '' });
    expect(parsePairs('')).toEqual({});
    expect(() => parsePairs('novalue')).toThrow('expected key=value, got "novalue"');
    expect(() => parsePairs('=v')).toThrow('expected key=value, got "=v"');
  });

  test('the traces endpoint: the signal one as it is, else the base one with v1/traces', () => {
    expect(tracesUrl('', 'http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('', 'http://collector:4318/otlp/')).toBe('http://collector:4318/otlp/v1/traces');
    expect(tracesUrl('https://otlp.example/t', 'http://collector:4318')).toBe('https://otlp.example/t');
    expect(tracesUrl('', '')).toBeUndefined();
  });
});
