import { Hono } from 'hono';
import contractYaml from '../contract/openapi.yaml' with { type: 'text' };
import { DOCS_CSP, docsPage, FAVICON, INIT_SCRIPT, SCALAR_BUNDLE } from './docs/page.ts';
import type { AppEnv } from './env.ts';
import { conditional, weakEtag } from './http/etag.ts';

/** The contract, embedded in the build: the binary serves the document it was tested against. */
export const CONTRACT_YAML: string = contractYaml;

/** The version segment every API path starts with. */
const API_PREFIX = '/v1';

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
 * The servers the served document lists: the instance answering this request first, so the
 * page's "Test Request" reaches it, then production and staging when configured. A request that
 * arrived through the production or staging host is that entry (with its scheme, which a TLS
 * proxy in front would otherwise hide), listed first and once.
 *
 * @example
 * documentServers('http://127.0.0.1:8080/openapi.json', { publicUrl: 'https://api.example' })
 * // [{ url: 'http://127.0.0.1:8080/v1', description: 'This server' },
 * //  { url: 'https://api.example/v1', description: 'Production' }]
 */
export function documentServers(requestUrl: string, { publicUrl, stagingUrl }: DocsOptions): ServerEntry[] {
  const here = new URL(requestUrl);
  const configured: ServerEntry[] = [];
  if (publicUrl) configured.push({ url: apiBase(publicUrl), description: 'Production' });
  if (stagingUrl) configured.push({ url: apiBase(stagingUrl), description: 'Staging' });
  const self = configured.find((s) => new URL(s.url).host === here.host);
  const first = self
    ? { url: self.url, description: `${self.description} (this server)` }
    : { url: `${here.origin}${API_PREFIX}`, description: 'This server' };
  return [first, ...configured.filter((s) => s !== self)];
}

/**
 * Public documentation routes: the contract as YAML (verbatim) and JSON (with this instance's
 * servers), and the Scalar reference page at `/docs` with its assets, all from the binary.
 *
 * @example
 * app.route('/', docsRoutes({ publicUrl: 'https://api.petstore.example' }))
 */
export function docsRoutes(options: DocsOptions = {}) {
  const docs = new Hono<AppEnv>();
  // Parsed on first use, not at start-up: the yaml module and the parse took most of the time
  // to first 200 (bench/README.md), for routes most instances never serve.
  let contract: Promise<Contract> | undefined;
  const parsed = () => {
    contract ??= import('yaml').then(({ default: YAML }) => YAML.parse(CONTRACT_YAML) as Contract);
    return contract;
  };
  let page: string | undefined;
  const pageHtml = async () => {
    const { info, security } = await parsed();
    page ??= docsPage({
      title: info?.title ?? 'API',
      specUrl: '/openapi.json',
      securityScheme: Object.keys(security?.[0] ?? {})[0],
    });
    return page;
  };

  // Public: any tool or page may load the contract (a code generator, an editor on another origin).
  const yamlEtag = weakEtag(CONTRACT_YAML);
  docs.get('/openapi.yaml', (c) => {
    c.header('Access-Control-Allow-Origin', '*');
    return conditional(c, CONTRACT_YAML, yamlEtag, 'application/yaml; charset=utf-8');
  });
  // The JSON lists this request's servers, so its tag is of the bytes sent (weak: it may go compressed).
  docs.get('/openapi.json', async (c) => {
    const body = JSON.stringify({ ...(await parsed()), servers: documentServers(c.req.url, options) });
    c.header('Access-Control-Allow-Origin', '*');
    c.header('Cache-Control', 'no-cache');
    return conditional(c, body, weakEtag(body), 'application/json');
  });

  docs.get('/docs', async (c) =>
    c.body(await pageHtml(), 200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': DOCS_CSP,
      'Cache-Control': 'no-cache',
      'Referrer-Policy': 'no-referrer',
      'X-Content-Type-Options': 'nosniff',
    }),
  );
  docs.get('/docs/', (c) => c.redirect('/docs', 301));
  for (const asset of [SCALAR_BUNDLE, INIT_SCRIPT, FAVICON]) docs.get(asset.path, (c) => asset.respond(c));
  return docs;
}
