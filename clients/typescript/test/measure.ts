// The figures in the package README, measured by hand (about 3 minutes; not part of any test
// run): 200 requests on a Free key (60 a minute) through the client, against a naive loop on
// another Free key that sends again at once after every 429, cut off after NAIVE_SECONDS.
//   node_modules/.bin/bun clients/typescript/test/measure.ts
import { spawnServer, tokenOf, writeKeysFile } from '../../../test/harness.ts';
import { createClient } from '../src/index.ts';

const REQUESTS = 200;
const NAIVE_SECONDS = Number(process.env.NAIVE_SECONDS ?? 60);

const server = await spawnServer({
  args: [
    '--keys',
    writeKeysFile([
      { name: 'client', plan: 'free' },
      { name: 'naive', plan: 'free' },
    ]),
  ],
});
const baseUrl = `${server.url}/v1`;
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

async function throughClient() {
  const petstore = createClient({ apiKey: tokenOf('client'), baseUrl });
  const start = performance.now();
  for (let i = 0; i < REQUESTS; i++) await petstore.listPets({ limit: 1 });
  return { done: REQUESTS, elapsed: seconds(start) };
}

async function naive() {
  const start = performance.now();
  const deadline = start + NAIVE_SECONDS * 1000;
  const refused: Record<string, number> = {};
  let done = 0;
  let bannedAt: string | undefined;
  while (done < REQUESTS && performance.now() < deadline) {
    const response = await fetch(`${baseUrl}/pets?limit=1`, {
      headers: { authorization: `Bearer ${tokenOf('naive')}` },
    });
    const body = (await response.json()) as { code?: string };
    if (response.status !== 429) {
      done++;
      continue;
    }
    const code = body.code ?? 'unknown';
    refused[code] = (refused[code] ?? 0) + 1;
    if (code === 'key_banned') bannedAt ??= seconds(start);
  }
  return { done, elapsed: seconds(start), refused, bannedAt };
}

const [client, loop] = await Promise.all([throughClient(), naive()]);
const refusals = (key: string) =>
  server.lines.filter((l) => l.includes(`"consumer":"${key}"`) && l.includes('"status":429')).length;
console.log(`client: ${client.done}/${REQUESTS} in ${client.elapsed} s, ${refusals('client')} answered 429`);
console.log(
  `naive:  ${loop.done}/${REQUESTS} in ${loop.elapsed} s (cut off at ${NAIVE_SECONDS} s), ${refusals('naive')} answered 429 ` +
    `(${JSON.stringify(loop.refused)}), banned from ${loop.bannedAt ?? 'never'} s`,
);
await server.stop();
