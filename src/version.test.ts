import { describe, expect, test } from 'bun:test';
import pkg from '../package.json' with { type: 'json' };
import { COMMIT, TARGET, VERSION, versionLine } from './version.ts';

describe('version', () => {
  test('is the version package.json releases', () => {
    expect(VERSION).toBe(pkg.version);
  });

  test('a run from source has no build stamp and says so', () => {
    expect([COMMIT, TARGET]).toEqual(['unknown', 'source']);
    expect(versionLine()).toBe(`petstore ${pkg.version} (commit unknown, target source)\n`);
  });
});
