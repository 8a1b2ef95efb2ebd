import type { Logger } from '../log.ts';
import { MemoryStore } from './memory.ts';
import type { PetStore } from './store.ts';

/** The `--data` value that keeps pets in memory only. */
export const MEMORY = ':memory:';

/**
 * Opens the store that `--data` names.
 *
 * @example
 * await openStore(':memory:', log)
 */
export async function openStore(data: string, log: Logger): Promise<PetStore> {
  if (data === MEMORY) {
    log.warn('pets are kept in memory only and are lost at exit', { data });
    return new MemoryStore();
  }
  throw new Error(`--data ${data}: only ${MEMORY} is available in this build`);
}
