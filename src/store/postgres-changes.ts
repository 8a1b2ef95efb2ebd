import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';
import type postgres from 'postgres';
import type { Logger } from '../log.ts';

/** The channel the `pets` table's statement trigger notifies (migration `pets_notify`). */
export const PETS_CHANNEL = 'petstore_pets';
/** The pause before listening again after the listening connection was lost or could not be made. */
export const RELISTEN_DELAY_MS = 100;
/**
 * How often the listening connection must answer a `SELECT 1`. A connection that dies without
 * closing (a host or network gone silent) is only noticed this way: after at most two of these,
 * kept answers stop being served.
 */
export const HEARTBEAT_MS = 1_000;

/** Opens the one-connection client that listens; `onnotify` and `onclose` are its postgres.js options. */
export type ListenSession = (handlers: { onnotify: () => void; onclose: () => void }) => postgres.Sql;

/**
 * What this instance knows of the `pets` table's changes, on any instance: a generation that
 * moves on with every notification of the table's trigger (sent by the writer's COMMIT) and with
 * every write of this instance, and that exists only while a connection listens.
 *
 * - While listening, `version()` is the generation: an answer read at a generation is kept until
 *   it moves on (src/http/memo.ts).
 * - When the listening connection closes (or misses a heartbeat), `version()` is undefined at
 *   once: every read goes to the database, nothing is kept.
 * - A new connection listens after `RELISTEN_DELAY_MS`; once its LISTEN is acknowledged, every
 *   commit after it is notified and every read begun after it sees the commits before it, so
 *   the generation moves on and `version()` is defined again: caught up.
 *
 * @example
 * const changes = new PetChanges((handlers) => postgres(url, { max: 1, ...handlers }), log)
 * await changes.start(); changes.version() // 1
 */
export class PetChanges {
  readonly #open: ListenSession;
  readonly #log: Logger;
  #generation = 0;
  /** The connection that listens, or is about to; undefined between a loss and the next try. */
  #session: postgres.Sql | undefined;
  #listening = false;
  /** Whether the loss of the connection has been logged (once per outage). */
  #lostLogged = false;
  #relisten: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #beating = false;
  #closed = false;

  constructor(open: ListenSession, log: Logger) {
    this.#open = open;
    this.#log = log;
  }

  /** Listens; resolves once listening, or once the first try failed (then it tries again). */
  async start(): Promise<void> {
    this.#heartbeat = setInterval(() => void this.#beat(), HEARTBEAT_MS);
    this.#heartbeat.unref?.();
    await this.#listen();
  }

  /** The generation while listening and caught up, else undefined: nothing read may be kept. */
  version(): number | undefined {
    return this.#listening ? this.#generation : undefined;
  }

  /** True while the listening connection is up and caught up. */
  get listening(): boolean {
    return this.#listening;
  }

  /**
   * A write of this instance begins or ends: its own reads see it at once, without waiting for
   * the notification. Counted at both ends, so that an answer read while the write runs is
   * never kept under the generation that follows it.
   */
  changed(): void {
    this.#generation++;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listening = false;
    clearTimeout(this.#relisten);
    clearInterval(this.#heartbeat);
    const session = this.#session;
    this.#session = undefined;
    await session?.end({ timeout: 0 }).catch(() => {});
  }

  async #listen(): Promise<void> {
    this.#relisten = undefined;
    if (this.#closed) return;
    const session = this.#open({
      onnotify: () => {
        if (this.#session === session) this.#generation++;
      },
      onclose: () => this.#lost(session, 'the listening connection closed'),
    });
    this.#session = session;
    try {
      await session`LISTEN ${session(PETS_CHANNEL)}`;
    } catch (err) {
      this.#lost(session, err instanceof Error ? err.message : String(err));
      return;
    }
    if (this.#session !== session || this.#closed) return;
    this.#generation++;
    this.#listening = true;
    if (this.#lostLogged) this.#log.info('listening for pet changes again; serving kept answers');
    this.#lostLogged = false;
  }

  /** `session` is gone: stop serving kept answers at once, and listen anew after a pause. */
  #lost(session: postgres.Sql, reason: string): void {
    if (this.#session !== session || this.#closed) return;
    this.#session = undefined;
    this.#listening = false;
    this.#generation++;
    if (!this.#lostLogged) {
      this.#log.warn('not listening for pet changes; every read goes to the database until listening again', {
        reason,
      });
      this.#lostLogged = true;
    }
    void session.end({ timeout: 0 }).catch(() => {});
    this.#relisten = setTimeout(() => void this.#listen(), RELISTEN_DELAY_MS);
    this.#relisten.unref?.();
  }

  /** A `SELECT 1` on the listening connection; no answer before the next beat counts as a loss. */
  async #beat(): Promise<void> {
    const session = this.#session;
    if (!this.#listening || session === undefined || this.#beating) return;
    this.#beating = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silent = new Promise<'silent'>((resolve) => {
      timer = setTimeout(() => resolve('silent'), HEARTBEAT_MS);
      timer.unref?.();
    });
    try {
      const outcome = await Promise.race([session`SELECT 1`.then(() => 'answered' as const), silent]);
      if (outcome === 'silent') this.#lost(session, `no answer to a heartbeat within ${HEARTBEAT_MS} ms`);
    } catch (err) {
      this.#lost(session, err instanceof Error ? err.message : String(err));
    } finally {
      clearTimeout(timer);
      this.#beating = false;
    }
  }
}
