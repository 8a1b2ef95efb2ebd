// What a failure of PostgreSQL or of its client means to the store's callers: unreachable (nothing
// sent), unavailable (retry later), or refused.
import postgres from 'postgres';
import { peerText } from '../../redact.ts';
import { OUTCOME_UNKNOWN, StoreError, StoreUnavailableError, StoreUnreachableError } from '../store-error.ts';
import { CONNECTION_LOST } from './postgres-transaction.ts';

/**
 * SQLSTATE classes that mean "the server cannot serve now": 08 connection, 53 resources, 57
 * operator, 58 I/O.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58']);
/**
 * Read-only transaction (a standby), serialization failure, deadlock: nothing stored, a retry may
 * work.
 */
const UNAVAILABLE_STATES = new Set(['25006', '40001', '40P01']);
/**
 * No connection could be made: refused, unresolvable, no route, no answer within the connect
 * timeout, or the server not accepting yet (57P03: starting up, shutting down; 08001, 08004).
 * The database is unreachable: nothing was sent, so a write is known not to be stored.
 */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  '57P03',
  '08001',
  '08004',
]);
const SESSION_ENDED = new Set(['57P01', '57P02']);

/**
 * The store's error for a PostgreSQL failure. `StoreUnreachableError`: no connection could be
 * made. `StoreUnavailableError`: a lost connection, the SQLSTATEs above, a client failure.
 * `StoreError`: anything else the server refuses. A `write` whose connection was lost says its
 * outcome is unknown.
 *
 * @example
 * postgresError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 'list pets')
 * // StoreUnreachableError('list pets: connect ECONNREFUSED 127.0.0.1:5432')
 */
export function postgresError(err: unknown, doing: string, write = false): StoreError {
  if (err instanceof StoreError) return err;
  const message = peerText(err);
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
  const server = err instanceof postgres.PostgresError;
  const unreachable = NOT_CONNECTED.has(code);
  const lost = server ? SESSION_ENDED.has(code) || (code.startsWith('08') && !unreachable) : CONNECTION_LOST.has(code);
  const text = `${doing}: ${message}${write && lost ? `; ${OUTCOME_UNKNOWN}` : ''}`;
  if (unreachable) return new StoreUnreachableError(text, { cause: err });
  const unavailable = server ? UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_STATES.has(code) : true; // not from the server: the client failed or was closed
  const Kind = unavailable ? StoreUnavailableError : StoreError;
  return new Kind(text, { cause: err });
}
