// Counts keyless clients (addresses without a valid key) in a fixed-size table: a count-min
// sketch with time-bucketed counters. Nothing is allocated per address, so a flood from any number
// of addresses does not grow memory. A window's arrays are allocated on its first count.
//
// Each address hashes to one cell in each of two rows. The hash is keyed per process, so nobody
// can pick addresses that share a victim's cells. A cell counts every address that hashes to it;
// an address's count is the smaller of its two cells, and it is banned only while both cells are.
// So a collision can refuse a keyless request early but never admits one late. Valid keys are
// never counted here (`in-process.ts` keeps them apart).
//
// Buckets are shared by all cells and coarser than a key's (`KEYLESS_MINUTE`, `KEYLESS_DAY`), to
// keep the table small. The chance of an early refusal, its formula and the sizes are in
// docs/operations.md, "Memory, and keyless clients in a fixed table"; `keyless.test.ts` checks
// the formula against a simulated flood.

/** A sketch window's length and bucket size. */
interface SketchSpec {
  readonly windowMs: number;
  readonly bucketMs: number;
}

export const KEYLESS_MINUTE: SketchSpec = { windowMs: 60_000, bucketMs: 10_000 };
const KEYLESS_DAY: SketchSpec = { windowMs: 86_400_000, bucketMs: 3_600_000 };

const MAX_COUNT = 0xffff;

/** Placeholders for a window's arrays before its first count. */
const NONE16 = new Uint16Array(0);
const NONE32 = new Uint32Array(0);

/**
 * One window over all cells: a ring of `W / b + 1` buckets of saturating 16-bit counters, and each
 * cell's running sum. Bucket `j` holds requests in ((j-1)b, jb] and is counted while
 * `time < jb + W`, like `BucketWindow` with offset 0. Pass non-decreasing times.
 */
export class SketchWindow {
  readonly #spec: SketchSpec;
  readonly #cells: number;
  readonly #slots: number;
  /** Empty until the first count, so an instance with no keyless traffic never allocates it. */
  #ring: Uint16Array = NONE16;
  #sums: Uint32Array = NONE32;
  /** Buckets up to and including this one have left the window; their slots are zero. */
  #dropped: number;

  constructor(spec: SketchSpec, cells: number, now: number) {
    this.#spec = spec;
    this.#cells = cells;
    this.#slots = spec.windowMs / spec.bucketMs + 1;
    this.#dropped = this.#droppedAt(now);
  }

  #droppedAt(now: number): number {
    return Math.floor((now - this.#spec.windowMs) / this.#spec.bucketMs);
  }

  #slot(bucket: number): number {
    const s = bucket % this.#slots;
    return s < 0 ? s + this.#slots : s;
  }

  /** Drops the buckets that have left by `now`, one pass over the cells per bucket dropped. */
  advance(now: number): void {
    const dropped = this.#droppedAt(now);
    if (dropped <= this.#dropped) return;
    const cells = this.#cells;
    if (this.#sums === NONE32) {
      this.#dropped = dropped;
      return;
    }
    if (dropped - this.#dropped >= this.#slots) {
      this.#ring.fill(0);
      this.#sums.fill(0);
    } else {
      for (let j = this.#dropped + 1; j <= dropped; j++) {
        const base = this.#slot(j) * cells;
        for (let i = 0; i < cells; i++) this.#sums[i] = (this.#sums[i] as number) - (this.#ring[base + i] as number);
        this.#ring.fill(0, base, base + cells);
      }
    }
    this.#dropped = dropped;
  }

  count(cell: number): number {
    return this.#sums === NONE32 ? 0 : (this.#sums[cell] as number);
  }

  /** Counts `units` in `cell` at `now`. Call after `advance(now)`. */
  add(cell: number, now: number, units: number): void {
    if (this.#sums === NONE32) {
      this.#ring = new Uint16Array(this.#slots * this.#cells);
      this.#sums = new Uint32Array(this.#cells);
    }
    const at = this.#slot(Math.ceil(now / this.#spec.bucketMs)) * this.#cells + cell;
    const before = this.#ring[at] as number;
    const after = Math.min(MAX_COUNT, before + units);
    this.#ring[at] = after;
    this.#sums[cell] = (this.#sums[cell] as number) + (after - before);
  }

  /** Empties `cell` in every bucket. */
  clear(cell: number): void {
    if (this.#sums === NONE32) return;
    for (let s = 0; s < this.#slots; s++) this.#ring[s * this.#cells + cell] = 0;
    this.#sums[cell] = 0;
  }

  /** Counts the cells in [from, to) holding `least` or more. */
  used(from: number, to: number, least = 1): number {
    let n = 0;
    if (this.#sums === NONE32) return n;
    for (let i = from; i < to; i++) if ((this.#sums[i] as number) >= least) n++;
    return n;
  }

  /** Returns the epoch ms at which `cell`'s oldest counted bucket leaves (when its count > 0). */
  oldestLeavesAt(cell: number): number {
    let j = this.#dropped + 1;
    const last = j + this.#slots - 1;
    if (this.#sums === NONE32) return last * this.#spec.bucketMs + this.#spec.windowMs;
    while (j < last && this.#ring[this.#slot(j) * this.#cells + cell] === 0) j++;
    return j * this.#spec.bucketMs + this.#spec.windowMs;
  }

  /** Returns the epoch ms from which `cell`'s count is below `quota`, as `BucketWindow.admitAt`. */
  admitAt(cell: number, quota: number): number {
    let left = this.count(cell);
    if (left < quota) return Number.NEGATIVE_INFINITY;
    let j = this.#dropped + 1;
    while (left >= quota && left > 0) {
      left -= this.#ring[this.#slot(j) * this.#cells + cell] as number;
      j++;
    }
    return (j - 1) * this.#spec.bucketMs + this.#spec.windowMs;
  }
}

/** One cell of a window, with the interface `decisionFromCounts` reads. */
export class CellView {
  readonly #window: SketchWindow;
  readonly #cell: number;

  constructor(window: SketchWindow, cell: number) {
    this.#window = window;
    this.#cell = cell;
  }

  get count(): number {
    return this.#window.count(this.#cell);
  }

  get oldestLeavesAt(): number {
    return this.#window.oldestLeavesAt(this.#cell);
  }

  admitAt(quota: number): number {
    return this.#window.admitAt(this.#cell, quota);
  }
}

export interface KeylessTableOptions {
  /** Cells per row: a power of two from 1 to 65,536 (default 65,536). */
  columns?: number;
  /** The hash key; random per process by default. Tests pass one to be repeatable. */
  seed?: number;
}

/** The two cells of an address: row 0's in the low half, row 1's in the high half. */
export interface Cells {
  readonly a: number;
  readonly b: number;
}

/**
 * The fixed table of keyless clients' counters described in this file's header. `in-process.ts`
 * makes decisions from it.
 *
 * @example
 * const table = new KeylessTable(now);
 * const { a, b } = table.cellsOf('addr:203.0.113.7');
 */
export class KeylessTable {
  readonly columns: number;
  readonly minute: SketchWindow;
  readonly day: SketchWindow;
  readonly refusals: SketchWindow;
  /** Per cell, the unix second its ban ends; 0 if not banned. */
  readonly bannedUntil: Uint32Array;
  readonly #seed: number;
  readonly #bits: number;

  constructor(now: number, { columns = 65_536, seed }: KeylessTableOptions = {}) {
    if (!Number.isSafeInteger(columns) || columns < 1 || columns > 65_536 || (columns & (columns - 1)) !== 0) {
      throw new TypeError(`columns must be a power of two from 1 to 65536, got ${columns}`);
    }
    this.columns = columns;
    this.#bits = Math.log2(columns);
    this.#seed = (seed ?? crypto.getRandomValues(new Uint32Array(1))[0] ?? 0) >>> 0;
    const cells = 2 * columns;
    this.minute = new SketchWindow(KEYLESS_MINUTE, cells, now);
    this.day = new SketchWindow(KEYLESS_DAY, cells, now);
    this.refusals = new SketchWindow(KEYLESS_MINUTE, cells, now);
    this.bannedUntil = new Uint32Array(cells);
  }

  /** Returns the cells of `id`: FNV-1a from the seed, then murmur3's finaliser, split in two. */
  cellsOf(id: string): Cells {
    let h = (0x811c9dc5 ^ this.#seed) >>> 0;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    const mask = this.columns - 1;
    return { a: h & mask, b: this.columns + ((h >>> (32 - this.#bits)) & mask) };
  }

  advance(now: number): void {
    this.minute.advance(now);
    this.day.advance(now);
    this.refusals.advance(now);
  }

  /** How many of row 0's cells have a count in the day window. */
  get used(): number {
    return this.day.used(0, this.columns);
  }

  /**
   * Returns true when at least a tenth of row 0's cells have `perMinute` counted; a new address is
   * then refused early with a chance of one in a hundred or more.
   */
  saturated(perMinute: number): boolean {
    return this.minute.used(0, this.columns, perMinute) * 10 >= this.columns;
  }
}
