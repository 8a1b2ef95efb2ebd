import type { NewPet, Pet } from '../schemas.ts';
import type { ListOptions, PetStore } from './store.ts';

/** Pets in process memory (`--data :memory:`): gone on restart. */
export class MemoryStore implements PetStore {
  /** Ascending by id, since ids only grow; a page starts with a binary search. */
  #pets: Pet[] = [];
  #nextId = 1;

  async create(pet: NewPet): Promise<Pet> {
    const stored: Pet = { id: this.#nextId++, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    this.#pets.push(stored);
    return { ...stored };
  }

  async get(id: number): Promise<Pet | undefined> {
    const i = this.#firstAfter(id - 1);
    const pet = this.#pets[i];
    return pet?.id === id ? { ...pet } : undefined;
  }

  async list({ limit, status, after = 0 }: ListOptions): Promise<Pet[]> {
    const page: Pet[] = [];
    for (let i = this.#firstAfter(after); i < this.#pets.length && page.length < limit; i++) {
      const pet = this.#pets[i] as Pet;
      if (status === undefined || pet.status === status) page.push({ ...pet });
    }
    return page;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  /** Index of the first pet with `id > after`. */
  #firstAfter(after: number): number {
    let lo = 0;
    let hi = this.#pets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#pets[mid] as Pet).id <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
