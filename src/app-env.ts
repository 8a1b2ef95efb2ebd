// The app's Hono `Env` (`AppEnv`): the variables one step sets on the context (`c.set`) for later
// steps to read (`c.get`), such as the request id, the operation and the gateway's refusal.
// Two more are typed where they are made, on every context (Hono's `ContextVariableMap`): the
// gateway's `caller` (src/gateway/gateway.ts) and the answer's `answerHeaders` (src/core/reply.ts).

/** Not the process's environment variables (those are src/config.ts's). */
export interface AppEnv {
  Variables: {
    requestId: string;
    /** The id of the operation or ops route serving the request (metrics label); unset for none. */
    operation: string | undefined;
    /** The code of the gateway's refusal (`unauthorized`, `rate_limited`, …); unset when it admitted the request or never saw it. */
    refusal: string | undefined;
  };
}
