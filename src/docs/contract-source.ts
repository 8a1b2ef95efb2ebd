import contractYaml from '../../contract/openapi.yaml' with { type: 'text' };

/**
 * The contract where there is no build step (Deno from source, the Node bundle): the YAML text
 * imported as is, parsed on first use. The binary reads its build-time copies instead
 * (src/docs/generated/contract-files.ts, made by scripts/embed-docs.ts).
 */
export const CONTRACT_YAML: string = contractYaml;

/** The contract as a document: the yaml module and the parse are loaded on first use only. */
export const parseContract = async (): Promise<Record<string, unknown>> => {
  const { default: YAML } = await import('yaml');
  return YAML.parse(CONTRACT_YAML) as Record<string, unknown>;
};
