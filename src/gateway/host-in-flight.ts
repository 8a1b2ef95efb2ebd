// The in-flight cap across workers: `HostInFlight` counts a consumer's requests on every worker
// in shared memory (`hostSlotsMemory()`), so `--max-in-flight` holds for the whole host.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { InFlight } from './in-flight.ts';

/** Consumers the host's table can hold: more than a keys file names, with room for reloads. */
const HOST_SLOTS = 16_384;
/** Consumer ids whose slot index a worker caches: more than a keys file holds. */
const KNOWN_CONSUMERS = 10_000;

/**
 * The shared memory behind `HostInFlight`, made once by the supervisor and passed to every worker.
 * Each consumer claims a slot by a 64-bit digest of its id (compare-and-swap, linear probing); each
 * slot has one count per worker, so a dead worker's requests are released by clearing its column
 * (`clearWorker`).
 */
export interface HostSlotsMemory {
  readonly keys: SharedArrayBuffer;
  readonly counts: SharedArrayBuffer;
  readonly workers: number;
}

/**
 * Allocates the shared memory for `workers` workers' in-flight slots.
 *
 * @example
 * const memory = hostSlotsMemory(4) // handed to each worker in its start message
 */
export function hostSlotsMemory(workers: number): HostSlotsMemory {
  return {
    keys: new SharedArrayBuffer(HOST_SLOTS * BigInt64Array.BYTES_PER_ELEMENT),
    counts: new SharedArrayBuffer(HOST_SLOTS * workers * Int32Array.BYTES_PER_ELEMENT),
    workers,
  };
}

/**
 * Zeroes the counts of worker `worker`. Call it after the worker exits and before its replacement
 * starts in the same column.
 */
export function clearWorker(memory: HostSlotsMemory, worker: number): void {
  const counts = new Int32Array(memory.counts);
  for (let slot = 0; slot < HOST_SLOTS; slot++) Atomics.store(counts, slot * memory.workers + worker, 0);
}

/**
 * `InFlight` for the whole host: `enter()` adds one to this worker's count, sums all workers'
 * counts, and undoes the add and refuses if over the cap. The cap is never exceeded, though two
 * workers racing for the last slot may both refuse. A consumer the full table has no room for is
 * capped per worker only, and `full` is called.
 *
 * @example
 * const inFlight = new HostInFlight(128, memory, 0)
 * if (!inFlight.enter('con_acme')) refuse()
 */
export class HostInFlight<D> extends InFlight<D> {
  readonly #keys: BigInt64Array;
  readonly #counts: Int32Array;
  readonly #workers: number;
  readonly #worker: number;
  readonly #slots = new LRUCache<string, number>({ max: KNOWN_CONSUMERS });
  readonly #full: (consumerId: string) => void;

  constructor(max: number, memory: HostSlotsMemory, worker: number, full: (consumerId: string) => void = () => {}) {
    super(max);
    this.#keys = new BigInt64Array(memory.keys);
    this.#counts = new Int32Array(memory.counts);
    this.#workers = memory.workers;
    this.#worker = worker;
    this.#full = full;
  }

  override enter(consumerId: string): boolean {
    if (!super.enter(consumerId)) return false;
    const slot = this.#slot(consumerId);
    if (slot < 0) return true;
    const base = slot * this.#workers;
    Atomics.add(this.#counts, base + this.#worker, 1);
    let total = 0;
    for (let w = 0; w < this.#workers; w++) total += Atomics.load(this.#counts, base + w);
    if (total <= this.max) return true;
    Atomics.sub(this.#counts, base + this.#worker, 1);
    super.leave(consumerId);
    return false;
  }

  override leave(consumerId: string): void {
    super.leave(consumerId);
    const slot = this.#slot(consumerId);
    if (slot >= 0) Atomics.sub(this.#counts, slot * this.#workers + this.#worker, 1);
  }

  /** Returns the consumer's slot in the host's table, claiming one if needed; -1 if it is full. */
  #slot(consumerId: string): number {
    const known = this.#slots.get(consumerId);
    if (known !== undefined) return known;
    const digest = createHash('sha256').update(consumerId).digest();
    // 0 marks a free slot, so a digest of 0 is stored as 1.
    const key = digest.readBigInt64LE(0) || 1n;
    const start = digest.readUInt32LE(8) % HOST_SLOTS;
    for (let i = 0; i < HOST_SLOTS; i++) {
      const slot = (start + i) % HOST_SLOTS;
      const found = Atomics.compareExchange(this.#keys, slot, 0n, key);
      if (found === 0n || found === key) {
        this.#slots.set(consumerId, slot);
        return slot;
      }
    }
    this.#full(consumerId);
    return -1;
  }
}
