import { describe, expect, test } from 'bun:test';
import { fakeClock, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { MemoryStore } from '../store/memory.ts';
import { hashToken, parseKeys } from './keys/file.ts';
import { KeyTable } from './keys/table.ts';
import { SlidingWindowLimiter } from './limiter/memory.ts';
import { SuspectAddresses } from './suspects.ts';

describe('a key-guessing run learns nothing once its address is refused', () => {
  function setup() {
    const clock = fakeClock();
    const table = new KeyTable(
      parseKeys(
        JSON.stringify({
          keys: [{ name: 'victim', plan: 'pro', sha256: hashToken(tokenFor('victim')).toString('hex') }],
        }),
      ),
    );
    const app = createApp({
      store: new MemoryStore(),
      keys: () => table,
      limiter: new SlidingWindowLimiter({ clock }),
      clock,
      clientAddress: (c) => c.req.header('x-test-peer') ?? '',
    });
    const from = async (peer: string, token: string) => {
      const res = await app.request('/v1/pets', { headers: { Authorization: `Bearer ${token}`, 'X-Test-Peer': peer } });
      const body = res.status === 200 ? 'ok' : ((await res.json()) as { code: string }).code;
      return `${res.status} ${body}`;
    };
    return { clock, from, right: tokenFor('victim') };
  }

  test('while the address is rate-limited the right key gets the same 429 as a wrong one', async () => {
    const { clock, from, right } = setup();
    for (let i = 0; i < 60; i++) expect(await from('203.0.113.9', `psk_guess-${i}`)).toBe('401 unauthorized');
    expect(await from('203.0.113.9', 'psk_guess-60')).toBe('429 rate_limited');
    expect(await from('203.0.113.9', right)).toBe('429 rate_limited');
    // The key itself is fine, from anywhere else.
    expect(await from('198.51.100.1', right)).toBe('200 ok');
    // Once the address may try again, the key works from there too.
    clock.advance(61_000);
    expect(await from('203.0.113.9', right)).toBe('200 ok');
    expect(await from('203.0.113.9', right)).toBe('200 ok');
  });

  test('while the address is banned the right key gets key_banned like every guess', async () => {
    const { clock, from, right } = setup();
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(await from('203.0.113.9', `psk_guess-${i}`));
    expect([...seen]).toEqual(['401 unauthorized', '429 rate_limited', '429 key_banned']);
    expect(await from('203.0.113.9', right)).toBe('429 key_banned');
    clock.advance(14 * 60_000);
    expect(await from('203.0.113.9', right)).toBe('429 key_banned');
    clock.advance(61_000);
    expect(await from('203.0.113.9', right)).toBe('200 ok');
  });
});

test('SuspectAddresses forgets the oldest mark past its bound', () => {
  const suspects = new SuspectAddresses(2);
  suspects.mark('a');
  suspects.mark('b');
  suspects.mark('a');
  suspects.mark('c');
  expect(['a', 'b', 'c'].filter((x) => suspects.has(x))).toEqual(['a', 'c']);
  suspects.clear('a');
  expect(suspects.size).toBe(1);
});
