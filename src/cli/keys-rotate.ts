// `petstore keys rotate`: a new key for a consumer; its current keys end after an overlap.
import process from 'node:process';
import { rotateKeys } from '../keys/document-edits.ts';
import { type KeysDocument, keyIdOf } from '../keys/schemas.ts';
import {
  CONSUMER,
  DURATION_NOTE,
  durationMs,
  FILE_NOTES,
  iso,
  KEY_ID,
  KEYS_DATA,
  KEYS_FILE,
  SCOPES_OPTION,
} from './key-options.ts';
import { change, freshKey } from './keys-common.ts';
import { HELP, subcommand } from './options.ts';

export const KEYS_ROTATE = subcommand(
  {
    name: 'keys rotate',
    summary: `Adds a new key to a consumer and sets its current keys to expire after DURATION (one already
ending sooner keeps its date). Prints the new token alone on stdout (shown once).`,
    options: {
      keys: KEYS_FILE,
      data: KEYS_DATA,
      consumer: CONSUMER,
      overlap: {
        flag: '--overlap',
        arg: 'DURATION',
        help: "how long the consumer's current keys keep working",
        fallback: 0,
        required: true,
        parse: durationMs,
      },
      scopes: { ...SCOPES_OPTION, shownDefault: 'those of the current keys' },
      id: KEY_ID,
      help: HELP,
    },
    notes: `${DURATION_NOTE}\n${FILE_NOTES}`,
  },
  async (o, now) => {
    const fresh = freshKey(o, now);
    const edit = (doc: KeysDocument) => rotateKeys(doc, o.consumer, now, o.overlap, fresh.key);
    await change(o, { action: 'key.rotate', consumer: o.consumer, key: keyIdOf(fresh.key), edit }, now, fresh);
    process.stderr.write(`the consumer's other keys expire at ${iso(now + o.overlap)} at the latest\n`);
    return 0;
  },
);
