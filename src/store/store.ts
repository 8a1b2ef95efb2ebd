import type { NewPet, Pet, PetStatus } from '../core/pets.ts';
import type { Outbox } from './outbox.ts';

/** One page request: pets with `id > after`, ascending, at most `limit`. */
export interface ListOptions {
  readonly limit: number;
  readonly status?: PetStatus;
  readonly after?: number;
}

/** A create the client may retry: it carries an `Idempotency-Key`. */
export interface IdempotentCreate {
  /** Whose key it is (the caller's identity, e.g. `key:acme`): two callers never share keys. */
  readonly scope: string;
  /** The `Idempotency-Key` header as sent. */
  readonly key: string;
  /** Digest of the request (`fingerprintOf`): the same key with another request is a conflict. */
  readonly fingerprint: string;
  /** Epoch ms now, from the app's clock: the key is remembered until now + 24 h. */
  readonly now: number;
}

/** What `createOnce` did: stored a new pet, found the one the key made before, or refused. */
export type CreateOnceResult =
  | { readonly outcome: 'created'; readonly pet: Pet }
  | { readonly outcome: 'replayed'; readonly pet: Pet }
  | { readonly outcome: 'conflict' };

/** Where pets live. Ids are assigned by the store and increase. */
export interface PetStore {
  /** Stores a new pet; resolves only once it is durable for this backend. */
  create(pet: NewPet): Promise<Pet>;
  /**
   * Like `create`, remembering the key with the pet in the same transaction, so a crash cannot
   * keep one without the other; a live key answers its first pet (`replayed`) or, with another
   * fingerprint, `conflict`. Creates with the same key never both store a pet, even when
   * concurrent or on different instances sharing the database.
   */
  createOnce(pet: NewPet, once: IdempotentCreate): Promise<CreateOnceResult>;
  get(id: number): Promise<Pet | undefined>;
  list(options: ListOptions): Promise<readonly Pet[]>;
  /**
   * A value that changes whenever any pet may have changed, compared with `===`; undefined when
   * the store cannot tell (then no answer read from it is kept: src/http/memo.ts).
   */
  version(): unknown;
  /** The webhook outbox kept with the pets (same file or database), when the backend has one. */
  readonly outbox?: Outbox;
  /** Resolves when the store can serve requests; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
