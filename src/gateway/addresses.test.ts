import { describe, expect, test } from 'bun:test';
import { TrustedProxies } from './addresses.ts';

describe('TrustedProxies', () => {
  const trust = new TrustedProxies(['10.0.0.0/8', '192.168.1.1', 'fd00::/8']);

  test.each([
    ['10.1.2.3', true],
    ['11.0.0.1', false],
    ['192.168.1.1', true],
    ['192.168.1.2', false],
    ['::ffff:10.9.9.9', true],
    ['fd12::1', true],
    ['fe80::1', false],
    ['not-an-ip', false],
  ])('trusts(%s) is %p', (address, trusted) => {
    expect(trust.trusts(address)).toBe(trusted);
  });

  test('X-Forwarded-For is ignored from an untrusted peer', () => {
    expect(trust.clientAddress('203.0.113.5', '198.51.100.1')).toBe('203.0.113.5');
  });

  test('from a trusted peer, the rightmost untrusted hop is the client', () => {
    expect(trust.clientAddress('10.0.0.1', '198.51.100.1')).toBe('198.51.100.1');
    expect(trust.clientAddress('10.0.0.1', '6.6.6.6, 198.51.100.1, 10.0.0.9')).toBe('198.51.100.1');
    expect(trust.clientAddress('10.0.0.1', '10.0.0.3, 10.0.0.2')).toBe('10.0.0.3');
  });

  test('a malformed hop makes the peer the client', () => {
    expect(trust.clientAddress('10.0.0.1', 'garbage, 198.51.100.1')).toBe('198.51.100.1');
    expect(trust.clientAddress('10.0.0.1', '198.51.100.1, garbage')).toBe('10.0.0.1');
  });

  test('with no trusted proxies the peer is always the client', () => {
    expect(new TrustedProxies([]).clientAddress('10.0.0.1', '198.51.100.1')).toBe('10.0.0.1');
  });

  test.each(['10.0.0.0/33', '10.0.0/8', 'fd00::/129', 'example.com', '10.0.0.0/x', '10.0.0.0/', '10.0.0.0/-1'])(
    'refuses %s',
    (cidr) => {
      expect(() => new TrustedProxies([cidr])).toThrow(`--trust-proxy: "${cidr}" is not an IPv4 or IPv6 CIDR block`);
    },
  );
});
