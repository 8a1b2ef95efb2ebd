// The contract and its reference page as service routes: docsRoutes() serves /openapi.json and
// .yaml, the admin API's /openapi-admin.*, and /docs with its assets. The servers each document
// lists come from the configuration, never from the request.
import { ADMIN_PREFIX } from '../admin/admin-operations.ts';
import { API_PREFIX, OPERATIONS } from '../api/operations.ts';
import type { ServiceRoute } from '../core/service-route.ts';
import { weakEtagOf } from '../pipeline/etag.ts';
import { DOCS_CSP, docsPage, FAVICON, INIT_SCRIPT, SCALAR_BUNDLE } from './page.ts';

// Defined by `bun build --define` for a compiled binary (scripts/lib/build-info.sh), else
// undeclared.
declare const PETSTORE_DOCS_EMBED: string | undefined;

/** The binary reads build-time copies (no yaml module, no parse); Deno and Node parse the YAML. */
const source =
  typeof PETSTORE_DOCS_EMBED === 'string' && PETSTORE_DOCS_EMBED === 'file'
    ? await import('./generated/contract-files.ts')
    : await import('./contract-source.ts');

/** The contract, embedded in the build: the binary serves the document it was tested against. */
export const CONTRACT_YAML: string = source.CONTRACT_YAML;
/** The admin API's contract, embedded the same way. */
export const ADMIN_CONTRACT_YAML: string = source.ADMIN_CONTRACT_YAML;

export interface DocsOptions {
  /**
   * Production base URL (`--public-url`), e.g. `https://api.petstore.example`; `/v1` is added.
   * Empty: none.
   */
  publicUrl?: string;
  /** Staging base URL (`--staging-url`); `/v1` is added. */
  stagingUrl?: string;
  /**
   * Whether the experimental operations are served (`--experimental`): otherwise the documents
   * leave them out.
   */
  experimental?: boolean;
}

type Contract = Record<string, unknown> & {
  info?: { title?: string };
  security?: Record<string, unknown>[];
  paths?: Record<string, Record<string, unknown>>;
};

export interface ServerEntry {
  url: string;
  description: string;
}

/**
 * The API base under `url`: trailing slashes dropped, `/v1` added unless already there.
 *
 * @example
 * apiBase('https://api.petstore.example/') // 'https://api.petstore.example/v1'
 */
export function apiBase(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return trimmed.endsWith(API_PREFIX) ? trimmed : `${trimmed}${API_PREFIX}`;
}

/**
 * The servers the public document lists: the configured production and staging bases, or the
 * relative `/v1` when neither is set (so "Test Request" goes to the page's own origin). Nothing
 * from the request (`Host`, `X-Forwarded-Host`, `Forwarded`) is used: a reflected host would let
 * anyone who can reach the server, or poison a cache in front of it, send readers' requests (and
 * their tokens) elsewhere.
 *
 * @example
 * documentServers({}) // [{ url: '/v1', description: 'This server' }]
 * documentServers({ publicUrl: 'https://api.example' }) // [{ url: 'https://api.example/v1', description: 'Production' }]
 */
function documentServers({ publicUrl, stagingUrl }: DocsOptions): ServerEntry[] {
  const configured: ServerEntry[] = [];
  if (publicUrl) configured.push({ url: apiBase(publicUrl), description: 'Production' });
  if (stagingUrl) configured.push({ url: apiBase(stagingUrl), description: 'Staging' });
  return configured.length > 0 ? configured : [{ url: API_PREFIX, description: 'This server' }];
}

/**
 * The servers the admin document lists: only the relative `/admin/v1`, described as being on the
 * admin port, since the admin API is never served on the public port that serves this document.
 * The production and staging URLs belong to the public port and do not apply.
 */
export const ADMIN_SERVERS: readonly ServerEntry[] = [
  {
    url: ADMIN_PREFIX,
    description:
      'The admin port (--admin-port, on --admin-host): this path is served there only, not on the port serving this document.',
  },
];

/** The contract's top-level `servers` block: its indented, blank and comment lines. */
const SERVERS_BLOCK = /^servers:\n(?:(?:[ \t].*)?\n)*/m;

/**
 * The contract's YAML text with its `servers` block replaced by `servers`, everything else kept
 * as written (comments included), so the YAML lists the same servers as the JSON without a YAML
 * library in the binary.
 *
 * @example
 * withServers('servers:\n  - url: http://x/v1\n\npaths: {}\n', [{ url: '/v1', description: 'This server' }])
 * // 'servers:\n  - url: "/v1"\n    description: "This server"\n\npaths: {}\n'
 */
function withServers(yaml: string, servers: readonly ServerEntry[]): string {
  // A JSON string is a valid YAML double-quoted scalar, so any URL is written safely.
  const entries = servers.map(
    (s) => `  - url: ${JSON.stringify(s.url)}\n    description: ${JSON.stringify(s.description)}\n`,
  );
  // Keep the blank line between the block and the next key.
  return yaml.replace(SERVERS_BLOCK, (block) => `servers:\n${entries.join('')}${block.endsWith('\n\n') ? '\n' : ''}`);
}

/** The methods a Path Item may hold an operation under. */
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * The contract's YAML text without the operations named in `ids` (and without any path left
 * empty), everything else as written. It relies on the contract's layout: paths indented two
 * spaces under `paths:`, methods four, each operation's `operationId` six.
 *
 * @example
 * withoutOperations(yaml, new Set(['getInventory'])) // the text without GET /store/inventory
 */
export function withoutOperations(yaml: string, ids: ReadonlySet<string>): string {
  if (ids.size === 0) return yaml;
  const lines = yaml.split('\n');
  const start = lines.indexOf('paths:');
  if (start < 0) return yaml;
  const indent = (line: string) =>
    line.trim() === '' ? Number.POSITIVE_INFINITY : line.length - line.trimStart().length;
  let end = start + 1;
  while (end < lines.length && indent(lines[end] as string) > 0) end++;
  /** The line after the block that starts at `from`: the next line indented `depth` or less. */
  const blockEnd = (from: number, depth: number) => {
    let i = from + 1;
    while (i < end && indent(lines[i] as string) > depth) i++;
    return i;
  };
  const kept: string[] = [];
  for (let p = start + 1; p < end; ) {
    const pathEnd = blockEnd(p, 2);
    const item: string[] = [];
    let operations = 0;
    for (let m = p + 1; m < pathEnd; ) {
      const line = lines[m] as string;
      const next = indent(line) === 4 ? blockEnd(m, 4) : m + 1;
      const block = lines.slice(m, next);
      const method = indent(line) === 4 && METHODS.has(line.trim().replace(/:$/, ''));
      const id = block
        .find((l) => l.startsWith('      operationId: '))
        ?.slice('      operationId: '.length)
        .trim();
      if (!method || id === undefined || !ids.has(id)) {
        item.push(...block);
        if (method) operations++;
      }
      m = next;
    }
    if (operations > 0 || !lines[p]?.startsWith('  /')) kept.push(lines[p] as string, ...item);
    p = pathEnd;
  }
  return [...lines.slice(0, start + 1), ...kept, ...lines.slice(end)].join('\n');
}

/** The contract as a document without the operations named in `ids` (and paths left empty). */
function withoutOperationsIn(contract: Contract, ids: ReadonlySet<string>): Contract {
  if (ids.size === 0 || !contract.paths) return contract;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, item] of Object.entries(contract.paths)) {
    const entries = Object.entries(item).filter(
      ([method, op]) => !METHODS.has(method) || !ids.has((op as { operationId?: string }).operationId ?? ''),
    );
    if (entries.some(([method]) => METHODS.has(method))) paths[path] = Object.fromEntries(entries);
  }
  return { ...contract, paths };
}

/** The experimental operations a document leaves out unless they are served. */
const hiddenOperations = (experimental: boolean): ReadonlySet<string> =>
  new Set(experimental ? [] : OPERATIONS.filter((op) => op.stability === 'experimental').map((op) => op.id));

/** CORS headers: any tool or page may load the contract (a code generator, an editor elsewhere). */
const PUBLIC = { 'Access-Control-Allow-Origin': '*' };
const PAGE_HEADERS = {
  'Content-Security-Policy': DOCS_CSP,
  'Cache-Control': 'no-cache',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
};

/**
 * The contract's JSON and YAML routes at `/{name}.json` and `/{name}.yaml`, both with `servers`.
 */
function documentRoutes(
  name: string,
  yamlText: string,
  parsed: () => Promise<Contract>,
  servers: readonly ServerEntry[],
): ServiceRoute[] {
  const yaml = withServers(yamlText, servers);
  // Hashed at the first request, not at start-up, which hashing would slow down
  // (bench/README.md#measured-costs-behind-the-codes-choices).
  let hashed: string | undefined;
  const yamlEtag = () => {
    hashed ??= weakEtagOf(yaml);
    return hashed;
  };
  let json: { body: string; etag: string } | undefined;
  const contractJson = async () => {
    if (json === undefined) {
      const body = JSON.stringify({ ...(await parsed()), servers });
      json = { body, etag: weakEtagOf(body) };
    }
    return json;
  };
  return [
    {
      id: 'openapi',
      method: 'GET',
      path: `/${name}.yaml`,
      handler: () => ({
        status: 200,
        body: yaml,
        type: 'application/yaml; charset=utf-8',
        headers: PUBLIC,
        etag: yamlEtag(),
      }),
    },
    {
      id: 'openapi',
      method: 'GET',
      path: `/${name}.json`,
      async handler() {
        const { body, etag } = await contractJson();
        return {
          status: 200,
          body,
          type: 'application/json',
          headers: { ...PUBLIC, 'Cache-Control': 'no-cache' },
          etag,
        };
      },
    },
  ];
}

/**
 * The public documentation routes: the contract as YAML and JSON with the configured servers, the
 * admin API's contract (`/openapi-admin.*`), and the Scalar page at `/docs` offering both, with
 * its assets. The public contract leaves out the experimental operations unless `experimental`.
 *
 * @example
 * const routes = docsRoutes({ publicUrl: 'https://api.petstore.example' })
 */
export function docsRoutes(options: DocsOptions = {}): ServiceRoute[] {
  // Parsed on first use, not at start-up: loading the yaml module and parsing are most of the
  // time to the first 200 (bench/README.md#measured-costs-behind-the-codes-choices), for routes
  // most instances never serve.
  const hidden = hiddenOperations(options.experimental ?? false);
  let contract: Promise<Contract> | undefined;
  const parsed = () => {
    contract ??= (source.parseContract() as Promise<Contract>).then((doc) => withoutOperationsIn(doc, hidden));
    return contract;
  };
  let adminContract: Promise<Contract> | undefined;
  const adminParsed = () => {
    adminContract ??= source.parseAdminContract() as Promise<Contract>;
    return adminContract;
  };
  let page: string | undefined;
  const pageHtml = async () => {
    const [{ info, security }, admin] = await Promise.all([parsed(), adminParsed()]);
    page ??= docsPage({
      title: info?.title ?? 'API',
      documents: [
        { title: info?.title ?? 'API', url: '/openapi.json', slug: 'petstore' },
        { title: admin.info?.title ?? 'Admin API', url: '/openapi-admin.json', slug: 'petstore-admin' },
      ],
      securityScheme: Object.keys(security?.[0] ?? {})[0],
    });
    return page;
  };

  return [
    // The servers come from the configuration only, never from the request.
    ...documentRoutes('openapi', withoutOperations(CONTRACT_YAML, hidden), parsed, documentServers(options)),
    ...documentRoutes('openapi-admin', ADMIN_CONTRACT_YAML, adminParsed, ADMIN_SERVERS),
    {
      id: 'docs',
      method: 'GET',
      path: '/docs',
      handler: async () => ({
        status: 200,
        body: await pageHtml(),
        type: 'text/html; charset=utf-8',
        headers: PAGE_HEADERS,
      }),
    },
    { id: 'docs', method: 'GET', path: '/docs/', handler: () => ({ status: 301, headers: { Location: '/docs' } }) },
    ...[SCALAR_BUNDLE, INIT_SCRIPT, FAVICON].map(
      (asset): ServiceRoute => ({ id: 'docs', method: 'GET', path: asset.path, handler: (c) => asset.reply(c) }),
    ),
  ];
}
