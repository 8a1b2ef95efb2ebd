import { describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addKey, importConsumer, revokeKey, rotateKeys, withConsumerIds } from './document-edits.ts';
import { KeysFileError, parseKeys } from './file.ts';
import { readKeysDocument, withLock, writeKeysDocument } from './locked-file.ts';
import type { KeysDocument } from './schemas.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const NOW = Date.UTC(2027, 1, 13);
const DAY = 86_400_000;

describe('addKey', () => {
  test('makes the consumer when missing, then adds to it; a plan change is refused', () => {
    const one = addKey({}, 'acme', { plan: 'pro' }, { sha256: A, scopes: ['pets:read'] });
    const two = addKey(one, 'acme', {}, { sha256: B, id: 'b' });
    // A consumer made is given a new id of its own, kept by every change after.
    const id = one.consumers?.[0]?.id;
    expect(id).toMatch(/^con_[0-9a-f]{32}$/);
    expect(addKey({}, 'acme', { plan: 'pro' }, { sha256: A }).consumers?.[0]?.id).not.toBe(id);
    expect(two).toEqual({
      consumers: [
        {
          id,
          name: 'acme',
          plan: 'pro',
          keys: [
            { sha256: A, scopes: ['pets:read'] },
            { id: 'b', sha256: B },
          ],
        },
      ],
    });
    expect(() => addKey(two, 'acme', { plan: 'free' }, { sha256: C })).toThrow(
      '--plan: consumer "acme" is on the pro plan, not free; change its plan in the file',
    );
    expect(() => addKey({}, 'new', {}, { sha256: C })).toThrow('--plan: needed to create consumer "new"');
  });

  test('moves a legacy entry of that name into consumers, keeping its id, plan and limits', () => {
    const doc: KeysDocument = {
      keys: [
        { name: 'acme', sha256: A, plan: 'pro', limits: { perMinute: 5, perDay: 50 } },
        { name: 'other', sha256: C, plan: 'free' },
      ],
    };
    const after = addKey(doc, 'acme', {}, { sha256: B });
    expect(after).toEqual({
      keys: [{ name: 'other', sha256: C, plan: 'free' }],
      consumers: [
        {
          // The id the gateway derived for the entry, so its orders stay its own.
          id: 'con_097190f174413eabfe7a6b4831a511c2',
          name: 'acme',
          plan: 'pro',
          limits: { perMinute: 5, perDay: 50 },
          keys: [{ id: 'acme', sha256: A }, { sha256: B }],
        },
      ],
    });
    expect(parseKeys(JSON.stringify(after)).map((k) => [k.consumer.name, k.id])).toEqual([
      ['other', 'other'],
      ['acme', 'acme'],
      ['acme', 'bbbbbbbb'],
    ]);
  });
});

describe('rotateKeys', () => {
  test('current keys expire at now + overlap (sooner ones and expired ones keep theirs); the new key inherits scopes', () => {
    const doc: KeysDocument = {
      consumers: [
        {
          name: 'acme',
          plan: 'pro',
          keys: [
            { id: 'long', sha256: A, scopes: ['pets:read'], expiresAt: '2030-01-01T00:00:00Z' },
            { id: 'soon', sha256: B, scopes: ['pets:read'], expiresAt: '2027-02-14T00:00:00Z' },
            { id: 'dead', sha256: C, expiresAt: '2027-01-01T00:00:00Z' },
          ],
        },
      ],
    };
    const after = rotateKeys(doc, 'acme', NOW, 7 * DAY, { sha256: 'd'.repeat(64), id: 'new' });
    expect(after.consumers?.[0]?.keys).toEqual([
      { id: 'long', sha256: A, scopes: ['pets:read'], expiresAt: '2027-02-20T00:00:00Z' },
      { id: 'soon', sha256: B, scopes: ['pets:read'], expiresAt: '2027-02-14T00:00:00Z' },
      { id: 'dead', sha256: C, expiresAt: '2027-01-01T00:00:00Z' },
      { id: 'new', sha256: 'd'.repeat(64), scopes: ['pets:read'] },
    ]);
  });

  test('an unknown consumer is refused', () => {
    expect(() => rotateKeys({}, 'ghost', NOW, DAY, { sha256: A })).toThrow(KeysFileError);
  });
});

test('revokeKey removes one key by id and keeps the consumer', () => {
  const doc = addKey(addKey({}, 'acme', { plan: 'free' }, { sha256: A, id: 'one' }), 'acme', {}, { sha256: B });
  expect(revokeKey(doc, 'acme', 'bbbbbbbb', Date.now()).consumers).toEqual([
    // The id addKey gave it stays.
    { id: doc.consumers?.[0]?.id, name: 'acme', plan: 'free', keys: [{ id: 'one', sha256: A }] },
  ]);
  expect(() => revokeKey(doc, 'acme', 'two', Date.now())).toThrow(
    '--key: consumer "acme" has no key "two" (it has: one, bbbbbbbb)',
  );
});

test("a change writes each consumer's id as it was before the change: revoking the first key keeps it", () => {
  const before: KeysDocument = {
    consumers: [
      {
        name: 'acme',
        plan: 'pro',
        keys: [
          { id: 'one', sha256: A },
          { id: 'two', sha256: B },
        ],
      },
      { name: 'zoo', plan: 'free', keys: [] },
    ],
  };
  const after = withConsumerIds(before, revokeKey(before, 'acme', 'one', NOW));
  // The id derived from acme's first key in `before` (A), not from the B it is left with.
  expect(after.consumers?.map((c) => [c.name, c.id?.length, c.keys.length])).toEqual([
    ['acme', 36, 1],
    ['zoo', 36, 0],
  ]);
  expect(after.consumers?.[0]?.id).toBe('con_097190f174413eabfe7a6b4831a511c2');
  expect(parseKeys(JSON.stringify(after))[0]?.consumer).toMatchObject({
    id: 'con_097190f174413eabfe7a6b4831a511c2',
  });
  // Every consumer with an id: nothing to write.
  expect(withConsumerIds(after)).toBe(after);
});

test('an imported consumer keeps the id its keys file gave it: its own, else the one derived from its first key', () => {
  const own = 'con_0123456789abcdef0123456789abcdef';
  const one = importConsumer({}, { name: 'acme', plan: 'pro', keys: [{ sha256: A }] });
  const two = importConsumer(one, { id: own, name: 'shop', plan: 'free', keys: [{ sha256: B }] });
  expect(two.consumers?.map((c) => [c.name, c.id])).toEqual([
    ['acme', 'con_097190f174413eabfe7a6b4831a511c2'],
    ['shop', own],
  ]);
});

test('revokeKey keeps the hash as a tombstone for 90 days: the gateway knows the token as revoked, never admits it', () => {
  const doc = addKey(
    addKey({}, 'acme', { plan: 'free' }, { sha256: A, id: 'one' }),
    'acme',
    {},
    { sha256: B, id: 'two' },
  );
  const t0 = Date.parse('2027-01-01T00:00:00Z');
  const once = revokeKey(doc, 'acme', 'one', t0);
  expect(once.revoked).toEqual([{ sha256: A, consumer: 'acme', key: 'one', revokedAt: '2027-01-01T00:00:00.000Z' }]);
  const records = parseKeys(JSON.stringify(once));
  expect(records.map((r) => [r.id, r.revokedAt])).toEqual([
    ['two', undefined],
    ['one', t0],
  ]);
  // A change 90 days later drops the tombstone.
  const later = revokeKey(once, 'acme', 'two', t0 + 90 * 86_400_000);
  expect(later.revoked?.map((t) => t.key)).toEqual(['two']);
});

describe('the keys file on disk', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'petstore-keys-unit-'));

  test('a write replaces the file whole, keeps its mode and leaves no temporary file behind', () => {
    const d = dir();
    const path = join(d, 'keys.json');
    writeFileSync(path, '{"keys":[]}', { mode: 0o640 });
    writeKeysDocument(path, { consumers: [{ name: 'acme', plan: 'free', keys: [{ sha256: A }] }] });
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(readKeysDocument(path)).toEqual({ consumers: [{ name: 'acme', plan: 'free', keys: [{ sha256: A }] }] });
    expect(readFileSync(path, 'utf8').endsWith('\n')).toBe(true);
    expect(readdirSync(d)).toEqual(['keys.json']);
  });

  test('a document the server would refuse is never written', () => {
    const path = join(dir(), 'keys.json');
    writeFileSync(path, '{"keys":[]}', { mode: 0o600 });
    const dup: KeysDocument = { consumers: [{ name: 'acme', plan: 'free', keys: [{ sha256: A }, { sha256: A }] }] };
    expect(() => writeKeysDocument(path, dup)).toThrow(KeysFileError);
    expect(readFileSync(path, 'utf8')).toBe('{"keys":[]}');
  });

  test('a missing file reads as no consumers', () => {
    expect(readKeysDocument(join(dir(), 'none.json'))).toEqual({ consumers: [] });
  });

  test('a lock left by a process that is gone is taken over; the lock is removed after', async () => {
    const path = join(dir(), 'keys.json');
    writeFileSync(`${path}.lock`, '2147483646\n');
    expect(await withLock(path, () => 'ran')).toBe('ran');
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  test('runs under one lock do not overlap', async () => {
    const path = join(dir(), 'keys.json');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        withLock(path, async () => {
          inside++;
          most = Math.max(most, inside);
          await Bun.sleep(10);
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
  });
});
