// The entry point. It passes a subcommand to src/cli/run.ts and server options to
// src/serve/start.ts. It also answers --help and --version, sets the exit code, and restores
// Bun's usual JIT policy once the imports have run.
import process from 'node:process';
import { isCommand, runCli } from './cli/run.ts';
import { ConfigError, helpText, parseConfig } from './config.ts';
import { KeysFileError } from './keys/file.ts';
import { startServer } from './serve/start.ts';
import { StoreOpenError } from './store/store-error.ts';
import { VERSION, versionLine } from './version.ts';

// The binary starts with a JIT policy that compiles less eagerly (`--compile-jit-policy`,
// scripts/lib/build-info.sh), because the imports above run each line only once and are best left
// to the interpreter. From here on (reading the keys, a command, the requests) the usual policy
// applies.
const NORMAL_JIT_POLICY = 1;
if ('Bun' in globalThis) Bun.unsafe.setJITPolicy(NORMAL_JIT_POLICY);

/**
 * Exit code for bad usage or configuration, a keys file that cannot be read or parsed, or a
 * data store that cannot open, before the server answers any request.
 */
const EXIT_CONFIG = 2;

/** Returns the exit code, or undefined when the server is running (a signal ends it). */
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
      // A store that cannot open is not a usage error, so no --help hint: the message names the
      // file or URL.
      const hint = err instanceof StoreOpenError ? '' : `Run ${command} --help for usage.\n`;
      process.stderr.write(`petstore: ${what}: ${err.message}\n${hint}`);
      process.exit(EXIT_CONFIG);
    }
    process.stderr.write(`petstore: failed to start: ${String(err)}\n`);
    process.exit(1);
  },
);
