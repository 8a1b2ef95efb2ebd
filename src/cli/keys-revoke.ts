// `petstore keys revoke`: removes one key; the consumer and its quota stay.
import process from 'node:process';
import { revokeKey } from '../keys/document-edits.ts';
import type { KeysDocument } from '../keys/schemas.ts';
import { CONSUMER, FILE_NOTES, KEYS_DATA, KEYS_FILE } from './key-options.ts';
import { change } from './keys-common.ts';
import { HELP, subcommand } from './options.ts';
import { text } from './parsers.ts';

export const KEYS_REVOKE = subcommand(
  {
    name: 'keys revoke',
    summary: 'Removes a key of a consumer; the consumer (and its quota) stays.',
    options: {
      keys: KEYS_FILE,
      data: KEYS_DATA,
      consumer: CONSUMER,
      key: {
        flag: '--key',
        arg: 'ID',
        help: 'the id of the key, as keys list shows it',
        fallback: '',
        required: true,
        parse: text,
      },
      help: HELP,
    },
    notes: FILE_NOTES,
  },
  async (o, now) => {
    const edit = (doc: KeysDocument) => revokeKey(doc, o.consumer, o.key, now);
    await change(o, { action: 'key.revoke', consumer: o.consumer, key: o.key, edit }, now);
    process.stderr.write(`revoked key ${o.key} of consumer ${o.consumer}\n`);
    return 0;
  },
);
