import { describe, expect, test } from 'bun:test';
import { auditRecord, changedFields, consumerView } from './audit.ts';
import { addKey, revokeKey, rotateKeys } from './document-edits.ts';
import type { KeysDocument } from './schemas.ts';

const H1 = '1'.repeat(64);
const H2 = '2'.repeat(64);
const cli = { kind: 'cli', user: 'ops' } as const;
const NOW = Date.UTC(2026, 10, 24);

describe('audit records', () => {
  test('a key added to a new consumer: the whole consumer after, null before; no hash anywhere', () => {
    const before: KeysDocument = { consumers: [] };
    const after = addKey(before, 'acme', { plan: 'pro' }, { sha256: H1, id: 'k1', scopes: ['pets:read'] });
    const record = auditRecord(cli, 'key.add', 'acme', 'k1', before, after, NOW);
    expect(record).toEqual({
      at: '2026-11-24T00:00:00.000Z',
      actor: cli,
      action: 'key.add',
      consumer: 'acme',
      key: 'k1',
      before: null,
      after: { plan: 'pro', keys: { k1: { scopes: ['pets:read'] } } },
    });
    expect(JSON.stringify(record)).not.toContain(H1.slice(0, 16));
  });

  test("a rotation: the new key and the old key's new expiresAt, nothing else", () => {
    const before = addKey({ consumers: [] }, 'acme', { plan: 'free' }, { sha256: H1, id: 'old' });
    const after = rotateKeys(before, 'acme', NOW, 7 * 86_400_000, { sha256: H2, id: 'new' });
    expect(changedFields(consumerView(before, 'acme'), consumerView(after, 'acme'))).toEqual([
      { keys: { old: {}, new: null } },
      { keys: { old: { expiresAt: '2026-12-01T00:00:00Z' }, new: {} } },
    ]);
  });

  test('a revocation of a {"keys":[...]} entry: the key before, null after', () => {
    const before: KeysDocument = { keys: [{ name: 'legacy', sha256: H1, plan: 'free' }] };
    const after = revokeKey(before, 'legacy', 'legacy', Date.now());
    const record = auditRecord(cli, 'key.revoke', 'legacy', 'legacy', before, after, NOW);
    expect([record.before, record.after]).toEqual([{ keys: { legacy: {} } }, { keys: { legacy: null } }]);
  });

  test('a plan change shows the plan only', () => {
    expect(changedFields({ plan: 'free', keys: {} }, { plan: 'pro', keys: {} })).toEqual([
      { plan: 'free' },
      { plan: 'pro' },
    ]);
  });
});
