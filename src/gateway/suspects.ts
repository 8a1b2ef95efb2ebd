/** Most addresses remembered: past this the oldest mark goes, so a flood cannot grow the set (~100 bytes each). */
const MAX_SUSPECTS = 100_000;

/**
 * Client addresses whose requests without a valid key were refused lately (rate-limited or
 * banned). The gateway sends a valid key from such an address through the address's limits
 * first: answering a right guess with 200 while wrong ones get 429 would tell a guesser it won.
 * The limiter stays the judge: the mark goes as soon as the address is admitted again.
 *
 * @example
 * const suspects = new SuspectAddresses();
 * suspects.mark('203.0.113.9'); suspects.has('203.0.113.9') // true
 */
export class SuspectAddresses {
  /** Insertion-ordered, so the first entry is the oldest mark. */
  readonly #marks = new Set<string>();
  readonly #max: number;

  constructor(max = MAX_SUSPECTS) {
    this.#max = max;
  }

  get size(): number {
    return this.#marks.size;
  }

  has(address: string): boolean {
    return this.#marks.has(address);
  }

  mark(address: string): void {
    this.#marks.delete(address);
    this.#marks.add(address);
    if (this.#marks.size > this.#max) this.#marks.delete(this.#marks.values().next().value as string);
  }

  clear(address: string): void {
    this.#marks.delete(address);
  }
}
