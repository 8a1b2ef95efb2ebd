import { Database } from 'bun:sqlite';
import { afterEach, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../config.ts';
import { LiveKeys } from '../keys/live-keys.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics/registry.ts';
import { openServerStore, webhooksOf } from './resources.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

test("the delivery loop's outbox failures are counted on /metrics, like the API's store failures", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-resources-'));
  dirs.push(dir);
  const data = join(dir, 'pets.db');
  const config = parseConfig(['--data', data, '--metrics'], {});
  const log = createLogger({ write: () => {} });
  const metrics = new Metrics({ version: '1.0.0', runtime: 'bun' });
  const store = await openServerStore(config, log, metrics);
  try {
    // The outbox's table gone behind the server's back: every outbox call now fails.
    const other = new Database(data);
    other.run('DROP TABLE webhook_outbox');
    other.close();
    const { delivery } = webhooksOf(store, config, log, metrics, new LiveKeys(config.keys, log, metrics));
    delivery?.wake(); // one pass: its claim fails, and the pass ends there
    await delivery?.stop();
    const lines = (await metrics.render()).split('\n');
    expect(lines).toContain('petstore_store_errors_total{operation="outbox",kind="error"} 1');
  } finally {
    await store.close();
  }
});

test('with --keys store, the keys are read from the store behind the wrappers', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-resources-'));
  dirs.push(dir);
  const config = parseConfig(['--data', join(dir, 'pets.db'), '--keys', 'store', '--metrics'], {});
  const log = createLogger({ write: () => {} });
  const metrics = new Metrics({ version: '1.0.0', runtime: 'bun' });
  const store = await openServerStore(config, log, metrics);
  try {
    const liveKeys = new LiveKeys(config.keys, log, metrics);
    await liveKeys.loadFromStore(store);
    expect(liveKeys.keyAdmin).toBeDefined();
    expect(liveKeys.table.countByPlan()).toEqual({});
  } finally {
    await store.close();
  }
});
