// The audit trail of a keys file: `FILE.audit.jsonl` beside it, one JSON record a line, only
// ever appended (fsynced, under the keys file's lock, after the change it records is in place).
import * as fs from 'node:fs';
import { asciiJson } from '../redact.ts';
import type { AuditRecord } from './audit.ts';

/** Mode of a new trail: the owner only, like a new keys file. */
const NEW_FILE_MODE = 0o600;

/** A record as read back, with its line number in the trail (from 1), which pages use as cursor. */
export type NumberedRecord = AuditRecord & { readonly id: number };

/**
 * The trail of the keys file at `keysPath`.
 *
 * @example
 * auditPath('/etc/petstore/keys.json') // '/etc/petstore/keys.json.audit.jsonl'
 */
export function auditPath(keysPath: string): string {
  return `${keysPath}.audit.jsonl`;
}

/** Appends `records` and makes them durable before returning. */
export function appendAudit(keysPath: string, records: readonly AuditRecord[]): void {
  if (records.length === 0) return;
  const fd = fs.openSync(auditPath(keysPath), 'a', NEW_FILE_MODE);
  try {
    fs.writeSync(fd, records.map((r) => `${asciiJson(r)}\n`).join(''));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Up to `limit` records after the `after`-th, oldest first; none when there is no trail yet. A
 * last line cut short (a crash mid-append) is not a record.
 *
 * @example
 * readAudit('/etc/petstore/keys.json', 0, 100)[0]?.action // 'key.add'
 */
export function readAudit(keysPath: string, after = 0, limit = Number.POSITIVE_INFINITY): NumberedRecord[] {
  let text: string;
  try {
    text = fs.readFileSync(auditPath(keysPath), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const records: NumberedRecord[] = [];
  const lines = text.split('\n');
  for (let i = after; i < lines.length && records.length < limit; i++) {
    const line = lines[i] as string;
    if (!line.endsWith('}')) continue;
    try {
      records.push({ id: i + 1, ...(JSON.parse(line) as AuditRecord) });
    } catch {
      // A torn line (a crash mid-append) is skipped, as every reader of the trail does.
    }
  }
  return records;
}
