import { ADMIN_PREFIX } from '../admin/operations.ts';
import { API_PREFIX } from '../api/operations.ts';
import type { OpsRoute } from '../core/ops-route.ts';
import { weakEtag } from '../http/etag.ts';
import { DOCS_CSP, docsPage, FAVICON, INIT_SCRIPT, SCALAR_BUNDLE } from './page.ts';

// Defined by `bun build --define` for a compiled binary (scripts/lib/build-info.sh), else undeclared.
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
  /** Production base URL (`--public-url`), e.g. `https://api.petstore.example`; `/v1` is added. Empty: none. */
  publicUrl?: string;
  /** Staging base URL (`--staging-url`); `/v1` is added. */
  stagingUrl?: string;
}

type Contract = Record<string, unknown> & {
  info?: { title?: string };
  security?: Record<string, unknown>[];
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
 * The servers the served document lists: exactly the configured production and staging bases,
 * or, with neither configured, the relative `/v1` (the page's "Test Request" then goes to the
 * origin the page came from). Nothing from the request (`Host`, `X-Forwarded-Host`, `Forwarded`)
 * is ever used: a reflected host would let anyone who can reach the server, or poison a cache in
 * front of it, point readers' requests (and their tokens) elsewhere.
 *
 * @example
 * documentServers({}) // [{ url: '/v1', description: 'This server' }]
 * documentServers({ publicUrl: 'https://api.example' }) // [{ url: 'https://api.example/v1', description: 'Production' }]
 */
export function documentServers({ publicUrl, stagingUrl }: DocsOptions): ServerEntry[] {
  const configured: ServerEntry[] = [];
  if (publicUrl) configured.push({ url: apiBase(publicUrl), description: 'Production' });
  if (stagingUrl) configured.push({ url: apiBase(stagingUrl), description: 'Staging' });
  return configured.length > 0 ? configured : [{ url: API_PREFIX, description: 'This server' }];
}

/**
 * The servers the served admin document lists: the relative `/admin/v1` only. The admin API is
 * served on the admin port (`--admin-port`, on `--admin-host`), never on the public port that
 * serves this document, so its description says where the path is to be found; the production
 * and staging URLs are the public port's and do not apply.
 */
export const ADMIN_SERVERS: readonly ServerEntry[] = [
  {
    url: ADMIN_PREFIX,
    description:
      'The admin port (--admin-port, on --admin-host): this path is served there only, not on the port serving this document.',
  },
];

/** The contract's top-level `servers` block: its indented, blank and comment lines up to the next key. */
const SERVERS_BLOCK = /^servers:\n(?:(?:[ \t].*)?\n)*/m;

/**
 * The contract's YAML text with its `servers` replaced by `servers`, everything else as written
 * (comments included): the same servers as the JSON form, without a YAML library in the binary.
 *
 * @example
 * withServers('servers:\n  - url: http://x/v1\n\npaths: {}\n', [{ url: '/v1', description: 'This server' }])
 * // 'servers:\n  - url: "/v1"\n    description: "This server"\n\npaths: {}\n'
 */
export function withServers(yaml: string, servers: readonly ServerEntry[]): string {
  // JSON strings are YAML double-quoted scalars: any URL is written safely.
  const entries = servers.map(
    (s) => `  - url: ${JSON.stringify(s.url)}\n    description: ${JSON.stringify(s.description)}\n`,
  );
  // The blank line that ends the block stays, between it and the next key.
  return yaml.replace(SERVERS_BLOCK, (block) => `servers:\n${entries.join('')}${block.endsWith('\n\n') ? '\n' : ''}`);
}

/** Any tool or page may load the contract (a code generator, an editor on another origin). */
const PUBLIC = { 'Access-Control-Allow-Origin': '*' };
const PAGE_HEADERS = {
  'Content-Security-Policy': DOCS_CSP,
  'Cache-Control': 'no-cache',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
};

/** The contract's JSON and YAML routes at `/{name}.json` and `/{name}.yaml`, both with `servers`. */
function documentRoutes(
  name: string,
  yamlText: string,
  parsed: () => Promise<Contract>,
  servers: readonly ServerEntry[],
): OpsRoute[] {
  const yaml = withServers(yamlText, servers);
  // Hashed at the first request, not at start-up, which it would slow (bench/README.md).
  let hashed: string | undefined;
  const yamlEtag = () => {
    hashed ??= weakEtag(yaml);
    return hashed;
  };
  let json: { body: string; etag: string } | undefined;
  const contractJson = async () => {
    if (json === undefined) {
      const body = JSON.stringify({ ...(await parsed()), servers });
      json = { body, etag: weakEtag(body) };
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
 * Public documentation routes: the contract as YAML and JSON, both with the configured servers
 * (never the request's host), the admin API's contract beside it (`/openapi-admin.*`, servers the
 * relative `/admin/v1` of the admin port), and the Scalar reference page at `/docs` offering both
 * documents, the public one first, with its assets, all from the binary.
 *
 * @example
 * const routes = docsRoutes({ publicUrl: 'https://api.petstore.example' })
 */
export function docsRoutes(options: DocsOptions = {}): OpsRoute[] {
  // Parsed on first use, not at start-up: the yaml module and the parse took most of the time
  // to first 200 (bench/README.md), for routes most instances never serve.
  let contract: Promise<Contract> | undefined;
  const parsed = () => {
    contract ??= source.parseContract() as Promise<Contract>;
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
    ...documentRoutes('openapi', CONTRACT_YAML, parsed, documentServers(options)),
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
      (asset): OpsRoute => ({ id: 'docs', method: 'GET', path: asset.path, handler: (c) => asset.reply(c) }),
    ),
  ];
}
