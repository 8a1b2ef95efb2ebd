// The app's Hono `Env` (`AppEnv`): the variables one step sets on the context (`c.set`) for later
// steps to read (`c.get`). All five, where each is typed and where it is set:
// - `requestId`: typed here; set at step 1 (`requestLog.start()`, src/pipeline/request-log.ts).
// - `operation`: typed here; set first by the function that step 1 runs, `serveOperation`
//   (steps 2 to 8) or `serviceRoute`, in src/pipeline/pipeline.ts. The trace and the metrics read
//   it; the log line names the route Hono matched instead (src/pipeline/request-log.ts).
// - `refusal`: typed here; set at step 3 when the gateway refuses (`passGateway`,
//   src/pipeline/pipeline.ts). The trace (src/pipeline/request-trace.ts) and the metrics
//   (src/pipeline/count-requests.ts) read the refusal's code only here; the log line does not.
// - `caller`: typed on every context (Hono's `ContextVariableMap`) in src/gateway/gateway.ts; set
//   there at step 3 (`createAdmissionCheck()`).
// - `answerHeaders`: typed on every context in src/core/reply.ts; set at step 1 (`beginAnswer()`)
//   or on first use (`answerHeaders()`), both there.

/** The Hono context's variables; not the process's environment (src/config.ts reads that). */
export interface AppEnv {
  Variables: {
    requestId: string;
    /** The id of the operation or service route serving the request (trace and metrics), if any. */
    operation: string | undefined;
    /**
     * The code of the gateway's refusal (`unauthorized`, `rate_limited`, …); unset when it admitted
     * the request or never saw it.
     */
    refusal: string | undefined;
  };
}
