import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { createLogger } from '../../log.ts';
import { prepareDataFile, restrictCreated } from './file-modes.ts';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('prepareDataFile', () => {
  let before: number;
  let dir: string;
  const lines: string[] = [];
  const log = createLogger({ write: (l) => lines.push(l) });
  beforeEach(() => {
    before = process.umask(0);
    dir = mkdtempSync(join(tmpdir(), 'petstore-file-modes-'));
    lines.length = 0;
  });
  afterEach(() => {
    process.umask(before);
  });

  test('under umask 000: the folders it makes are 0700, the new file 0600, and it lists what SQLite will add', () => {
    const file = join(dir, 'a', 'b', 'pets.db');
    const created = prepareDataFile(file, log);
    expect([mode(join(dir, 'a')), mode(join(dir, 'a', 'b')), mode(file)]).toEqual(['700', '700', '600']);
    expect(created).toEqual([file, `${file}-wal`, `${file}-shm`]);
    writeFileSync(`${file}-wal`, '', { mode: 0o666 });
    restrictCreated(created);
    expect(mode(`${file}-wal`)).toBe('600');
    expect(lines).toEqual([]);
  });

  test('an existing 0644 file keeps its mode, with a warning naming it and the fix', () => {
    const file = join(dir, 'pets.db');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    expect(prepareDataFile(file, log)).toEqual([]);
    expect(mode(file)).toBe('644');
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { level: 'warn', file, mode: '644', fix: `chmod 600 ${file}` },
    ]);
  });
});
