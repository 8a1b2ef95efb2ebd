// The contracts for runs without a build step (Deno from source, the Node bundle): CONTRACT_YAML,
// ADMIN_CONTRACT_YAML and their parsers. The binary reads its build-time copies instead.
import adminYaml from '../../contract/admin.openapi.yaml' with { type: 'text' };
import contractYaml from '../../contract/openapi.yaml' with { type: 'text' };

/**
 * The public contract's YAML text, imported as is and parsed on first use. The binary reads its
 * build-time copies instead (src/reference/generated/contract-files.ts, made by
 * scripts/embed-docs.ts).
 */
export const CONTRACT_YAML: string = contractYaml;
/** The admin API's contract (contract/admin.openapi.yaml), served beside the public one. */
export const ADMIN_CONTRACT_YAML: string = adminYaml;

/** Parses a contract; the yaml module is loaded on first use only. */
const parse = async (yaml: string): Promise<Record<string, unknown>> => {
  const { default: YAML } = await import('yaml');
  return YAML.parse(yaml) as Record<string, unknown>;
};

export const parseContract = (): Promise<Record<string, unknown>> => parse(CONTRACT_YAML);
export const parseAdminContract = (): Promise<Record<string, unknown>> => parse(ADMIN_CONTRACT_YAML);
