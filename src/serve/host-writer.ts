/**
 * The host's one writer of a SQLite file (`--workers` above 1): the supervisor's connection
 * runs every worker's writes in its group-committed batches, and answers each once its batch is
 * committed, so the host pays one write lock and one sync per batch, as one event loop does,
 * rather than two connections taking the lock in turns. The workers read on their own
 * connections (WAL); what keeps those reads coherent is the shared version each write moves
 * before its caller hears of it (src/store/shared-version.ts).
 *
 * A turn's writes go out in one message and their answers come back a turn's at a time in one,
 * as the limiter's questions do (`host-limiter.ts`).
 */
import { batched } from '../log.ts';
import type { PetStore } from '../store/store.ts';
import { applyWrite, type SentError, sentError, storeErrorOf, type WriteCall } from '../store/writer.ts';

/** A turn's writes from a worker. */
export interface WriteMessage {
  readonly type: 'write';
  readonly ids: readonly number[];
  readonly calls: readonly WriteCall[];
}

/** The answers to writes: for each id, its result, or its error when `errors` has one there. */
export interface WrittenMessage {
  readonly type: 'written';
  readonly ids: readonly number[];
  readonly results: readonly unknown[];
  readonly errors: readonly (SentError | undefined)[];
}

interface Waiting {
  resolve(result: unknown): void;
  reject(err: Error): void;
}

/**
 * The worker's side: `write` sends a write to the host's writer and settles with its answer.
 *
 * @example
 * const writer = new RemoteWriter((m) => postMessage(m)); SqliteStore.open({ ..., writer: writer.write })
 */
export class RemoteWriter {
  readonly #waiting = new Map<number, Waiting>();
  readonly #send: (write: readonly [number, WriteCall]) => void;
  #lastId = 0;

  constructor(post: (message: WriteMessage) => void) {
    this.#send = batched((writes) =>
      post({ type: 'write', ids: writes.map(([id]) => id), calls: writes.map(([, call]) => call) }),
    );
  }

  readonly write = (call: WriteCall): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = ++this.#lastId;
      this.#waiting.set(id, { resolve, reject });
      this.#send([id, call]);
    });

  /** The writer's answers. */
  answer({ ids, results, errors }: WrittenMessage): void {
    ids.forEach((id, i) => {
      const waiting = this.#waiting.get(id);
      if (!waiting) return;
      this.#waiting.delete(id);
      const error = errors[i];
      if (error) waiting.reject(storeErrorOf(error));
      else waiting.resolve(results[i]);
    });
  }
}

/**
 * The writer's side for one worker: runs the worker's writes on `store` (the supervisor's own,
 * unwrapped: its batches, not its time bound, which the worker's store applies) and sends the
 * answers a turn's at a time.
 *
 * @example
 * const writes = writesFor(store, (m) => worker.postMessage(m)); writes(message)
 */
export function writesFor(store: PetStore, post: (message: WrittenMessage) => void): (message: WriteMessage) => void {
  const answer = batched((answers: readonly [number, unknown, SentError | undefined][]) =>
    post({
      type: 'written',
      ids: answers.map(([id]) => id),
      results: answers.map(([, result]) => result),
      errors: answers.map(([, , error]) => error),
    }),
  );
  return ({ ids, calls }) => {
    calls.forEach((call, i) => {
      const id = ids[i] as number;
      applyWrite(store, call).then(
        (result) => answer([id, result, undefined]),
        (err: unknown) => answer([id, undefined, sentError(err)]),
      );
    });
  };
}
