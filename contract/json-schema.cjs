'use strict';
// The contract's schemas as plain draft-07 JSON Schema, for tools that cannot read OpenAPI 3.1
// themselves: Dredd's validator (Gavel, ajv 6 underneath) and the drift test in
// src/api/contract.test.ts. CommonJS because Dredd loads its hooks, and so this file, with require().

const { readFileSync } = require('node:fs');
const YAML = require('yaml');

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

/** Keywords that validate and mean the same in OpenAPI 3.1 schemas and in draft-07. */
const KEPT = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minProperties',
  'maxProperties',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
]);

/**
 * Keywords left out on purpose. Annotations do not validate. `format` is dropped because ajv 6
 * refuses to compile unknown formats such as `int64`, and every `int64` in the contract carries
 * its range in `minimum`/`maximum`, which are kept.
 */
const DROPPED = new Set([
  'description',
  'title',
  'default',
  'example',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  'externalDocs',
  'format',
  '$comment',
]);

/**
 * Reads and parses the contract.
 *
 * @example
 * const doc = loadContract('contract/openapi.yaml')
 */
function loadContract(file) {
  return YAML.parse(readFileSync(file, 'utf8'));
}

/** The object a local `$ref` such as `#/components/schemas/Pet` points at. */
function resolveRef(doc, ref) {
  if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got ${ref}`);
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = node?.[key];
    if (node === undefined) throw new Error(`$ref ${ref} points at nothing`);
  }
  return node;
}

/** Follows `$ref` until a Response, Header or Parameter Object itself is reached. */
function deref(doc, object) {
  let node = object;
  for (let hops = 0; node && typeof node.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`$ref loop at ${object.$ref}`);
    node = resolveRef(doc, node.$ref);
  }
  return node;
}

/**
 * A self-contained draft-07 schema for `schema`: `$ref`s expanded in place, annotations and
 * `format` dropped, any keyword without a draft-07 equivalent refused (so nothing is skipped
 * silently), and `$schema` set so Gavel picks the right validator. `keep` names dropped
 * keywords to keep anyway (the drift test compares `default`s).
 *
 * @example
 * toDraft07(doc, { $ref: '#/components/schemas/Pet' })
 * // { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: [...], ... }
 */
function toDraft07(doc, schema, { keep = [] } = {}) {
  return { $schema: DRAFT_07, ...convert(doc, schema, [], new Set(keep)) };
}

function convert(doc, schema, seen, keep) {
  if (typeof schema === 'boolean') return schema;
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new Error(`not a schema: ${JSON.stringify(schema)}`);
  }
  let out = {};
  if (typeof schema.$ref === 'string') {
    if (seen.includes(schema.$ref)) throw new Error(`recursive $ref ${schema.$ref} cannot be expanded`);
    // OpenAPI 3.1 allows keywords beside $ref; they apply together with the target.
    out = convert(doc, resolveRef(doc, schema.$ref), [...seen, schema.$ref], keep);
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' || key.startsWith('x-') || (DROPPED.has(key) && !keep.has(key))) continue;
    if (!KEPT.has(key) && !keep.has(key)) throw new Error(`schema keyword "${key}" has no draft-07 conversion here`);
    if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(doc, v, seen, keep)]));
    } else if (key === 'additionalProperties' || key === 'items' || key === 'not') {
      out[key] = convert(doc, value, seen, keep);
    } else if (key === 'allOf' || key === 'anyOf' || key === 'oneOf') {
      out[key] = value.map((s) => convert(doc, s, seen, keep));
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * Checks one header's text against its (converted) schema. Header schemas in the contract are
 * scalar: integer or string with range, pattern, const or enum; anything else is refused.
 * Returns the problems found, empty when the value conforms.
 *
 * @example
 * checkHeaderValue('X-RateLimit-Remaining', '-1', { type: 'integer', minimum: 0 })
 * // ['X-RateLimit-Remaining: -1 is less than the minimum 0']
 */
function checkHeaderValue(name, text, schema) {
  const problems = [];
  for (const key of Object.keys(schema)) {
    if (!['$schema', 'type', 'minimum', 'maximum', 'const', 'enum', 'pattern'].includes(key)) {
      throw new Error(`header ${name}: schema keyword "${key}" is not supported for headers`);
    }
  }
  let value = text;
  if (schema.type === 'integer') {
    if (!/^-?[0-9]+$/.test(text)) return [`${name}: "${text}" is not an integer`];
    value = Number(text);
  } else if (schema.type !== undefined && schema.type !== 'string') {
    throw new Error(`header ${name}: type ${schema.type} is not supported for headers`);
  }
  if (schema.minimum !== undefined && value < schema.minimum) {
    problems.push(`${name}: ${text} is less than the minimum ${schema.minimum}`);
  }
  if (schema.maximum !== undefined && value > schema.maximum) {
    problems.push(`${name}: ${text} is more than the maximum ${schema.maximum}`);
  }
  if (schema.const !== undefined && value !== schema.const) {
    problems.push(`${name}: "${text}" is not "${schema.const}"`);
  }
  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    problems.push(`${name}: "${text}" is not one of ${schema.enum.join(', ')}`);
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(text)) {
    problems.push(`${name}: "${text}" does not match ${schema.pattern}`);
  }
  return problems;
}

module.exports = { DRAFT_07, loadContract, resolveRef, deref, toDraft07, checkHeaderValue };
