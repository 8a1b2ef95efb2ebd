// The pet columns SQLite and PostgreSQL select, and their rows turned into records: PET_COLUMNS,
// petFromRow(), storedPetFromRow(), REPLAYED_PET, inventoryFromRows(); column() reads a row's
// column.
import { type Inventory, type Pet, PetStatus, type StoredPet } from '../../core/pet-records.ts';
import { StoreError } from '../store-error.ts';

/** The columns every pet query selects, in the order both engines return them. */
export const PET_COLUMNS = 'id, name, category_id, status';
/** The columns of a pet and its version (src/core/pet-records.ts `StoredPet`). */
export const STORED_PET_COLUMNS = `${PET_COLUMNS}, version`;

const STATUSES: ReadonlySet<unknown> = new Set(PetStatus.options);

/** A row as the drivers hand it over: its columns, each not yet known to be what it should. */
type Row = Partial<Record<'id' | 'name' | 'category_id' | 'status' | 'version', unknown>>;

/**
 * A row of `pets` as a Pet; a row the schema cannot produce means a damaged or foreign database.
 *
 * @example
 * petFromRow({ id: 1, name: 'Rex', category_id: 2, status: 'sold' }) // { id: 1, name: 'Rex', categoryId: 2, status: 'sold' }
 */
export function petFromRow(row: unknown): Pet {
  // Checked by hand, not by a valibot schema: a page maps 21 rows, and valibot's parse of each
  // costs a random page noticeably, for data this service wrote itself
  // (bench/README.md#measured-costs-behind-the-codes-choices).
  const { id, name, category_id, status } = (typeof row === 'object' && row !== null ? row : {}) as Row;
  if (typeof id !== 'number') throw unexpected('id', id);
  if (typeof name !== 'string') throw unexpected('name', name);
  if (typeof category_id !== 'number') throw unexpected('category_id', category_id);
  if (!STATUSES.has(status)) throw unexpected('status', status);
  return { id, name, categoryId: category_id, status: status as PetStatus };
}

/**
 * A row of `STORED_PET_COLUMNS` as a StoredPet.
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
 * The pet an idempotency key's create answered, as `SELECT_KEY`s read it from the key's row
 * joined to `pets` (`p`): the row's own copy (migration 8 gave one to the keys stored before),
 * else the pet as it is now; none when neither is there (such a key counts as unused).
 */
export const REPLAYED_PET = `
  k.pet_id AS id,
  coalesce(k.pet_name, p.name) AS name,
  coalesce(k.pet_category_id, p.category_id) AS category_id,
  coalesce(k.pet_status, p.status) AS status,
  coalesce(k.pet_version, p.version) AS version`;

/**
 * A row of `REPLAYED_PET` as the StoredPet a create answered, or undefined when it is unknown.
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
 * One column of a row the driver returned as `unknown`.
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
 * The rows of `COUNT_BY_STATUS` as an inventory; a status no pet has counts 0.
 *
 * @example
 * inventoryFromRows([{ status: 'sold', n: 2 }]) // { available: 0, pending: 0, sold: 2 }
 */
export function inventoryFromRows(rows: readonly unknown[]): Inventory {
  const inventory: Inventory = { available: 0, pending: 0, sold: 0 };
  for (const row of rows) {
    const status = column(row, 'status');
    // PostgreSQL's count is a bigint, which its driver hands over as a string.
    const n = Number(column(row, 'n'));
    if (!STATUSES.has(status) || !Number.isSafeInteger(n)) throw unexpected('status', status);
    inventory[status as PetStatus] = n;
  }
  return inventory;
}
