import type { Closing } from '../core/orders.ts';
import type { NewPet, PetPatch } from '../core/pets.ts';
import type { IfMatch } from '../core/preconditions.ts';
import { StoreError, StoreTimeoutError, StoreUnavailableError, StoreUnreachableError } from './errors.ts';
import type { OutboxEvent } from './outbox.ts';
import type { IdempotentCreate, OwnerMove, PetStore, PlaceOrder } from './store.ts';

/**
 * A write of the store as a message carries it: the call's name and its arguments. With
 * `--workers` above 1 on SQLite every worker sends its writes to the host's one writer (the
 * supervisor's connection), which runs them in its group-committed batches.
 */
export type WriteCall =
  | readonly ['create', NewPet]
  | readonly ['createOnce', NewPet, IdempotentCreate]
  | readonly ['update', number, PetPatch, IfMatch | undefined]
  | readonly ['remove', number, IfMatch | undefined]
  | readonly ['placeOrder', PlaceOrder]
  | readonly ['closeOrder', string, string, Closing, number]
  | readonly ['expireOrders', number]
  | readonly ['retireOwner', string]
  | readonly ['adoptOwners', readonly OwnerMove[]]
  | readonly ['record', readonly OutboxEvent[]];

/** Sends a write to the host's one writer; settles once it is committed (or failed), as the call itself would. */
export type StoreWriter = (call: WriteCall) => Promise<unknown>;

/**
 * Runs a sent write on the writer's store.
 *
 * @example
 * await applyWrite(store, ['create', { name: 'Rex', categoryId: 1, status: 'available' }])
 */
export function applyWrite(store: PetStore, call: WriteCall): Promise<unknown> {
  switch (call[0]) {
    case 'create':
      return store.create(call[1]);
    case 'createOnce':
      return store.createOnce(call[1], call[2]);
    case 'update':
      return store.update(call[1], call[2], call[3]);
    case 'remove':
      return store.remove(call[1], call[2]);
    case 'placeOrder':
      return store.placeOrder(call[1]);
    case 'closeOrder':
      return store.closeOrder(call[1], call[2], call[3], call[4]);
    case 'expireOrders':
      return store.expireOrders(call[1]);
    case 'retireOwner':
      return store.retireOwner(call[1]);
    case 'adoptOwners':
      return store.adoptOwners(call[1]);
    case 'record':
      return store.outbox ? store.outbox.record(call[1]) : Promise.reject(new StoreError('record events: no outbox'));
  }
}

/** A write's failure as a message carries it: the error's class by name, and its message. */
export interface SentError {
  readonly name: string;
  readonly message: string;
}

const KINDS: ReadonlyMap<string, typeof StoreError> = new Map<string, typeof StoreError>([
  ['StoreError', StoreError],
  ['StoreUnavailableError', StoreUnavailableError],
  ['StoreTimeoutError', StoreTimeoutError],
  ['StoreUnreachableError', StoreUnreachableError],
]);

/** The failure of a write, to send. */
export function sentError(err: unknown): SentError {
  return err instanceof Error ? { name: err.name, message: err.message } : { name: 'StoreError', message: String(err) };
}

/**
 * The error a sent failure stands for, of the same class (so the API answers it as the writer's
 * own call would be answered); anything else is a `StoreError`.
 *
 * @example
 * storeErrorOf({ name: 'StoreTimeoutError', message: 'store pet: ...' }) instanceof StoreTimeoutError // true
 */
export function storeErrorOf({ name, message }: SentError): StoreError {
  const Kind = KINDS.get(name) ?? StoreError;
  return new Kind(message);
}
