// The integrators' reference page in a real browser: Debian's Chromium, driven by playwright-core,
// against the built binary. Run: `make docs-test` (needs /usr/bin/chromium; never downloads one).
// Screenshots go to reports/: docs.png (first view), docs-list-pets.png, docs-test-request.png,
// docs-admin.png (the admin API's document, chosen in the page's picker).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page, type Response as PageResponse } from 'playwright-core';
import YAML from 'yaml';
import { OPERATIONS } from '../src/api/operations.ts';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../test/harness.ts';

const ROOT = join(import.meta.dir, '..');
const REPORTS = join(ROOT, 'reports');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const KEY = 'docs';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

interface Operation {
  operationId: string;
  method: string;
  path: string;
  summary: string;
}

/** The operations of a contract, with the summaries the page must show. */
function contractOperations(file = 'contract/openapi.yaml'): Operation[] {
  const doc = YAML.parse(readFileSync(join(ROOT, file), 'utf8')) as {
    paths: Record<string, Record<string, { operationId: string; summary: string }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ operationId: op.operationId, method, path, summary: op.summary })),
  );
}

let server: Running;
let browser: Browser;
let page: Page;
/** Every request the page made, in order. */
const requests: string[] = [];
/** Console errors and uncaught exceptions, CSP violations among them. */
const problems: string[] = [];

beforeAll(async () => {
  // With the experimental operations, so the page shows every stability level.
  server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: KEY, plan: 'free' }]), '--experimental'] });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  context.on('request', (r) => requests.push(r.url()));
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  mkdirSync(REPORTS, { recursive: true });
  await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('GET /docs in Chromium', () => {
  test('shows every operation of the contract with its summary', async () => {
    const operations = contractOperations();
    expect(operations.map((o) => o.operationId).sort()).toEqual(OPERATIONS.map((op) => op.id).sort());
    for (const op of operations) {
      const heading = page.getByRole('heading', { name: op.summary, exact: true });
      await heading.waitFor({ state: 'attached', timeout: 10_000 });
      expect(await heading.count()).toBe(1);
      // Each has its own "Test Request" button, named for screen readers by method and path.
      expect(await page.getByRole('button', { name: `Test Request (${op.method} ${op.path})` }).count()).toBe(1);
    }
    await page.getByRole('textbox', { name: 'Bearer Token' }).first().waitFor();
    await page.screenshot({ path: join(REPORTS, 'docs.png'), animations: 'disabled' });
  }, 30_000);

  test("shows each operation's stability level beside it: deprecated, stable, beta (placeOrder), experimental", async () => {
    const shown: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const op of OPERATIONS) {
      const summary = contractOperations().find((o) => o.operationId === op.id)?.summary ?? op.id;
      const badge = page.locator(`section[label="${summary}"] .badge`).first();
      await badge.waitFor({ state: 'attached', timeout: 10_000 });
      shown[op.id] = ((await badge.textContent()) ?? '').trim().toLowerCase();
      expected[op.id] = op.deprecated ? 'deprecated' : (op.stability ?? 'stable');
    }
    expect(shown).toEqual(expected);
    expect(shown.placeOrder).toBe('beta');
    await page.locator('section[label="Order an animal"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(REPORTS, 'docs-beta.png'), animations: 'disabled' });
  }, 30_000);

  test("sends listPets with the token entered in the page's auth field: 200 with the rate-limit headers", async () => {
    const listPets = new Promise<PageResponse>((resolve) => {
      page.on('response', (r) => {
        if (r.url() === `${server.url}/v1/pets` && r.request().method() === 'GET') resolve(r);
      });
    });
    await page.getByRole('textbox', { name: 'Bearer Token' }).first().fill(tokenOf(KEY));
    await page.getByRole('heading', { name: 'List animals', exact: true }).evaluate((h) => h.scrollIntoView());
    await page.screenshot({ path: join(REPORTS, 'docs-list-pets.png'), animations: 'disabled' });

    await page.getByRole('button', { name: 'Test Request (get /pets)' }).click();
    const send = page.getByRole('button', { name: `Send get request to ${server.url}/v1/pets` });
    await send.click();
    const res = await listPets;
    const sentAt = Math.floor(Date.now() / 1000);

    expect(await res.request().headerValue('authorization')).toBe(`Bearer ${tokenOf(KEY)}`);
    expect(res.status()).toBe(200);
    const headers = await res.allHeaders();
    expect(headers['content-type']).toBe('application/json');
    // The key's first request on the Free plan: 60 a minute, this one counted.
    expect(headers['x-ratelimit-limit']).toBe('60');
    expect(headers['x-ratelimit-remaining']).toBe('59');
    const reset = Number(headers['x-ratelimit-reset']);
    expect(Number.isInteger(reset)).toBe(true);
    expect(reset).toBeGreaterThanOrEqual(sentAt - 1);
    expect(reset).toBeLessThanOrEqual(sentAt + 61);
    expect(await res.json()).toEqual([]);
    // The page's client shows the outcome to the integrator too.
    await page.getByText('200 OK', { exact: true }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(REPORTS, 'docs-test-request.png'), animations: 'disabled' });
  }, 30_000);

  test("made every request to the server's own origin, with no console error or CSP violation", () => {
    const origin = new URL(server.url).origin;
    const elsewhere = requests.filter((url) => new URL(url).origin !== origin);
    expect(elsewhere).toEqual([]);
    const paths = new Set(requests.map((url) => new URL(url).pathname));
    expect([...paths].filter((p) => !p.startsWith('/docs/assets/')).sort()).toEqual([
      '/docs',
      '/openapi.json',
      '/v1/pets',
    ]);
    expect(
      [...paths]
        .filter((p) => p.startsWith('/docs/assets/'))
        .map((p) => p.split('.')[0])
        .sort(),
    ).toEqual(['/docs/assets/favicon', '/docs/assets/init', '/docs/assets/scalar']);
    expect(problems).toEqual([]);
  });

  test('offers the admin API as a second document: choosing it shows its operations', async () => {
    // A fresh page: the request client the test before opened covers the sidebar.
    await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' });
    const picker = page.getByRole('button', { name: 'Pet Store API', exact: true });
    await picker.click();
    const listbox = page.getByRole('listbox', { name: 'Pet Store API' });
    expect(await listbox.getByRole('option').allTextContents()).toEqual(['Pet Store API', 'Pet Store admin API']);
    const loaded = page.waitForResponse((r) => new URL(r.url()).pathname === '/openapi-admin.json');
    await listbox.getByRole('option', { name: 'Pet Store admin API' }).click();
    expect((await loaded).status()).toBe(200);
    const operations = contractOperations('contract/admin.openapi.yaml');
    expect(operations.length).toBeGreaterThan(0);
    for (const op of operations) {
      const heading = page.getByRole('heading', { name: op.summary, exact: true });
      await heading.waitFor({ state: 'attached', timeout: 10_000 });
      expect(await heading.count()).toBe(1);
    }
    await page.screenshot({ path: join(REPORTS, 'docs-admin.png'), animations: 'disabled' });
    const elsewhere = requests.filter((url) => new URL(url).origin !== new URL(server.url).origin);
    expect(elsewhere).toEqual([]);
    expect(problems).toEqual([]);
  }, 30_000);
});
