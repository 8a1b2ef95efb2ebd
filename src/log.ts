// The logger: `createLogger()` writes one line per event, JSON or a short human form, with the ids
// of the request being served. Lines go out once per event-loop turn, or whole to a regular file.
import { Buffer } from 'node:buffer';
import { fstatSync, writeSync } from 'node:fs';
import { setImmediate } from 'node:timers';
import { currentRequest, type RequestState } from './trace/request-state.ts';

/** Severity, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'json' | 'pretty';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  write?: (line: string) => void;
  now?: () => number;
}

/**
 * A logger writing one line per event: JSON for machines, or a short human form.
 *
 * @example
 * createLogger({ format: 'json' }).info('listening', { port: 8080 })
 * // {"time":"2026-11-22T04:00:00.000Z","level":"info","msg":"listening","port":8080}
 */
export function createLogger({
  level = 'info',
  format = 'json',
  write = stdoutLines(),
  now = Date.now,
}: LoggerOptions = {}): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const emit =
    (lvl: LogLevel) =>
    (msg: string, fields: LogFields = {}) => {
      if (LOG_LEVELS.indexOf(lvl) < min) return;
      const time = isoTime(now());
      const state = currentRequest();
      if (format === 'json') {
        write(jsonLine(time, lvl, msg, fields, state));
      } else {
        const all = state ? { ...idFields(state), ...fields } : fields;
        const rest = Object.entries(all).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
        write([time, lvl.toUpperCase().padEnd(5), msg, ...rest].join(' '));
      }
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** The ids a line written while serving a request carries: `requestId`, `traceId`, `spanId`. */
function idFields({ requestId, traceId, spanId }: RequestState): LogFields {
  return traceId === undefined ? { requestId } : { requestId, traceId, spanId };
}

/**
 * `{"time":…,"level":…,"msg":…, requestId, traceId, spanId, ...fields}` exactly as `JSON.stringify`
 * of that object would write it, without first copying `fields` into a new object, since a
 * request's log lines are on the hot path. The ids come from the request state, when there is
 * one; trace and span ids are hex, so they are written without escaping.
 */
function jsonLine(time: string, level: LogLevel, msg: string, fields: LogFields, state?: RequestState): string {
  if ('time' in fields || 'level' in fields || 'msg' in fields || (state && 'requestId' in fields)) {
    return JSON.stringify({ time, level, msg, ...(state ? idFields(state) : {}), ...fields });
  }
  const rest = JSON.stringify(fields);
  const ids = state
    ? state.traceId === undefined
      ? `,"requestId":${JSON.stringify(state.requestId)}`
      : `,"requestId":${JSON.stringify(state.requestId)},"traceId":"${state.traceId}","spanId":"${state.spanId}"`
    : '';
  return `{"time":"${time}","level":"${level}","msg":${JSON.stringify(msg)}${ids}${rest === '{}' ? '}' : `,${rest.slice(1)}`}`;
}

let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()`, with the part up to the second cached: under load, all lines in
 * one second share it and only the milliseconds change.
 */
function isoTime(ms: number): string {
  const t = Math.trunc(ms);
  const second = Math.floor(t / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    isoSecond = second;
  }
  const milli = t - second * 1000;
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

let stdoutWriter: ((line: string) => void) | undefined;

/**
 * Returns the process's single writer of log lines to stdout (a pipe, a socket or a terminal).
 * The supervisor also writes its workers' lines through it, whole. When stdout is a regular file,
 * each worker writes its own lines directly (`fileWriter`).
 */
export function logLines(): (line: string) => void {
  return stdoutLines();
}

/**
 * Returns a function that collects items and passes each event-loop turn's items to `send` in
 * one call. A worker uses it to send its log lines (written by the supervisor, `logLines`) and
 * its limiter questions as one message per turn.
 *
 * @example
 * createLogger({ write: batched((lines) => postMessage({ type: 'log', lines })) })
 */
export function batched<T>(send: (items: T[]) => void): (item: T) => void {
  let pending: T[] = [];
  const flush = () => {
    const out = pending;
    pending = [];
    if (out.length > 0) send(out);
  };
  return (item) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push(item);
  };
}

/**
 * Writes lines to stdout once per event-loop turn instead of once per line, so the lines of all
 * requests answered in one turn go out in one write. Lines still pending at exit are written
 * then, and the runtime flushes them before the process ends, so `process.exit` loses nothing.
 */
function stdoutLines(): (line: string) => void {
  if (stdoutWriter) return stdoutWriter;
  let pending = '';
  const file = fileWriter();
  const flush = () => {
    const out = pending;
    pending = '';
    if (out && !file?.(out)) process.stdout.write(out);
  };
  process.once('exit', flush);
  stdoutWriter = (line) => {
    if (pending === '') setImmediate(flush);
    pending += `${line}\n`;
  };
  return stdoutWriter;
}

/**
 * Returns a writer of whole lines straight to `fd` when it is a regular file (stdout redirected
 * to a log file); undefined otherwise (a pipe, journald's socket, a terminal). Each call is one
 * `write()`, and POSIX makes writes to a regular file atomic with respect to each other, so lines
 * from several threads (the workers, src/serve/worker.ts) never interleave, and no writer waits
 * for a reader as with a full pipe. Once a write fails, the writer returns false from then on
 * and the caller writes its lines to the stream instead.
 */
export function fileWriter(fd = 1): ((text: string) => boolean) | undefined {
  try {
    if (!fstatSync(fd).isFile()) return undefined;
  } catch {
    return undefined;
  }
  let failed = false;
  return (text) => {
    if (failed) return false;
    const bytes = Buffer.from(text);
    let written = 0;
    try {
      // A short write to a file means a full disk or a size limit: writing the rest throws.
      while (written < bytes.length) written += writeSync(fd, bytes, written);
      return true;
    } catch {
      failed = true;
      return written > 0;
    }
  };
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = createLogger({ write: () => {} });
