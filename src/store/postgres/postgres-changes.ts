// How a PostgreSQL instance learns of the fleet's pet writes, for the store's changeCount():
// PetChanges counts its own writes, the other instances' writes announced by NOTIFY, and any
// change a heartbeat sees. While it cannot listen, nothing is memoised and every read goes to the
// database.
import { randomUUID } from 'node:crypto';
import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';
import type postgres from 'postgres';
import type { PetSet } from '../../core/reply.ts';
import type { Logger } from '../../log.ts';
import { peerText } from '../../redact.ts';
import { ChangeCounter, EVERY_PET, type PetChange } from '../change-counter.ts';

/**
 * The channel pet changes are announced on: by the writing instance after its commit, and by the
 * `pets` table's trigger for statements no instance makes, such as an operator's UPDATE, DELETE
 * or TRUNCATE (migrations `pets_notify`, `pet_versions`).
 */
export const PETS_CHANNEL = 'petstore_pets';
/**
 * Set on every pool connection so the trigger skips their statements: the instances announce
 * their own writes after the commit.
 */
export const ANNOUNCES_SETTING = 'petstore.announces';
/** The sequence every pet version comes from (migration `pet_versions`); every write moves it. */
export const PET_VERSIONS = 'pet_versions';
/** The pause before listening again after the listening connection is lost or fails to open. */
const RELISTEN_DELAY_MS = 100;
/**
 * How often the listening connection reads the pets' highest version. This heartbeat is the only
 * way to notice a connection that dies silently; memoised answers stop within two beats. It also
 * catches writes nobody announced (a crash after commit, an INSERT by hand) within one beat, since
 * every write moves the version.
 */
export const HEARTBEAT_MS = 1_000;
/**
 * The listening connection's `lock_timeout`. A heartbeat blocked this long by a lock on pets (an
 * operator's `LOCK TABLE`, a `VACUUM FULL`) gives up reading the watermark; the lock error still
 * proves the connection is alive, so it is not counted as a loss.
 */
export const HEARTBEAT_LOCK_WAIT_MS = 250;
/**
 * How long the first write after a quiet spell waits before announcing, so writes that end
 * meanwhile share one announcement: each costs a round trip and a notification that every
 * listening instance (this one included) reads. Well within the delay the fleet promises.
 */
export const ANNOUNCE_GATHER_MS = 2;
/** SQLSTATE lock_not_available: `lock_timeout` passed. */
const LOCK_NOT_AVAILABLE = '55P03';
/**
 * The most pet ids one announcement names; beyond that it says every pet changed, which keeps the
 * payload well under NOTIFY's size limit.
 */
export const MOST_IDS_ANNOUNCED = 500;

/** Opens the one-connection client that listens; the handlers are its postgres.js options. */
export type ListenSession = (handlers: {
  onnotify: (channel: string, payload: string) => void;
  onclose: () => void;
}) => postgres.Sql;

/**
 * Announces this instance's writes (`payload`, see `announcement`) with `NOTIFY` in its own
 * transaction. `synchronous_commit` is off for it alone, since a notification is worthless after
 * a crash. It is kept out of the writes' transactions so they do not queue on the lock NOTIFY
 * holds until commit.
 */
export async function announce(sql: postgres.Sql, payload: string): Promise<void> {
  await sql`SELECT set_config('synchronous_commit', 'off', true), pg_notify(${PETS_CHANNEL}, ${payload})`;
}

/**
 * The payload that announces `changes`: `<instance>:<flags>:<ids>`, the flags `m` (pets created
 * or removed) and `s` (statuses changed), the ids comma-separated; `<instance>:*:` for every pet.
 * Any other payload (the trigger's empty one, an older instance's) is heard as every pet.
 *
 * @example
 * announcement('a1b2', [{ ids: [7], statuses: true }, { ids: [9] }]) // 'a1b2:s:7,9'
 */
export function announcement(instance: string, changes: readonly PetChange[]): string {
  const ids = new Set<number>();
  let flags = '';
  for (const change of changes) {
    if (change === EVERY_PET) return `${instance}:*:`;
    for (const id of change.ids) ids.add(id);
    if (change.members && !flags.includes('m')) flags += 'm';
    if (change.statuses && !flags.includes('s')) flags += 's';
  }
  return ids.size > MOST_IDS_ANNOUNCED ? `${instance}:*:` : `${instance}:${flags}:${[...ids].join(',')}`;
}

/**
 * Parses an announcement: who sent it and what changed. A payload in another format means every
 * pet changed.
 *
 * @example
 * heard('a1b2:s:7,9') // { from: 'a1b2', change: { ids: [7, 9], members: false, statuses: true } }
 */
export function heard(payload: string): { readonly from: string; readonly change: PetChange } {
  const [from, flags, list, extra] = payload.split(':');
  if (from === undefined || from === '' || flags === undefined || list === undefined || extra !== undefined) {
    return { from: '', change: EVERY_PET };
  }
  if (flags.includes('*')) return { from, change: EVERY_PET };
  const ids = list === '' ? [] : list.split(',').map(Number);
  if (!ids.every(Number.isSafeInteger)) return { from, change: EVERY_PET };
  return { from, change: { ids, members: flags.includes('m'), statuses: flags.includes('s') } };
}

/**
 * Counts changes to the `pets` table made by every instance, on a `ChangeCounter`. Its own writes
 * and other instances' announcements count the pets they name; a trigger's notification, a moved
 * watermark or a lost listening connection count as a change of every pet.
 *
 * - While listening, `version()` is the change count; an answer read at a count is memoised until
 *   a pet it read changes (src/pipeline/memo.ts).
 * - When the listening connection closes or misses a heartbeat, `version()` becomes undefined at
 *   once: every read goes to the database.
 * - A new connection listens after `RELISTEN_DELAY_MS`. Once its LISTEN is acknowledged, every
 *   later commit is notified and every later read sees the earlier commits, so every pet counts
 *   as changed and `version()` is defined again.
 *
 * @example
 * const changes = new PetChanges((handlers) => postgres(url, { max: 1, ...handlers }), (payload) => announce(pool, payload), log)
 * await changes.start(); changes.version() // 1
 * await pool`UPDATE pets ...`; changes.written({ ids: [7] }) // 2, and the others hear of pet 7
 */
export class PetChanges {
  readonly #open: ListenSession;
  readonly #announce: (payload: string) => Promise<void>;
  readonly #log: Logger;
  readonly #changes = new ChangeCounter();
  /** Names this instance in its announcements, so that it does not count its own writes twice. */
  readonly #instance = randomUUID().slice(0, 8);
  /** This instance's changes not yet announced. */
  #unannounced: PetChange[] = [];
  /** Where the pets' versions were at the last heartbeat (`watermark`). */
  #top: unknown;
  /** Whether an announcement is being gathered or sent; whether a write ended while it was sent. */
  #announcing = false;
  #announceAgain = false;
  /** The wait before the announcement being gathered is sent (`ANNOUNCE_GATHER_MS`). */
  #gathering: ReturnType<typeof setTimeout> | undefined;
  /** The connection that listens, or is about to; undefined between a loss and the next try. */
  #session: postgres.Sql | undefined;
  #listening = false;
  /** Whether the loss of the connection has been logged (once per outage). */
  #lostLogged = false;
  #relisten: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #beating = false;
  #closed = false;

  /** `announce` tells the other instances of this one's writes (see `announce` above). */
  constructor(open: ListenSession, announce: (payload: string) => Promise<void>, log: Logger) {
    this.#open = open;
    this.#announce = announce;
    this.#log = log;
  }

  /** Starts listening; resolves once listening, or once the first try fails (it then retries). */
  async start(): Promise<void> {
    this.#heartbeat = setInterval(() => void this.#beat(), HEARTBEAT_MS);
    this.#heartbeat.unref?.();
    await this.#listen();
  }

  /** The change count while listening and caught up; undefined otherwise (memoise nothing). */
  version(): number | undefined {
    return this.#listening ? this.#changes.count() : undefined;
  }

  /** Whether nothing `reads` names changed since `since` (`ChangeCounter.readsUnchangedSince`). */
  readsUnchangedSince(since: number, reads: PetSet | undefined): boolean {
    return this.#changes.readsUnchangedSince(since, reads);
  }

  /**
   * Call when a write of this instance ends, stored or not, before its caller sees the result, so
   * this instance's next read sees the change. The change is also announced to the others; writes
   * that end within `ANNOUNCE_GATHER_MS` of the first share one announcement.
   */
  written(change: PetChange): void {
    this.#changes.changed(change);
    if (change !== EVERY_PET && change.ids.length === 0 && !change.members && !change.statuses) return;
    this.#unannounced.push(change);
    this.#sendAnnouncement();
  }

  async close(): Promise<void> {
    // Announce the writes still gathered before the pool closes.
    if (this.#gathering !== undefined) {
      clearTimeout(this.#gathering);
      await this.#announceGathered();
    }
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
      onnotify: (_channel, payload) => {
        if (this.#session !== session) return;
        const { from, change } = heard(payload);
        // This instance's own writes were counted when they ended.
        if (from !== this.#instance) this.#changes.changed(change);
      },
      onclose: () => this.#lost(session, 'the listening connection closed'),
    });
    this.#session = session;
    try {
      await session`LISTEN ${session(PETS_CHANNEL)}`;
      // Read after the LISTEN: a write committed before it is in the watermark, a later one is
      // notified.
      this.#top = await watermark(session);
    } catch (err) {
      this.#lost(session, peerText(err));
      return;
    }
    if (this.#session !== session || this.#closed) return;
    this.#changes.changed(EVERY_PET);
    this.#listening = true;
    if (this.#lostLogged) this.#log.info('listening for pet changes again; serving memoised answers');
    this.#lostLogged = false;
  }

  #sendAnnouncement(): void {
    // A write that ends while an announcement is gathered joins it.
    if (this.#gathering !== undefined) return;
    if (this.#announcing) {
      this.#announceAgain = true;
      return;
    }
    this.#announcing = true;
    this.#gathering = setTimeout(() => void this.#announceGathered(), ANNOUNCE_GATHER_MS);
    this.#gathering.unref?.();
  }

  async #announceGathered(): Promise<void> {
    this.#gathering = undefined;
    const payload = announcement(this.#instance, this.#unannounced);
    this.#unannounced = [];
    try {
      await this.#announce(payload);
    } catch (err) {
      // The others see the write through their heartbeat's watermark instead.
      this.#log.debug('announcing a pet write failed', { error: peerText(err) });
    } finally {
      this.#announcing = false;
      if (this.#announceAgain) {
        this.#announceAgain = false;
        this.#sendAnnouncement();
      }
    }
  }

  /** `session` is lost: stop serving memoised answers at once, and listen again after a pause. */
  #lost(session: postgres.Sql, reason: string): void {
    if (this.#session !== session || this.#closed) return;
    this.#session = undefined;
    this.#listening = false;
    this.#changes.changed(EVERY_PET);
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

  /**
   * Reads the watermark on the listening connection; any move counts as a change of every pet,
   * and no answer before the next beat counts as a lost connection.
   */
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
        this.#changes.changed(EVERY_PET);
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
 * The highest committed version (read from an index) and the sequence's last value (which deletes
 * move too), as one string that any write of pets changes.
 */
async function watermark(session: postgres.Sql): Promise<unknown> {
  const [row] = await session.unsafe(
    `SELECT coalesce((SELECT max(version) FROM pets), 0) || '/' || last_value AS top FROM ${PET_VERSIONS}`,
  );
  return row?.top ?? null;
}
