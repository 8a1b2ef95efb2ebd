// @petstore/client: the Pet Store API's client. Types come from the contract (src/generated/).
export { createClient, type PetstoreClient } from './client.ts';
export { type ErrorCode, PetstoreError } from './errors.ts';
export type { Operations } from './generated/operations.ts';
export type { components, operations, paths } from './generated/schema.ts';
export type {
  CallOptions,
  ClientOptions,
  ConditionalOptions,
  CreateOptions,
  Fetch,
  Logger,
  RateLimitInfo,
} from './types.ts';

import type { components } from './generated/schema.ts';

/** An animal of the catalogue, as the service answers it. */
export type Pet = components['schemas']['Pet'];
/** What `createPet` takes: `name`, `categoryId`, and `status` (default `available`). */
export type NewPet = components['schemas']['NewPet'];
/** What `updatePet` takes: any of `name`, `categoryId` and `status` (a JSON Merge Patch). */
export type PetPatch = components['schemas']['PetPatch'];
/** `available`, `pending` or `sold`. */
export type PetStatus = components['schemas']['PetStatus'];
