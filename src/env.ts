import type { KeyRecord } from './gateway/keys/file.ts';

/** Who sent the request, as the gateway identified it once. */
export type Caller =
  | { readonly kind: 'key'; readonly key: KeyRecord }
  | { readonly kind: 'address'; readonly address: string };

/** Hono environment of the app: what middleware hands to later middleware and handlers. */
export interface AppEnv {
  Variables: {
    caller: Caller;
    requestId: string;
  };
}
