import type { GatewayEnv } from './gateway/index.ts';

/** Hono environment of the app: what middleware hands to later middleware and handlers. */
export interface AppEnv {
  Variables: GatewayEnv['Variables'] & {
    requestId: string;
    /** The id of the operation or ops route serving the request (metrics label); unset for none. */
    operation: string;
    /** The code of the gateway's refusal (`unauthorized`, `rate_limited`, …); unset when it admitted the request or never saw it. */
    refusal: string;
  };
}
