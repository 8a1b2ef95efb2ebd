// `petstore keys list`: consumers and their keys, never a token or a full hash.
import process from 'node:process';
import { keyRecords } from '../keys/file.ts';
import type { KeyRecord } from '../keys/records.ts';
import type { KeysDocument } from '../keys/schemas.ts';
import { KEYS_DATA, KEYS_FILE } from './key-options.ts';
import { withKeys } from './keys-common.ts';
import { HELP, subcommand } from './options.ts';
import { on } from './parsers.ts';

/** A key's state at `now`. */
function keyState(key: KeyRecord, now: number): 'active' | 'expired' | 'pending' {
  if (key.expiresAt !== undefined && now >= key.expiresAt) return 'expired';
  if (key.notBefore !== undefined && now < key.notBefore) return 'pending';
  return 'active';
}

const date = (ms: number | undefined) =>
  ms === undefined ? undefined : new Date(ms).toISOString().replace('.000Z', 'Z');

/**
 * One row per key: consumer, plan, key id, scopes, dates and state.
 *
 * @example
 * listing(records, Date.now()) // [{ consumer: 'acme', plan: 'pro', key: '2026-11', scopes: ['pets:read'], … }]
 */
export function listing(records: readonly KeyRecord[], now: number) {
  return records.map((k) => ({
    consumer: k.consumer.name,
    plan: k.consumer.plan,
    key: k.id,
    scopes: [...k.scopes],
    notBefore: date(k.notBefore) ?? null,
    expiresAt: date(k.expiresAt) ?? null,
    state: keyState(k, now),
  }));
}

export const KEYS_LIST = subcommand(
  {
    name: 'keys list',
    summary: 'Lists consumers, key ids, scopes, dates and state (active, expired, pending); never a token or a hash.',
    options: {
      keys: KEYS_FILE,
      data: KEYS_DATA,
      json: { flag: '--json', help: 'one JSON document instead of a table', fallback: false, parse: on },
      help: HELP,
    },
  },
  async (o, now) => list(await withKeys(o, (admin) => admin.read()), o.json, now),
);

function list(doc: KeysDocument, json: boolean, now: number): number {
  const rows = listing(keyRecords(doc), now);
  const keyless = (doc.consumers ?? []).filter((c) => c.keys.length === 0).map((c) => c.name);
  if (json) {
    process.stdout.write(`${JSON.stringify({ keys: rows, consumersWithoutKeys: keyless }, null, 2)}\n`);
    return 0;
  }
  const table = [
    ['CONSUMER', 'PLAN', 'KEY', 'SCOPES', 'NOT BEFORE', 'EXPIRES AT', 'STATE'],
    ...rows.map((r) => [
      r.consumer,
      r.plan,
      r.key,
      r.scopes.join(','),
      r.notBefore ?? '-',
      r.expiresAt ?? '-',
      r.state,
    ]),
    ...keyless.map((name) => [name, '', '(no keys)', '', '', '', '']),
  ];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  process.stdout.write(
    `${table
      .map((row) =>
        row
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n')}\n`,
  );
  return 0;
}
