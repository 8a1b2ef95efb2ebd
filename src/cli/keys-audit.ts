// `petstore keys audit`: the audit trail of the keys, oldest first; never a token or a hash.
import process from 'node:process';
import type { Actor } from '../keys/audit.ts';
import type { NumberedRecord } from '../keys/audit-file.ts';
import { asciiJson, printable } from '../redact.ts';
import { KEYS_DATA, KEYS_FILE } from './key-options.ts';
import { withKeys } from './keys-common.ts';
import { HELP, subcommand } from './options.ts';
import { int, on } from './parsers.ts';

/** Who made a change, as one word: `cli:root`, `admin:ops/a1`. */
function actorName(actor: Actor): string {
  return actor.kind === 'cli' ? `cli:${actor.user}` : `admin:${actor.consumer}/${actor.key}`;
}

/**
 * The trail as a table: one line per record, its changed fields as `before -> after` JSON.
 *
 * @example
 * auditTable(records) // 'ID  AT  ACTOR  ACTION  CONSUMER  KEY  CHANGE\n1  2026-…  cli:root  key.add  acme  k1  null -> {…}'
 */
function auditTable(records: readonly NumberedRecord[]): string {
  const rows = [
    ['ID', 'AT', 'ACTOR', 'ACTION', 'CONSUMER', 'KEY', 'CHANGE'],
    // Cells are made printable: a record written by hand or by an older version may hold escape
    // sequences or line breaks, which would draw colours or a fake row.
    ...records.map((r) => [
      ...[String(r.id), r.at, actorName(r.actor), r.action, r.consumer, r.key ?? '-'].map(printable),
      `${asciiJson(r.before)} -> ${asciiJson(r.after)}`,
    ]),
  ];
  // The change column is last and not padded; the other columns are padded to line up.
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  return `${rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n')}\n`;
}

export const KEYS_AUDIT = subcommand(
  {
    name: 'keys audit',
    summary: `Prints the audit trail of the keys (FILE.audit.jsonl beside a keys file, or the store's), oldest first: when,
who (cli and the OS user, or the admin key's consumer and key id), what, the consumer and key id,
and the changed fields before and after. Never a token or a hash.`,
    options: {
      keys: KEYS_FILE,
      data: KEYS_DATA,
      after: {
        flag: '--after',
        arg: 'ID',
        help: 'only the records after this one',
        fallback: 0,
        parse: int(0, Number.MAX_SAFE_INTEGER),
      },
      json: { flag: '--json', help: 'one JSON document instead of a table', fallback: false, parse: on },
      help: HELP,
    },
  },
  async (o) => {
    const records = await withKeys(o, (admin) => admin.audit(o.after, Number.MAX_SAFE_INTEGER));
    process.stdout.write(o.json ? `${asciiJson({ records }, 2)}\n` : auditTable(records));
    return 0;
  },
);
