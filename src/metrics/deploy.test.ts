import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  allRules,
  DASHBOARD_FILE,
  type Dashboard,
  dashboard,
  exportedSeries,
  panelQueries,
  panels,
  recordedNames,
  scrapedNames,
  variableSelectors,
} from '../../test/monitoring.ts';
import { OPERATIONS } from '../api/operations.ts';
import { parseConfig } from '../config.ts';
import { Metrics } from './registry.ts';

/** Every family the binary can export: Redis's too, so nothing is left out by configuration. */
async function exported(): Promise<Set<string>> {
  const m = new Metrics({ version: '1.0.0', runtime: 'bun' });
  m.watchLimiter({
    backend: () => 'redis',
    outages: () => 0,
    table: { keylessCells: 0, consumers: 0, capacity: 1, full: false },
  });
  return exportedSeries(await m.render());
}

const ruleExprs = () => allRules().map((r) => ({ rule: r.record ?? r.alert ?? '', expr: r.expr }));
const dashboardExprs = () => [
  ...panelQueries().map((q) => ({ rule: q.panel, expr: q.expr })),
  ...variableSelectors().map((expr) => ({ rule: 'a variable', expr })),
];

describe('the shipped rules and dashboard read what the binary exports', () => {
  test('every metric name in the rules and the dashboard is a series the binary exports (or Prometheus’s up)', async () => {
    const series = await exported();
    series.add('up');
    const unknown = [...ruleExprs(), ...dashboardExprs()].flatMap(({ rule, expr }) =>
      scrapedNames(expr)
        .filter((n) => !series.has(n))
        .map((n) => `${rule}: ${n}`),
    );
    expect(unknown).toEqual([]);
    // The check sees the names at all: the request counter is read by both.
    expect(ruleExprs().some(({ expr }) => scrapedNames(expr).includes('petstore_http_requests_total'))).toBe(true);
    expect(dashboardExprs().some(({ expr }) => scrapedNames(expr).includes('petstore_http_requests_total'))).toBe(true);
  });

  test('a renamed metric is caught', async () => {
    const series = await exported();
    expect(series.has('petstore_store_errors_total')).toBe(true);
    expect(scrapedNames('sum(rate(petstore_store_error_total{kind="unavailable"}[5m]))')).toEqual([
      'petstore_store_error_total',
    ]);
    expect(series.has('petstore_store_error_total')).toBe(false);
  });

  test('every recording rule the rules and the dashboard read is recorded by the rules', () => {
    const recorded = new Set(allRules().flatMap((r) => (r.record ? [r.record] : [])));
    const missing = [...ruleExprs(), ...dashboardExprs()].flatMap(({ rule, expr }) =>
      recordedNames(expr)
        .filter((n) => !recorded.has(n))
        .map((n) => `${rule}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  test("the objectives' API requests are the API table's operations, and the latency threshold is a bucket bound by default", () => {
    const api = OPERATIONS.map((op) => op.id).join('|');
    const slo = allRules().filter((r) => r.record?.startsWith('petstore:api_'));
    expect(slo).toHaveLength(12);
    for (const r of slo) expect(r.expr).toContain(`operation=~"${api}"`);
    // Every operation matcher of the rules and the dashboard, not one per rule: none may drift.
    // Twenty: the four error rates name the operations twice (their 5xx, `or` their requests * 0).
    const matchers = [...ruleExprs(), ...dashboardExprs()].flatMap(({ rule, expr }) =>
      [...expr.matchAll(/operation=~"([^"]*)"/g)].map((m) => `${rule}: ${m[1]}`),
    );
    expect(matchers).toHaveLength(20);
    expect(matchers.filter((m) => !m.endsWith(`: ${api}`))).toEqual([]);
    const thresholds = new Set(slo.flatMap((r) => [...r.expr.matchAll(/le="([^"]+)"/g)].map((m) => Number(m[1]))));
    expect([...thresholds]).toEqual([...parseConfig([], {}).latencyObjectives]);
  });
});

describe('the alerts', () => {
  const ROOT = join(import.meta.dir, '../..');
  const runbook = readFileSync(join(ROOT, 'docs/runbook.md'), 'utf8');
  const repository = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { repository: { url: string } })
    .repository.url;
  const alerts = allRules().filter((r) => r.alert);

  test('each has a severity, a summary, a description and a section in docs/runbook.md', () => {
    expect(alerts.length).toBe(16);
    for (const a of alerts) {
      expect([a.alert, a.labels?.severity]).toEqual([a.alert, expect.stringMatching(/^(critical|warning)$/)]);
      expect(a.annotations?.summary?.length ?? 0).toBeGreaterThan(20);
      expect(a.annotations?.description?.length ?? 0).toBeGreaterThan(60);
    }
    expect(alerts.filter((a) => !runbook.includes(`\n## ${a.alert}\n`)).map((a) => a.alert)).toEqual([]);
  });

  test("each runbook_url is the repository's docs/runbook.md, at the alert's section", () => {
    // GitHub's anchor for a heading that is one word is that word in lower case.
    const wanted = alerts.map((a) => `${repository}/blob/main/docs/runbook.md#${a.alert?.toLowerCase()}`);
    expect(alerts.map((a) => a.annotations?.runbook_url)).toEqual(wanted);
  });
});

describe('the dashboard', () => {
  const d = dashboard();

  test('a current schema; datasource, instance and consumer variables; every panel on the chosen data source', () => {
    expect(d.schemaVersion).toBe(41);
    expect(d.templating.list.map((v) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['instance', 'query'],
      ['consumer', 'query'],
    ]);
    // Grafana's own variable syntax, not a template string.
    const chosen = ['$', '{datasource}'].join('');
    for (const p of panels(d)) expect([p.title, p.datasource?.uid]).toEqual([p.title, chosen]);
    const ids = d.panels.flatMap((p) => [p.id, ...(p.panels ?? []).map((c) => c.id)]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('an import asks for the Prometheus data source and sets the datasource variable to it; a provisioned file keeps the variable', () => {
    const input = ['$', '{DS_PROMETHEUS}'].join('');
    expect(d.__inputs).toEqual([
      {
        name: 'DS_PROMETHEUS',
        label: 'Prometheus',
        description: 'The Prometheus that scrapes petstore and loads deploy/prometheus/petstore.rules.yml',
        type: 'datasource',
        pluginId: 'prometheus',
        pluginName: 'Prometheus',
      },
    ]);
    // Grafana's import replaces the input's placeholder wherever it appears: here only the
    // variable's starting value, so every panel still reads the variable. File provisioning does
    // not replace it; the variable then starts on the default Prometheus data source.
    const text = readFileSync(DASHBOARD_FILE, 'utf8');
    expect(text.split(input).length - 1).toBe(2);
    const imported = JSON.parse(text.replaceAll(input, 'P1809F7CD0C75ACF3')) as Dashboard;
    expect(imported.templating.list[0]).toMatchObject({
      name: 'datasource',
      type: 'datasource',
      query: 'prometheus',
      current: { text: 'P1809F7CD0C75ACF3', value: 'P1809F7CD0C75ACF3' },
    });
    const chosen = ['$', '{datasource}'].join('');
    expect(panels(imported).filter((p) => p.datasource?.uid !== chosen)).toEqual([]);
  });

  test('the latency panel asks for exemplars', () => {
    const latency = panels(d).filter((p) =>
      p.targets?.some((t) => t.expr.includes('petstore_http_request_duration_seconds_bucket')),
    );
    expect(latency.map((p) => p.title)).toEqual(['Latency by operation (with exemplars)']);
    expect(latency[0]?.targets?.every((t) => t.exemplar === true)).toBe(true);
  });
});
