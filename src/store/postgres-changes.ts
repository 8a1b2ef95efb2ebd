import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';
import type postgres from 'postgres';
import type { Logger } from '../log.ts';
import { peerText } from '../redact.ts';

/**
 * The channel every change of pets is announced on: by the instance that wrote, after its
 * commit, and by the `pets` table's trigger for the statements no instance makes (an
 * operator's UPDATE, DELETE, TRUNCATE: migrations `pets_notify`, `pet_versions`).
 */
export const PETS_CHANNEL = 'petstore_pets';
/**
 * A setting of every connection of the instances' pool: the trigger does not notify for their
 * statements, since they announce their writes themselves after the commit.
 */
export const ANNOUNCES_SETTING = 'petstore.announces';
/** The sequence every pet's version is taken from (migration `pet_versions`): every write moves it. */
export const PET_VERSIONS = 'pet_versions';
/** The pause before listening again after the listening connection was lost or could not be made. */
export const RELISTEN_DELAY_MS = 100;
/**
 * How often the listening connection reads where the pets' versions are. It is the heartbeat: a
 * connection that dies without closing (a host or network gone silent) is only noticed this way,
 * and after at most two of these kept answers stop being served. And it is the safety net: a
 * write without an announcement (its instance crashed between its commit and the announcement,
 * or an INSERT by hand) is seen within one of these, since every insert and update commits a
 * higher version and every delete takes one from the sequence.
 */
export const HEARTBEAT_MS = 1_000;
/**
 * The listening connection's `lock_timeout`: a heartbeat that waits this long for a lock on pets
 * (an operator's `LOCK TABLE`, a `VACUUM FULL`) gives up on reading the versions' watermark, which says
 * nothing of the connection: that is an answer too.
 */
export const HEARTBEAT_LOCK_WAIT_MS = 250;
/** SQLSTATE lock_not_available: `lock_timeout` passed. */
const LOCK_NOT_AVAILABLE = '55P03';

/** Opens the one-connection client that listens; `onnotify` and `onclose` are its postgres.js options. */
export type ListenSession = (handlers: { onnotify: () => void; onclose: () => void }) => postgres.Sql;

/**
 * Announces this instance's writes: `NOTIFY` in a transaction of its own, committed without
 * waiting for its flush (`synchronous_commit` off for it alone: the notification is worth nothing
 * after a crash). One round trip; the writes stay out of it, so they do not take turns on the
 * lock NOTIFY holds through its commit.
 */
export async function announce(sql: postgres.Sql): Promise<void> {
  await sql`SELECT set_config('synchronous_commit', 'off', true), pg_notify(${PETS_CHANNEL}, '')`;
}

/**
 * What this instance knows of the `pets` table's changes, on any instance: a generation that
 * moves on with every write of this instance, every announcement of another's (and every
 * notification of the table's trigger), and every move of the versions' watermark, and that exists
 * only while a connection listens.
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
 * const changes = new PetChanges((handlers) => postgres(url, { max: 1, ...handlers }), () => announce(pool), log)
 * await changes.start(); changes.version() // 1
 * changes.changed(); await pool`INSERT INTO pets ...`; changes.written() // 3, and the others hear of it
 */
export class PetChanges {
  readonly #open: ListenSession;
  readonly #announce: () => Promise<void>;
  readonly #log: Logger;
  #generation = 0;
  /** Where the pets' versions were at the last heartbeat (`watermark`). */
  #top: unknown;
  /** Whether an announcement is being sent, and whether another write ended meanwhile. */
  #announcing = false;
  #announceAgain = false;
  /** The connection that listens, or is about to; undefined between a loss and the next try. */
  #session: postgres.Sql | undefined;
  #listening = false;
  /** Whether the loss of the connection has been logged (once per outage). */
  #lostLogged = false;
  #relisten: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #beating = false;
  #closed = false;

  /** `announce`: tells the other instances of this one's writes (see `announce` above). */
  constructor(open: ListenSession, announce: () => Promise<void>, log: Logger) {
    this.#open = open;
    this.#announce = announce;
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

  /**
   * A write of this instance begins: its own reads see it at once, without waiting for any
   * notification. Counted at both ends (`written`), so that an answer read while the write runs
   * is never kept under the generation that follows it.
   */
  changed(): void {
    this.#generation++;
  }

  /**
   * A write of this instance ended, stored or not (its outcome may be unknown): counted, and
   * announced to the others. One announcement at a time: the writes that end while one is sent
   * share the next.
   */
  written(): void {
    this.#generation++;
    this.#sendAnnouncement();
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
      // Read after the LISTEN: a pet inserted before it is in every read from now on.
      this.#top = await watermark(session);
    } catch (err) {
      this.#lost(session, peerText(err));
      return;
    }
    if (this.#session !== session || this.#closed) return;
    this.#generation++;
    this.#listening = true;
    if (this.#lostLogged) this.#log.info('listening for pet changes again; serving kept answers');
    this.#lostLogged = false;
  }

  #sendAnnouncement(): void {
    if (this.#announcing) {
      this.#announceAgain = true;
      return;
    }
    this.#announcing = true;
    this.#announce()
      .catch((err: unknown) => {
        // The others see the write by their heartbeat's watermark instead, within a second.
        this.#log.debug('announcing a pet write failed', { error: peerText(err) });
      })
      .finally(() => {
        this.#announcing = false;
        if (!this.#announceAgain) return;
        this.#announceAgain = false;
        this.#sendAnnouncement();
      });
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

  /** The versions' watermark, read on the listening connection; no answer before the next beat counts as a loss. */
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
      const top = await Promise.race([watermark(session), silent]);
      if (top === 'silent') this.#lost(session, `no answer to a heartbeat within ${HEARTBEAT_MS} ms`);
      else if (this.#session === session && top !== this.#top) {
        this.#top = top;
        this.#generation++;
      }
    } catch (err) {
      const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
      if (code !== LOCK_NOT_AVAILABLE) this.#lost(session, peerText(err));
    } finally {
      clearTimeout(timer);
      this.#beating = false;
    }
  }
}

/**
 * The highest committed version (an index's last entry) and the sequence's last value (moved by
 * deletes too), as one string: any write of pets changes it.
 */
async function watermark(session: postgres.Sql): Promise<unknown> {
  const [row] = await session.unsafe(
    `SELECT coalesce((SELECT max(version) FROM pets), 0) || '/' || last_value AS top FROM ${PET_VERSIONS}`,
  );
  return row?.top ?? null;
}
