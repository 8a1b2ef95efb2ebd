import type { NewPet, Pet, PetStatus } from '../schemas.ts';

/** One page request: pets with `id > after`, ascending, at most `limit`. */
export interface ListOptions {
  readonly limit: number;
  readonly status?: PetStatus;
  readonly after?: number;
}

/** Where pets live. Ids are assigned by the store and increase. */
export interface PetStore {
  /** Stores a new pet; resolves only once it is durable for this backend. */
  create(pet: NewPet): Promise<Pet>;
  get(id: number): Promise<Pet | undefined>;
  list(options: ListOptions): Promise<Pet[]>;
  /** Resolves when the store can serve requests; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
