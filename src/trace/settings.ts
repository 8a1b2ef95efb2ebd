// Parsing of the trace export's OpenTelemetry environment variables, kept apart from the export
// so config.ts can check them before a port is bound without loading the export.

/** The samplers `OTEL_TRACES_SAMPLER` names. */
export const SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/**
 * `key=value` pairs separated by commas, values percent-decoded, as `OTEL_EXPORTER_OTLP_HEADERS`
 * and `OTEL_RESOURCE_ATTRIBUTES` write them; throws on a pair without `=`.
 *
 * @example
 * parsePairs('x-token=abc,tenant=a%20b') // { 'x-token': 'abc', tenant: 'a b' }
 */
export function parsePairs(raw: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const item of raw.split(',')) {
    if (item.trim() === '') continue;
    const at = item.indexOf('=');
    const key = at > 0 ? item.slice(0, at).trim() : '';
    if (key === '') throw new TypeError(`expected key=value, got "${item.trim()}"`);
    pairs[key] = decodeURIComponent(item.slice(at + 1).trim());
  }
  return pairs;
}

/**
 * The traces endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` with `v1/traces` added; undefined when neither is set (no export).
 *
 * @example
 * tracesUrl('', 'http://collector:4318') // 'http://collector:4318/v1/traces'
 */
export function tracesUrl(traces: string, base: string): string | undefined {
  if (traces !== '') return traces;
  if (base === '') return undefined;
  return `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}
