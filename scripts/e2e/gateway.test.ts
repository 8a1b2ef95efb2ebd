// The gateway tried as an attacker would: every spelling of one address is one client,
// IPv6 clients are grouped by prefix, requests without a valid key never lock a valid key out,
// and a ban's Retry-After is never early and never more than a second late.
// From loopback X-Forwarded-For is believed (--trust-proxy), so one test plays many addresses.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A request from `address` (X-Forwarded-For), without a key unless `token` is given. */
async function from(server: Running, address: string, token?: string) {
  const res = await fetch(`${server.url}/v1/pets`, {
    headers: { 'X-Forwarded-For': address, ...(token === undefined ? {} : bearer(token)) },
  });
  const body = (await res.json()) as { code?: string };
  return {
    status: res.status,
    code: body.code,
    remaining: res.headers.get('x-ratelimit-remaining'),
    retryAfter: res.headers.get('retry-after'),
    reset: res.headers.get('x-ratelimit-reset'),
    date: res.headers.get('date'),
  };
}

const remainingOf = async (server: Running, addresses: string[]) => {
  const out: (string | null)[] = [];
  for (const a of addresses) out.push((await from(server, a)).remaining);
  return out;
};

describe('every spelling of one address is one client', () => {
  let server: Running;
  let wide: Running;
  let mapped: Running;
  beforeAll(async () => {
    const keys = writeKeysFile([{ name: 'acme', plan: 'free' }]);
    [server, wide, mapped] = await Promise.all([
      spawnServer({ args: ['--keys', keys, '--trust-proxy', '127.0.0.1'] }),
      spawnServer({ args: ['--keys', keys, '--trust-proxy', '127.0.0.1', '--ipv6-prefix', '128'] }),
      // The proxy written as an IPv4-mapped IPv6 address still trusts the peer 127.0.0.1.
      spawnServer({ args: ['--keys', keys, '--trust-proxy', '::ffff:127.0.0.1'] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server, wide, mapped].map((s) => s?.stop()));
  });

  test('case, zero compression, leading zeros and a zone id: one quota', async () => {
    const spellings = ['2001:db8::5', '2001:DB8::5', '2001:db8:0:0:0:0:0:5', '2001:0db8:0000::0005'];
    expect(await remainingOf(server, spellings)).toEqual(['59', '58', '57', '56']);
    expect(await remainingOf(server, ['fe80::1', 'FE80::1%eth0', 'fe80:0::1%25lo'])).toEqual(['59', '58', '57']);
  });

  test('an IPv4-mapped IPv6 address is the IPv4 address', async () => {
    expect(await remainingOf(server, ['203.0.113.5', '::ffff:203.0.113.5', '::FFFF:cb00:7105'])).toEqual([
      '59',
      '58',
      '57',
    ]);
  });

  test('IPv6 clients are grouped by /56 by default; --ipv6-prefix 128 counts each address alone', async () => {
    expect(await remainingOf(server, ['2001:db8:1:1::1', '2001:db8:1:ff::2', '2001:db8:1:100::1'])).toEqual([
      '59',
      '58',
      '59',
    ]);
    expect(await remainingOf(wide, ['2001:db8:1:1::1', '2001:db8:1:1::2', '2001:db8:1:1::1'])).toEqual([
      '59',
      '59',
      '58',
    ]);
  });

  test('the request log names the canonical address: lower case, compressed, no zone', async () => {
    await from(server, '2001:DB8:0:0:0:0:AB:7%eth0');
    await from(server, '::ffff:198.51.100.77');
    const clientsLogged = () =>
      server.lines
        .filter((l) => l.includes('"msg":"request"'))
        .map((l) => (JSON.parse(l) as { client?: string }).client);
    // The line is written as the answer goes out: wait for it.
    for (let i = 0; i < 50 && !clientsLogged().includes('198.51.100.77'); i++) await Bun.sleep(20);
    const clients = clientsLogged();
    expect(clients).toContain('2001:db8::ab:7');
    expect(clients).toContain('198.51.100.77');
    expect(clients.some((c) => c?.includes('%') || c?.includes('DB8') || c?.startsWith('::ffff:'))).toBe(false);
  });

  test('--trust-proxy ::ffff:127.0.0.1 trusts the peer 127.0.0.1', async () => {
    // Believed: two forwarded clients count apart; were the header ignored both would be 127.0.0.1.
    expect(await remainingOf(mapped, ['192.0.2.1', '192.0.2.2'])).toEqual(['59', '59']);
  });
});

describe('requests without a valid key never lock a valid key out', () => {
  let server: Running;
  beforeAll(async () => {
    server = await spawnServer({
      args: [
        '--keys',
        writeKeysFile([
          { name: 'office', plan: 'free' },
          { name: 'cafe', plan: 'free' },
        ]),
        '--trust-proxy',
        '127.0.0.1',
      ],
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  test('an address refused for requests without a key: its valid key is admitted on its own quota', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await from(server, '198.51.100.20')).status);
    expect(statuses.slice(0, 60)).toEqual(Array(60).fill(401));
    expect(statuses[60]).toBe(429);
    const keyed = await from(server, '198.51.100.20', tokenOf('office'));
    expect([keyed.status, keyed.remaining]).toEqual([200, '59']);
  });

  test('an address banned for bad tokens: a valid key from it is still admitted', async () => {
    const codes = new Map<string, number>();
    for (let i = 0; i < 125; i++) {
      const { code } = await from(server, '198.51.100.21', `psk_wrong-${i}-0123456789abcdefghijklmnopqrst`);
      codes.set(code ?? '', (codes.get(code ?? '') ?? 0) + 1);
    }
    expect(Object.fromEntries(codes)).toEqual({ unauthorized: 60, rate_limited: 59, key_banned: 6 });
    const keyed = await from(server, '198.51.100.21', tokenOf('cafe'));
    expect([keyed.status, keyed.remaining]).toEqual([200, '59']);
    // The bad tokens are still refused for the ban.
    expect((await from(server, '198.51.100.21', 'psk_wrong-again-0123456789abcdefghijklmnopq')).code).toBe(
      'key_banned',
    );
  });
});

describe('ban arithmetic', () => {
  let server: Running;
  let short: Running;
  beforeAll(async () => {
    const keys = writeKeysFile([{ name: 'tight', plan: 'free', limits: { perMinute: 2, perDay: 1_000 } }]);
    [server, short] = await Promise.all([
      spawnServer({ args: ['--keys', keys] }),
      spawnServer({ args: ['--keys', keys, '--ban-seconds', '3'] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server, short].map((s) => s?.stop()));
  });

  /** Requests with the key until one is answered key_banned; that answer. */
  async function untilBanned(s: Running) {
    for (let i = 0; i < 10; i++) {
      const answer = await from(s, '127.0.0.1', tokenOf('tight'));
      if (answer.code === 'key_banned') return answer;
    }
    throw new Error('never banned');
  }

  test('the refusal that starts a 900 s ban says Retry-After 900 and a Reset within 901 s of its Date', async () => {
    const start = await untilBanned(server);
    expect(start.retryAfter).toBe('900');
    const date = Math.floor(Date.parse(start.date as string) / 1000);
    expect(Number(start.reset)).toBeLessThanOrEqual(date + 901);
    expect(Number(start.reset)).toBeGreaterThanOrEqual(date + 899);
  });

  test('--ban-seconds 3: a request sent after waiting Retry-After is not refused for the ban', async () => {
    for (let round = 0; round < 2; round++) {
      const start = await untilBanned(short);
      const wait = Number(start.retryAfter);
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(3);
      await Bun.sleep(wait * 1_000);
      const after = await from(short, '127.0.0.1', tokenOf('tight'));
      // Still over the minute's quota, so refused, but no longer banned.
      expect(after.code).toBe('rate_limited');
    }
  }, 20_000);
});
