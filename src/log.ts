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
  write = (line) => process.stdout.write(`${line}\n`),
  now = Date.now,
}: LoggerOptions = {}): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const emit = (lvl: LogLevel) => (msg: string, fields: LogFields = {}) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return;
    const time = new Date(now()).toISOString();
    if (format === 'json') {
      write(JSON.stringify({ time, level: lvl, msg, ...fields }));
    } else {
      const rest = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
      write([time, lvl.toUpperCase().padEnd(5), msg, ...rest].join(' '));
    }
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = createLogger({ write: () => {} });
