// The packed tarball (`npm pack` in clients/typescript, which `make ts-client-test` runs first)
// as an integrator gets it: installed into an empty directory, its types checked by tsc in strict
// mode, and its example run under Node, Bun and Deno against the built binary.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../../test/harness.ts';

const PACKAGE = join(import.meta.dir, '..');
const BIN = join(PACKAGE, '../../node_modules/.bin');
const { version } = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { version: string };
const TARBALL = join(PACKAGE, `petstore-client-${version}.tgz`);

let server: Running;
let dir: string;
beforeAll(async () => {
  if (!existsSync(TARBALL)) throw new Error(`${TARBALL} is missing: run npm pack in ${PACKAGE} (make ts-client)`);
  server = await spawnServer({ args: ['--keys', writeKeysFile([{ name: 'integrator', plan: 'free' }])] });
  dir = mkdtempSync(join(tmpdir(), 'petstore-client-'));
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

function run(cmd: string[]) {
  const [bin, ...args] = cmd;
  const env = { ...process.env, PETSTORE_URL: `${server.url}/v1`, PETSTORE_API_KEY: tokenOf('integrator') };
  const r = spawnSync(bin as string, args, { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** What the example prints after it created pet `id`, on a server holding pets 1 to `id`. */
function exampleOutput(id: number): string {
  return [
    `created Rex (id ${id}, available)`,
    ...Array.from({ length: id }, (_, i) => `listed ${i + 1} Rex`),
    'refused: 400 invalid_request: limit: must be an integer from 1 to 100.',
    '',
  ].join('\n');
}

test('npm install of the tarball into an empty directory: nothing else comes with it', () => {
  const installed = run(['npm', 'install', '--no-audit', '--no-fund', '--offline', TARBALL]);
  expect(installed.code).toBe(0);
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: object };
  expect(Object.keys(lock.packages)).toEqual(['', 'node_modules/@petstore/client']);
  copyFileSync(join(dir, 'node_modules/@petstore/client/example.mjs'), join(dir, 'example.mjs'));
});

test('its types: an integrator file compiles under tsc --strict, and a wrong call does not', () => {
  writeFileSync(
    join(dir, 'use.ts'),
    `import { createClient, PetstoreError, type NewPet, type Pet, type PetStatus } from '@petstore/client';
const petstore = createClient({ apiKey: 'psk_x', baseUrl: 'https://api.petstore.example/v1', maxRetries: 5 });
const status: PetStatus = 'sold';
const body: NewPet = { name: 'Rex', categoryId: 1, status };
export const made: Promise<Pet> = petstore.createPet(body, { idempotencyKey: 'order-7' });
export const page: Promise<Pet[]> = petstore.listPets({ limit: 10, status, cursor: 'abc' });
export const one: Promise<Pet> = petstore.getPet(1);
export const all: AsyncIterable<Pet> = petstore.listAllPets({ status });
export const held = made.then((rex) => petstore.updatePet(rex.id, { status: 'pending' }, { ifMatch: petstore.etagOf(rex) }));
export const gone: Promise<undefined> = petstore.deletePet(1, { ifMatch: '*' });
export const code = (e: unknown) => (e instanceof PetstoreError ? [e.code, e.status, e.headers.get('retry-after')] : []);
// @ts-expect-error categoryId is required
petstore.createPet({ name: 'Rex' });
// @ts-expect-error an id is a number
petstore.getPet('1');
// @ts-expect-error no such status
petstore.listPets({ status: 'lost' });
// @ts-expect-error a merge patch cannot remove a pet's name
petstore.updatePet(1, { name: null });
`,
  );
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ type: 'module', dependencies: { '@petstore/client': TARBALL } }),
  );
  const tsc = run([join(BIN, 'tsc'), '--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', 'use.ts']);
  expect(tsc.stdout).toBe('');
  expect(tsc.code).toBe(0);
});

test('its example runs under Node, then Bun, then Deno', () => {
  const runtimes = [
    ['node', 'example.mjs'],
    [join(BIN, 'bun'), 'example.mjs'],
    // Deno takes the package from node_modules, through package.json: nothing is downloaded.
    [join(BIN, 'deno'), 'run', '--allow-net', '--allow-env', '--allow-read', 'example.mjs'],
  ];
  const outputs = runtimes.map(run);
  expect(outputs.map((o) => o.stderr)).toEqual(['', '', '']);
  expect(outputs).toEqual([1, 2, 3].map((id) => ({ code: 0, stdout: exampleOutput(id), stderr: '' })));
});

/** The code block of a README that follows its `<!-- tested: … -->` line. */
function testedBlock(readme: string): string {
  const text = readFileSync(readme, 'utf8');
  const marker = text.indexOf('<!-- tested:');
  const fence = /```[a-z]*\n([\s\S]*?)```/.exec(text.slice(marker));
  if (marker < 0 || !fence?.[1]) throw new Error(`${readme}: no tested block`);
  return fence[1];
}

test("the README's example runs as it is written, from an .mjs file beside the installed tarball", () => {
  writeFileSync(join(dir, 'readme-example.mjs'), testedBlock(join(PACKAGE, 'README.md')));
  const out = run(['node', 'readme-example.mjs']);
  expect(out.stderr).toBe('');
  const lines = out.stdout.trim().split('\n');
  // Pets 1 to 3 from the runs above, the README's Rex as pet 4, then what the key has left.
  expect(lines.slice(0, -1)).toEqual(['1 Rex', '2 Rex', '3 Rex', '4 Rex']);
  expect(lines.at(-1)).toMatch(/^minute: \d+ of 60, day: \d+ of 1000$/);
});

test('npm pack in a copy outside the repository: stops naming PETSTORE_CONTRACT, then packs from a running server', () => {
  const copy = mkdtempSync(join(tmpdir(), 'petstore-client-copy-'));
  try {
    for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'README.md', 'example.mjs', 'scripts']) {
      cpSync(join(PACKAGE, entry), join(copy, entry), { recursive: true });
    }
    cpSync(join(PACKAGE, 'src'), join(copy, 'src'), { recursive: true, filter: (p) => !p.includes('generated') });
    symlinkSync(join(PACKAGE, 'node_modules'), join(copy, 'node_modules'));
    const pack = (env: Record<string, string>) =>
      spawnSync('npm', ['pack', '--offline'], { cwd: copy, env: { ...process.env, ...env }, encoding: 'utf8' });
    const lost = pack({});
    expect(lost.status).not.toBe(0);
    expect(lost.stderr).toContain(
      'does not exist. Outside the Pet Store repository, name the contract: PETSTORE_CONTRACT=/path/to/openapi.yaml npm pack',
    );
    const packed = pack({ PETSTORE_CONTRACT: `${server.url}/openapi.yaml` });
    // The server runs without --experimental: its contract leaves getInventory out, and so does the client.
    expect(packed.stdout).toContain(
      'generate: 11 operations (listPets, createPet, getPet, deletePet, updatePet, getRateLimit, listOrders, placeOrder, getOrder, completeOrder, cancelOrder)',
    );
    expect(packed.status).toBe(0);
    expect(existsSync(join(copy, `petstore-client-${version}.tgz`))).toBe(true);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
