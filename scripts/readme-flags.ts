// The README's table of flags, made from the option table that --help prints (src/config.ts).
//   node_modules/.bin/bun scripts/readme-flags.ts          rewrite the table in README.md
// scripts/e2e/ops.test.ts fails while README.md holds another table than this one.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS } from '../src/config.ts';

export const README = join(import.meta.dir, '../README.md');
const BEGIN = '<!-- flags: made by scripts/readme-flags.ts from src/config.ts; edit those, not this table -->';
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

/** The table README.md holds now, or undefined when its markers are missing. */
export function readmeTable(text = readFileSync(README, 'utf8')): string | undefined {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  return start < 0 || end < start ? undefined : text.slice(start + BEGIN.length, end).trim();
}

if (import.meta.main) {
  const text = readFileSync(README, 'utf8');
  if (readmeTable(text) === undefined) throw new Error(`README.md has no ${BEGIN} ... ${END} block`);
  const start = text.indexOf(BEGIN) + BEGIN.length;
  writeFileSync(README, `${text.slice(0, start)}\n${flagsTable()}\n${text.slice(text.indexOf(END))}`);
}
