// The table of flags in docs/operations.md, made from the option table that --help prints (src/config.ts).
//   node_modules/.bin/bun scripts/docs-flags.ts          rewrite the table in docs/operations.md
// scripts/e2e/ops.test.ts fails while docs/operations.md holds another table than this one.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS } from '../src/config.ts';

export const PAGE = join(import.meta.dir, '../docs/operations.md');
const BEGIN = '<!-- flags: made by scripts/docs-flags.ts from src/config.ts; edit those, not this table -->';
const END = '<!-- /flags -->';

interface Row {
  flag: string;
  env?: string;
  arg?: string;
  help: string;
  fallback: unknown;
  shownDefault?: string;
}

/** The Markdown table: flag, environment variable, default, meaning; in --help order. */
export function flagsTable(): string {
  const rows = (Object.values(OPTIONS) as Row[]).map((o) => {
    const shown = o.shownDefault ?? (o.arg ? String(o.fallback) : '');
    const cell = (s: string) => (s ? `\`${s}\`` : '');
    return `| ${cell(o.arg ? `${o.flag} ${o.arg}` : o.flag)} | ${cell(o.env ?? '')} | ${shown} | ${o.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| Flag | Environment | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The table docs/operations.md holds now, or undefined when its markers are missing. */
export function pageTable(text = readFileSync(PAGE, 'utf8')): string | undefined {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  return start < 0 || end < start ? undefined : text.slice(start + BEGIN.length, end).trim();
}

if (import.meta.main) {
  const text = readFileSync(PAGE, 'utf8');
  if (pageTable(text) === undefined) throw new Error(`docs/operations.md has no ${BEGIN} ... ${END} block`);
  const start = text.indexOf(BEGIN) + BEGIN.length;
  writeFileSync(PAGE, `${text.slice(0, start)}\n${flagsTable()}\n${text.slice(text.indexOf(END))}`);
}
