// A pet's strong entity tag and the `If-Match` header compared against it (RFC 9110). The tag is
// made from the pet's id and version, not its body, so every instance gives a pet the same tag. A
// pet's body is never compressed (src/api/pets.test.ts), so the tag names one sequence of bytes.

/** What `If-Match` asks of the pet: any current version (`*`), or one of these versions. */
export type IfMatch = '*' | readonly number[];

/**
 * One entity tag of an `If-Match` list, weak (`W/`: never ours, so ignored) or strong; our tags
 * never contain commas, so splitting the list on commas is safe.
 */
const TAG = /^(W\/)?"([^"]*)"$/;
/** Our own tags: `"<id>-<version>"`, both decimal. */
const PET_TAG = /^([1-9][0-9]{0,15})-([1-9][0-9]{0,15})$/;

/**
 * Returns the strong `ETag` of pet `id` at `version`.
 *
 * @example
 * petEtag(7, 3) // '"7-3"'
 */
export function petEtag(id: number, version: number): string {
  return `"${id}-${version}"`;
}

/**
 * Returns what an `If-Match` value requires of pet `id`: `*`, or the versions of this pet that its
 * tags name (strong comparison: a weak tag, another pet's tag or a malformed one matches nothing);
 * undefined when there is no header.
 *
 * @example
 * ifMatchOf('"7-3", "8-1"', 7) // [3]
 * ifMatchOf('*', 7) // '*'
 * ifMatchOf('W/"7-3"', 7) // []
 */
export function ifMatchOf(header: string | undefined, id: number): IfMatch | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const versions: number[] = [];
  for (const raw of header.split(',')) {
    const tag = TAG.exec(raw.trim());
    if (!tag || tag[1] !== undefined) continue;
    const ours = PET_TAG.exec(tag[2] ?? '');
    if (ours && Number(ours[1]) === id) versions.push(Number(ours[2]));
  }
  return versions;
}

/**
 * Returns whether a pet at `version` meets `ifMatch` (undefined: no precondition).
 *
 * @example
 * meets([3], 3) // true
 * meets('*', 9) // true
 */
export function meets(ifMatch: IfMatch | undefined, version: number): boolean {
  return ifMatch === undefined || ifMatch === '*' || ifMatch.includes(version);
}
