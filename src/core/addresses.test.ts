import { describe, expect, test } from 'bun:test';
import { addressGroup, canonicalAddress, TrustedProxies } from './addresses.ts';

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

describe('one address, one spelling', () => {
  test.each([
    ['2001:DB8::5', '2001:db8::5'],
    ['2001:db8:0:0:0:0:0:5', '2001:db8::5'],
    ['2001:0db8:0000::0005', '2001:db8::5'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::ffff:203.0.113.5', '203.0.113.5'],
    ['::FFFF:cb00:7105', '203.0.113.5'],
    ['203.0.113.5', '203.0.113.5'],
    ['010.1.1.1', '010.1.1.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['256.1.1.1', '256.1.1.1'],
    ['1.2.3', '1.2.3'],
    ['1.2.3.4.', '1.2.3.4.'],
    ['1..3.4', '1..3.4'],
    ['unknown', 'unknown'],
  ])('canonicalAddress(%s) is %s', (text, canonical) => {
    expect(canonicalAddress(text)).toBe(canonical);
  });

  test('IPv6 addresses are grouped by prefix; IPv4 ones stand alone', () => {
    expect(addressGroup('2001:db8:0:1ff::9')).toBe('2001:db8:0:100::/56');
    expect(addressGroup('2001:db8:0:1ff::9', 48)).toBe('2001:db8::/48');
    expect(addressGroup('2001:db8:0:1ff::9', 64)).toBe('2001:db8:0:1ff::/64');
    expect(addressGroup('2001:db8:0:1ff::9', 60)).toBe('2001:db8:0:1f0::/60');
    expect(addressGroup('2001:db8:0:1ff::9', 128)).toBe('2001:db8:0:1ff::9');
    expect(addressGroup('203.0.113.5')).toBe('203.0.113.5');
    expect(addressGroup('unknown')).toBe('unknown');
  });

  test('IPv4 blocks match at their edges', () => {
    const trust = new TrustedProxies(['198.18.0.0/15', '0.0.0.0/0']);
    expect(new TrustedProxies(['198.18.0.0/15']).trusts('198.19.255.255')).toBe(true);
    expect(new TrustedProxies(['198.18.0.0/15']).trusts('198.20.0.0')).toBe(false);
    expect(new TrustedProxies(['198.18.0.0/15']).trusts('198.17.255.255')).toBe(false);
    expect(new TrustedProxies(['198.19.7.7/15']).trusts('198.18.0.1')).toBe(true);
    expect(trust.trusts('1.2.3.4')).toBe(true);
    expect(trust.trusts('2001:db8::1')).toBe(false);
    expect(new TrustedProxies(['10.0.0.1/32']).trusts('10.0.0.2')).toBe(false);
  });

  test('a proxy matches however either side is written', () => {
    expect(new TrustedProxies(['::ffff:127.0.0.1']).trusts('127.0.0.1')).toBe(true);
    expect(new TrustedProxies(['127.0.0.1']).trusts('::ffff:127.0.0.1')).toBe(true);
    expect(new TrustedProxies(['::ffff:10.0.0.0/104']).trusts('10.2.3.4')).toBe(true);
    expect(new TrustedProxies(['fd00::1']).trusts('FD00:0::1%eth0')).toBe(true);
    expect(new TrustedProxies(['127.0.0.1']).clientAddress('::ffff:127.0.0.1', '2001:DB8::1%x')).toBe('2001:db8::1');
  });

  test('the client address is always canonical', () => {
    expect(new TrustedProxies([]).clientAddress('::ffff:192.0.2.1', undefined)).toBe('192.0.2.1');
  });
});
