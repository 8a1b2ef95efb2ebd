import { PetstoreError } from './errors.ts';
import { bindOperations, OPERATIONS, type Operations } from './generated/operations.ts';
import type { components, operations } from './generated/schema.ts';
import { linkTarget } from './link.ts';
import { Pacer } from './pacer.ts';
import type {
  CallOptions,
  ClientOptions,
  ConditionalOptions,
  CreateOptions,
  Fetch,
  JsonSuccess,
  Logger,
  RateLimitInfo,
} from './types.ts';
import { backoffMs, retryAfterMs, sleep } from './wait.ts';

const DEFAULT_MAX_RETRIES = 3;
/** Answers of a gateway or proxy in front of the service, or of a service that cannot serve now. */
const TRANSIENT = new Set([502, 503, 504]);

type OperationId = keyof operations;
type Query = Record<string, string | number | boolean | undefined>;
type ListQuery = Omit<NonNullable<operations['listPets']['parameters']['query']>, 'cursor'>;

export interface PetstoreClient extends Operations {
  /**
   * Every pet, page after page: follows each page's `Link: rel="next"` to the end, waiting for
   * the rate limit like any call.
   *
   * @example
   * for await (const pet of petstore.listAllPets({ status: 'available', limit: 100 })) console.log(pet.name);
   */
  listAllPets(query?: ListQuery, options?: CallOptions): AsyncGenerator<components['schemas']['Pet'], void, undefined>;
  /**
   * The `ETag` of the answer a body came in, e.g. a pet from `createPet` or `updatePet`: what
   * `ifMatch` takes to change or remove that pet only if nobody changed it since.
   *
   * @example
   * const rex = await petstore.createPet({ name: 'Rex', categoryId: 1 });
   * await petstore.updatePet(rex.id, { status: 'sold' }, { ifMatch: petstore.etagOf(rex) });
   */
  etagOf(body: object): string | undefined;
}

/**
 * A client of the Pet Store API: one method per operation of the contract, plus `listAllPets`.
 * Its calls share what the answers say of the key's quota, so together they wait instead of
 * being refused.
 *
 * @example
 * const petstore = createClient({ apiKey: process.env.PETSTORE_API_KEY, baseUrl: 'https://api.petstore.example/v1' });
 * const rex = await petstore.createPet({ name: 'Rex', categoryId: 1 });
 * const available = await petstore.listPets({ status: 'available', limit: 50 });
 */
export function createClient(options: ClientOptions): PetstoreClient {
  const transport = new Transport(options);
  return {
    ...bindOperations((id, path, body, query, callOptions) => transport.call(id, path, body, query, callOptions)),
    listAllPets: (query, callOptions) => transport.listAll(query, callOptions),
    etagOf: (body) => transport.etagOf(body),
  };
}

class Transport {
  readonly #base: string;
  readonly #authorization: string;
  readonly #maxRetries: number;
  readonly #onRateLimit: ClientOptions['onRateLimit'];
  readonly #logger: Logger;
  readonly #fetch: Fetch;
  readonly #pacer = new Pacer();
  readonly #warned = new Set<string>();
  /** The `ETag` of each body an answer carried one with, for as long as the caller keeps the body. */
  readonly #etags = new WeakMap<object, string>();

  constructor({ apiKey, baseUrl, maxRetries = DEFAULT_MAX_RETRIES, onRateLimit, logger, fetch }: ClientOptions) {
    if (!apiKey) throw new TypeError('createClient: apiKey is required');
    if (!/^https?:\/\/\S+$/.test(baseUrl))
      throw new TypeError(`createClient: baseUrl must be an http(s) URL, got "${baseUrl}"`);
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new TypeError(`createClient: maxRetries must be a whole number from 0, got ${maxRetries}`);
    }
    this.#base = baseUrl.replace(/\/+$/, '');
    this.#authorization = `Bearer ${apiKey}`;
    this.#maxRetries = maxRetries;
    this.#onRateLimit = onRateLimit;
    this.#logger = logger ?? console;
    this.#fetch = fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async call<K extends OperationId>(
    id: K,
    path: Record<string, string | number>,
    body: unknown,
    query: Query | undefined,
    options: CreateOptions & ConditionalOptions = {},
  ) {
    const response = await this.#send(id, this.#url(id, path, query), body, options);
    const answer = await json<K>(response);
    const etag = response.headers.get('etag');
    if (etag !== null && typeof answer === 'object' && answer !== null) this.#etags.set(answer, etag);
    return answer;
  }

  etagOf(body: object): string | undefined {
    return this.#etags.get(body);
  }

  async *listAll(query: ListQuery = {}, options: CallOptions = {}) {
    let url: string | undefined = this.#url('listPets', {}, query);
    while (url !== undefined) {
      const response = await this.#send('listPets', url, undefined, options);
      yield* await json<'listPets'>(response);
      url = linkTarget(response.headers.get('link'), 'next', response.url || url);
      // The key goes only where the client was pointed.
      if (url !== undefined && new URL(url).origin !== new URL(this.#base).origin) {
        throw new Error(`listAllPets: the next page is on another origin (${url}); not sending the key there`);
      }
    }
  }

  #url(id: OperationId, path: Record<string, string | number>, query: Query | undefined): string {
    const filled = OPERATIONS[id].path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(String(path[name])),
    );
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, String(value));
    const qs = search.toString();
    return `${this.#base}${filled}${qs ? `?${qs}` : ''}`;
  }

  /** Sends until an answer is final: a success, an error not worth retrying, or the last retry's. */
  async #send(
    id: OperationId,
    url: string,
    body: unknown,
    { signal, idempotencyKey, ifMatch }: CreateOptions & ConditionalOptions,
  ): Promise<Response> {
    const { method, idempotencyKey: keyed } = OPERATIONS[id];
    const headers: Record<string, string> = { authorization: this.#authorization, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // One key for every try of this call: the server answers a retry of a create it already
    // made with that pet, so a lost answer never becomes a second pet.
    if (keyed) headers['idempotency-key'] = idempotencyKey ?? crypto.randomUUID();
    if (ifMatch !== undefined) headers['if-match'] = ifMatch;
    // Sent twice, a GET changes nothing, and a keyed create is replayed: others are not resent
    // after an answer was lost.
    const repeatable = method === 'GET' || keyed;
    const init: RequestInit = { method, headers, signal: signal ?? null };
    if (body !== undefined) init.body = JSON.stringify(body);

    for (let retry = 0; ; retry++) {
      await this.#pacer.acquire(signal, (waitMs) =>
        this.#tell({ operationId: id, reason: 'paced', waitMs, attempt: 0 }),
      );
      let response: Response;
      try {
        response = await this.#fetch(url, init);
      } catch (error) {
        this.#pacer.settle(undefined);
        if (signal?.aborted || !repeatable || retry >= this.#maxRetries) throw error;
        await sleep(backoffMs(retry + 1), signal);
        continue;
      }
      this.#pacer.settle(response.headers);
      this.#warnIfDeprecated(id, response, url);
      if (response.ok) return response;
      const error = await PetstoreError.of(response);
      const waitMs = this.#retryWait(error, retry, repeatable);
      if (waitMs === undefined) throw error;
      if (error.status === 429) {
        const reason = error.code === 'too_many_concurrent_requests' ? 'too_many_concurrent_requests' : 'rate_limited';
        this.#tell({ operationId: id, reason, waitMs, attempt: retry + 1, error });
      }
      await sleep(waitMs, signal);
    }
  }

  /**
   * How long to wait before retrying after `error`, or undefined to give up: a 429 (nothing was
   * done) is waited out for `Retry-After` plus the backoff, except a ban (15 minutes by default:
   * the caller decides); 502, 503 and 504 likewise when sending again is safe.
   */
  #retryWait(error: PetstoreError, retry: number, repeatable: boolean): number | undefined {
    if (retry >= this.#maxRetries) return undefined;
    const retryable =
      (error.status === 429 && error.code !== 'key_banned') || (repeatable && TRANSIENT.has(error.status));
    return retryable ? (retryAfterMs(error.headers) ?? 0) + backoffMs(retry + 1) : undefined;
  }

  /** Tells `onRateLimit` of a wait; when it answers `false`, the call fails instead. */
  #tell(info: RateLimitInfo): void {
    if (this.#onRateLimit?.(info) !== false) return;
    throw (
      info.error ??
      new PetstoreError(
        {
          code: 'rate_limited',
          message: `The key has no request left for ${Math.ceil(info.waitMs / 1000)} s; the call was not sent.`,
          status: 429,
        },
        new Headers({ 'retry-after': String(Math.ceil(info.waitMs / 1000)) }),
      )
    );
  }

  /** The first answer of a deprecated operation: one warning per client, with its sunset and successor. */
  #warnIfDeprecated(id: OperationId, response: Response, url: string): void {
    const deprecation = response.headers.get('deprecation');
    if (deprecation === null || this.#warned.has(id)) return;
    this.#warned.add(id);
    const since = /^@(\d+)$/.exec(deprecation);
    const sunset = response.headers.get('sunset');
    const successor = linkTarget(response.headers.get('link'), 'successor-version', response.url || url);
    this.#logger.warn(
      [
        `petstore: ${id} is deprecated`,
        since ? ` since ${day(Number(since[1]) * 1000)}` : '',
        sunset ? ` and will be removed on ${day(Date.parse(sunset))} (Sunset: ${sunset})` : '',
        successor ? `; use ${successor} instead` : '',
        '.',
      ].join(''),
    );
  }
}

/**
 * The answer's body as the contract types it. The client trusts its service's contract and does
 * not check bodies again, as generated clients do not.
 */
async function json<K extends OperationId>(response: Response) {
  type Body = JsonSuccess<operations[K]['responses']>;
  if (response.status === 204) return undefined as Body;
  const body: unknown = await response.json();
  return body as Body;
}

function day(ms: number): string {
  return Number.isNaN(ms) ? 'an unreadable date' : new Date(ms).toISOString().slice(0, 10);
}
