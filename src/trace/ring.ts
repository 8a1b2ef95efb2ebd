// The trace records of the requests being served and lately answered, written the same way for
// every request whether its trace is exported or not: a ring of `size` records in typed arrays,
// allocated once. A request takes a free record and gives it back when it ends not kept, so the
// records in use are the requests in flight and the kept ones not yet read. A record holds the
// request's server span and up to `MAX_CHILDREN` child spans (the gateway's decision, the store's
// calls). Strings that repeat (methods, routes, names, outcomes) are held as numbers of a bounded
// intern table; the others (the URL, the consumer's name, the client's address, an error's text,
// the caller's `tracestate`) are copied as bytes into a fixed area, cut at a cap, and so are the
// ids (the trace's, the request's span's, the caller's). Nothing here makes an object per request,
// and nothing a request allocates is kept alive by the ring.
//
// The export step (src/trace/export.ts) reads the records left `KEPT` off the request path, oldest
// first, and frees them; the ring wakes it when a record is kept, and at once when half the ring
// has turned since its last read with a kept record waiting, before that record can be overwritten.
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
 * Bytes of a child's slot: its start, end and number as doubles (`F64_SLOT` of them), then its
 * small fields as 16-bit numbers, at these places among the slot's `I16_SLOT`.
 */
const CHILD_BYTES = 48;
const F64_SLOT = CHILD_BYTES / 8;
const I16_SLOT = CHILD_BYTES / 2;
/**
 * A child's doubles (`childValue`): its start and end, epoch milliseconds, and the number it
 * carries.
 */
export const CHILD_START = 0;
export const CHILD_END = 1;
export const CHILD_NUMBER = 2;
/**
 * A child's 16-bit fields (`childField`): its name (of `strings`), fixed attributes (of
 * `attributeSets`), kind and parent (-1: the server span); the key (of `strings`) of the number
 * it carries (`petstore.gateway.cost`), 0 for none; a string attribute known once its work is
 * done (`petstore.idempotency.outcome`), key and value; its error's name, 0 when it did not fail.
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
 * A string's or an attribute set's number in its `Interned` table (`strings`, `attributeSets`): 1
 * on, 0 for none. It names an attribute key, a name or a value; it never counts anything.
 */
export type InternedId = number;

/**
 * Strings and attribute sets, each numbered once (1 on; 0 is none): a bounded table, so a
 * stream of distinct strings cannot grow it without end.
 */
export class Interned<T> {
  readonly #ids = new Map<T, InternedId>();
  readonly values: (T | undefined)[] = [undefined];
  readonly #max: number;
  constructor(max = INTERNED_MAX) {
    this.#max = max;
  }
  /** `value`'s number, numbering it when it is new and the table has room; 0 when not. */
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

/** A fixed area of `cap` bytes a record, and how many each holds. */
export class ByteField {
  readonly bytes: Buffer;
  readonly lengths: Uint16Array;
  readonly cap: number;
  constructor(records: number, cap: number) {
    this.bytes = Buffer.alloc(records * cap);
    this.lengths = new Uint16Array(records);
    this.cap = cap;
  }
  /** Copies `text` (its first `cap` bytes) into record `r`'s place; '' leaves it empty. */
  write(r: number, text: string): void {
    this.lengths[r] = text === '' ? 0 : this.bytes.write(text, r * this.cap, this.cap, 'utf8');
  }
  /**
   * Copies the comma-separated `list` whole when it fits, else its leading members that fit (a
   * member is never cut, as W3C Trace Context asks of a `tracestate` too long to pass on).
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
 * The ring. A writer claims a record (`claim`) and keeps its number and generation (`seq`): a
 * record claimed again meanwhile has another generation, and writes to it are dropped (`holds`).
 * Free records are handed out last freed first, so the few a server's requests in flight use
 * stay in the cache rather than each request writing lines the cache lost since the ring's last
 * turn; a kept record keeps its place until the export reads it.
 */
export class TraceRing {
  readonly size: number;
  readonly strings = new Interned<string>();
  readonly attributeSets = new Interned<Attributes>();
  #generation = 0;
  /** The free records, a stack: `#free[0]` to `#free[#freeCount - 1]`, the last freed on top. */
  readonly #free: Int32Array;
  #freeCount: number;
  /**
   * The kept records not yet read, oldest first: `kept` of them from `#keptHead`, round the array.
   */
  readonly #keptOrder: Int32Array;
  #keptHead = 0;
  /**
   * The record taken next when every record is open (more requests in flight than the ring holds).
   */
  #next = 0;
  /** Child slots in all, and the generations a child handle tells apart. */
  readonly #children: number;
  readonly #generations: number;
  /** The numbers of `KNOWN_METHODS` and `OTHER_METHOD`, interned first. */
  readonly #methods = new Map<string, number>();
  /** Kept records awaiting export. */
  kept = 0;
  /** Spans of kept records that a claim overwrote before they were exported. */
  overwritten = 0;
  /** Child spans not recorded: their request already had `MAX_CHILDREN`. */
  childrenLost = 0;
  /**
   * Told when a record is kept or a kept one lost, so the export reads the ring only then;
   * `full` when half the ring was claimed since the last read with a kept record waiting, which
   * the next half would overwrite.
   */
  wake: ((full: boolean) => void) | undefined;
  /** Records claimed since the last read while one was kept, and how many make it urgent. */
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
   * The ids as bytes, `ID_BYTES` a record: the trace id (16), the request's span id (8), the
   * caller's parent span id (8, with `REMOTE`). Bytes, not the request's hex strings: a
   * reference kept in the ring would keep every request's strings alive until it turns over.
   */
  readonly ids: Buffer;
  /** The caller's `tracestate`, when its `traceparent` was valid. */
  readonly traceState: ByteField;
  /** The rest is written only for a record kept, once the export decision is known. */
  readonly url: ByteField;
  readonly consumer: ByteField;
  readonly client: ByteField;
  /** The text of the first failed child's error, and which child it is. */
  readonly error: ByteField;
  readonly errorChild: Int8Array;
  /** Children recorded, and the child now open (-1: none, work runs in the server span). */
  readonly children: Uint8Array;
  readonly open: Int8Array;

  /**
   * Children, at `record * MAX_CHILDREN + child`: each child's fields side by side in one slot
   * of `CHILD_BYTES` (its times and number as doubles, the rest as 16-bit numbers), so the
   * writes of a request's children fall in one or two cache lines rather than one in each of a
   * dozen arrays; the ring's records do not stay in the cache between one turn and the next.
   */
  readonly #childNumbers: Float64Array;
  readonly #childFields: Int16Array;

  constructor(size = DEFAULT_RING_RECORDS) {
    this.size = size;
    this.#fillMark = Math.max(1, size >> 1);
    this.#children = size * MAX_CHILDREN;
    // A child handle stays an exact integer: below 2^53.
    this.#generations = Math.floor(2 ** 53 / this.#children);
    // Number 1, so that a failed child whose error's name finds the table full is still an `Error`.
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
   * Claims a record for a request that starts at `at`, its generation in `seq[r]`: the last freed;
   * with none free, the oldest kept record not yet exported, counted as overwritten; with every
   * record open, the next in turn, whose request then finds it lost (`holds`). A record still
   * open (a slow request the tail rules may keep) is taken only then.
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

  /** `method`'s number: one of `KNOWN_METHODS`, else `OTHER_METHOD`'s. */
  methodId(method: string): number {
    return this.#methods.get(method) ?? (this.#methods.get(OTHER_METHOD) as number);
  }

  /** Whether record `r` is still the one claimed as generation `seq`. */
  holds(r: number, seq: number): boolean {
    return this.seq[r] === seq && this.state[r] === OPEN;
  }

  /**
   * Opens a child of record `r` under its open one, starting at `at`; its index, or -1 when
   * the record holds no more.
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
  /** Sets the number child `i` carries, `value`, under the attribute key `key` (of `strings`). */
  setChildNumber(i: number, key: InternedId, value: number): void {
    this.#childFields[i * I16_SLOT + CHILD_NUMBER_KEY] = key;
    this.#childNumbers[i * F64_SLOT + CHILD_NUMBER] = value;
  }
  /** Sets child `i`'s outcome attribute: `key` and `value`, of `strings`. */
  setChildOutcome(i: number, key: InternedId, value: InternedId): void {
    this.#childFields[i * I16_SLOT + CHILD_OUTCOME_KEY] = key;
    this.#childFields[i * I16_SLOT + CHILD_OUTCOME] = value;
  }
  /** Marks child `i` failed, with the error's name `type` (of `strings`, not 0). */
  setChildError(i: number, type: InternedId): void {
    this.#childFields[i * I16_SLOT + CHILD_ERROR_TYPE] = type;
  }

  /**
   * Child `n` of record `r` as one number: its index (`r * MAX_CHILDREN + n`) and the record's
   * generation, modulo `#generations`, so a handle outliving its record is told apart
   * (`heldChild`).
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

  /**
   * Ends the child at index `i` (`r * MAX_CHILDREN + n`) at `at`: the work in it returns to its
   * parent.
   */
  closeChild(i: number, at: number): void {
    this.#childNumbers[i * F64_SLOT + CHILD_END] = at;
    const n = i % MAX_CHILDREN;
    const r = (i - n) / MAX_CHILDREN;
    if (this.open[r] === n) this.open[r] = this.childField(i, CHILD_PARENT);
  }

  /** Record `r` finished: `KEPT` for export, or free. */
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
