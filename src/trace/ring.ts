// The trace ring: `size` trace records in typed arrays allocated once. Every request writes its
// record the same way, whether its trace is exported or not. A request takes a free record and
// frees it when it ends, unless the record is kept for export; so the records in use are the
// requests in flight plus the kept records not yet exported. A record holds the request's server
// span and up to `MAX_CHILDREN` child spans (the gateway's decision, the store's calls).
// Repeated strings (methods, routes, names, outcomes) are stored as ids into a bounded intern
// table. Other strings (the URL, the consumer's name, the client's address, an error's text, the
// caller's `tracestate`) and the trace and span ids are copied as bytes into fixed areas, cut at
// a cap. So the ring creates no object per request and keeps nothing a request allocated alive.
//
// The export (src/trace/export.ts) reads the `KEPT` records off the request path, oldest first,
// and frees them. The ring wakes it when a record is kept, and asks for an immediate read when
// half the ring has been claimed since the last read while a kept record waits, before that
// record can be overwritten.
import { Buffer } from 'node:buffer';
import type { Attributes } from '@opentelemetry/api';

/** Child spans one record holds at most; more are not recorded (`childrenLost`). */
export const MAX_CHILDREN = 8;
/** Bytes of the URL a record keeps (the path is read from them at export). */
const URL_BYTES = 256;
/** Bytes of a consumer's name, of the client's address, of an error's text. */
const NAME_BYTES = 64;
const ERROR_BYTES = 160;
/**
 * Bytes of the caller's `tracestate`: the 512 characters W3C Trace Context asks every hop to pass
 * on.
 */
const TRACESTATE_BYTES = 512;
/** Bytes of a record's ids: the trace id, the span id and the parent span id. */
export const ID_BYTES = 32;
/**
 * Bytes per child slot: its start, end and number as doubles, then its small fields as 16-bit
 * integers. `F64_SLOT` and `I16_SLOT` are the slot's size counted in each unit.
 */
const CHILD_BYTES = 48;
const F64_SLOT = CHILD_BYTES / 8;
const I16_SLOT = CHILD_BYTES / 2;
/** Offsets of a child's doubles (read with `childValue`): start and end in epoch ms, its number. */
export const CHILD_START = 0;
export const CHILD_END = 1;
export const CHILD_NUMBER = 2;
/**
 * Offsets of a child's 16-bit fields (read with `childField`): name (id in `strings`), attribute
 * set (id in `attributeSets`), kind, parent (-1 for the server span), the key of the number it
 * carries such as `petstore.gateway.cost` (0 for none), the key and value of a string attribute
 * known when its work ends such as `petstore.idempotency.outcome`, and the error's name (0 when
 * it did not fail).
 */
export const CHILD_NAME = 12;
export const CHILD_ATTRIBUTES = 13;
export const CHILD_KIND = 14;
export const CHILD_PARENT = 15;
export const CHILD_NUMBER_KEY = 16;
export const CHILD_OUTCOME_KEY = 17;
export const CHILD_OUTCOME = 18;
export const CHILD_ERROR_TYPE = 19;
/** Strings the intern table holds at most; any further string is recorded as none. */
const INTERNED_MAX = 4096;
/** The records a ring holds by default. */
export const DEFAULT_RING_RECORDS = 4096;

/** The error name a failed child is recorded with when its own is not: string number 1. */
export const ERROR_NAME = 'Error';

/**
 * The methods OpenTelemetry's HTTP conventions know, numbered right after `ERROR_NAME`; any
 * other (Deno and Node pass arbitrary methods through) is recorded as `OTHER_METHOD`, so a
 * caller cannot fill the intern table.
 */
const KNOWN_METHODS = ['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE', 'QUERY'];
export const OTHER_METHOD = '_OTHER';

/** A record's state. */
const FREE = 0;
const OPEN = 1;
export const KEPT = 2;

/** A child's kind, as `SpanKind` numbers it. */
export const INTERNAL = 0;
export const CLIENT = 2;

/** A record's flags. */
export const HEAD = 1;
export const TAIL = 2;
/** A caller's `traceparent` was valid: the server span has a remote parent. */
export const REMOTE = 4;
/** The server span's status is Error (a 5xx). */
export const FAILED = 8;

/**
 * The id of a string or an attribute set in its `Interned` table (`strings`, `attributeSets`),
 * from 1; 0 means none. It is an id, not a count.
 */
export type InternedId = number;

/**
 * A bounded table that gives each string or attribute set an id (from 1; 0 means none), so a
 * stream of distinct strings cannot grow it without limit.
 */
export class Interned<T> {
  readonly #ids = new Map<T, InternedId>();
  readonly values: (T | undefined)[] = [undefined];
  readonly #max: number;
  constructor(max = INTERNED_MAX) {
    this.#max = max;
  }
  /** The id of `value`, adding it when it is new and the table has room; 0 when it has none. */
  id(value: T | undefined): InternedId {
    if (value === undefined) return 0;
    const id = this.#ids.get(value);
    if (id !== undefined) return id;
    if (this.values.length > this.#max) return 0;
    this.#ids.set(value, this.values.length);
    this.values.push(value);
    return this.values.length - 1;
  }
  of(id: InternedId): T | undefined {
    return this.values[id];
  }
}

/** A fixed area of `cap` bytes per record, and the length each record uses. */
export class ByteField {
  readonly bytes: Buffer;
  readonly lengths: Uint16Array;
  readonly cap: number;
  constructor(records: number, cap: number) {
    this.bytes = Buffer.alloc(records * cap);
    this.lengths = new Uint16Array(records);
    this.cap = cap;
  }
  /** Copies the first `cap` bytes of `text` into record `r`'s area; '' leaves it empty. */
  write(r: number, text: string): void {
    this.lengths[r] = text === '' ? 0 : this.bytes.write(text, r * this.cap, this.cap, 'utf8');
  }
  /**
   * Copies the comma-separated `list` whole when it fits, else as many leading members as fit.
   * A member is never cut, as W3C Trace Context asks for a `tracestate` that is too long.
   */
  writeList(r: number, list: string): void {
    let text = list;
    while (Buffer.byteLength(text) > this.cap) {
      const comma = text.lastIndexOf(',');
      text = comma < 0 ? '' : text.slice(0, comma);
    }
    this.write(r, text);
  }
  clear(r: number): void {
    this.lengths[r] = 0;
  }
  read(r: number): string {
    const length = this.lengths[r] as number;
    if (length === 0) return '';
    const at = r * this.cap;
    return this.bytes.toString('utf8', at, at + length);
  }
}

/**
 * The ring. A writer claims a record (`claim`) and keeps its index and generation (`seq`). If the
 * record is claimed again meanwhile, its generation changes, `holds` turns false and the old
 * writer skips its writes. Free records are reused most recently freed first, so the few records
 * the requests in flight use stay in the CPU cache. A kept record stays put until exported.
 */
export class TraceRing {
  readonly size: number;
  readonly strings = new Interned<string>();
  readonly attributeSets = new Interned<Attributes>();
  #generation = 0;
  /** The free records, a stack: `#free[0]` to `#free[#freeCount - 1]`, the last freed on top. */
  readonly #free: Int32Array;
  #freeCount: number;
  /** The kept records not yet read, oldest first: `kept` of them from `#keptHead`, wrapping. */
  readonly #keptOrder: Int32Array;
  #keptHead = 0;
  /** The record taken next when every record is open (more requests in flight than records). */
  #next = 0;
  /** Child slots in all, and how many generations a child handle can tell apart. */
  readonly #children: number;
  readonly #generations: number;
  /** The ids of `KNOWN_METHODS` and `OTHER_METHOD`, interned first. */
  readonly #methods = new Map<string, number>();
  /** Kept records awaiting export. */
  kept = 0;
  /** Spans of kept records that a claim overwrote before they were exported. */
  overwritten = 0;
  /** Child spans not recorded: their request already had `MAX_CHILDREN`. */
  childrenLost = 0;
  /**
   * Called when a record is kept or a kept one is lost, so the export reads the ring only then.
   * `full` is true when half the ring has been claimed since the last read while a kept record
   * waits: the next half would overwrite it.
   */
  wake: ((full: boolean) => void) | undefined;
  /** Records claimed since the last read while one was kept, and the count that sets `full`. */
  #sinceRead = 0;
  readonly #fillMark: number;

  readonly state: Uint8Array;
  readonly seq: Float64Array;
  readonly flags: Uint8Array;
  readonly start: Float64Array;
  readonly end: Float64Array;
  readonly status: Uint16Array;
  readonly method: Uint16Array;
  readonly route: Uint16Array;
  readonly operation: Uint16Array;
  readonly outcome: Uint16Array;
  /**
   * The ids as bytes, `ID_BYTES` per record: the trace id (16), the request's span id (8), the
   * caller's parent span id (8, only with `REMOTE`). Bytes rather than the request's hex strings,
   * because a reference held here would keep each request's strings alive until it is reused.
   */
  readonly ids: Buffer;
  /** The caller's `tracestate`, when its `traceparent` was valid. */
  readonly traceState: ByteField;
  /** The fields below are written only for a kept record, once the export decision is known. */
  readonly url: ByteField;
  readonly consumer: ByteField;
  readonly client: ByteField;
  /** The text of the first failed child's error, and which child it is. */
  readonly error: ByteField;
  readonly errorChild: Int8Array;
  /** Children recorded, and the child now open (-1: none, so work runs in the server span). */
  readonly children: Uint8Array;
  readonly open: Int8Array;

  /**
   * Child slots, at `record * MAX_CHILDREN + child`. All of one child's fields sit together in
   * one slot of `CHILD_BYTES`, so writing a request's children touches one or two cache lines
   * instead of one line in each of a dozen arrays.
   */
  readonly #childNumbers: Float64Array;
  readonly #childFields: Int16Array;

  constructor(size = DEFAULT_RING_RECORDS) {
    this.size = size;
    this.#fillMark = Math.max(1, size >> 1);
    this.#children = size * MAX_CHILDREN;
    // A child handle stays an exact integer: below 2^53.
    this.#generations = Math.floor(2 ** 53 / this.#children);
    // Id 1, so a failed child is still recorded as an `Error` when the table is full.
    this.strings.id(ERROR_NAME);
    for (const method of [...KNOWN_METHODS, OTHER_METHOD]) this.#methods.set(method, this.strings.id(method));
    this.state = new Uint8Array(size);
    this.seq = new Float64Array(size);
    this.flags = new Uint8Array(size);
    this.start = new Float64Array(size);
    this.end = new Float64Array(size);
    this.status = new Uint16Array(size);
    this.method = new Uint16Array(size);
    this.route = new Uint16Array(size);
    this.operation = new Uint16Array(size);
    this.outcome = new Uint16Array(size);
    this.ids = Buffer.alloc(size * ID_BYTES);
    this.traceState = new ByteField(size, TRACESTATE_BYTES);
    this.url = new ByteField(size, URL_BYTES);
    this.consumer = new ByteField(size, NAME_BYTES);
    this.client = new ByteField(size, NAME_BYTES);
    this.error = new ByteField(size, ERROR_BYTES);
    this.errorChild = new Int8Array(size);
    this.children = new Uint8Array(size);
    this.open = new Int8Array(size);
    const slots = new ArrayBuffer(size * MAX_CHILDREN * CHILD_BYTES);
    this.#childNumbers = new Float64Array(slots);
    this.#childFields = new Int16Array(slots);
    this.#free = new Int32Array(size);
    for (let i = 0; i < size; i++) this.#free[i] = size - 1 - i;
    this.#freeCount = size;
    this.#keptOrder = new Int32Array(size);
  }

  /**
   * Claims a record for a request that starts at `at` and returns its index; the generation is in
   * `seq[r]`. It takes the most recently freed record; with none free, the oldest kept record not
   * yet exported (counted as overwritten); with every record open, the next one in turn, whose
   * request then finds it lost (`holds`). An open record is taken only in that last case.
   */
  claim(at: number): number {
    let r: number;
    if (this.#freeCount > 0) r = this.#free[--this.#freeCount] as number;
    else if (this.kept > 0) {
      r = this.#takeOldestKept();
      this.overwritten += 1 + (this.children[r] as number);
    } else {
      r = this.#next;
      this.#next = r + 1 === this.size ? 0 : r + 1;
    }
    if (this.kept > 0 && ++this.#sinceRead >= this.#fillMark) this.wake?.(true);
    this.state[r] = OPEN;
    this.seq[r] = ++this.#generation;
    this.flags[r] = 0;
    this.start[r] = at;
    this.end[r] = at;
    this.status[r] = 0;
    this.operation[r] = 0;
    this.outcome[r] = 0;
    this.route[r] = 0;
    this.children[r] = 0;
    this.open[r] = -1;
    // The byte areas are written, or cleared, only for a record kept (src/trace/spans.ts), and
    // the error's text is read only for the child `errorChild` names.
    this.errorChild[r] = -1;
    return r;
  }

  /**
   * Writes record `r`'s ids from their hex (a caller's at the start, a new trace's once kept);
   * `parentSpanId` only with a remote parent.
   */
  writeIds(r: number, traceId: string, spanId: string, parentSpanId?: string): void {
    const at = r * ID_BYTES;
    this.ids.write(traceId, at, 16, 'hex');
    this.ids.write(spanId, at + 16, 8, 'hex');
    if (parentSpanId !== undefined) this.ids.write(parentSpanId, at + 24, 8, 'hex');
  }

  /** The id of `method` when it is one of `KNOWN_METHODS`, else the id of `OTHER_METHOD`. */
  methodId(method: string): number {
    return this.#methods.get(method) ?? (this.#methods.get(OTHER_METHOD) as number);
  }

  /** Whether record `r` is still the one claimed as generation `seq`. */
  holds(r: number, seq: number): boolean {
    return this.seq[r] === seq && this.state[r] === OPEN;
  }

  /**
   * Opens a child of record `r` under its open child (or the server span), starting at `at`.
   * Returns its number within the record, or -1 when the record already has `MAX_CHILDREN`.
   */
  openChild(r: number, name: InternedId, attributes: InternedId, kind: number, at: number): number {
    const n = this.children[r] as number;
    if (n === MAX_CHILDREN) {
      this.childrenLost++;
      return -1;
    }
    this.children[r] = n + 1;
    const i = r * MAX_CHILDREN + n;
    const d = i * F64_SLOT;
    this.#childNumbers[d + CHILD_START] = at;
    this.#childNumbers[d + CHILD_END] = at;
    const f = i * I16_SLOT;
    const fields = this.#childFields;
    fields[f + CHILD_NAME] = name;
    fields[f + CHILD_ATTRIBUTES] = attributes;
    fields[f + CHILD_KIND] = kind;
    fields[f + CHILD_PARENT] = this.open[r] as number;
    fields[f + CHILD_NUMBER_KEY] = 0;
    fields[f + CHILD_OUTCOME_KEY] = 0;
    fields[f + CHILD_ERROR_TYPE] = 0;
    this.open[r] = n;
    return n;
  }

  /** Child `i`'s double `field` (`CHILD_START`, `CHILD_END`, `CHILD_NUMBER`). */
  childValue(i: number, field: number): number {
    return this.#childNumbers[i * F64_SLOT + field] as number;
  }
  /** Child `i`'s 16-bit `field` (`CHILD_NAME` to `CHILD_ERROR_TYPE`). */
  childField(i: number, field: number): number {
    return this.#childFields[i * I16_SLOT + field] as number;
  }
  /** Sets the number child `i` carries to `value`, under the attribute key `key` (in `strings`). */
  setChildNumber(i: number, key: InternedId, value: number): void {
    this.#childFields[i * I16_SLOT + CHILD_NUMBER_KEY] = key;
    this.#childNumbers[i * F64_SLOT + CHILD_NUMBER] = value;
  }
  /** Sets child `i`'s outcome attribute: `key` and `value`, both ids in `strings`. */
  setChildOutcome(i: number, key: InternedId, value: InternedId): void {
    this.#childFields[i * I16_SLOT + CHILD_OUTCOME_KEY] = key;
    this.#childFields[i * I16_SLOT + CHILD_OUTCOME] = value;
  }
  /** Marks child `i` failed, with the error's name `type` (an id in `strings`, not 0). */
  setChildError(i: number, type: InternedId): void {
    this.#childFields[i * I16_SLOT + CHILD_ERROR_TYPE] = type;
  }

  /**
   * Packs child `n` of record `r` and the record's generation (modulo `#generations`) into one
   * number, so `heldChild` can tell when a handle has outlived its record.
   */
  childHandle(r: number, n: number): number {
    return ((this.seq[r] as number) % this.#generations) * this.#children + r * MAX_CHILDREN + n;
  }

  /** The index of the child `handle` names, or -1 when its record was claimed again or finished. */
  heldChild(handle: number): number {
    const i = handle % this.#children;
    const r = (i - (i % MAX_CHILDREN)) / MAX_CHILDREN;
    const generation = (handle - i) / this.#children;
    return this.state[r] === OPEN && (this.seq[r] as number) % this.#generations === generation ? i : -1;
  }

  /** Ends child `i` (`r * MAX_CHILDREN + n`) at `at`; its parent becomes the open child again. */
  closeChild(i: number, at: number): void {
    this.#childNumbers[i * F64_SLOT + CHILD_END] = at;
    const n = i % MAX_CHILDREN;
    const r = (i - n) / MAX_CHILDREN;
    if (this.open[r] === n) this.open[r] = this.childField(i, CHILD_PARENT);
  }

  /** Marks record `r` finished: `KEPT` for export, or free. */
  settle(r: number, kept: boolean): void {
    if (kept) {
      this.state[r] = KEPT;
      const at = this.#keptHead + this.kept;
      this.#keptOrder[at >= this.size ? at - this.size : at] = r;
      this.kept++;
      this.wake?.(false);
    } else {
      this.state[r] = FREE;
      this.#free[this.#freeCount++] = r;
    }
  }

  /** Takes the oldest kept record off the queue of those not yet read. */
  #takeOldestKept(): number {
    const r = this.#keptOrder[this.#keptHead] as number;
    this.#keptHead = this.#keptHead + 1 === this.size ? 0 : this.#keptHead + 1;
    this.kept--;
    return r;
  }

  /** Hands each kept record to `read`, oldest first, and frees it. */
  drain(read: (r: number) => void): void {
    this.#sinceRead = 0;
    while (this.kept > 0) {
      const r = this.#takeOldestKept();
      this.state[r] = FREE;
      this.#free[this.#freeCount++] = r;
      read(r);
    }
  }
}
