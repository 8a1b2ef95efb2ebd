// The options the `petstore keys` commands share, and how they read dates and durations.
import * as v from 'valibot';
import { ADMIN_SCOPE, KEY_SCOPES, type KeyScope } from '../core/key-scopes.ts';
import { FIELDS, KEY_NAME, rfc3339 } from '../keys/schemas.ts';
import type { Option } from './options.ts';
import { checked, text, words } from './parsers.ts';

const NAME = '1-64 letters, digits, ".", "_" or "-"';

const duration = FIELDS.duration;
const name = checked(NAME, v.pipe(v.string(), v.regex(KEY_NAME)));

/** A moment as given: milliseconds from now (a duration), or an RFC 3339 date-time. */
export type When = number | string;

/** What `WHEN` and `DURATION` mean, for the commands' --help. */
export const WHEN_NOTE = 'WHEN: an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration from now (90d).';
export const DURATION_NOTE = 'DURATION: a number and s, m, h or d (7d).';

/** How a change reaches a running server. */
export const FILE_NOTES = `The file is written atomically under FILE.lock; a server watching it has the change in force within a second.
In the store (--data), a change is one transaction with its audit record; every server sees it within 2 s.`;

export const KEYS_FILE = {
  flag: '--keys',
  arg: 'FILE',
  help: 'the keys file (JSON); or --data',
  fallback: '',
  parse: text,
} satisfies Option<string>;

/** The other place keys live: the data store of servers run with `--keys store`. */
export const KEYS_DATA = {
  flag: '--data',
  arg: 'URL',
  help: 'the data store of servers run with --keys store: a SQLite file or a postgres:// URL; or --keys',
  fallback: '',
  parse: text,
} satisfies Option<string>;

export const CONSUMER = {
  flag: '--consumer',
  arg: 'NAME',
  help: `the consumer: ${NAME}`,
  fallback: '',
  required: true,
  parse: name,
} satisfies Option<string>;

export const SCOPES_OPTION = {
  flag: '--scopes',
  arg: 'S,S',
  help: `what the new key may do: ${KEY_SCOPES.join(', ')} (${ADMIN_SCOPE}: the admin API only)`,
  fallback: undefined as KeyScope[] | undefined,
  parse: checked(
    `one or more of ${KEY_SCOPES.join(', ')}`,
    v.pipe(v.string(), v.transform(words), v.array(v.picklist(KEY_SCOPES)), v.minLength(1)),
  ),
} satisfies Option<KeyScope[] | undefined>;

export const KEY_ID = {
  flag: '--id',
  arg: 'ID',
  help: `the new key's id in logs, metrics and keys revoke: ${NAME}`,
  fallback: undefined as string | undefined,
  shownDefault: 'the first 8 hex digits of its hash',
  parse: name,
} satisfies Option<string | undefined>;

/** Parses a `WHEN`. */
export const when = checked<When>(
  'an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration (7d)',
  v.union([
    duration,
    v.pipe(
      v.string(),
      v.check((raw) => !Number.isNaN(rfc3339(raw))),
    ),
  ]),
);

/** Parses a `DURATION` into milliseconds. */
export const durationMs = checked('a duration (a number and s, m, h or d, such as 7d)', duration);

/**
 * `ms` as an RFC 3339 date-time in whole seconds, as the keys file keeps it.
 *
 * @example
 * iso(Date.UTC(2027, 1, 20, 0, 0, 0, 500)) // '2027-02-20T00:00:00Z'
 */
export function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * The date-time a `WHEN` means at `now`.
 *
 * @example
 * at(86_400_000, Date.UTC(2027, 1, 20)) // '2027-02-21T00:00:00Z'
 */
export function at(moment: When, now: number): string {
  return typeof moment === 'number' ? iso(now + moment) : moment;
}
