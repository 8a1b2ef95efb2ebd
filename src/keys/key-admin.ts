// Where `petstore keys` and the admin API read and change consumers and keys: the keys file
// (under its lock, atomically) or the data store (`--keys store`). Every change is one unit with
// its audit record: both are there, or neither.
import type { KeyStore, StoredConsumer } from '../store/key-store.ts';
import { type AuditRecord, auditRecord } from './audit.ts';
import { type NumberedRecord, readAudit } from './audit-file.ts';
import { withConsumerIds } from './document-edits.ts';
import { keyRecords, parseDocument } from './file.ts';
import { changeKeysFile, type KeysFileChange, readKeysDocument } from './locked-file.ts';
import type { KeysDocument } from './schemas.ts';

export type { NumberedRecord };

export interface KeyAdmin {
  /** Every consumer and key as they are now (hashes included: never shown). */
  read(): Promise<KeysDocument>;
  /**
   * Applies one change with its audit record; resolves to the record, or undefined when the
   * edit returned the document it was given (nothing to change, nothing recorded).
   */
  change(change: KeysFileChange, now: number): Promise<AuditRecord | undefined>;
  /** Lets go of what it holds (the CLI's database connection). */
  close(): Promise<void>;
  /** Up to `limit` records after the record `after`, oldest first. */
  audit(after: number, limit: number): Promise<NumberedRecord[]>;
}

/**
 * Over a keys file. After a change it calls `changed`, so a server reloads at once and the change
 * is in force before its answer is sent (its watcher would find it within a second anyway).
 *
 * @example
 * const admin = fileKeyAdmin('/etc/petstore/keys.json', () => watcher.reload('admin API'))
 */
export function fileKeyAdmin(path: string, changed: () => unknown = () => {}): KeyAdmin {
  return {
    read: async () => readKeysDocument(path),
    async change(change, now) {
      const record = await changeKeysFile(path, change, now);
      await changed();
      return record;
    },
    audit: async (after, limit) => readAudit(path, after, limit),
    close: async () => {},
  };
}

/**
 * Over the data store: the change and its record in one transaction, validated as a keys file
 * is (a change that would make a bad file is refused, nothing written).
 *
 * @example
 * const admin = storeKeyAdmin(store.keyStore(), () => watcher.sync('admin API'))
 */
export function storeKeyAdmin(
  store: KeyStore,
  changed: () => unknown = () => {},
  close: () => Promise<void> = async () => {},
): KeyAdmin {
  return {
    read: async () => documentOf((await store.read()).consumers),
    async change(change, now) {
      let record: AuditRecord | undefined;
      await store.change((consumers) => {
        const before = documentOf(consumers);
        const edited = change.edit(before);
        if (edited === before) return { consumers, records: [] };
        const after = withConsumerIds(before, edited);
        keyRecords(parseDocument(JSON.stringify(after)));
        record = auditRecord(change.actor, change.action, change.consumer, change.key, before, after, now);
        return { consumers: after.consumers ?? [], records: [record] };
      });
      if (record) await changed();
      return record;
    },
    audit: async (after, limit) =>
      (await store.audit(after, limit)).map(({ id, record }) => ({ id, ...(record as AuditRecord) })),
    close,
  };
}

/**
 * Stores an id for each stored consumer that has none (`withConsumerIds`), in one change with no
 * audit record (what a consumer may do is unchanged). Resolves to whether anything was written.
 */
export async function storeConsumerIdsIn(store: KeyStore): Promise<boolean> {
  let written = false;
  await store.change((consumers) => {
    const before = documentOf(consumers);
    const after = withConsumerIds(before);
    written = after !== before;
    return { consumers: written ? (after.consumers ?? []) : consumers, records: [] };
  });
  return written;
}

/** The stored consumers as a keys document, checked as a keys file is. */
export function documentOf(consumers: readonly StoredConsumer[]): KeysDocument {
  return parseDocument(JSON.stringify({ consumers }));
}
