// The entry point. It reads argv and hands it on: a subcommand to src/cli/run.ts, a server's
// options to src/serve/start.ts. It also answers --help and --version, sets the exit code, and
// sets the JIT's policy back to Bun's usual one once the imports have run.
import process from 'node:process';
import { isCommand, runCli } from './cli/run.ts';
import { ConfigError, helpText, parseConfig } from './config.ts';
import { KeysFileError } from './keys/file.ts';
import { startServer } from './serve/start.ts';
import { StoreOpenError } from './store/store-error.ts';
import { VERSION, versionLine } from './version.ts';

// The binary starts with the JIT 30 times more reluctant to compile (`--compile-jit-policy=30`,
// scripts/lib/build-info.sh): the imports above run each line once, best left to the interpreter.
// From here on (a keys file of any size, a command, the requests) the policy is 1, the usual one.
const NORMAL_JIT_POLICY = 1;
if ('Bun' in globalThis) Bun.unsafe.setJITPolicy(NORMAL_JIT_POLICY);

/**
 * Exit code for bad usage or configuration, a keys file that cannot be read or parsed, or a
 * data store that cannot open, before the server answers any request.
 */
const EXIT_CONFIG = 2;

/** The exit code, or undefined while the server runs (signals end it). */
async function main(argv: string[]): Promise<number | undefined> {
  if (isCommand(argv[0])) return runCli(argv);
  const config = parseConfig(argv, process.env);
  if (config.help) {
    process.stdout.write(helpText(VERSION));
    return 0;
  }
  if (config.version) {
    process.stdout.write(versionLine());
    return 0;
  }
  await startServer(config);
  return undefined;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof StoreOpenError || err instanceof KeysFileError) {
      const what =
        err instanceof KeysFileError ? 'keys file' : err instanceof StoreOpenError ? 'data store' : 'configuration';
      const command = err instanceof ConfigError && err.command ? `petstore ${err.command}` : 'petstore';
      // A store that cannot open is not a matter of usage: its message names the file or URL.
      const hint = err instanceof StoreOpenError ? '' : `Run ${command} --help for usage.\n`;
      process.stderr.write(`petstore: ${what}: ${err.message}\n${hint}`);
      process.exit(EXIT_CONFIG);
    }
    process.stderr.write(`petstore: failed to start: ${String(err)}\n`);
    process.exit(1);
  },
);
