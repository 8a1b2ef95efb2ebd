/**
 * Where the admin API reads and changes consumers and keys: the keys file (under its lock,
 * atomically, as `petstore keys` does) or the data store. Every change is one unit with its
 * audit record: both are there, or neither.
 */
import type { AuditRecord } from '../gateway/keys/audit.ts';
import { type NumberedRecord, readAudit } from '../gateway/keys/audit-file.ts';
import type { KeysDocument } from '../gateway/keys/schema.ts';
import { changeKeysFile, type KeysFileChange, readKeysDocument } from '../gateway/keys/store-file.ts';

export type { NumberedRecord };

export interface KeyAdmin {
  /** Every consumer and key as they are now (hashes included: never answered). */
  read(): Promise<KeysDocument>;
  /** Applies one change with its audit record; resolves to the record. */
  change(change: KeysFileChange, now: number): Promise<AuditRecord>;
  /** Up to `limit` records after the record `after`, oldest first. */
  audit(after: number, limit: number): Promise<NumberedRecord[]>;
}

/**
 * The admin API over a keys file. After a change it calls `changed` (the server reloads at once,
 * so the change is in force on this instance when its answer is sent; the watcher would find it
 * within a second anyway).
 *
 * @example
 * const admin = fileKeyAdmin('/etc/petstore/keys.json', () => watcher.reload('admin API'))
 */
export function fileKeyAdmin(path: string, changed: () => void): KeyAdmin {
  return {
    read: async () => readKeysDocument(path),
    async change(change, now) {
      const record = await changeKeysFile(path, change, now);
      changed();
      return record;
    },
    audit: async (after, limit) => readAudit(path, after, limit),
  };
}
