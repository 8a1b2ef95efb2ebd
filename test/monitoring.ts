/**
 * What the shipped monitoring files hold, for the tests that check them: the Prometheus rules
 * (deploy/prometheus/petstore.rules.yml) and the Grafana dashboard (deploy/grafana/petstore.json),
 * their PromQL, and the metric names that PromQL reads.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');
export const RULES_FILE = join(ROOT, 'deploy/prometheus/petstore.rules.yml');
export const RULES_TEST_FILE = join(ROOT, 'deploy/prometheus/petstore.rules.test.yml');
export const DASHBOARD_FILE = join(ROOT, 'deploy/grafana/petstore.json');

export interface Rule {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly Rule[];
}

/** The rule groups of the shipped rules file. */
export function ruleGroups(): RuleGroup[] {
  return (Bun.YAML.parse(readFileSync(RULES_FILE, 'utf8')) as { groups: RuleGroup[] }).groups;
}

export const allRules = (): Rule[] => ruleGroups().flatMap((g) => g.rules);

export interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly datasource?: { readonly type: string; readonly uid: string };
  readonly targets?: readonly { readonly expr: string; readonly exemplar?: boolean; readonly refId: string }[];
  readonly panels?: readonly Panel[];
}

export interface Dashboard {
  readonly __inputs?: readonly Record<string, string>[];
  readonly schemaVersion: number;
  readonly uid: string;
  readonly panels: readonly Panel[];
  readonly templating: {
    readonly list: readonly {
      readonly name: string;
      readonly type: string;
      readonly query: unknown;
      readonly current?: unknown;
    }[];
  };
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every panel of the dashboard, those inside collapsed rows too; rows themselves are left out. */
export function panels(d: Dashboard = dashboard()): Panel[] {
  return d.panels.flatMap((p) => (p.type === 'row' ? [...(p.panels ?? [])] : [p]));
}

/** The panels under the row titled `row` (rows are laid flat: a row's panels follow it). */
export function panelsOfRow(row: string, d: Dashboard = dashboard()): Panel[] {
  const start = d.panels.findIndex((p) => p.type === 'row' && p.title === row);
  if (start < 0) return [];
  const end = d.panels.findIndex((p, i) => i > start && p.type === 'row');
  return d.panels.slice(start + 1, end < 0 ? undefined : end);
}

/** Each query of each panel, with the panel's title. */
export function panelQueries(d: Dashboard = dashboard()): { panel: string; expr: string }[] {
  return panels(d).flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
}

/** The dashboard variables' queries (`label_values(SELECTOR, label)`): their selectors, as PromQL. */
export function variableSelectors(d: Dashboard = dashboard()): string[] {
  return d.templating.list.flatMap((v) => {
    const q = v.query as { query?: string } | string;
    const text = typeof q === 'string' ? q : (q.query ?? '');
    const m = /^label_values\((.*), *\w+\)$/.exec(text);
    return m?.[1] ? [m[1]] : [];
  });
}

/**
 * A dashboard query as Prometheus gets it from Grafana with every variable at "All": `$instance`
 * and `$consumer` match anything; `$__rate_interval` is `rate`, `$__range` is `range`.
 */
export function asGrafanaSends(expr: string, rate = '1m', range = '5m'): string {
  return expr
    .replaceAll('$__rate_interval', rate)
    .replaceAll('$__range', range)
    .replaceAll('$instance', '.*')
    .replaceAll('$consumer', '.*');
}

/** Names of the recording rules used in `expr` (`level:metric:operations`, with colons). */
export function recordedNames(expr: string): string[] {
  return [...new Set(expr.match(/\bpetstore:[a-z0-9_:]+/g) ?? [])];
}

/**
 * Metric names `expr` reads from the scrape: the binary's own (`petstore_…`, `process_…`) and
 * Prometheus's `up`; histogram series keep their suffix (`_bucket`, `_count`, `_sum`).
 */
export function scrapedNames(expr: string): string[] {
  const names = expr
    .replace(/"[^"]*"/g, '""')
    .match(/(?<![\w:])(petstore_[a-z0-9_]+|process_[a-z0-9_]+|up)(?![\w:(])/g);
  return [...new Set(names ?? [])];
}

/**
 * The families a /metrics text declares (`# TYPE name type`), each with the series names it
 * yields: a histogram's `_bucket`, `_count` and `_sum`, else its own name.
 */
export function exportedSeries(metricsText: string): Set<string> {
  const out = new Set<string>();
  for (const m of metricsText.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = m;
    if (type === 'histogram') for (const s of ['_bucket', '_count', '_sum']) out.add(name + s);
    else out.add(name);
  }
  return out;
}
