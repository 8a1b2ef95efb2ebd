import type { Caller } from './gateway/caller.ts';

/** Hono environment of the app: what middleware hands to later middleware and handlers. */
export interface AppEnv {
  Variables: {
    caller: Caller;
    requestId: string;
  };
}
