import { describe, expect, test } from 'bun:test';
import { KeysFileError, parseKeys } from './file.ts';
import { webhookUrlAllowed } from './schemas.ts';

const H = 'a'.repeat(64);
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const consumer = (extra: Record<string, unknown>) =>
  JSON.stringify({ consumers: [{ name: 'acme', plan: 'pro', keys: [{ sha256: H }], ...extra }] });

describe('webhook and thresholds in the keys file', () => {
  test('a webhook gets the default thresholds 80 and 100; set ones are sorted', () => {
    const [plain] = parseKeys(consumer({ webhook: { url: 'https://hooks.example/q', secret: SECRET } }));
    expect(plain?.consumer.webhook).toEqual({ url: 'https://hooks.example/q', secret: SECRET });
    expect(plain?.consumer.thresholds).toEqual([80, 100]);
    const [set] = parseKeys(
      consumer({ webhook: { url: 'http://127.0.0.1:9000/q', secret: SECRET }, thresholds: [100, 50, 90] }),
    );
    expect(set?.consumer.thresholds).toEqual([50, 90, 100]);
  });

  test('a consumer without a webhook has no thresholds', () => {
    const [key] = parseKeys(consumer({ thresholds: [50] }));
    expect(key?.consumer.webhook).toBeUndefined();
    expect(key?.consumer.thresholds).toBeUndefined();
  });

  const URL_MESSAGE = 'must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost)';
  test.each([
    [
      { webhook: { url: 'http://hooks.example/q', secret: SECRET } },
      `consumers[0] ("acme").webhook.url: ${URL_MESSAGE}, got "http://hooks.example/q"`,
    ],
    [
      { webhook: { url: 'ftp://127.0.0.1/q', secret: SECRET } },
      `consumers[0] ("acme").webhook.url: ${URL_MESSAGE}, got "ftp://127.0.0.1/q"`,
    ],
    [
      { webhook: { url: 'not a url', secret: SECRET } },
      `consumers[0] ("acme").webhook.url: ${URL_MESSAGE}, got "not a url"`,
    ],
    [{ webhook: { url: 'https://hooks.example/q' } }, 'consumers[0] ("acme").webhook.secret: required'],
    [
      { webhook: { url: 'https://hooks.example/q', secret: SECRET }, thresholds: [80, 101] },
      'consumers[0] ("acme").thresholds[1]: must be a list of 1 to 10 different integers from 1 to 100 (percent of a quota), got 101',
    ],
    [
      { webhook: { url: 'https://hooks.example/q', secret: SECRET }, thresholds: [80, 80] },
      'consumers[0] ("acme").thresholds: must be a list of 1 to 10 different integers from 1 to 100 (percent of a quota)',
    ],
  ])('refuses %j', (extra, message) => {
    expect(() => parseKeys(consumer(extra))).toThrow(KeysFileError);
    expect(() => parseKeys(consumer(extra))).toThrow(message);
  });

  test('a webhook that is not an object, or has an unknown field, is refused without repeating a value', () => {
    for (const webhook of [SECRET, { url: 'https://hooks.example/q', secret: SECRET, secrett: SECRET }]) {
      let message = '';
      try {
        parseKeys(consumer({ webhook }));
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(
        /^consumers\[0\] \("acme"\)\.webhook(\.secrett)?: must be an object with exactly "url" and "secret" \(the value is not shown\)$/,
      );
    }
  });

  test('a bad secret is refused without being repeated', () => {
    const leaked = 'whsec_short-but-real-looking';
    let message = '';
    try {
      parseKeys(consumer({ webhook: { url: 'https://hooks.example/q', secret: leaked } }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      'consumers[0] ("acme").webhook.secret: must be "whsec_" and the base64 of 24 to 64 random bytes (the value is not shown)',
    );
  });

  test.each([
    ['https://hooks.example/q', true],
    ['http://127.0.0.1:8080/q', true],
    ['http://[::1]:8080/q', true],
    ['http://localhost/q', true],
    ['http://10.0.0.1/q', false],
    ['https://user:pw@hooks.example/q', false],
  ])('webhookUrlAllowed(%p) is %p', (url, allowed) => {
    expect(webhookUrlAllowed(url)).toBe(allowed);
  });
});
