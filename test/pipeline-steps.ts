// The request's call tree in the header of src/pipeline/pipeline.ts, as the tests that hold the docs
// and the checks' order to it read it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The header's call tree, one entry a line (`//   ` stripped), from `handleRequest` on. */
export function pipelineTree(): string[] {
  const text = readFileSync(join(import.meta.dir, '../src/pipeline/pipeline.ts'), 'utf8');
  const header = text.split('\nimport ')[0] ?? '';
  return [...header.matchAll(/^\/\/ {3}(.+)$/gm)].map((m) => m[1] ?? '');
}

/**
 * The steps the call tree names (`name   step N…`), each number once, with the first function
 * the tree gives it, in order.
 *
 * @example
 * pipelineSteps()[0] // { number: 1, name: 'handleRequest' }
 */
export function pipelineSteps(): { number: number; name: string }[] {
  const steps = pipelineTree().flatMap((line) => {
    const m = /^\s*(\w+)\s+step (\d+)\b/.exec(line);
    return m ? [{ number: Number(m[2]), name: m[1] ?? '' }] : [];
  });
  return steps.filter((step, i) => steps.findIndex((s) => s.number === step.number) === i);
}
