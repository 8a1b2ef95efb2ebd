// `petstore migrate status` and `petstore migrate up`: the schema as an operator who runs the
// migrations as a step of their own sees it. Start-up migrates by itself as well (see
// docs/operations.md, "Upgrades and rollbacks").
import * as fs from 'node:fs';
import process from 'node:process';
import postgres from 'postgres';
import { silentLogger } from '../log.ts';
import { openStore } from '../store/open.ts';
import { POSTGRES_URL } from '../store/postgres/postgres-url.ts';
import {
  MIGRATIONS,
  readableFromOf,
  SCHEMA_VERSION,
  type SchemaState,
  schemaVerdict,
} from '../store/sql/migrations.ts';
import { STORE_DATA } from './backup.ts';
import { ConfigError, HELP, subcommand } from './options.ts';
import { on } from './parsers.ts';

/** The store's schema state, read without changing anything. */
async function stateOf(data: string): Promise<SchemaState> {
  if (POSTGRES_URL.test(data)) {
    const { postgresSchemaState } = await import('../store/postgres/postgres-migrate.ts');
    const sql = postgres(data, { max: 1, onnotice: () => {} });
    try {
      return await postgresSchemaState(sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
  }
  if (!fs.existsSync(data)) return { version: 0, readableFrom: 0 };
  const { loadSqlite } = await import('../store/sqlite/sqlite-driver.ts');
  const { sqliteSchemaState } = await import('../store/sqlite/sqlite-migrate.ts');
  const open = await loadSqlite();
  if (!open)
    throw new ConfigError('--data: this runtime has no built-in SQLite (node:sqlite needs Node 22.13 or later)');
  const db = open(data);
  try {
    return sqliteSchemaState(db, false);
  } finally {
    db.close();
  }
}

/** For `migrate status`: the store's schema, this build's, and what this build would do with it. */
function statusOf(state: SchemaState, where: string) {
  let verdict: string;
  let pending: { version: number; name: string; readableFrom: number }[] = [];
  try {
    const { pending: todo, newer } = schemaVerdict(state, where);
    pending = todo.map((m) => ({ version: m.version, name: m.name, readableFrom: readableFromOf(m) }));
    verdict = newer
      ? 'serves it (a newer schema left readable by this release)'
      : pending.length > 0
        ? 'migrates it'
        : 'serves it';
  } catch (err) {
    verdict = `refuses it: ${(err as Error).message}`;
  }
  return {
    database: state.version,
    ...(state.version > SCHEMA_VERSION ? { readableFrom: state.readableFrom } : {}),
    build: SCHEMA_VERSION,
    pending,
    verdict,
  };
}

export const MIGRATE_STATUS = subcommand(
  {
    name: 'migrate status',
    summary:
      'Says the schema version of the store, the one this petstore writes, the migrations it would apply and whether it serves the store.',
    options: {
      data: STORE_DATA,
      json: { flag: '--json', help: 'one JSON document instead of lines', fallback: false, parse: on },
      help: HELP,
    },
  },
  async (o) => {
    const status = statusOf(await stateOf(o.data), `--data ${o.data}`);
    if (o.json) {
      process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      return 0;
    }
    const lines = [
      `store schema version: ${status.database}${status.readableFrom ? ` (served by petstore schema version ${status.readableFrom} and later)` : ''}`,
      `this petstore: schema version ${status.build}; it ${status.verdict}`,
      ...status.pending.map((m) => `pending: ${m.version} ${m.name} (readable from ${m.readableFrom})`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  },
);

export const MIGRATE_UP = subcommand(
  {
    name: 'migrate up',
    summary: `Applies the pending migrations, as a server's start-up would (PostgreSQL: each in its own transaction with
lock_timeout and retries, indexes built concurrently), and exits. Servers of the previous schema keep serving: every
migration of a major version is additive.`,
    options: { data: STORE_DATA, help: HELP },
  },
  async (o) => {
    const before = await stateOf(o.data);
    schemaVerdict(before, `--data ${o.data}`);
    const store = await openStore(o.data, silentLogger);
    await store.close();
    const after = await stateOf(o.data);
    const applied = MIGRATIONS.filter((m) => m.version > before.version && m.version <= after.version);
    process.stderr.write(
      applied.length === 0
        ? `migrate: schema version ${after.version}; nothing to apply\n`
        : `${applied.map((m) => `migrate: applied ${m.version} ${m.name}`).join('\n')}\nmigrate: schema version ${after.version}\n`,
    );
    return 0;
  },
);
