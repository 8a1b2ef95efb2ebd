/**
 * Summarises a Chrome-format `.cpuprofile` (what `bun --cpu-prof` writes): self and inclusive
 * time by function and by file or package, as shares of the samples that were not idle.
 */

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

export interface Share {
  readonly name: string;
  /** Share of the busy (not idle) samples, 0..1. */
  readonly share: number;
  readonly samples: number;
}

export interface ProfileSummary {
  readonly samples: number;
  /** Share of all samples spent idle (waiting in the event loop). */
  readonly idle: number;
  readonly selfByFunction: Share[];
  readonly selfByFile: Share[];
  readonly inclusiveByFunction: Share[];
  readonly inclusiveByFile: Share[];
  /** For functions without a file (the runtime's own: `get`, `set`, `stringify`...): their nearest caller that has one. */
  readonly nativeCallers: Map<string, Share[]>;
}

/** Reads `.cpuprofile` JSON, checking the parts the summary uses. */
export function parseProfile(text: string): CpuProfile {
  const json: unknown = JSON.parse(text);
  if (typeof json !== 'object' || json === null || !('nodes' in json) || !('samples' in json)) {
    throw new TypeError('cpuprofile: expected {nodes, samples}');
  }
  const { nodes, samples } = json;
  if (!Array.isArray(nodes) || !Array.isArray(samples)) throw new TypeError('cpuprofile: nodes and samples are arrays');
  const checked: ProfileNode[] = nodes.map((n: unknown) => {
    if (typeof n !== 'object' || n === null || !('id' in n) || !('callFrame' in n)) {
      throw new TypeError('cpuprofile: a node needs id and callFrame');
    }
    const frame = n.callFrame as Record<string, unknown>;
    return {
      id: Number(n.id),
      callFrame: {
        functionName: String(frame.functionName ?? ''),
        url: String(frame.url ?? ''),
        lineNumber: Number(frame.lineNumber ?? -1),
      },
      children: 'children' in n && Array.isArray(n.children) ? n.children.map(Number) : [],
    };
  });
  return { nodes: checked, samples: samples.map(Number) };
}

/** `src/gateway/caller.ts`, `hono` (a package), or `(native)` for frames without a file. */
export function fileOf(url: string, root: string): string {
  if (!url) return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];
  if (pkg) return pkg;
  if (path.startsWith(`${root}/`)) return path.slice(root.length + 1);
  return path;
}

/** A function with where it is: `src/...` or, for a package, its file (`hono/dist/compose.js`). */
function functionOf(frame: CallFrame, root: string): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  const path = frame.url.replace(/^file:\/\//, '');
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+\/.*)$/.exec(path)?.[1];
  return `${name} ${inPackage ?? fileOf(frame.url, root)}:${frame.lineNumber + 1}`;
}

const IDLE = new Set(['(idle)', '(program)']);

/**
 * @example
 * summarise(parseProfile(readFileSync('list.cpuprofile', 'utf8')), '/work/bench').selfByFunction[0]
 * // { name: 'stringify (native)', share: 0.08, samples: 812 }
 */
export function summarise(profile: CpuProfile, root: string): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const selfFn = new Map<string, number>();
  const selfFile = new Map<string, number>();
  const inclFn = new Map<string, number>();
  const inclFile = new Map<string, number>();
  const callers = new Map<string, Map<string, number>>();
  let idle = 0;
  let busy = 0;
  for (const id of profile.samples) {
    const node = byId.get(id);
    if (!node) continue;
    if (IDLE.has(node.callFrame.functionName)) {
      idle++;
      continue;
    }
    busy++;
    count(selfFn, functionOf(node.callFrame, root));
    count(selfFile, fileOf(node.callFrame.url, root));
    if (!node.callFrame.url) {
      let up = parent.get(id);
      while (up !== undefined && !byId.get(up)?.callFrame.url) up = parent.get(up);
      const frame = up === undefined ? undefined : byId.get(up)?.callFrame;
      const self = functionOf(node.callFrame, root);
      const map = callers.get(self) ?? new Map<string, number>();
      callers.set(self, map);
      count(map, frame ? functionOf(frame, root) : '(none)');
    }
    // Each function and file once per sample, however often it recurs in the stack.
    const fns = new Set<string>();
    const files = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (!frame || frame.functionName === '(root)') continue;
      fns.add(functionOf(frame, root));
      files.add(fileOf(frame.url, root));
    }
    for (const f of fns) count(inclFn, f);
    for (const f of files) count(inclFile, f);
  }
  const top = (map: Map<string, number>) =>
    [...map.entries()]
      .map(([name, samples]) => ({ name, samples, share: busy ? samples / busy : 0 }))
      .sort((a, b) => b.samples - a.samples);
  const total = idle + busy;
  return {
    samples: total,
    idle: total ? idle / total : 0,
    selfByFunction: top(selfFn),
    selfByFile: top(selfFile),
    inclusiveByFunction: top(inclFn),
    inclusiveByFile: top(inclFile),
    nativeCallers: new Map([...callers.entries()].map(([name, map]) => [name, top(map)])),
  };
}

/** Markdown tables of the top entries of a summary. */
export function renderSummary(title: string, s: ProfileSummary, limit = 25): string {
  const table = (heading: string, rows: Share[], n: number) => [
    `| ${heading} | share of busy samples | samples |`,
    '|---|--:|--:|',
    ...rows
      .slice(0, n)
      .map((r) => `| \`${r.name.replace(/\|/g, '\\|')}\` | ${(r.share * 100).toFixed(1)}% | ${r.samples} |`),
    '',
  ];
  return [
    `## ${title}`,
    '',
    `${s.samples} samples, ${(s.idle * 100).toFixed(1)}% idle; shares below are of the busy ones.`,
    '',
    '### Self time by function',
    '',
    ...table('Function', s.selfByFunction, limit),
    '### Who calls the runtime functions at the top (nearest caller with a file)',
    '',
    ...s.selfByFunction
      .filter((f) => s.nativeCallers.has(f.name))
      .slice(0, 10)
      .map(
        (f) =>
          `- \`${f.name}\` (${(f.share * 100).toFixed(1)}%): ${(s.nativeCallers.get(f.name) ?? [])
            .slice(0, 4)
            .map((c) => `\`${c.name}\` ${((c.samples / f.samples) * 100).toFixed(0)}%`)
            .join(', ')}`,
      ),
    '',
    '### Self time by file or package',
    '',
    ...table('File', s.selfByFile, 15),
    '### Inclusive time by function (each function once per sample)',
    '',
    ...table('Function', s.inclusiveByFunction, limit),
    '### Inclusive time by file or package',
    '',
    ...table('File', s.inclusiveByFile, 15),
  ].join('\n');
}
