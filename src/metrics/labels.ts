/**
 * What requests and store errors are counted under, apart from the registry (src/metrics.ts): the
 * request path and the `/metrics` route need these, and prom-client is loaded only when metrics
 * are on (it was 60% of the binary's start-up, bench/README.md).
 */
/** Operations requests are counted under: the contract's operationIds, the ops routes, `other`. */
export const OPERATIONS = [
  'listPets',
  'createPet',
  'getPet',
  'healthz',
  'readyz',
  'metrics',
  'docs',
  'openapi',
  'other',
] as const;
export type Operation = (typeof OPERATIONS)[number];
const OP = Object.fromEntries(OPERATIONS.map((name, i) => [name, i])) as Record<Operation, number>;

export const STORE_OPERATIONS = ['create', 'get', 'list', 'ping'] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** `Content-Type` of the exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The operation a request is counted under, from its method and the Hono route it matched.
 *
 * @example
 * operationOf('GET', '/v1/pets/:petId') // OP.getPet (2)
 */
export function operationOf(method: string, route: string): number {
  switch (route) {
    case '/v1/pets':
      return method === 'GET' || method === 'HEAD' ? OP.listPets : method === 'POST' ? OP.createPet : OP.other;
    case '/v1/pets/:petId':
      return method === 'GET' || method === 'HEAD' ? OP.getPet : OP.other;
    case '/healthz':
      return OP.healthz;
    case '/readyz':
      return OP.readyz;
    case '/metrics':
      return OP.metrics;
  }
  if (route.startsWith('/docs')) return OP.docs;
  if (route.startsWith('/openapi.')) return OP.openapi;
  return OP.other;
}
