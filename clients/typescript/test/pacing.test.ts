// The one test that waits for real minutes (the server's windows are 60 s; it offers no other
// clock): three clients sharing a key of 10 a minute ask for 25 pets between them (three windows
// of their shares, about 3 minutes), while one client alone on a key of 10 a minute makes 15
// calls at once. `make ts-client-test` runs it; `make test` does not.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type KeySpec, type Running, spawnServer, tokenOf, writeKeysFile } from '../../../test/harness.ts';
import { createClient, type RateLimitInfo } from '../src/index.ts';

const KEYS: KeySpec[] = [
  { name: 'shared', plan: 'enterprise', limits: { perMinute: 10, perDay: 1_000 } },
  { name: 'alone', plan: 'enterprise', limits: { perMinute: 10, perDay: 1_000 } },
  { name: 'check', plan: 'enterprise', limits: { perMinute: 1_000, perDay: 10_000 } },
];

let server: Running;
beforeAll(async () => {
  server = await spawnServer({ args: ['--keys', writeKeysFile(KEYS)] });
});
afterAll(() => server.stop());

/** The statuses the server logged for a key's requests, and whether it logged a ban. */
function logged(key: string) {
  const lines = server.lines.filter((l) => l.includes(`"consumer":"${key}"`) || l.includes(`"subject":"${key}"`));
  return {
    statuses: lines.filter((l) => l.includes('"msg":"request"')).map((l) => Number(/"status":(\d+)/.exec(l)?.[1])),
    bans: lines.filter((l) => l.includes('ban started')).length,
  };
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

test('three clients on one key: 25 pets, no ban, at most 3 refusals; one client alone: 15 calls at once, no refusal', async () => {
  const baseUrl = `${server.url}/v1`;
  // Starts at the top of a second, so the first window's requests share the server's
  // one-second buckets and leave the window together.
  await Bun.sleep(1_000 - (Date.now() % 1_000));

  const shares = [9, 8, 8];
  const shared = Promise.all(
    shares.map(async (n, c) => {
      const petstore = createClient({ apiKey: tokenOf('shared'), baseUrl });
      const made = [];
      for (let i = 0; i < n; i++)
        made.push(await petstore.createPet({ name: `client ${c} pet ${i}`, categoryId: c + 1 }));
      return made;
    }),
  );
  const holds: RateLimitInfo[] = [];
  const lone = createClient({ apiKey: tokenOf('alone'), baseUrl, onRateLimit: (info) => void holds.push(info) });
  const alone = Promise.all(Array.from({ length: 15 }, () => lone.listPets({ limit: 1 })));

  const [made, pages] = await Promise.all([shared, alone]);
  expect(made.map((pets) => pets.length)).toEqual(shares);
  const all = await createClient({ apiKey: tokenOf('check'), baseUrl }).listPets({ limit: 100 });
  expect(all).toEqual(made.flat().sort((a, b) => a.id - b.id));
  expect(all.map((p) => p.id)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  expect(pages).toHaveLength(15);

  const sharedLog = logged('shared');
  console.log(`shared key: ${count(sharedLog.statuses, 201)} created, ${count(sharedLog.statuses, 429)} refused`);
  expect(count(sharedLog.statuses, 201)).toBe(25);
  expect(count(sharedLog.statuses, 429)).toBeLessThanOrEqual(3);
  expect(sharedLog.bans).toBe(0);

  const aloneLog = logged('alone');
  console.log(`lone key: ${count(aloneLog.statuses, 200)} answered, ${count(aloneLog.statuses, 429)} refused`);
  expect(aloneLog).toEqual({ statuses: Array(15).fill(200), bans: 0 });
  // It waited for the window instead of being refused.
  expect(holds.length).toBeGreaterThan(0);
  expect(new Set(holds.map((h) => h.reason))).toEqual(new Set(['paced']));
}, 240_000);
