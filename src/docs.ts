import { Hono } from 'hono';
import YAML from 'yaml';
import contractYaml from '../contract/openapi.yaml' with { type: 'text' };
import type { AppEnv } from './env.ts';

/** The contract, embedded in the build: the binary serves the document it was tested against. */
export const CONTRACT_YAML: string = contractYaml;

/**
 * Public documentation routes: the contract as YAML and JSON.
 *
 * @example
 * app.route('/', docsRoutes())
 */
export function docsRoutes() {
  const docs = new Hono<AppEnv>();
  const json = JSON.stringify(YAML.parse(CONTRACT_YAML));
  docs.get('/openapi.yaml', (c) => c.body(CONTRACT_YAML, 200, { 'Content-Type': 'application/yaml; charset=utf-8' }));
  docs.get('/openapi.json', (c) => c.body(json, 200, { 'Content-Type': 'application/json' }));
  return docs;
}
