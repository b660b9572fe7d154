/** The hostile-client suite's figures as a Markdown table (printed, and pasted into chaos/RESULTS.md as it is). */
import type { PhaseRow } from './scenario.ts';
import { BOUNDS, brokenBounds, p99Reference } from './scenario.ts';

function fixed(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

export const COLUMNS_NOTE = `attack requests: what the attacker sent in the phase (a watch is one); RSS held / peak: the proxy's resident set (sampled every 200 ms from /proc/PID/status) minus its RSS at the phase start, the least in the hold (the attack sends nothing more for the hold but keeps its watches open: its garbage is collected meanwhile) and the most over the phase; loop delay: the proxy's own event-loop delay histogram (prom-client's nodejs_eventloop_lag_p99_seconds and _max_seconds, 10 ms sampling period included, read before and after the phase); good reads: reads of the good clients started in the phase (the attack and the hold) (failed: not answered 200, or 404 for a pod deleted meanwhile); p99: their latency on the same proxy just before the attack (without it: --before seconds, the phase's length by default) and during the attack and the hold, and the ratio of the two (the baseline phase's too, two windows without attack: the machine's own noise); from cache: of the proxy's GET, LIST and WATCH of pods and ConfigMaps (only the good clients read those), the share its cache served (kube_cache_proxy_requests_total); events lost: pod writes of the phase acknowledged by the apiserver that a good watcher neither got nor legitimately skipped by a relist, with duplicates and reorderings (test/helpers/watch-audit.ts). Bounds: RSS held ≤ ${String(BOUNDS.rssGrowthBytes / 2 ** 20)} MiB over the baseline's (what a fresh proxy's heap grows by in a phase with no attack), loop delay max ≤ ${String(BOUNDS.loopDelayMaxMs)} ms, no good read failed, p99 ≤ ${String(BOUNDS.p99Factor)}× the same proxy's just before the attack, from cache ≥ the baseline's − ${String(BOUNDS.cacheShareSlack * 100)} point, 0 events lost, 0 internal errors of the proxy (reads it failed to serve from the cache, listener faults), and an attack's own check.`;

export function formatTable(rows: readonly PhaseRow[]): string {
  const baseline = rows.find((r) => r.phase === 'baseline');
  const lines = [
    '| phase | attack requests | RSS held / peak MiB | loop delay p99 / max ms | good reads (failed) | good p99 ms: before → during (×) | from cache | events lost | verdict |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const r of rows) {
    if (r.skipped !== undefined) {
      lines.push(`| ${r.phase} | – | – | – | – | – | – | – | skipped: ${r.skipped} |`);
      continue;
    }
    const g = r.good;
    const against = r.before?.p99Ms ?? p99Reference(r, baseline)?.p99Ms;
    const ratio = against !== undefined && g !== undefined ? ` (${fixed(g.p99Ms / against, 1)}×)` : '';
    const p99 = `${r.before === undefined ? '' : `${fixed(r.before.p99Ms)} → `}${fixed(g?.p99Ms ?? NaN)}${ratio}`;
    const broken = brokenBounds(r, baseline);
    const lost = g === undefined ? NaN : g.lost + g.duplicated + g.reordered;
    lines.push(
      `| ${r.phase} | ${r.outcome === undefined ? '–' : int(r.outcome.sent)} | ${fixed((r.rssHeld - r.rssStart) / 2 ** 20, 1)} / ${fixed((r.rssPeak - r.rssStart) / 2 ** 20, 1)} | ${fixed(r.loopP99Ms)} / ${fixed(r.loopMaxMs)} | ${int(g?.reads ?? NaN)} (${int(g?.failed ?? NaN)}) | ${p99} | ${fixed(r.cacheShare * 100, 1)}% | ${int(lost)} | ${broken.length === 0 ? 'pass' : `**FAIL**: ${broken.join('; ')}`} |`,
    );
  }
  return lines.join('\n');
}

/** What each attack sent and got, and the proxy's warnings, one line per phase. */
export function formatDetails(rows: readonly PhaseRow[]): string {
  const lines: string[] = [];
  for (const r of rows) {
    if (r.skipped !== undefined) {
      lines.push(`- ${r.phase}: ${r.what}; skipped: ${r.skipped}`);
      continue;
    }
    const warnings =
      r.warnings.length === 0
        ? ''
        : `; the proxy logged ${String(r.warnings.length)} warnings (first: ${(r.warnings[0] ?? '').slice(0, 160)})`;
    const attack = r.outcome === undefined ? '' : `; answers: ${r.outcome.effect}`;
    lines.push(`- ${r.phase}: ${r.what}${attack}${warnings}`);
  }
  return lines.join('\n');
}
