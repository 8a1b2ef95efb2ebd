import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';
import { MAX_URI_BYTES } from './uri-limit.ts';

describe('uriLimit: path and query over 8 KiB', () => {
  const { app, auth } = testApp();
  /** A `/v1/pets` URL whose path and query are exactly `bytes` long. */
  const petsUrl = (bytes: number) => `/v1/pets?pad=${'a'.repeat(bytes - '/v1/pets?pad='.length)}`;

  test('8,192 bytes are served; 8,193 are a 414 uri_too_long with the Error body', async () => {
    expect((await app.request(petsUrl(MAX_URI_BYTES), { headers: auth() })).status).toBe(200);
    const res = await app.request(petsUrl(MAX_URI_BYTES + 1), { headers: auth() });
    expect(res.status).toBe(414);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.json()).toEqual({
      code: 'uri_too_long',
      message: 'The path and query are longer than 8192 bytes.',
      status: 414,
    });
  });

  test('it comes before the gateway: no key needed, nothing counted, no rate-limit headers', async () => {
    const fresh = testApp();
    const res = await fresh.app.request(petsUrl(MAX_URI_BYTES + 1));
    expect(res.status).toBe(414);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    const next = await fresh.app.request('/v1/pets', { headers: fresh.auth() });
    expect(next.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  test('it covers every path, /healthz included; a long path counts as much as a long query', async () => {
    expect((await app.request(`/healthz?${'q'.repeat(MAX_URI_BYTES)}`)).status).toBe(414);
    expect((await app.request(`/v1/${'p'.repeat(MAX_URI_BYTES)}`, { headers: auth() })).status).toBe(414);
  });
});
