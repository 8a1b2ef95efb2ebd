// `petstore keys import FILE --data URL`: copies a keys file into the data store (`--keys store`).
import process from 'node:process';
import { asConsumers, importConsumer } from '../keys/document-edits.ts';
import { readKeysDocument } from '../keys/locked-file.ts';
import { change } from './keys-common.ts';
import { type Command, ConfigError, commandHelp, HELP, parseOptions, type Subcommand } from './options.ts';
import { text } from './parsers.ts';

const OPTIONS = {
  data: {
    flag: '--data',
    arg: 'URL',
    help: 'the data store of servers run with --keys store: a SQLite file or a postgres:// URL',
    fallback: '',
    required: true,
    parse: text,
  },
  help: HELP,
};

const COMMAND: Command<typeof OPTIONS> = {
  name: 'keys import',
  operand: 'FILE',
  summary: `Copies the consumers and keys of the keys file FILE into the data store: a consumer missing
there is made; one there takes the file's plan, limits and ban, and the keys it lacks. Hashes only,
as in the file. Importing the same file again changes nothing. Each consumer changed is one audit
record (keys.import).`,
  options: OPTIONS,
};

/** FILE comes before the options, so this command takes it from argv itself, then the options. */
export const KEYS_IMPORT: Subcommand = {
  command: COMMAND,
  async run(argv, env, now) {
    const file = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : undefined;
    const o = parseOptions(COMMAND, file === undefined ? argv : argv.slice(1), env);
    if (o.help) {
      process.stdout.write(commandHelp(COMMAND));
      return 0;
    }
    if (file === undefined) throw new ConfigError('FILE: required (the keys file to copy into the store)');
    const consumers = asConsumers(readKeysDocument(file));
    let changed = 0;
    for (const entry of consumers) {
      let differs = false;
      const edit = (current: Parameters<typeof importConsumer>[0]) => {
        const after = importConsumer(current, entry);
        differs = after !== current;
        return after;
      };
      await change({ keys: '', data: o.data }, { action: 'keys.import', consumer: entry.name, edit }, now);
      if (differs) changed++;
    }
    process.stderr.write(`imported ${file}: ${changed} of ${consumers.length} consumers changed\n`);
    return 0;
  },
};
