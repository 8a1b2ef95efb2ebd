// The clock every part reads time from: the system's, or a test's fake.

/** Where time comes from; tests pass a fake one and move it instead of sleeping. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
