// The pet columns that both SQLite and PostgreSQL select, and the functions that turn their rows
// into records.
import { type Inventory, type Pet, PetStatus, type StoredPet } from '../../core/pet-records.ts';
import { StoreError } from '../store-error.ts';

/** The columns every pet query selects, in the order both engines return them. */
export const PET_COLUMNS = 'id, name, category_id, status';
/** The columns of a pet and its version (src/core/pet-records.ts `StoredPet`). */
export const STORED_PET_COLUMNS = `${PET_COLUMNS}, version`;

const STATUSES: ReadonlySet<unknown> = new Set(PetStatus.options);

/** A row as the drivers return it, its column values not yet checked. */
type Row = Partial<Record<'id' | 'name' | 'category_id' | 'status' | 'version', unknown>>;

/**
 * Turns a row of `pets` into a Pet. Throws `StoreError` on a row the schema cannot produce (a
 * damaged or foreign database).
 *
 * @example
 * petFromRow({ id: 1, name: 'Rex', category_id: 2, status: 'sold' }) // { id: 1, name: 'Rex', categoryId: 2, status: 'sold' }
 */
export function petFromRow(row: unknown): Pet {
  // Checked by hand, not with a valibot schema: a page maps many rows, and parsing each with
  // valibot slows a page noticeably, for data this service wrote itself
  // (bench/README.md#measured-costs-behind-the-codes-choices).
  const { id, name, category_id, status } = (typeof row === 'object' && row !== null ? row : {}) as Row;
  if (typeof id !== 'number') throw unexpected('id', id);
  if (typeof name !== 'string') throw unexpected('name', name);
  if (typeof category_id !== 'number') throw unexpected('category_id', category_id);
  if (!STATUSES.has(status)) throw unexpected('status', status);
  return { id, name, categoryId: category_id, status: status as PetStatus };
}

/**
 * Turns a row of `STORED_PET_COLUMNS` into a StoredPet; throws as `petFromRow` does.
 *
 * @example
 * storedPetFromRow({ id: 1, name: 'Rex', category_id: 2, status: 'sold', version: 4 }) // { id: 1, ..., version: 4 }
 */
export function storedPetFromRow(row: unknown): StoredPet {
  const pet = petFromRow(row);
  const { version } = row as Row;
  if (typeof version !== 'number') throw unexpected('version', version);
  return { ...pet, version };
}

/**
 * The columns of the pet that an idempotency key's create answered, read from the key's row (`k`)
 * joined to `pets` (`p`): the key's own copy of the pet, else the pet as it is now (for keys
 * stored before migration 8 gave each key a copy). All NULL when neither exists; such a key
 * counts as unused.
 */
export const REPLAYED_PET = `
  k.pet_id AS id,
  coalesce(k.pet_name, p.name) AS name,
  coalesce(k.pet_category_id, p.category_id) AS category_id,
  coalesce(k.pet_status, p.status) AS status,
  coalesce(k.pet_version, p.version) AS version`;

/**
 * Turns a row of `REPLAYED_PET` into the StoredPet the create answered; undefined when unknown.
 *
 * @example
 * replayedPetFromRow({ id: 3, name: null, category_id: null, status: null, version: null }) // undefined
 */
export function replayedPetFromRow(row: unknown): StoredPet | undefined {
  return column(row, 'name') === null || column(row, 'name') === undefined ? undefined : storedPetFromRow(row);
}

function unexpected(column: string, value: unknown): StoreError {
  return new StoreError(`unexpected row in pets: ${column} is ${value === undefined ? 'missing' : typeof value}`);
}

/**
 * Reads one column of a row that the driver returned as `unknown`; undefined when it is absent.
 *
 * @example
 * column(db.prepare('PRAGMA journal_mode').get(), 'journal_mode') // 'wal'
 */
export function column(row: unknown, name: string): unknown {
  return typeof row === 'object' && row !== null && name in row ? (row as Record<string, unknown>)[name] : undefined;
}

/** The count of pets in each status, by one GROUP BY over the `(status, id)` index. */
export const COUNT_BY_STATUS = 'SELECT status, count(*) AS n FROM pets GROUP BY status';

/**
 * Turns the rows of `COUNT_BY_STATUS` into an inventory; a status no pet has counts 0.
 *
 * @example
 * inventoryFromRows([{ status: 'sold', n: 2 }]) // { available: 0, pending: 0, sold: 2 }
 */
export function inventoryFromRows(rows: readonly unknown[]): Inventory {
  const inventory: Inventory = { available: 0, pending: 0, sold: 0 };
  for (const row of rows) {
    const status = column(row, 'status');
    // PostgreSQL's count is a bigint, which its driver returns as a string.
    const n = Number(column(row, 'n'));
    if (!STATUSES.has(status) || !Number.isSafeInteger(n)) throw unexpected('status', status);
    inventory[status as PetStatus] = n;
  }
  return inventory;
}
