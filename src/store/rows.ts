import * as v from 'valibot';
import { type Pet, PetStatus } from '../api/schemas.ts';
import { StoreError } from './errors.ts';

/** The columns every pet query selects, in the order both engines return them. */
export const PET_COLUMNS = 'id, name, category_id, status';

const PetRow = v.object({
  id: v.number(),
  name: v.string(),
  category_id: v.number(),
  status: PetStatus,
});

/**
 * A row of `pets` as a Pet; a row the schema cannot produce means a damaged or foreign database.
 *
 * @example
 * petFromRow({ id: 1, name: 'Rex', category_id: 2, status: 'sold' }) // { id: 1, name: 'Rex', categoryId: 2, status: 'sold' }
 */
export function petFromRow(row: unknown): Pet {
  const parsed = v.safeParse(PetRow, row);
  if (!parsed.success) throw new StoreError(`unexpected row in pets: ${parsed.issues[0].message}`);
  const { id, name, category_id: categoryId, status } = parsed.output;
  return { id, name, categoryId, status };
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
