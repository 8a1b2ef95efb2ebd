// The development key of a server started without a keys file: made for the run, shown once.
import process from 'node:process';
import type { Logger } from '../log.ts';
import { parseKeys } from './file.ts';
import type { KeyRecord } from './records.ts';
import { newKeyEntry } from './tokens.ts';

/** The keys to serve with at start, and the development key's token when one was made. */
export interface StartKeys {
  records: KeyRecord[];
  /** Made when no keys file was given; shown by `announceDevKey` once the server listens. */
  devToken?: string;
}

/**
 * The keys to serve with when no `--keys` is given: a development key made for this run.
 * Nothing is printed here: the key is announced once the server listens.
 *
 * @example
 * const { records, devToken } = developmentKeys()
 */
export function developmentKeys(): StartKeys {
  const { token, entry } = newKeyEntry('dev', 'free');
  return { records: parseKeys(JSON.stringify({ keys: [entry] })), devToken: token };
}

/**
 * Prints the development key once on stderr, with a curl command to try and the docs' address at
 * `origin` (where the server listens, e.g. `http://localhost:8080`), and logs a warning that the
 * server uses it. Call it once the store is open and the port bound, so a start that fails never
 * shows a key.
 *
 * @example
 * announceDevKey(token, 'http://localhost:8080', log)
 */
export function announceDevKey(token: string, origin: string, log: Logger): void {
  process.stderr.write(
    [
      'No keys file given (--keys FILE or PETSTORE_KEYS_FILE): made one development key for this run.',
      `  Authorization: Bearer ${token}`,
      'It is shown once and forgotten at exit. Try it, and read the API reference:',
      `  curl -H 'Authorization: Bearer ${token}' ${origin}/v1/pets`,
      `  ${origin}/docs`,
      'For real keys, make a keys file and serve it with --keys FILE:',
      '  petstore keys add --keys FILE --consumer NAME --plan PLAN   (prints the token once)',
      '',
    ].join('\n'),
  );
  log.warn('serving with a generated development key', { consumer: 'dev', plan: 'free' });
}
