// Encodes the trace ring's kept records straight to OTLP protobuf (an `ExportTraceServiceRequest`
// of opentelemetry-proto's trace.proto) for the export, off the request path: no span object per
// record and no intermediate message. The server span's name and attributes follow OpenTelemetry's
// HTTP conventions; each child's come from what its call recorded. The strings the ring holds as
// bytes (the client's address, the consumer's name, an error's text, the `tracestate`) are copied
// as they are. The path is read from the URL's bytes, without the query, and anything shaped like
// a token is masked (`redactTokens`). Webhook delivery spans (`ClientSpan`) go into the same
// requests.
import { randomFillSync } from 'node:crypto';
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import { redactTokens } from '../redact.ts';
import {
  type ByteField,
  CHILD_ATTRIBUTES,
  CHILD_END,
  CHILD_ERROR_TYPE,
  CHILD_KIND,
  CHILD_NAME,
  CHILD_NUMBER,
  CHILD_NUMBER_KEY,
  CHILD_OUTCOME,
  CHILD_OUTCOME_KEY,
  CHILD_PARENT,
  CHILD_START,
  FAILED,
  HEAD,
  ID_BYTES,
  MAX_CHILDREN,
  OTHER_METHOD,
  REMOTE,
  TAIL,
  type TraceRing,
} from './ring.ts';
import type { ClientSpan } from './spans.ts';

// Wire types.
const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

/** `SpanKind` of trace.proto: the API's number plus one. */
const SERVER = 2;
const CLIENT_KIND = 3;
/** `Status.StatusCode` of trace.proto. */
const STATUS_ERROR = 2;
/**
 * A span's `flags`: sampled, plus `HAS_IS_REMOTE` (we know whether the parent is remote) and, in
 * `FLAGS_REMOTE`, `IS_REMOTE` (it is).
 */
const FLAGS_LOCAL = 0x101;
const FLAGS_REMOTE = 0x301;
/** A link's `flags`: its span is remote, and not sampled. */
const FLAGS_REMOTE_NOT_SAMPLED = 0x300;

const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');

/**
 * A protobuf writer into one growing buffer. `open` starts a message and reserves one byte for its
 * length; `close` writes the length, shifting the message's bytes when it needs more than one.
 */
class ProtoWriter {
  buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
  varint(value: number): void {
    this.room(10);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }
  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }
  fixed32(field: number, value: number): void {
    this.tag(field, FIXED32);
    this.room(4);
    this.buf.writeUInt32LE(value, this.pos);
    this.pos += 4;
  }
  /** Epoch milliseconds as `fixed64` nanoseconds, exact: whole seconds times 1e9 plus the rest. */
  time(field: number, ms: number): void {
    const s = Math.floor(ms / 1000);
    const ns = Math.round((ms - s * 1000) * 1e6);
    // s * 1e9 + ns in 32-bit halves, each step exact in a double: s = sHi * 2^16 + sLo.
    const sHi = Math.floor(s / 0x10000);
    const a = sHi * 1e9;
    const aHi = Math.floor(a / 0x10000);
    const lo = (a - aHi * 0x10000) * 0x10000 + (s - sHi * 0x10000) * 1e9 + ns;
    const carry = Math.floor(lo / 0x100000000);
    this.tag(field, FIXED64);
    this.room(8);
    this.buf.writeUInt32LE(lo - carry * 0x100000000, this.pos);
    this.buf.writeUInt32LE(aHi + carry, this.pos + 4);
    this.pos += 8;
  }
  double(field: number, value: number): void {
    this.tag(field, FIXED64);
    this.room(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }
  /** A length-delimited field of `bytes[from, to)`. */
  bytes(field: number, bytes: Uint8Array, from = 0, to = bytes.length): void {
    this.tag(field, LENGTH);
    this.varint(to - from);
    this.room(to - from);
    this.buf.set(from === 0 && to === bytes.length ? bytes : bytes.subarray(from, to), this.pos);
    this.pos += to - from;
  }
  /** Bytes already encoded (tags and all). */
  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
  string(field: number, text: string): void {
    // UTF-8 takes at most three bytes a UTF-16 unit.
    const max = text.length * 3;
    if (max < 0x80) {
      this.tag(field, LENGTH);
      this.room(1 + max);
      const n = this.buf.write(text, this.pos + 1, 'utf8');
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const at = this.open(field);
    this.room(max);
    this.pos += this.buf.write(text, this.pos, 'utf8');
    this.close(at);
  }
  /** Starts message `field`; pass the returned offset to `close`. */
  open(field: number): number {
    this.tag(field, LENGTH);
    this.room(1);
    this.pos++;
    return this.pos;
  }
  close(at: number): void {
    const length = this.pos - at;
    if (length < 0x80) {
      this.buf[at - 1] = length;
      return;
    }
    let extra = 0;
    for (let v = length; v >= 0x80; v = Math.floor(v / 0x80)) extra++;
    this.room(extra);
    this.buf.copy(this.buf, at + extra, at, this.pos);
    this.pos = at - 1;
    this.varint(length);
    this.pos += length;
  }
  /** What was written, as a copy; the writer starts over. */
  take(): Uint8Array {
    const out = new Uint8Array(this.buf.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }
}

/** An attribute's `AnyValue`: a string, a boolean, an integer, a double or an array of them. */
function anyValue(w: ProtoWriter, field: number, value: AttributeValue): void {
  const at = w.open(field);
  if (typeof value === 'string') w.string(1, value);
  else if (typeof value === 'boolean') {
    w.tag(2, VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0 && value <= Number.MAX_SAFE_INTEGER) {
      w.tag(3, VARINT);
      w.varint(value);
    } else if (Number.isInteger(value) && value < 0 && value >= Number.MIN_SAFE_INTEGER) {
      // A negative int64: its two's complement, ten bytes.
      const big = BigInt.asUintN(64, BigInt(value));
      w.tag(3, VARINT);
      w.room(10);
      let v = big;
      while (v >= 0x80n) {
        w.buf[w.pos++] = Number(v & 0x7fn) | 0x80;
        v >>= 7n;
      }
      w.buf[w.pos++] = Number(v);
    } else w.double(4, value);
  } else if (Array.isArray(value)) {
    const list = w.open(5);
    for (const item of value) if (item !== null && item !== undefined) anyValue(w, 1, item as AttributeValue);
    w.close(list);
  }
  w.close(at);
}

/** A `KeyValue` of `key` (encoded) and `value`, as field `field`. */
function keyValue(w: ProtoWriter, field: number, key: Uint8Array, value: AttributeValue): void {
  const at = w.open(field);
  w.bytes(1, key);
  anyValue(w, 2, value);
  w.close(at);
}

/** `attributes` as `KeyValue`s of field `field`, encoded once. */
function encodedAttributes(field: number, attributes: Attributes): Uint8Array {
  const w = new ProtoWriter();
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) keyValue(w, field, utf8(key), value);
  return w.take();
}

// The server span's attribute keys, encoded once.
const METHOD = utf8('http.request.method');
const SCHEME = utf8('url.scheme');
const PATH = utf8('url.path');
const ROUTE = utf8('http.route');
const CLIENT = utf8('client.address');
const OPERATION = utf8('petstore.operation');
const CONSUMER = utf8('petstore.consumer.name');
const OUTCOME = utf8('petstore.gateway.outcome');
const STATUS_CODE = utf8('http.response.status_code');
const KEPT_BY = utf8('petstore.kept_by');
const TAIL_VALUE = 'tail';
const ERROR_TYPE = utf8('error.type');

/** What every span of one process shares: its resource and its instrumentation scope. */
export interface SpanSource {
  readonly resource: Attributes;
  readonly scope: { readonly name: string; readonly version: string };
}

/**
 * Encodes kept records into one `ExportTraceServiceRequest` at a time: `add` each record, then
 * `take` the request's bytes.
 *
 * @example
 * const batch = new RecordEncoder(ring, source)
 * ring.drain((r) => batch.add(r))
 * send(batch.take())
 */
export class RecordEncoder {
  readonly #ring: TraceRing;
  readonly #w = new ProtoWriter();
  /** The resource (`ResourceSpans.resource`) and the scope (`ScopeSpans.scope`), encoded once. */
  readonly #resource: Uint8Array;
  readonly #scope: Uint8Array;
  /**
   * Caches: interned strings as UTF-8, attribute sets as their encoded `KeyValue`s, and server
   * span names by method and route.
   */
  readonly #strings: (Uint8Array | undefined)[] = [];
  readonly #sets: (Uint8Array | undefined)[] = [];
  readonly #names = new Map<number, Uint8Array>();
  /** Random bytes for the children's span ids. */
  readonly #random = Buffer.allocUnsafe(4096);
  #taken = 4096;
  #resourceSpans = 0;
  #scopeSpans = 0;
  /** Spans in the request being encoded. */
  spans = 0;

  constructor(ring: TraceRing, source: SpanSource) {
    this.#ring = ring;
    const w = new ProtoWriter();
    const resource = w.open(1);
    w.raw(encodedAttributes(1, source.resource));
    w.close(resource);
    this.#resource = w.take();
    const scope = w.open(1);
    w.string(1, source.scope.name);
    w.string(2, source.scope.version);
    w.close(scope);
    this.#scope = w.take();
  }

  #string(id: number): Uint8Array | undefined {
    if (id === 0) return undefined;
    let bytes = this.#strings[id];
    if (bytes === undefined) {
      const text = this.#ring.strings.of(id);
      if (text === undefined) return undefined;
      bytes = utf8(text);
      this.#strings[id] = bytes;
    }
    return bytes;
  }

  #set(id: number): Uint8Array | undefined {
    if (id === 0) return undefined;
    let bytes = this.#sets[id];
    if (bytes === undefined) {
      const attributes = this.#ring.attributeSets.of(id);
      if (attributes === undefined) return undefined;
      bytes = encodedAttributes(9, attributes);
      this.#sets[id] = bytes;
    }
    return bytes;
  }

  /**
   * The server span's name: its method and route (an unknown method names it `HTTP`, as the HTTP
   * conventions say).
   */
  #name(method: number, route: number): Uint8Array {
    const key = method * 0x10000 + route;
    let name = this.#names.get(key);
    if (name === undefined) {
      const text = this.#ring.strings.of(method);
      const m = text === undefined || text === OTHER_METHOD ? 'HTTP' : text;
      const r = this.#ring.strings.of(route);
      name = utf8(r === undefined ? m : `${m} ${r}`);
      this.#names.set(key, name);
    }
    return name;
  }

  /** Opens the request's resource and scope before its first span. */
  #begin(): void {
    if (this.spans > 0) return;
    const w = this.#w;
    this.#resourceSpans = w.open(1);
    w.raw(this.#resource);
    this.#scopeSpans = w.open(2);
    w.raw(this.#scope);
  }

  /** Adds record `r`'s server span and its children to the request being encoded. */
  add(r: number): void {
    const ring = this.#ring;
    const w = this.#w;
    this.#begin();
    const ids = ring.ids;
    const at = r * ID_BYTES;
    const flags = ring.flags[r] as number;
    const method = ring.method[r] as number;
    const route = ring.route[r] as number;
    const span = w.open(2);
    w.bytes(1, ids, at, at + 16);
    w.bytes(2, ids, at + 16, at + 24);
    this.#field(3, ring.traceState, r);
    const remote = (flags & REMOTE) !== 0;
    if (remote) w.bytes(4, ids, at + 24, at + 32);
    w.bytes(5, this.#name(method, route));
    w.tag(6, VARINT);
    w.varint(SERVER);
    w.time(7, ring.start[r] as number);
    w.time(8, ring.end[r] as number);
    keyValue(w, 9, METHOD, ring.strings.of(method) ?? OTHER_METHOD);
    const url = ring.url.read(r);
    keyValue(w, 9, SCHEME, url.slice(0, Math.max(0, url.indexOf(':'))));
    keyValue(w, 9, PATH, redactTokens(pathOf(url)));
    const routeBytes = this.#string(route);
    if (routeBytes !== undefined) this.#keyBytes(ROUTE, routeBytes);
    this.#keyField(CLIENT, ring.client, r, true);
    const operation = this.#string(ring.operation[r] as number);
    if (operation !== undefined) this.#keyBytes(OPERATION, operation);
    this.#keyField(CONSUMER, ring.consumer, r, false);
    const outcome = this.#string(ring.outcome[r] as number);
    if (outcome !== undefined) this.#keyBytes(OUTCOME, outcome);
    keyValue(w, 9, STATUS_CODE, ring.status[r] as number);
    if ((flags & TAIL) !== 0 && (flags & HEAD) === 0) keyValue(w, 9, KEPT_BY, TAIL_VALUE);
    const status = w.open(15);
    if ((flags & FAILED) !== 0) {
      w.tag(3, VARINT);
      w.varint(STATUS_ERROR);
    }
    w.close(status);
    w.fixed32(16, remote ? FLAGS_REMOTE : FLAGS_LOCAL);
    w.close(span);

    const n = ring.children[r] as number;
    if (this.#taken + n * 8 > this.#random.length) {
      randomFillSync(this.#random);
      this.#taken = 0;
    }
    const drawn = this.#taken;
    this.#taken += n * 8;
    for (let k = 0; k < n; k++) this.#child(r, k, drawn);
    this.spans += 1 + n;
  }

  /** Writes child `k` of record `r`; its span id is the `k`th 8 random bytes from `drawn`. */
  #child(r: number, k: number, drawn: number): void {
    const ring = this.#ring;
    const w = this.#w;
    const i = r * MAX_CHILDREN + k;
    const at = r * ID_BYTES;
    const span = w.open(2);
    w.bytes(1, ring.ids, at, at + 16);
    w.bytes(2, this.#random, drawn + k * 8, drawn + k * 8 + 8);
    const parent = ring.childField(i, CHILD_PARENT);
    if (parent < 0) w.bytes(4, ring.ids, at + 16, at + 24);
    else w.bytes(4, this.#random, drawn + parent * 8, drawn + parent * 8 + 8);
    w.bytes(5, this.#string(ring.childField(i, CHILD_NAME)) ?? CALL);
    w.tag(6, VARINT);
    w.varint(ring.childField(i, CHILD_KIND) + 1);
    w.time(7, ring.childValue(i, CHILD_START));
    w.time(8, ring.childValue(i, CHILD_END));
    const set = this.#set(ring.childField(i, CHILD_ATTRIBUTES));
    if (set !== undefined) w.raw(set);
    const numberKey = this.#string(ring.childField(i, CHILD_NUMBER_KEY));
    if (numberKey !== undefined) keyValue(w, 9, numberKey, ring.childValue(i, CHILD_NUMBER));
    const outcomeKey = this.#string(ring.childField(i, CHILD_OUTCOME_KEY));
    if (outcomeKey !== undefined) {
      const value = this.#string(ring.childField(i, CHILD_OUTCOME));
      if (value !== undefined) this.#keyBytes(outcomeKey, value);
    }
    const errorType = this.#string(ring.childField(i, CHILD_ERROR_TYPE));
    if (errorType !== undefined) this.#keyBytes(ERROR_TYPE, errorType);
    const status = w.open(15);
    if (errorType !== undefined) {
      if (ring.errorChild[r] === k) this.#field(2, ring.error, r);
      w.tag(3, VARINT);
      w.varint(STATUS_ERROR);
    }
    w.close(status);
    w.fixed32(16, FLAGS_LOCAL);
    w.close(span);
  }

  /**
   * Adds a webhook delivery's client span (a trace of its own, with one link) to the request
   * being encoded.
   */
  addClient(s: ClientSpan): void {
    const w = this.#w;
    this.#begin();
    const span = w.open(2);
    w.bytes(1, Buffer.from(s.traceId, 'hex'));
    w.bytes(2, Buffer.from(s.spanId, 'hex'));
    w.string(5, s.name);
    w.tag(6, VARINT);
    w.varint(CLIENT_KIND);
    w.time(7, s.start);
    w.time(8, s.end);
    for (const [key, value] of Object.entries(s.attributes)) {
      if (value !== undefined) keyValue(w, 9, utf8(key), value);
    }
    if (s.link !== undefined) {
      const link = w.open(13);
      w.bytes(1, Buffer.from(s.link.traceId, 'hex'));
      w.bytes(2, Buffer.from(s.link.spanId, 'hex'));
      w.fixed32(6, s.link.sampled ? FLAGS_REMOTE : FLAGS_REMOTE_NOT_SAMPLED);
      w.close(link);
    }
    const status = w.open(15);
    if (s.error !== undefined) {
      if (s.error !== '') w.string(2, s.error);
      w.tag(3, VARINT);
      w.varint(STATUS_ERROR);
    }
    w.close(status);
    w.fixed32(16, FLAGS_LOCAL);
    w.close(span);
    this.spans++;
  }

  /** Writes a string field from record `r`'s bytes in one of the ring's areas; nothing if empty. */
  #field(field: number, area: ByteField, r: number): void {
    const length = area.lengths[r] as number;
    if (length > 0) this.#w.bytes(field, area.bytes, r * area.cap, r * area.cap + length);
  }

  /** Writes a string attribute whose value is `bytes[from, to)`, all of `bytes` by default. */
  #keyBytes(key: Uint8Array, bytes: Uint8Array, from = 0, to = bytes.length): void {
    const w = this.#w;
    const at = w.open(9);
    w.bytes(1, key);
    const value = w.open(2);
    w.bytes(1, bytes, from, to);
    w.close(value);
    w.close(at);
  }

  /**
   * Writes a string attribute from record `r`'s bytes in one of the ring's areas. When they are
   * empty, writes '' if `always`, else nothing.
   */
  #keyField(key: Uint8Array, area: ByteField, r: number, always: boolean): void {
    const length = area.lengths[r] as number;
    if (length === 0 && !always) return;
    this.#keyBytes(key, area.bytes, r * area.cap, r * area.cap + length);
  }

  /** Returns the request encoded since the last `take` (`spans` counts its spans until then). */
  take(): Uint8Array {
    this.#w.close(this.#scopeSpans);
    this.#w.close(this.#resourceSpans);
    this.spans = 0;
    return this.#w.take();
  }
}

const CALL = utf8('call');

/** The path of a URL as received (its first bytes, perhaps cut), without its query. */
function pathOf(url: string): string {
  const from = url.indexOf('/', url.indexOf('//') + 2);
  if (from < 0) return '/';
  const query = url.indexOf('?', from);
  return url.slice(from, query < 0 ? undefined : query);
}
