import { readFileSync, statSync } from 'node:fs';
import process from 'node:process';
import type { Config } from '../config.ts';
import { type KeyRecord, KeysFileError, keysFileExposure, parseKeys } from '../gateway/keys/file.ts';
import { newKeyEntry } from '../gateway/keys/tokens.ts';
import type { Logger } from '../log.ts';

/**
 * The keys to serve with at start: the `--keys` file's, or without one a development key made
 * for this run (its token printed once on stderr).
 *
 * @example
 * const keys = new KeyTable(loadKeys(config, log))
 */
export function loadKeys(config: Config, log: Logger): KeyRecord[] {
  if (config.keys) return readKeysFile(config.keys, log);
  const { token, entry } = newKeyEntry('dev', 'free');
  process.stderr.write(
    [
      'No keys file given (--keys FILE or PETSTORE_KEYS_FILE): made one development key for this run.',
      `  Authorization: Bearer ${token}`,
      'It is shown once and forgotten at exit. For real keys, make a keys file and serve it with --keys FILE:',
      '  petstore keys add --keys FILE --consumer NAME --plan PLAN   (prints the token once)',
      '',
    ].join('\n'),
  );
  log.warn('serving with a generated development key', { consumer: entry.name, plan: entry.plan });
  return parseKeys(JSON.stringify({ keys: [entry] }));
}

/**
 * The keys of the file at `path`, validated; at start and on each reload. Throws `KeysFileError`.
 *
 * @example
 * keys = new KeyTable(readKeysFile('/etc/petstore/keys.json', log))
 */
export function readKeysFile(path: string, log: Logger): KeyRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KeysFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const keys = parseKeys(text);
  warnIfExposed(path, log);
  return keys;
}

/** Warns (at start and on each reload) when the keys file's mode lets other users read or change it. */
function warnIfExposed(path: string, log: Logger): void {
  if (process.platform === 'win32') return;
  const problem = keysFileExposure(statSync(path).mode);
  if (problem) log.warn(`the keys file is ${problem}`, { file: path });
}
