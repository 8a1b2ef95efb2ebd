/** The product's response to `GET /v1/pets?limit=20`, as replayed by both comparison servers. */
export interface CapturedResponse {
  readonly status: number;
  /** Every header but the ones each server writes itself (Date, Content-Length). */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Headers a server sets on its own; copying them would send them twice. */
const OWN_HEADERS = new Set(['date', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/**
 * Captures a response for replay.
 *
 * @example
 * await capture(await fetch(url, { headers })) // { status: 200, headers: {...}, body: '[...]' }
 */
export async function capture(res: Response): Promise<CapturedResponse> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!OWN_HEADERS.has(name)) headers[name] = value;
  });
  return { status: res.status, headers, body: await res.text() };
}

/** Reads a captured response back, checking its shape. */
export function parseCaptured(text: string): CapturedResponse {
  const json: unknown = JSON.parse(text);
  if (
    typeof json !== 'object' ||
    json === null ||
    !('status' in json && typeof json.status === 'number') ||
    !('body' in json && typeof json.body === 'string') ||
    !('headers' in json && typeof json.headers === 'object' && json.headers !== null)
  ) {
    throw new TypeError('captured response: expected {status, headers, body}');
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(json.headers)) headers[k] = String(v);
  return { status: json.status, headers, body: json.body };
}
