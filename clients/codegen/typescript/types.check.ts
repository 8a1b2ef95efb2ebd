// Type-level test of the contract as openapi-typescript (defaults) reads it: `make contract-lint`
// generates dist/clients/typescript/schema.ts and runs `tsc` on this file. A wrong contract makes
// `tsc` fail; nothing here runs.
import type { components, paths } from '../../../dist/clients/typescript/schema.ts';

type NewPet = paths['/pets']['post']['requestBody']['content']['application/json'];
type Pet = components['schemas']['Pet'];

/** True only when A and B are the same type (not merely assignable to each other). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// A create body without `status` is valid (the server applies `available`).
export const minimal: NewPet = { name: 'Rex', categoryId: 1 };
export const full: NewPet = { name: 'Rex', categoryId: 1, status: 'sold' };
// @ts-expect-error `categoryId` is required.
export const noCategory: NewPet = { name: 'Rex' };
// @ts-expect-error an unknown field is refused by the server, and so by the type.
export const unknownField: NewPet = { name: 'Rex', categoryId: 1, owner: 'me' };

// `Pet.status` is always present and one of the three names.
export const statusIsOneOfThree: Equal<Pet['status'], 'available' | 'pending' | 'sold'> = true;
export const statusIsRequired: Equal<
  Record<never, never> extends Pick<Pet, 'status'> ? 'optional' : 'required',
  'required'
> = true;
export const petIsExact: Equal<keyof Pet, 'id' | 'name' | 'categoryId' | 'status'> = true;

// listPets answers an array of Pet; getPet one Pet.
export const listed: Equal<paths['/pets']['get']['responses'][200]['content']['application/json'], Pet[]> = true;
