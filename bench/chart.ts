/**
 * The SVG chart of a run: one group of bars per request scenario (p50 latency) and per watcher
 * count (p99 delivery latency), one bar per target, each bar's length relative to the
 * apiserver's in the same group (the dashed line is 1×), labelled with its milliseconds.
 * Plain SVG, no dependencies; readable on GitHub's light and dark themes (own background).
 */
import type { BenchResults } from './results.ts';
import type { TargetName } from './targets.ts';

const COLORS: Readonly<Record<TargetName, string>> = {
  apiserver: '#7f7f7f',
  'kubectl proxy': '#e0a030',
  'kube-cache-proxy': '#2a7ab9',
  'kube-cache-proxy (strong)': '#39a96b',
};
/** Bars longer than this many times the apiserver's are cut (and say so by their label). */
const MAX_RATIO = 3;
const LABEL_W = 230;
const BAR_W = 420;
const BAR_H = 14;
const GROUP_GAP = 12;

interface Group {
  readonly title: string;
  readonly bars: readonly { readonly target: TargetName; readonly ms: number }[];
}

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

export function renderChart(results: BenchResults): string {
  const groups: Group[] = [];
  for (const scenario of [...new Set(results.load.map((r) => r.scenario))]) {
    const rows = results.load.filter((r) => r.scenario === scenario);
    groups.push({ title: `${rows[0]?.title ?? scenario}: p50`, bars: rows.map((r) => ({ target: r.target, ms: r.p50 })) });
  }
  for (const watchers of [...new Set(results.watch.map((r) => r.watchers))]) {
    const rows = results.watch.filter((r) => r.watchers === watchers);
    groups.push({
      title: `watch, ${watchers.toLocaleString('en-US')} watchers: p99 delivery`,
      bars: rows.map((r) => ({ target: r.target, ms: r.p99 })),
    });
  }
  const width = LABEL_W + BAR_W + 200;
  let y = 50;
  const parts: string[] = [];
  for (const group of groups) {
    const base = group.bars.find((b) => b.target === 'apiserver')?.ms ?? NaN;
    parts.push(`<text x="10" y="${String(y + 11)}" font-weight="bold">${escape(group.title)}</text>`);
    y += 18;
    for (const bar of group.bars) {
      const ratio = bar.ms / base;
      const length = Number.isFinite(ratio) ? (Math.min(Math.max(ratio, 0), MAX_RATIO) / MAX_RATIO) * BAR_W : 0;
      parts.push(
        `<text x="${String(LABEL_W - 8)}" y="${String(y + 11)}" text-anchor="end">${escape(bar.target)}</text>`,
        `<rect x="${String(LABEL_W)}" y="${String(y)}" width="${length.toFixed(1)}" height="${String(BAR_H)}" fill="${COLORS[bar.target]}"/>`,
        `<text x="${(LABEL_W + length + 6).toFixed(1)}" y="${String(y + 11)}">${ms(bar.ms)} ms${Number.isFinite(ratio) ? ` (${ratio.toFixed(2)}×)` : ''}</text>`,
      );
      y += BAR_H + 4;
    }
    y += GROUP_GAP;
  }
  const one = LABEL_W + BAR_W / MAX_RATIO;
  const env = results.environment;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${String(width)}" height="${String(y + 20)}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="20" font-size="14" font-weight="bold">kube-cache-proxy, kubectl proxy, kube-apiserver: latency relative to the apiserver (lower is better)</text>
<text x="10" y="36" fill="#555">${escape(`${env.date.slice(0, 10)}, ${env.machine}, Kubernetes ${env.kubernetes}, Node ${env.node}, commit ${env.commit}`)}</text>
<line x1="${one.toFixed(1)}" y1="44" x2="${one.toFixed(1)}" y2="${String(y)}" stroke="#999" stroke-dasharray="4 3"/>
<text x="${one.toFixed(1)}" y="${String(y + 12)}" text-anchor="middle" fill="#555">1× apiserver</text>
${parts.join('\n')}
</svg>
`;
}
