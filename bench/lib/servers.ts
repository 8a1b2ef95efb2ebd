/** Starting, sizing and stopping the servers under test: the product and the two comparisons. */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Running {
  readonly name: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** Resident set size now, in bytes (from /proc). */
  rss(): number;
  /** CPU time used so far (user + system), in seconds (from /proc). */
  cpuSeconds(): number;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 15_000;

function running(name: string, port: number, child: ChildProcess, exited: Promise<unknown>): Running {
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    child,
    rss: () => rssOf(child.pid ?? 0),
    cpuSeconds: () => cpuSecondsOf(child.pid ?? 0),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** VmRSS of a process, in bytes. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

/** Clock ticks per second of /proc/PID/stat: 100 on every Linux this runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS = 100;

/** utime + stime of a process, in seconds. */
export function cpuSecondsOf(pid: number): number {
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/**
 * Starts the product with its log (one JSON line per request) going to `logFile`, and resolves
 * once the log names the port it listens on.
 */
export async function startProduct(cmd: string[], args: string[], logFile: string): Promise<Running> {
  const [file, ...pre] = cmd;
  const fd = openSync(logFile, 'a');
  const child = spawn(file as string, [...pre, '--port', '0', '--host', '127.0.0.1', '--log-format', 'json', ...args], {
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  const started = Date.now();
  for (;;) {
    const port = /"msg":"listening".*?"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(readFileSync(logFile, 'utf8'))?.[1];
    if (port) return running('petstore', Number(port), child, exited);
    if (dead) throw new Error(`petstore exited at start:\n${readFileSync(logFile, 'utf8')}`);
    if (Date.now() - started > START_TIMEOUT_MS) throw new Error('petstore did not log "listening" in time');
    await Bun.sleep(5);
  }
}

/** Starts a comparison server that prints `{"port":N}` on its first line of stdout. */
export async function startPrinter(name: string, cmd: string[]): Promise<Running> {
  const [file, ...args] = cmd;
  const child = spawn(file as string, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in time`)), START_TIMEOUT_MS);
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk;
      const m = /\{"port":(\d+)\}/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} at start`));
    });
  });
  return running(name, port, child, exited);
}

/** A loopback port that was free a moment ago (for start-up runs, which must know it in advance). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
