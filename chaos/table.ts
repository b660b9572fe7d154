/** The chaos run's figures as a Markdown table (printed, and pasted into chaos/RESULTS.md as it is). */
import type { FaultRow } from './fault-run.ts';

function seconds(ms: number | undefined, digits = 1): string {
  return ms === undefined || !Number.isFinite(ms) ? '–' : (ms / 1000).toFixed(digits);
}

function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

export const COLUMNS_NOTE = `written: pod writes the apiserver acknowledged; delivered: those writes' events received, summed over the watchers; by relist: writes a watcher skipped legitimately (no watch of its covered them; a later LIST did); lost: writes neither delivered nor relisted, or skipped inside a watch, plus final-state differences from the apiserver; 410s: the watchers' expired watches and lists; re-watches: watches resumed from their last RV after a clean end or a broken connection; closed slow: watches the proxy closed for not reading; first event: from the upstream's return to the first event or LIST after it (worst watcher); longest silence: the longest wait for any write, counted from its acknowledgement or the upstream's return if later (worst watcher; slow readers not counted); stalest read: how long before an RV-unset read was sent the oldest write it missed was acknowledged; passed stale: RV-unset reads of the pods the proxy passed to the apiserver because its cache could not show itself fresh within the bound (a failure where the upstream stayed: quiet, late-bookmark); RSS: the proxy's peak.`;

export function formatTable(rows: readonly FaultRow[]): string {
  const lines = [
    '| fault | watchers | outage s | written | delivered | by relist | lost | duplicated | reordered | 410s | re-watches | closed slow | first event s | longest silence s | RV-unset reads (failed) | stale | missed own write | stalest read s | passed stale | proxy RSS MiB |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.fault} | ${int(r.watchers)} | ${seconds(r.outageMs)} | ${int(r.written)} | ${int(r.delivered)} | ${int(r.relisted)} | ${int(r.lost)} | ${int(r.duplicated)} | ${int(r.reordered)} | ${int(r.expired)} | ${int(r.rewatches)} | ${int(r.closedSlow)} | ${seconds(r.firstAfterReturnMs, 2)} | ${seconds(r.longestSilenceMs, 2)} | ${int(r.reads)} (${int(r.failedReads)}) | ${int(r.staleReads)} | ${int(r.rywMisses)} | ${seconds(r.stalestReadMs)} | ${int(r.passedStale)} | ${int(r.maxRss / 2 ** 20)} |`,
    );
  }
  return lines.join('\n');
}
