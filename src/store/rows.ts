import { type Pet, PetStatus } from '../core/pets.ts';
import { StoreError } from './errors.ts';

/** The columns every pet query selects, in the order both engines return them. */
export const PET_COLUMNS = 'id, name, category_id, status';

const STATUSES: ReadonlySet<unknown> = new Set(PetStatus.options);

/** A row as the drivers hand it over: its columns, each not yet known to be what it should. */
type Row = Partial<Record<'id' | 'name' | 'category_id' | 'status', unknown>>;

/**
 * A row of `pets` as a Pet; a row the schema cannot produce means a damaged or foreign database.
 *
 * @example
 * petFromRow({ id: 1, name: 'Rex', category_id: 2, status: 'sold' }) // { id: 1, name: 'Rex', categoryId: 2, status: 'sold' }
 */
export function petFromRow(row: unknown): Pet {
  // Checked by hand, not by a valibot schema: a page maps 21 rows, and valibot's parse of each
  // costs a random page noticeably (bench/README.md), for data this service wrote itself.
  const { id, name, category_id, status } = (typeof row === 'object' && row !== null ? row : {}) as Row;
  if (typeof id !== 'number') throw unexpected('id', id);
  if (typeof name !== 'string') throw unexpected('name', name);
  if (typeof category_id !== 'number') throw unexpected('category_id', category_id);
  if (!STATUSES.has(status)) throw unexpected('status', status);
  return { id, name, categoryId: category_id, status: status as PetStatus };
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
