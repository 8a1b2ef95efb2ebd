import { describe, expect, test } from 'bun:test';
import { AllowedRanges, isCidrBlock, normalWebhookUrl, targetProblem, webhookUrlProblem } from './webhook-targets.ts';

const PUBLIC_ONLY = 'webhooks go to public addresses, or http:// to loopback';

describe('webhook URLs as they are configured', () => {
  test.each([
    [
      'https://169.254.169.254/latest/meta-data/',
      `must not point at a link-local address (169.254.169.254): ${PUBLIC_ONLY}`,
    ],
    ['https://10.0.0.1/x', `must not point at a private address (10.0.0.1): ${PUBLIC_ONLY}`],
    ['https://[fd00::1]/x', `must not point at a unique-local address ([fd00::1]): ${PUBLIC_ONLY}`],
    ['https://[fe80::1]/x', `must not point at a link-local address ([fe80::1]): ${PUBLIC_ONLY}`],
    ['https://0.0.0.0/x', `must not point at an unspecified address (0.0.0.0): ${PUBLIC_ONLY}`],
    ['https://[::]/x', `must not point at an unspecified address ([::]): ${PUBLIC_ONLY}`],
    ['https://[::ffff:a9fe:a9fe]/x', `must not point at an IPv4-mapped address ([::ffff:a9fe:a9fe]): ${PUBLIC_ONLY}`],
    ['https://100.64.0.1/x', `must not point at a carrier-grade NAT address (100.64.0.1): ${PUBLIC_ONLY}`],
    [
      'https://2852039166/x',
      'must write an IPv4 address as four decimal numbers (169.254.169.254), not as one number, octal or hex',
    ],
    [
      'https://0xa9.0xfe.0xa9.0xfe/x',
      'must write an IPv4 address as four decimal numbers (169.254.169.254), not as one number, octal or hex',
    ],
    [
      'https://0251.0376.0251.0376/x',
      'must write an IPv4 address as four decimal numbers (169.254.169.254), not as one number, octal or hex',
    ],
    [
      'https://8.8.8.8.:443/x',
      'must write an IPv4 address as four decimal numbers (8.8.8.8), not as one number, octal or hex',
    ],
    ['https:///x', 'must name a host after "//", with no user name, password or backslash'],
    ['https://:@hooks.example/x', 'must name a host after "//", with no user name, password or backslash'],
    ['https://evil.example\\@hooks.example/x', 'must name a host after "//", with no user name, password or backslash'],
    ['https://hooks.example/a\u2028b', 'must not hold control, bidirectional or invisible characters'],
    ['https://hooks.example/\u202egnp.x', 'must not hold control, bidirectional or invisible characters'],
    [`https://hooks.example/${'a'.repeat(5000)}`, 'must be at most 2048 characters'],
    ['http://8.8.8.8/x', 'must be https:// to an address other than loopback'],
    [
      'http://hooks.example/x',
      'must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost)',
    ],
  ])('%s is refused: %s', (url, problem) => {
    expect(webhookUrlProblem(url)).toBe(problem);
  });

  test.each([
    'https://hooks.example/q',
    'https://8.8.8.8/q',
    'https://[2001:4860:4860::8888]/q',
    'http://127.0.0.1:9000/q',
    'http://[::1]:9000/q',
    'http://localhost:9000/q',
    // A name is checked where it resolves, when an attempt is sent.
    'https://metadata.google.internal/',
  ])('%s is accepted', (url) => {
    expect(webhookUrlProblem(url)).toBeUndefined();
  });

  test('the URL is kept WHATWG-normalised: a punycode host, an encoded path', () => {
    expect(normalWebhookUrl('HTTPS://Bücher.Example:443/a b')).toBe('https://xn--bcher-kva.example/a%20b');
  });
});

describe('addresses an attempt connects to', () => {
  const none = new AllowedRanges([]);
  test.each([
    ['metadata.google.internal', '169.254.169.254', 'a link-local'],
    ['127.0.0.1.nip.io', '127.0.0.1', 'a loopback'],
    ['hooks.example', '10.1.2.3', 'a private'],
    ['hooks.example', '::ffff:10.1.2.3', 'a private'],
    ['hooks.example', 'fd12::7', 'a unique-local'],
  ])('%s resolving to %s is refused', (host, address, range) => {
    expect(targetProblem(host, address, none)).toBe(
      `${host} resolves to ${address.replace('::ffff:', '')}, ${range} address; ${PUBLIC_ONLY} (allow a private range with --webhook-allow-cidr)`,
    );
  });

  test('a public address passes; loopback only for a host written as loopback; an allowed range passes', () => {
    expect(targetProblem('hooks.example', '203.0.113.9', none)).toContain('a reserved address');
    expect(targetProblem('hooks.example', '8.8.8.8', none)).toBeUndefined();
    expect(targetProblem('localhost', '::1', none)).toBeUndefined();
    expect(targetProblem('127.0.0.1', '127.0.0.1', none)).toBeUndefined();
    expect(targetProblem('[::1]', '::1', none)).toBeUndefined();
    const allowed = new AllowedRanges(['10.20.0.0/16', 'fd12::/48']);
    expect(targetProblem('hooks.internal', '10.20.9.9', allowed)).toBeUndefined();
    expect(targetProblem('hooks.internal', 'fd12::7', allowed)).toBeUndefined();
    expect(targetProblem('hooks.internal', '10.21.0.1', allowed)).toContain('a private address');
  });

  test('CIDR blocks are written out or refused', () => {
    expect([
      isCidrBlock('10.20.0.0/16'),
      isCidrBlock('fd12::/48'),
      isCidrBlock('10.20.0.0'),
      isCidrBlock('10.0.0.0/33'),
    ]).toEqual([true, true, false, false]);
    expect(() => new AllowedRanges(['10/8'])).toThrow(
      '--webhook-allow-cidr: "10/8" is not an IPv4 or IPv6 CIDR block such as 10.20.0.0/16',
    );
  });
});
