// The reference page at /docs: docsPage() writes its HTML, scalarConfig() Scalar's settings (none
// of which reaches another host), DOCS_CSP its Content-Security-Policy, and SCALAR_BUNDLE and the
// other assets it loads.
import type { ApiReferenceConfiguration } from '@scalar/hono-api-reference';
import { CompressedAsset, TextAsset } from './assets.ts';

/**
 * The page's Content-Security-Policy: everything from this origin only, and no inline script.
 * - `style-src 'unsafe-inline'` is required: the Scalar bundle injects its stylesheets from script
 *   at run time as `<style>` elements and `style` attributes, which can carry neither a nonce nor
 *   a fixed hash; without it the browser refuses them and the page renders broken. Styles cannot
 *   run code; scripts stay 'self' only.
 * - `connect-src 'self'`: "Test Request" reaches this server only. Picking the production or
 *   staging entry in the page's server list shows their URLs in the snippets, but the browser will
 *   not send to them from here: use the snippet, or the page that server serves itself.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Replaced by `bun build --define` in the binary's build (scripts/lib/build-info.sh); undeclared
// at run time otherwise, which `typeof` tolerates.
declare const PETSTORE_DOCS_EMBED: string | undefined;

/**
 * The binary holds the bundle as embedded files (raw bytes); Deno and the Node bundle read the
 * base64 module. The define makes the condition a constant, so the bundler leaves the other
 * module out of the binary (scripts/embed-docs.ts).
 */
const scalar =
  typeof PETSTORE_DOCS_EMBED === 'string' && PETSTORE_DOCS_EMBED === 'file'
    ? await import('./generated/scalar-files.ts')
    : await import('./generated/scalar-bundle.ts');

/** The Scalar standalone bundle, embedded gzipped at build time (scripts/embed-docs.ts). */
export const SCALAR_BUNDLE = new CompressedAsset({
  name: 'scalar',
  ext: 'js',
  hash: scalar.SCALAR_SHA256,
  contentType: 'text/javascript; charset=utf-8',
  gzip: scalar.scalarGzip,
});

// An external script rather than an inline one, so the CSP needs no 'unsafe-inline' for scripts:
// the configuration travels as a JSON data block, which the browser never executes.
export const INIT_SCRIPT = new TextAsset({
  name: 'init',
  ext: 'js',
  contentType: 'text/javascript; charset=utf-8',
  body: "Scalar.createApiReference('#app', JSON.parse(document.getElementById('scalar-config').textContent));\n",
});

export const FAVICON = new TextAsset({
  name: 'favicon',
  ext: 'svg',
  contentType: 'image/svg+xml',
  body:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" fill="#e36002">' +
    '<ellipse cx="16" cy="22" rx="8" ry="6.5"/><circle cx="6.5" cy="13" r="3.5"/><circle cx="12" cy="7" r="3.5"/>' +
    '<circle cx="20" cy="7" r="3.5"/><circle cx="25.5" cy="13" r="3.5"/></svg>',
});

/** One document the page offers. */
export interface PageDocument {
  /** Its name in the page's document picker, e.g. the contract's `info.title`. */
  title: string;
  /** Where the page loads it from (same origin). */
  url: string;
  /** Names its anchors (#petstore/tag/animals/GET/pets) and its download (petstore.json). */
  slug: string;
}

export interface PageOptions {
  /** Page title, e.g. the contract's `info.title`. */
  title: string;
  /** The documents the page offers, the first shown by default. */
  documents: readonly PageDocument[];
  /** Name of the security scheme the page's auth box selects first. */
  securityScheme: string | undefined;
}

/**
 * Scalar's configuration, shared by every document (`sources`; the first is the default, the others
 * chosen in the page's document picker). Everything that would reach another host is off: the
 * default fonts (fonts.scalar.com), telemetry, the AI agent (on by default on localhost), the
 * developer toolbar (its "Share" uploads the document to Scalar), the request proxy (unset: "Test
 * Request" goes straight to this server) and the "Open API client" button (client.scalar.com). The
 * token typed into the page stays in memory (`persistAuth: false`), not in localStorage.
 */
function scalarConfig({ documents, securityScheme }: PageOptions): Partial<ApiReferenceConfiguration> {
  return {
    sources: documents.map(({ title, url, slug }, i) => ({ title, url, slug, default: i === 0 })),
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    hideClientButton: true,
    showDeveloperTools: 'never',
    persistAuth: false,
    layout: 'modern',
    theme: 'default',
    defaultOpenAllTags: true,
    // Fields in the contract's order (name, categoryId, status), not alphabetical.
    orderSchemaPropertiesBy: 'preserve',
    defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
    ...(securityScheme ? { authentication: { preferredSecurityScheme: securityScheme } } : {}),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/**
 * The reference page: the Scalar bundle and its start-up script from this server, the
 * configuration as a JSON data block.
 *
 * @example
 * docsPage({
 *   title: 'Pet Store API',
 *   documents: [{ title: 'Pet Store API', url: '/openapi.json', slug: 'petstore' }],
 *   securityScheme: 'bearerAuth',
 * })
 */
export function docsPage(options: PageOptions): string {
  // `<` escaped so no value can close the data block early.
  const config = JSON.stringify(scalarConfig(options)).replace(/</g, '\\u003c');
  const title = escapeHtml(`${options.title} reference`);
  const links = options.documents
    .map((d) => {
      const yaml = escapeHtml(d.url.replace(/\.json$/, '.yaml'));
      return `<a href="${yaml}">${yaml}</a>`;
    })
    .join(' and ');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title}</title>
    <link rel="icon" type="image/svg+xml" href="${FAVICON.path}" />
  </head>
  <body>
    <noscript>This reference needs JavaScript. The contracts are at ${links}.</noscript>
    <div id="app"></div>
    <script id="scalar-config" type="application/json">${config}</script>
    <script src="${SCALAR_BUNDLE.path}"></script>
    <script src="${INIT_SCRIPT.path}"></script>
  </body>
</html>
`;
}
