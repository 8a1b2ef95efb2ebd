// The admin API's operation table: `ADMIN_OPERATIONS` declares each operation under
// `ADMIN_PREFIX` (`/admin/v1`), served on `--admin-port` only. The admin routes, their scope check
// and their 405 answers are built from it.
import { defineOperation, type StorelessOperation } from '../api/operation-types.ts';
import { ADMIN_SCOPE } from '../core/key-scopes.ts';
import {
  type AdminDeps,
  getConsumer,
  listAudit,
  listConsumers,
  patchConsumer,
  postConsumer,
  postKey,
  removeConsumer,
  revoke,
  rotate,
} from './handlers.ts';
import {
  ADMIN_MUST_BE,
  AuditQuery,
  ConsumerParams,
  ConsumerPatch,
  KeyParams,
  NewConsumer,
  NewKeyBody,
  RotateBody,
} from './schemas.ts';

/** Where the admin API lives, on `--admin-port` only (on the public port it is a plain 404). */
export const ADMIN_PREFIX = '/admin/v1';

/**
 * What every admin operation shares: the `admin` scope, the admin API's 400 messages, no ETag, no
 * memo, and no wait for due orders to expire (it reads no pets).
 */
const ADMIN = {
  scope: ADMIN_SCOPE,
  mustBe: ADMIN_MUST_BE,
  weakEtag: false,
  memo: false,
  waitsForDueOrderExpiry: false,
} as const;

/**
 * Every admin API operation, once, in the shape of the public table (src/api/operations.ts). The
 * routes, the scope check and the 405's `Allow` header read it; src/admin/admin-operations.test.ts
 * keeps it equal to contract/admin.openapi.yaml. Changes are `audited`: the handler learns which
 * admin key asks, and the audit trail records it.
 */
export const ADMIN_OPERATIONS: readonly StorelessOperation<AdminDeps>[] = [
  defineOperation({ ...ADMIN, id: 'listConsumers', method: 'GET', path: '/consumers', handler: listConsumers }),
  defineOperation({
    ...ADMIN,
    id: 'createConsumer',
    method: 'POST',
    path: '/consumers',
    body: NewConsumer,
    audited: true,
    handler: postConsumer,
  }),
  defineOperation({
    ...ADMIN,
    id: 'getConsumer',
    method: 'GET',
    path: '/consumers/:name',
    params: ConsumerParams,
    handler: getConsumer,
  }),
  defineOperation({
    ...ADMIN,
    id: 'updateConsumer',
    method: 'PATCH',
    path: '/consumers/:name',
    params: ConsumerParams,
    body: ConsumerPatch,
    audited: true,
    handler: patchConsumer,
  }),
  defineOperation({
    ...ADMIN,
    id: 'deleteConsumer',
    method: 'DELETE',
    path: '/consumers/:name',
    params: ConsumerParams,
    audited: true,
    handler: removeConsumer,
  }),
  defineOperation({
    ...ADMIN,
    id: 'addKey',
    method: 'POST',
    path: '/consumers/:name/keys',
    params: ConsumerParams,
    body: NewKeyBody,
    audited: true,
    handler: postKey,
  }),
  defineOperation({
    ...ADMIN,
    id: 'rotateKeys',
    method: 'POST',
    path: '/consumers/:name/rotate',
    params: ConsumerParams,
    body: RotateBody,
    audited: true,
    handler: rotate,
  }),
  defineOperation({
    ...ADMIN,
    id: 'revokeKey',
    method: 'DELETE',
    path: '/consumers/:name/keys/:id',
    params: KeyParams,
    audited: true,
    handler: revoke,
  }),
  defineOperation({ ...ADMIN, id: 'listAudit', method: 'GET', path: '/audit', query: AuditQuery, handler: listAudit }),
];
