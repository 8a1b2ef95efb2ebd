import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import YAML from 'yaml';
import { routesApp, testApp } from '../../test/testing.ts';
import { ConfigError, parseConfig } from '../config.ts';
import { ADMIN_CONTRACT_YAML, apiBase, CONTRACT_YAML, docsRoutes, withoutOperations } from './docs-routes.ts';
import { DOCS_CSP, FAVICON, INIT_SCRIPT, SCALAR_BUNDLE } from './page.ts';

const STANDALONE = readFileSync(
  join(import.meta.dir, '../../node_modules/@scalar/api-reference/dist/browser/standalone.js'),
);
const STANDALONE_HASH = createHash('sha256').update(STANDALONE).digest('hex').slice(0, 16);
const IMMUTABLE = 'public, max-age=31536000, immutable';
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; font-src 'self'; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());

describe('GET /docs', () => {
  test('200 HTML with the CSP, loading only this server’s assets and document', async () => {
    const res = await testApp().app.request('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CSP);
    expect(DOCS_CSP).toBe(CSP);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    const sources = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources).toEqual([FAVICON.path, `/docs/assets/scalar.${STANDALONE_HASH}.js`, INIT_SCRIPT.path]);
    expect(html).toContain('<title>Pet Store API reference</title>');
    expect(html).not.toMatch(/https?:\/\//);
    // Every <script> either loads from this origin or is a JSON data block the browser never runs.
    const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)([^>]*)>/g)].map((m) => m[1]);
    expect(inline).toEqual([' id="scalar-config" type="application/json"']);
  });

  test('Scalar offers the public API first, then the admin API; calls no other host; opens on bearer auth', async () => {
    const html = await (await testApp().app.request('/docs')).text();
    const json = /<script id="scalar-config" type="application\/json">(.*)<\/script>/.exec(html)?.[1] ?? '';
    expect(JSON.parse(json)).toEqual({
      sources: [
        { title: 'Pet Store API', url: '/openapi.json', slug: 'petstore', default: true },
        { title: 'Pet Store admin API', url: '/openapi-admin.json', slug: 'petstore-admin', default: false },
      ],
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      hideClientButton: true,
      showDeveloperTools: 'never',
      persistAuth: false,
      layout: 'modern',
      theme: 'default',
      defaultOpenAllTags: true,
      orderSchemaPropertiesBy: 'preserve',
      defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
      authentication: { preferredSecurityScheme: 'bearerAuth' },
    });
  });

  test('/docs/ redirects to /docs', async () => {
    const res = await testApp().app.request('/docs/');
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/docs');
  });
});

describe('the embedded Scalar bundle', () => {
  test('is named by the hash of the bundle it holds', () => {
    expect(SCALAR_BUNDLE.path).toBe(`/docs/assets/scalar.${STANDALONE_HASH}.js`);
  });

  test('br-accepting clients get the gzip bytes as they are, with their strong ETag: no br copy is kept', async () => {
    const res = await testApp().app.request(SCALAR_BUNDLE.path, {
      headers: { 'Accept-Encoding': 'gzip, deflate, br' },
    });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('etag')).toBe(`"${STANDALONE_HASH}-gz"`);
    const body = await bytes(res);
    expect(body.length).toBe(SCALAR_BUNDLE.gzip.length);
    expect(Buffer.from(gunzipSync(body)).equals(STANDALONE)).toBe(true);
  });

  test('a client that takes br but refuses gzip gets the plain bytes', async () => {
    const res = await testApp().app.request(SCALAR_BUNDLE.path, { headers: { 'Accept-Encoding': 'br, gzip;q=0' } });
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(res.headers.get('etag')).toBe(`"${STANDALONE_HASH}"`);
    expect(Buffer.from(await bytes(res)).equals(STANDALONE)).toBe(true);
  });

  test('gzip-accepting clients get the gzip bytes, cached for a year', async () => {
    const res = await testApp().app.request(SCALAR_BUNDLE.path, {
      headers: { 'Accept-Encoding': 'gzip, deflate' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    expect(res.headers.get('cache-control')).toBe(IMMUTABLE);
    const body = await bytes(res);
    expect(body.length).toBe(SCALAR_BUNDLE.gzip.length);
    expect(body.length).toBeLessThan(STANDALONE.length / 3);
    expect(Buffer.from(gunzipSync(body)).equals(STANDALONE)).toBe(true);
  });

  test.each([[undefined], ['identity'], ['deflate'], ['gzip;q=0, br;q=0, *']])(
    'Accept-Encoding %p gets the identical bytes uncompressed',
    async (ae) => {
      const res = await testApp().app.request(SCALAR_BUNDLE.path, {
        headers: ae === undefined ? {} : { 'Accept-Encoding': ae },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-encoding')).toBeNull();
      expect(res.headers.get('vary')).toBe('Accept-Encoding');
      expect(res.headers.get('cache-control')).toBe(IMMUTABLE);
      expect(Buffer.from(await bytes(res)).equals(STANDALONE)).toBe(true);
    },
  );

  test('the start-up script and the icon are immutable too; an unknown hash is the JSON 404', async () => {
    const { app } = testApp();
    const init = await app.request(INIT_SCRIPT.path);
    expect(init.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(init.headers.get('cache-control')).toBe(IMMUTABLE);
    expect(await init.text()).toBe(
      "Scalar.createApiReference('#app', JSON.parse(document.getElementById('scalar-config').textContent));\n",
    );
    const icon = await app.request(FAVICON.path);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe(IMMUTABLE);
    const stale = await app.request('/docs/assets/scalar.0000000000000000.js');
    expect(stale.status).toBe(404);
    expect(stale.headers.get('content-type')).toBe('application/json');
  });
});

describe('the contract for other tools', () => {
  test.each(['/openapi.json', '/openapi.yaml', '/openapi-admin.json', '/openapi-admin.yaml'])(
    '%s: public (CORS *), with an ETag; If-None-Match gives 304',
    async (path) => {
      const { app } = testApp();
      const full = await app.request(path);
      const etag = full.headers.get('etag') as string;
      expect(etag).toMatch(/^W\/"[0-9a-f]{16}"$/);
      expect(full.headers.get('access-control-allow-origin')).toBe('*');
      const cached = await app.request(path, { headers: { 'If-None-Match': etag } });
      expect([cached.status, cached.headers.get('etag'), await cached.text()]).toEqual([304, etag, '']);
    },
  );
});

describe('GET /openapi.json', () => {
  const servers = async (app: { request: (url: string) => Response | Promise<Response> }, url: string) =>
    ((await (await app.request(url)).json()) as { servers: unknown }).servers;

  test('is the relative /v1 without configured URLs, whatever host the request names', async () => {
    const { app } = testApp();
    expect(await servers(app, 'http://pets.test:9000/openapi.json')).toEqual([
      { url: '/v1', description: 'This server' },
    ]);
    const res = await app.request('http://127.0.0.1/openapi.json', {
      headers: { Host: 'evil.example', 'X-Forwarded-Host': 'evil.example', Forwarded: 'host=evil.example;proto=https' },
    });
    expect(((await res.json()) as { servers: unknown }).servers).toEqual([{ url: '/v1', description: 'This server' }]);
  });

  test('is exactly production and staging when configured, each with /v1', async () => {
    const docs = routesApp(
      docsRoutes({
        publicUrl: 'https://api.petstore.example/',
        stagingUrl: 'https://staging.petstore.example/v1',
      }),
    );
    const expected = [
      { url: 'https://api.petstore.example/v1', description: 'Production' },
      { url: 'https://staging.petstore.example/v1', description: 'Staging' },
    ];
    expect(await servers(docs, 'http://127.0.0.1:8080/openapi.json')).toEqual(expected);
    expect(await servers(docs, 'http://api.petstore.example/openapi.json')).toEqual(expected);
    expect(await servers(docs, 'http://evil.example/openapi.json')).toEqual(expected);
  });

  test('is otherwise the contract (with --experimental), and not cached without revalidation', async () => {
    const res = await testApp({ experimental: true }).app.request('/openapi.json');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const { servers: _, ...rest } = (await res.json()) as Record<string, unknown>;
    const { servers: __, ...contract } = YAML.parse(CONTRACT_YAML) as Record<string, unknown>;
    expect(rest).toEqual(contract);
  });

  test('leaves out the experimental operations, and only them, unless they are served', async () => {
    const res = await testApp().app.request('/openapi.json');
    const { servers: _, ...rest } = (await res.json()) as { servers: unknown; paths: Record<string, unknown> };
    const { servers: __, ...contract } = YAML.parse(CONTRACT_YAML) as {
      servers: unknown;
      paths: Record<string, unknown>;
    };
    const { '/store/inventory': inventory, ...others } = contract.paths;
    expect(inventory).toBeDefined();
    expect(rest).toEqual({ ...contract, paths: others });
  });
});

describe('GET /openapi.yaml', () => {
  const CONFIGURED = { publicUrl: 'https://api.petstore.example', stagingUrl: 'https://staging.petstore.example/' };
  const both = async (app: { request: (url: string) => Response | Promise<Response> }) => ({
    json: (await (await app.request('/openapi.json')).json()) as Record<string, unknown>,
    yaml: YAML.parse(await (await app.request('/openapi.yaml')).text()) as Record<string, unknown>,
  });

  test('is the same document as /openapi.json, servers included: the relative /v1 by default', async () => {
    const { json, yaml } = await both(testApp().app);
    expect(yaml.servers).toEqual([{ url: '/v1', description: 'This server' }]);
    expect(yaml).toEqual(json);
  });

  test('names exactly --public-url and --staging-url when configured, as /openapi.json does', async () => {
    const { json, yaml } = await both(routesApp(docsRoutes(CONFIGURED)));
    expect(yaml.servers).toEqual([
      { url: 'https://api.petstore.example/v1', description: 'Production' },
      { url: 'https://staging.petstore.example/v1', description: 'Staging' },
    ]);
    expect(yaml).toEqual(json);
  });

  test('without --experimental, the YAML leaves out the same operations as the JSON', async () => {
    const { json, yaml } = await both(testApp().app);
    expect(Object.keys(yaml.paths as object)).not.toContain('/store/inventory');
    expect(yaml).toEqual(json);
  });

  test('is otherwise the contract as written, comments included (with --experimental)', async () => {
    const res = await routesApp(docsRoutes({ ...CONFIGURED, experimental: true })).request('/openapi.yaml');
    expect(res.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
    const served = (await res.text()).split('\n');
    const written = readFileSync(join(import.meta.dir, '../../contract/openapi.yaml'), 'utf8').split('\n');
    const start = written.indexOf('servers:');
    const end = written.indexOf('security:');
    expect(served.slice(0, start + 1)).toEqual(written.slice(0, start + 1));
    expect(served.slice(start + 1, served.indexOf('security:'))).toEqual([
      '  - url: "https://api.petstore.example/v1"',
      '    description: "Production"',
      '  - url: "https://staging.petstore.example/v1"',
      '    description: "Staging"',
      '',
    ]);
    expect(served.slice(served.indexOf('security:'))).toEqual(written.slice(end));
  });
});

describe('GET /openapi-admin.json and /openapi-admin.yaml', () => {
  const ADMIN_SERVERS = [
    {
      url: '/admin/v1',
      description:
        'The admin port (--admin-port, on --admin-host): this path is served there only, not on the port serving this document.',
    },
  ];
  const written = readFileSync(join(import.meta.dir, '../../contract/admin.openapi.yaml'), 'utf8');

  test('the JSON is contract/admin.openapi.yaml parsed, servers aside: the admin port’s relative /admin/v1', async () => {
    // The public port's --public-url and --staging-url do not apply to the admin port.
    const app = routesApp(docsRoutes({ publicUrl: 'https://api.petstore.example' }));
    const res = await app.request('http://evil.example/openapi-admin.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const { servers, ...rest } = (await res.json()) as Record<string, unknown>;
    expect(servers).toEqual(ADMIN_SERVERS);
    const { servers: _, ...contract } = YAML.parse(written) as Record<string, unknown>;
    expect(rest).toEqual(contract);
    expect(ADMIN_CONTRACT_YAML).toBe(written);
  });

  test('the YAML is the same document, and otherwise the file as written', async () => {
    const { app } = testApp();
    const res = await app.request('/openapi-admin.yaml');
    expect(res.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
    const text = await res.text();
    const json = await (await app.request('/openapi-admin.json')).json();
    expect(YAML.parse(text)).toEqual(json);
    const served = text.split('\n');
    const lines = written.split('\n');
    expect(served.slice(0, lines.indexOf('servers:'))).toEqual(lines.slice(0, lines.indexOf('servers:')));
    expect(served.slice(served.indexOf('security:'))).toEqual(lines.slice(lines.indexOf('security:')));
  });

  test('counts as the openapi operation, like /openapi.json', () => {
    const ids = docsRoutes()
      .filter((r) => r.path.startsWith('/openapi'))
      .map((r) => [r.path, r.id]);
    expect(ids).toEqual([
      ['/openapi.yaml', 'openapi'],
      ['/openapi.json', 'openapi'],
      ['/openapi-admin.yaml', 'openapi'],
      ['/openapi-admin.json', 'openapi'],
    ]);
  });
});

describe('apiBase and the --public-url / --staging-url options', () => {
  test.each([
    ['https://api.petstore.example', 'https://api.petstore.example/v1'],
    ['https://api.petstore.example/', 'https://api.petstore.example/v1'],
    ['https://api.petstore.example/v1', 'https://api.petstore.example/v1'],
    ['https://example.com/petstore/', 'https://example.com/petstore/v1'],
  ])('apiBase(%p) = %p', (url, expected) => {
    expect(apiBase(url)).toBe(expected);
  });

  test('flags and env set them; the default is none', () => {
    expect(parseConfig([], {})).toMatchObject({ publicUrl: '', stagingUrl: '' });
    expect(
      parseConfig(['--public-url', 'https://api.petstore.example'], { PETSTORE_STAGING_URL: 'http://10.0.0.5:8080' }),
    ).toMatchObject({ publicUrl: 'https://api.petstore.example', stagingUrl: 'http://10.0.0.5:8080' });
  });

  test.each([['api.petstore.example'], ['ftp://api.petstore.example'], ['https://api.petstore.example/?x=1']])(
    '%p is refused naming the flag',
    (url) => {
      expect(() => parseConfig(['--public-url', url], {})).toThrow(
        new ConfigError(`--public-url: expected an http(s) URL without query or fragment, got "${url}"`),
      );
    },
  );
});

describe('withoutOperations', () => {
  const yaml = [
    'paths:',
    '  /a:',
    '    get:',
    '      operationId: getA',
    '      responses: {}',
    '',
    '    post:',
    '      operationId: postA',
    '      responses: {}',
    '',
    '  /b:',
    '    get:',
    '      operationId: getB',
    '',
    'components: {}',
    '',
  ].join('\n');

  test('drops the named operations, and a path left without any, keeping the rest as written', () => {
    expect(withoutOperations(yaml, new Set(['postA', 'getB']))).toBe(
      ['paths:', '  /a:', '    get:', '      operationId: getA', '      responses: {}', '', 'components: {}', ''].join(
        '\n',
      ),
    );
    expect(YAML.parse(withoutOperations(yaml, new Set(['getA'])))).toEqual({
      paths: { '/a': { post: { operationId: 'postA', responses: {} } }, '/b': { get: { operationId: 'getB' } } },
      components: {},
    });
    expect(withoutOperations(yaml, new Set())).toBe(yaml);
  });
});
