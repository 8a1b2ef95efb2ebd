// `petstore keys add`: a new key for a consumer, made when missing.

import process from 'node:process';
import { addKey } from '../keys/document-edits.ts';
import { PLAN_NAMES, type PlanName } from '../keys/plans.ts';
import { type KeysDocument, keyIdOf } from '../keys/schemas.ts';
import {
  CONSUMER,
  DURATION_NOTE,
  FILE_NOTES,
  KEY_ID,
  KEYS_DATA,
  KEYS_FILE,
  SCOPES_OPTION,
  WHEN_NOTE,
  type When,
  when,
} from './key-options.ts';
import { change, fileOwnerOf, freshKey, giveKeysFile } from './keys-common.ts';
import { ConfigError, HELP, type Option, subcommand } from './options.ts';
import { int, oneOf, text } from './parsers.ts';

/** A quota option for a new consumer, with the same bounds as the keys file. */
const quota = (flag: string, window: string): Option<number | undefined> => ({
  flag,
  arg: 'N',
  help: `a new consumer's quota per ${window}; both or neither (the enterprise plan needs both)`,
  fallback: undefined,
  shownDefault: "the plan's",
  parse: int(1, 1_000_000_000),
});

const OPTIONS = {
  keys: { ...KEYS_FILE, help: 'the keys file (JSON), made when missing; or --data' },
  data: KEYS_DATA,
  consumer: CONSUMER,
  plan: {
    flag: '--plan',
    arg: 'PLAN',
    help: `the plan of a new consumer: ${PLAN_NAMES.join(', ')}; may be left out for an existing one`,
    fallback: undefined as PlanName | undefined,
    parse: oneOf(PLAN_NAMES),
  },
  scopes: { ...SCOPES_OPTION, shownDefault: 'every scope' },
  expires: {
    flag: '--expires',
    arg: 'WHEN',
    help: 'the key is refused (401) from then on',
    fallback: undefined as When | undefined,
    shownDefault: 'never',
    parse: when,
  },
  notBefore: {
    flag: '--not-before',
    arg: 'WHEN',
    help: 'the key is refused (401) until then',
    fallback: undefined as When | undefined,
    shownDefault: 'at once',
    parse: when,
  },
  id: KEY_ID,
  owner: {
    flag: '--owner',
    arg: 'USER[:GROUP]',
    help: "as root: give the keys file and its audit trail (mode 0600) to this user (and group: default the user's), the service's",
    fallback: '',
    shownDefault: 'whoever runs the command',
    parse: text,
  },
  perMinute: quota('--per-minute', 'minute'),
  perDay: quota('--per-day', 'day'),
  help: HELP,
};

export const KEYS_ADD = subcommand(
  {
    name: 'keys add',
    summary: `Adds a key to a consumer, made on --plan when missing. Prints the new token alone on stdout
(shown once; the file keeps only its hash) and its key id on stderr.`,
    options: OPTIONS,
    notes: `${WHEN_NOTE}\n${DURATION_NOTE}\n${FILE_NOTES}`,
  },
  async (o, now) => {
    if ((o.perMinute === undefined) !== (o.perDay === undefined))
      throw new ConfigError('--per-minute and --per-day: give both or neither');
    const limits =
      o.perMinute !== undefined && o.perDay !== undefined ? { perMinute: o.perMinute, perDay: o.perDay } : undefined;
    const owner = o.owner ? fileOwnerOf(o.owner) : undefined;
    if (owner && !o.keys) throw new ConfigError('--owner: with --keys FILE only (the store has no file to own)');
    if (owner && process.getuid?.() !== 0 && process.getuid?.() !== owner.uid)
      throw new ConfigError(`--owner: only root can give ${o.keys} to ${o.owner}`);
    const fresh = freshKey(o, now);
    const consumer = { ...(o.plan ? { plan: o.plan } : {}), ...(limits ? { limits } : {}) };
    const edit = (doc: KeysDocument) => addKey(doc, o.consumer, consumer, fresh.key);
    await change(o, { action: 'key.add', consumer: o.consumer, key: keyIdOf(fresh.key), edit }, now, fresh, () => {
      if (owner) giveKeysFile(o.keys, owner);
    });
    return 0;
  },
);
