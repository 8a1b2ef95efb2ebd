// `make contract-lint`: @apidevtools/swagger-parser validates contract/openapi.yaml against the
// OpenAPI 3.1 schema and resolves every $ref, as generators built on it do. Exit 1 on any error.
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';

const file = process.argv[2] ?? join(import.meta.dir, 'openapi.yaml');
try {
  const api = await SwaggerParser.validate(file);
  console.log(`swagger-parser: ${file} is valid OpenAPI ${'openapi' in api ? api.openapi : '2.0'}`);
} catch (err) {
  console.error(`swagger-parser: ${file} is not valid:\n${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
