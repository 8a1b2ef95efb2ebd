// OpenMetrics for `/metrics` asked for with `Accept: application/openmetrics-text`: the
// Prometheus text the registry writes, turned into OpenMetrics 1.0 (counter families named
// without `_total`, no blank lines, `# EOF`), with the latency histogram's exemplars: per
// operation and bucket, the trace id of the latest exported request that fell in it.
//
// prom-client keeps exemplars only in a registry that writes nothing but OpenMetrics (and then
// renames its counters), so the exemplars are kept here, beside the registry.

/** OpenMetrics 1.0's content type. */
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

interface Exemplar {
  readonly traceId: string;
  readonly seconds: number;
  /** Epoch seconds it was seen. */
  readonly at: number;
}

/**
 * The latest exemplar of each bucket of one histogram.
 *
 * @example
 * const ex = new Exemplars('petstore_http_request_duration_seconds', [0.005, 0.01])
 * ex.seen('listPets', 0.004, '4bf92f3577b34da6a3ce929d0e0e4736', Date.now())
 * ex.openMetrics(await registry.metrics()) // '…_bucket{le="0.005",operation="listPets"} 1 # {trace_id="4bf9…"} 0.004 1764…\n# EOF\n'
 */
export class Exemplars {
  readonly #bucket: string;
  readonly #bounds: readonly number[];
  /** By operation, then by the bucket's `le` as the registry writes it. */
  readonly #latest = new Map<string, Map<string, Exemplar>>();

  constructor(histogram: string, bounds: readonly number[]) {
    this.#bucket = `${histogram}_bucket{`;
    this.#bounds = bounds;
  }

  /** A request of `operation` took `seconds` and was exported as trace `traceId`. */
  seen(operation: string, seconds: number, traceId: string, now: number): void {
    const bound = this.#bounds.find((b) => seconds <= b);
    const le = bound === undefined ? '+Inf' : String(bound);
    let buckets = this.#latest.get(operation);
    if (!buckets) {
      buckets = new Map();
      this.#latest.set(operation, buckets);
    }
    buckets.set(le, { traceId, seconds, at: now / 1000 });
  }

  /** `prometheusText` as OpenMetrics, with the exemplars on their bucket lines. */
  openMetrics(prometheusText: string): string {
    const out: string[] = [];
    const counters = new Set<string>();
    for (const line of prometheusText.split('\n')) {
      if (line === '') continue;
      const type = /^# TYPE (\S+)_total counter$/.exec(line);
      if (type) counters.add(type[1] as string);
      const meta = /^# (HELP|TYPE) (\S+)_total( .*)$/.exec(line);
      if (meta && counters.has(meta[2] as string)) {
        out.push(`# ${meta[1]} ${meta[2]}${meta[3]}`);
        continue;
      }
      out.push(line.startsWith(this.#bucket) ? this.#withExemplar(line) : line);
    }
    // A counter's HELP line comes before its TYPE line, so `fixHelp` renames it afterwards.
    return `${fixHelp(out, counters).join('\n')}\n# EOF\n`;
  }

  #withExemplar(line: string): string {
    const operation = /operation="([^"]*)"/.exec(line)?.[1];
    const le = /le="([^"]*)"/.exec(line)?.[1];
    const ex = operation === undefined || le === undefined ? undefined : this.#latest.get(operation)?.get(le);
    return ex ? `${line} # {trace_id="${ex.traceId}"} ${ex.seconds} ${ex.at.toFixed(3)}` : line;
  }
}

/** Renames `# HELP x_total` to `# HELP x` for each counter family `x`. */
function fixHelp(lines: string[], counters: ReadonlySet<string>): string[] {
  return lines.map((line) => {
    const help = /^# HELP (\S+)_total( .*)$/.exec(line);
    return help && counters.has(help[1] as string) ? `# HELP ${help[1]}${help[2]}` : line;
  });
}
