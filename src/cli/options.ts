// The command-line parser for the server and every subcommand. `parseArgs` from `node:util`
// splits the arguments the same way under Bun, Deno and Node (`--flag value`, `--flag=value`,
// `--`). Each command has an option table that gives, per option, its flag, its environment
// variable and default, how its value is checked, and its line in the command's `--help`.
import process from 'node:process';
import { parseArgs } from 'node:util';

/**
 * Bad usage (an unknown flag, a bad value, an unknown command). `main` prints the message with a
 * hint to read the command's --help, and exits 2.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
  /** The command whose `--help` the hint names: '' for the server, 'keys add', … */
  readonly command: string;

  constructor(message: string, command = '') {
    super(message);
    this.command = command;
  }
}

/** Parses one raw value; `source`, the flag or environment variable it came from, names errors. */
export type Parser<T> = (raw: string, source: string) => T;

/** One row of a command's option table. */
export interface Option<T> {
  readonly flag: string;
  readonly env?: string;
  /** The value's name in `--help`. Without it the option is a switch: the bare flag turns it on. */
  readonly arg?: string;
  readonly help: string;
  readonly fallback: T;
  /** Shown in `--help` when the fallback is not a plain value. */
  readonly shownDefault?: string;
  /** True: bad usage when neither the flag nor its environment variable gives a value. */
  readonly required?: boolean;
  readonly parse: Parser<T>;
}

export type OptionTable = Readonly<Record<string, Option<unknown>>>;
export type Env = Readonly<Record<string, string | undefined>>;
export type Values<O extends OptionTable> = { -readonly [K in keyof O]: O[K]['fallback'] };

/** A command: its name after `petstore`, what it does, its options, and notes for its --help. */
export interface Command<O extends OptionTable = OptionTable> {
  readonly name: string;
  readonly summary: string;
  readonly options: O;
  readonly notes?: string;
  /** An argument the command takes before its options, as its usage shows it (`FILE`). */
  readonly operand?: string;
}

/** An unknown flag's message lists the known flags only when there are at most this many. */
const LISTED_FLAGS_MAX = 12;
/** Where an option's help starts in `--help`. */
const HELP_COLUMN = 26;
const USAGE_WIDTH = 100;

/** Every command's `--help` switch. */
export const HELP: Option<boolean> = {
  flag: '--help',
  help: 'print this help and exit',
  fallback: false,
  parse: () => true,
};

/**
 * The command's values: from `argv`, else from its environment variables, else its defaults. For a
 * repeated flag the last value wins, except for a list, whose values add up. When `--help` is given
 * nothing else is read, so help always prints.
 *
 * @example
 * parseOptions(HEALTHCHECK, ['--port', '9000'], {}).port // 9000
 */
export function parseOptions<O extends OptionTable>(
  command: Command<O>,
  argv: readonly string[],
  env: Env = {},
): Values<O> {
  const rows = Object.entries(command.options);
  const byName = new Map(rows.map(([key, option]) => [option.flag.slice(2), [key, option] as const]));
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      rows.map(([, o]) => [o.flag.slice(2), { type: o.arg ? ('string' as const) : ('boolean' as const) }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, unknown> = {};
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help' && byName.has('help'))) {
    return { ...fallbacks(command.options), help: true } as Values<O>;
  }
  for (const token of tokens) {
    const word = argv[token.index] as string;
    if (token.kind !== 'option') throw new ConfigError(`unexpected argument "${word}"`);
    const row = byName.get(token.name);
    if (!row) throw new ConfigError(`unknown option "${word}"${knownFlags(command.options)}`);
    const [key, option] = row;
    if (!option.arg) {
      if (token.inlineValue) throw new ConfigError(`${option.flag}: takes no value, got "${word}"`);
      values[key] = option.parse('', option.flag);
      continue;
    }
    if (token.value === undefined) throw new ConfigError(`${option.flag}: needs a value (${option.arg})`);
    if (option.required && token.value === '') throw new ConfigError(`${option.flag}: required`);
    const parsed = option.parse(token.value, option.flag);
    const earlier = values[key];
    values[key] = Array.isArray(earlier) && Array.isArray(parsed) ? [...earlier, ...parsed] : parsed;
  }
  for (const [key, option] of rows) {
    if (key in values) continue;
    const raw = option.env === undefined ? undefined : env[option.env];
    if (raw !== undefined && raw !== '') values[key] = option.parse(raw, option.env as string);
    else if (option.required) throw new ConfigError(`${option.flag}: required`);
    else values[key] = option.fallback;
  }
  return values as Values<O>;
}

function fallbacks(options: OptionTable): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).map(([key, o]) => [key, o.fallback]));
}

function knownFlags(options: OptionTable): string {
  const flags = Object.values(options).map((o) => o.flag);
  return flags.length > LISTED_FLAGS_MAX ? '' : `; expected ${flags.join(', ')}`;
}

/** `--port N`, or `--json` for a switch. */
function spelled(option: Option<unknown>): string {
  return option.arg ? `${option.flag} ${option.arg}` : option.flag;
}

/**
 * The command's usage after `lead`: required options as they are, the others in brackets,
 * `--help` left out; wrapped under the first option.
 *
 * @example
 * usage(KEYS_LIST) // 'petstore keys list --keys FILE [--json]'
 */
export function usage(command: Command, lead = `petstore ${command.name}`): string {
  const words = [
    ...(command.operand ? [command.operand] : []),
    ...Object.values(command.options)
      .filter((o) => o.flag !== HELP.flag)
      .map((o) => (o.required ? spelled(o) : `[${spelled(o)}]`)),
  ];
  const lines = [lead];
  for (const word of words) {
    const last = lines.length - 1;
    if (`${lines[last]} ${word}`.length > USAGE_WIDTH) lines.push(`${' '.repeat(lead.length)} ${word}`);
    else lines[last] = `${lines[last]} ${word}`;
  }
  return lines.join('\n');
}

/**
 * One line per option: the flag, its help, and whether it is required, its environment
 * variable and its default.
 *
 * @example
 * optionLines(OPTIONS)[0] // '  --port N                TCP port to listen on (env PORT, default 8080)'
 */
export function optionLines(options: OptionTable): string[] {
  return Object.values(options).map((o) => {
    const shown = o.shownDefault ?? (o.arg && o.fallback !== undefined && !o.required ? String(o.fallback) : undefined);
    const details = [o.required ? 'required' : '', o.env ? `env ${o.env}` : '', shown ? `default ${shown}` : '']
      .filter(Boolean)
      .join(', ');
    return `${`  ${spelled(o)}`.padEnd(HELP_COLUMN - 1)} ${o.help}${details ? ` (${details})` : ''}`;
  });
}

/**
 * A subcommand's `--help`: usage, what it does, its options, its notes.
 *
 * @example
 * commandHelp(HEALTHCHECK) // 'Usage: petstore healthcheck [--port N] [--host H]\n\nExit 0 when …'
 */
export function commandHelp(command: Command): string {
  return [
    usage(command, `Usage: petstore ${command.name}`),
    '',
    command.summary,
    '',
    'Options:',
    ...optionLines(command.options),
    ...(command.notes ? ['', command.notes.trimEnd()] : []),
    '',
  ].join('\n');
}

/** A subcommand: its option table, and how it runs. */
export interface Subcommand {
  readonly command: Command;
  /**
   * Reads `argv` and `env` by the table, then prints the --help or does the work; resolves to the
   * exit code.
   */
  run(argv: readonly string[], env: Env, now: number): Promise<number>;
}

/**
 * Makes a subcommand from its option table and the work it does with the values read.
 *
 * @example
 * export const KEYS_LIST = subcommand({ name: 'keys list', summary: '…', options: { …, help: HELP } }, list)
 */
export function subcommand<O extends OptionTable & { readonly help: Option<boolean> }>(
  command: Command<O>,
  work: (values: Values<O>, now: number) => Promise<number> | number,
): Subcommand {
  return {
    command,
    async run(argv, env, now) {
      const values = parseOptions(command, argv, env);
      if (!values.help) return work(values, now);
      process.stdout.write(commandHelp(command));
      return 0;
    },
  };
}
