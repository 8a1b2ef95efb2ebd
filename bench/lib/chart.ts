/** The SVG chart of bench/README.md, drawn from results.json's numbers (never by hand). */

export interface Bar {
  readonly series: string;
  readonly value: number;
}

export interface Group {
  readonly label: string;
  readonly bars: readonly Bar[];
}

export interface Panel {
  readonly title: string;
  readonly unit: string;
  readonly groups: readonly Group[];
}

const COLORS: Record<string, string> = {
  petstore: '#2563eb',
  hooked: '#7c3aed',
  traced1: '#0d9488',
  tracedtail: '#14b8a6',
  tracedall: '#0f766e',
  base: '#93c5fd',
  bare: '#9ca3af',
  floor: '#d1d5db',
  sqlite: '#6b7280',
  postgres: '#1e3a8a',
  w1: '#60a5fa',
  w2: '#1d4ed8',
  hono: '#f97316',
  express: '#f59e0b',
};
const BAR_H = 14;
const GAP = 3;
const GROUP_GAP = 12;
const LABEL_W = 200;
const PLOT_W = 300;
const VALUE_W = 80;
const PANEL_W = LABEL_W + PLOT_W + VALUE_W;

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function format(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function panelHeight(panel: Panel): number {
  return 30 + panel.groups.reduce((h, g) => h + g.bars.length * (BAR_H + GAP) + GROUP_GAP, 0);
}

function drawPanel(panel: Panel, x: number, y: number): string {
  const max = Math.max(...panel.groups.flatMap((g) => g.bars.map((b) => b.value)), 1e-9);
  const parts = [`<text x="${x}" y="${y + 16}" font-weight="bold">${xml(panel.title)} (${xml(panel.unit)})</text>`];
  let top = y + 30;
  for (const group of panel.groups) {
    const height = group.bars.length * (BAR_H + GAP) - GAP;
    parts.push(`<text x="${x + LABEL_W - 8}" y="${top + height / 2 + 4}" text-anchor="end">${xml(group.label)}</text>`);
    for (const bar of group.bars) {
      const w = Math.max(1, (bar.value / max) * PLOT_W);
      const color = COLORS[bar.series] ?? '#6b7280';
      parts.push(
        `<rect x="${x + LABEL_W}" y="${top}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${color}"><title>${xml(bar.series)}: ${format(bar.value)} ${xml(panel.unit)}</title></rect>`,
        `<text x="${(x + LABEL_W + w + 4).toFixed(1)}" y="${top + BAR_H - 3}" font-size="11">${format(bar.value)}</text>`,
      );
      top += BAR_H + GAP;
    }
    top += GROUP_GAP;
  }
  return parts.join('\n');
}

/**
 * Panels side by side, with a legend of the series and a caption line.
 *
 * @example
 * renderChart([{ title: 'Throughput', unit: 'req/s', groups }], 'median of 3 rounds')
 */
export function renderChart(panels: readonly Panel[], caption: string): string {
  const series = [...new Set(panels.flatMap((p) => p.groups.flatMap((g) => g.bars.map((b) => b.series))))];
  const width = panels.length * PANEL_W + 20;
  const plotH = Math.max(...panels.map(panelHeight));
  const height = plotH + 60;
  const legend = series
    .map((s, i) => {
      const lx = 10 + i * 150;
      return `<rect x="${lx}" y="${plotH + 18}" width="12" height="12" fill="${COLORS[s] ?? '#6b7280'}"/><text x="${lx + 18}" y="${plotH + 29}">${xml(s)}</text>`;
    })
    .join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...panels.map((p, i) => drawPanel(p, 10 + i * PANEL_W, 6)),
    legend,
    `<text x="10" y="${plotH + 50}" font-size="11" fill="#4b5563">${xml(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
