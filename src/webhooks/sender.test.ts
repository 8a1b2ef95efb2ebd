import { afterEach, expect, test } from 'bun:test';
import { newSecret, type Receiver, startReceiver } from '../../test/webhook-receiver.ts';
import { AllowedRanges } from '../keys/webhook-targets.ts';
import { type Resolve, send } from './sender.ts';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** A resolver that answers `address` for every name, and counts its questions. */
function resolver(address: string) {
  const asked: string[] = [];
  const resolve: Resolve = async (host) => {
    asked.push(host);
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  return { asked, resolve };
}

async function attempt(url: string, secret: string, resolve: Resolve, cidrs: string[] = []) {
  return send({ id: 'msg_1', payload: '{"type":"quota.threshold"}', url, secret, at: Date.now() }, 2_000, undefined, {
    allowed: new AllowedRanges(cidrs),
    resolve,
  });
}

test('a name that resolves to an internal address is refused at send time; nothing reaches the receiver', async () => {
  const secret = newSecret();
  const hooks = await startReceiver(secret);
  receivers.push(hooks);
  // hooks.internal.test -> 127.0.0.1: a loopback address behind a name, as 127.0.0.1.nip.io is.
  const { asked, resolve } = resolver('127.0.0.1');
  const result = await attempt(`http://hooks.internal.test:${hooks.port}/hooks`, secret, resolve);
  expect(result).toEqual({
    ok: false,
    error:
      'hooks.internal.test resolves to 127.0.0.1, a loopback address; webhooks go to public addresses, or http:// to loopback (allow a private range with --webhook-allow-cidr)',
  });
  expect(asked).toEqual(['hooks.internal.test']);
  expect(hooks.got).toEqual([]);
  const metadata = await attempt('https://metadata.google.internal/x', secret, resolver('169.254.169.254').resolve);
  expect(metadata).toEqual({
    ok: false,
    error:
      'metadata.google.internal resolves to 169.254.169.254, a link-local address; webhooks go to public addresses, or http:// to loopback (allow a private range with --webhook-allow-cidr)',
  });
});

test('an allowed range is reached, at the address the check resolved (the name is resolved once, by the check)', async () => {
  const secret = newSecret();
  const hooks = await startReceiver(secret);
  receivers.push(hooks);
  const { asked, resolve } = resolver('127.0.0.1');
  // `.invalid` never resolves anywhere else: the connection can only go where the check said.
  const result = await attempt(`http://hooks.invalid:${hooks.port}/hooks`, secret, resolve, ['127.0.0.0/8']);
  expect(result).toEqual({ ok: true, status: 200 });
  expect(asked).toEqual(['hooks.invalid']);
  expect(hooks.delivered().map((r) => [r.id, r.body?.type])).toEqual([['msg_1', 'quota.threshold']]);
});

test('an address in the URL is checked without a lookup', async () => {
  const { asked, resolve } = resolver('8.8.8.8');
  const result = await attempt('https://[fd00::1]/x', newSecret(), resolve);
  expect(result).toEqual({
    ok: false,
    error:
      '[fd00::1] resolves to fd00::1, a unique-local address; webhooks go to public addresses, or http:// to loopback (allow a private range with --webhook-allow-cidr)',
  });
  expect(asked).toEqual([]);
});
