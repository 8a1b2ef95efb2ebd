// `petstore backup` and `petstore restore`: a consistent copy of a live store (with the keys file
// and its audit trail next to it, when they are files), and the restore, which moves the pet id
// sequence past every id the store may have issued after the copy (src/store/backup.ts).
import * as fs from 'node:fs';
import process from 'node:process';
import { auditPath } from '../keys/audit-file.ts';
import { withLock } from '../keys/locked-file.ts';
import {
  type BackupResult,
  backupPostgres,
  backupSqlite,
  DEFAULT_ID_GAP,
  isPostgres,
  restorePostgres,
  restoreSqlite,
} from '../store/backup.ts';
import { ConfigError, HELP, subcommand } from './options.ts';
import { int, text } from './parsers.ts';

/** `--data`: the store, read like the server's option (PETSTORE_DATA). */
export const STORE_DATA = {
  flag: '--data',
  env: 'PETSTORE_DATA',
  arg: 'URL',
  help: 'the store: a SQLite file or a postgres:// URL',
  fallback: '',
  required: true,
  parse: text,
};

/** Where a backup keeps the keys file (and, beside it, its audit trail): named after the backup. */
const backupKeysPath = (backup: string) => `${backup}.keys.json`;

/** Copies `from` to a new file `to` with `from`'s mode (and owner, when run as root), fsynced. */
function copyKept(from: string, to: string): void {
  fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL);
  const st = fs.statSync(from);
  fs.chmodSync(to, st.mode & 0o7777);
  if (process.getuid?.() === 0) fs.chownSync(to, st.uid, st.gid);
  const fd = fs.openSync(to, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Copies the keys file `keys` and its audit trail to `to` and its trail, under the file's lock. */
async function copyKeys(keys: string, to: string): Promise<string[]> {
  return withLock(keys, () => {
    const copied: string[] = [];
    for (const [from, dest] of [
      [keys, to],
      [auditPath(keys), auditPath(to)],
    ] as const) {
      if (!fs.existsSync(from)) continue;
      copyKept(from, dest);
      copied.push(dest);
    }
    return copied;
  });
}

const keysFile = (keys: string) => (keys && keys !== 'store' ? keys : undefined);

export const BACKUP = subcommand(
  {
    name: 'backup',
    summary: `Copies a live store, consistent as of one moment, while servers keep serving: SQLite with VACUUM INTO
(a cp of a live file can miss what is still in its WAL), PostgreSQL with pg_dump --format=custom. A keys file
(--keys FILE) and its audit trail are copied beside it, as TO.keys.json and TO.keys.json.audit.jsonl.`,
    options: {
      data: STORE_DATA,
      to: {
        flag: '--to',
        arg: 'FILE',
        help: 'the backup file to make (it must not exist)',
        fallback: '',
        required: true,
        parse: text,
      },
      keys: {
        flag: '--keys',
        env: 'PETSTORE_KEYS_FILE',
        arg: 'FILE',
        help: 'the keys file to copy beside it; "store" (keys in the database) copies nothing more',
        fallback: '',
        shownDefault: 'none',
        parse: text,
      },
      help: HELP,
    },
  },
  async (o) => {
    if (fs.existsSync(o.to)) throw new ConfigError(`--to: ${o.to} exists; name a new file`);
    let facts: BackupResult | undefined;
    if (isPostgres(o.data)) backupPostgres(o.data, o.to);
    else facts = await backupSqlite(o.data, o.to);
    const keys = keysFile(o.keys);
    const copied = keys ? await copyKeys(keys, backupKeysPath(o.to)) : [];
    const what = facts
      ? `${facts.pets} pets, ids up to ${facts.maxId}, schema version ${facts.schemaVersion}`
      : 'pg_dump, custom format';
    process.stderr.write(`backup: ${o.to} (${what})${copied.map((f) => `\nbackup: ${f}`).join('')}\n`);
    return 0;
  },
);

export const RESTORE = subcommand(
  {
    name: 'restore',
    summary: `Puts a backup in place; no server may run on --data meanwhile. SQLite: the file replaced is kept aside as
FILE.replaced-<time> (with its -wal, -shm). PostgreSQL: pg_restore into a new, empty database. Pet ids are never
given twice: the id sequence moves to the last id the replaced SQLite file issued when it can be read, else past
the backup's by --id-gap. The backup's keys file (FROM.keys.json) is copied to --keys FILE only when FILE is missing.`,
    options: {
      from: {
        flag: '--from',
        arg: 'FILE',
        help: 'the backup (petstore backup --to FILE)',
        fallback: '',
        required: true,
        parse: text,
      },
      data: STORE_DATA,
      keys: {
        flag: '--keys',
        env: 'PETSTORE_KEYS_FILE',
        arg: 'FILE',
        help: 'where the backup\'s keys file goes when no file is there; "store": keys are in the database',
        fallback: '',
        shownDefault: 'none',
        parse: text,
      },
      idGap: {
        flag: '--id-gap',
        arg: 'N',
        help: "how far past the backup's last id the sequence moves when the replaced store cannot be read",
        fallback: DEFAULT_ID_GAP,
        parse: int(1, 1_000_000_000_000),
      },
      help: HELP,
    },
  },
  async (o, now) => {
    const done = isPostgres(o.data)
      ? await restorePostgres(o.from, o.data, o.idGap)
      : await restoreSqlite(o.from, o.data, o.idGap, now);
    const lines = [
      `restore: ${o.from} -> ${o.data}`,
      `restore: pet ids go on from ${done.after + 1} (${
        done.basis === 'gap'
          ? `the backup's last id ${done.before} + --id-gap ${o.idGap}`
          : "the replaced store's last id, so none is given twice"
      })`,
      ...done.keptAside.map((f) => `restore: kept aside ${f}`),
    ];
    const keys = keysFile(o.keys);
    const saved = backupKeysPath(o.from);
    if (keys && fs.existsSync(saved)) {
      if (fs.existsSync(keys)) {
        lines.push(`restore: ${keys} exists and is kept (the backup's keys are in ${saved})`);
      } else {
        for (const [from, dest] of [
          [saved, keys],
          [auditPath(saved), auditPath(keys)],
        ] as const) {
          if (!fs.existsSync(from)) continue;
          copyKept(from, dest);
          lines.push(`restore: ${from} -> ${dest}`);
        }
      }
    }
    process.stderr.write(`${lines.join('\n')}\n`);
    return 0;
  },
);
