// Types of json-schema.cjs for the TypeScript that imports it (src/contract.test.ts).

export type JsonSchema = { [keyword: string]: unknown };

export declare const DRAFT_07: string;
export declare function loadContract(file: string): unknown;
export declare function resolveRef(doc: unknown, ref: string): unknown;
export declare function deref(doc: unknown, object: unknown): unknown;
export declare function toDraft07(doc: unknown, schema: unknown, options?: { keep?: string[] }): JsonSchema;
export declare function checkHeaderValue(name: string, text: string, schema: JsonSchema): string[];
