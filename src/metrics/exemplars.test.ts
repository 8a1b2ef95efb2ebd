import { describe, expect, test } from 'bun:test';
import { Exemplars } from './exemplars.ts';

const PROM = [
  '# HELP petstore_http_requests_total HTTP requests answered.',
  '# TYPE petstore_http_requests_total counter',
  'petstore_http_requests_total{operation="listPets",status="200"} 3',
  '',
  '# HELP petstore_http_request_duration_seconds Time to answer.',
  '# TYPE petstore_http_request_duration_seconds histogram',
  'petstore_http_request_duration_seconds_bucket{le="0.005",operation="listPets"} 2',
  'petstore_http_request_duration_seconds_bucket{le="0.01",operation="listPets"} 3',
  'petstore_http_request_duration_seconds_bucket{le="+Inf",operation="listPets"} 3',
  'petstore_http_request_duration_seconds_sum{operation="listPets"} 0.012',
  'petstore_http_request_duration_seconds_count{operation="listPets"} 3',
  '',
].join('\n');

describe('OpenMetrics with exemplars', () => {
  test('counter families lose _total, blank lines go, # EOF ends; each bucket carries its latest exported trace', () => {
    const ex = new Exemplars('petstore_http_request_duration_seconds', [0.005, 0.01]);
    ex.seen('listPets', 0.003, 'a'.repeat(32), 1_764_000_000_000);
    ex.seen('listPets', 0.004, 'b'.repeat(32), 1_764_000_001_500);
    ex.seen('listPets', 0.007, 'c'.repeat(32), 1_764_000_002_000);
    expect(ex.openMetrics(PROM)).toBe(
      [
        '# HELP petstore_http_requests HTTP requests answered.',
        '# TYPE petstore_http_requests counter',
        'petstore_http_requests_total{operation="listPets",status="200"} 3',
        '# HELP petstore_http_request_duration_seconds Time to answer.',
        '# TYPE petstore_http_request_duration_seconds histogram',
        `petstore_http_request_duration_seconds_bucket{le="0.005",operation="listPets"} 2 # {trace_id="${'b'.repeat(32)}"} 0.004 1764000001.500`,
        `petstore_http_request_duration_seconds_bucket{le="0.01",operation="listPets"} 3 # {trace_id="${'c'.repeat(32)}"} 0.007 1764000002.000`,
        'petstore_http_request_duration_seconds_bucket{le="+Inf",operation="listPets"} 3',
        'petstore_http_request_duration_seconds_sum{operation="listPets"} 0.012',
        'petstore_http_request_duration_seconds_count{operation="listPets"} 3',
        '# EOF',
        '',
      ].join('\n'),
    );
  });
});
