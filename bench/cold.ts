/**
 * The cold scenario: N clients start their informers at once, as an app's controllers do when
 * its pod starts with the sidecar, against a fresh proxy that caches every type lazily (no
 * --resources: the clients' first reads start the caches), beside the same clients straight at
 * the apiserver. Each client runs one reflector per type (test/helpers/reflector-watcher.ts:
 * client-go's LIST then WATCH from the list's RV, relisting after a 410).
 *
 * Figures per target: the time until every informer has listed and watches; the watches the
 * apiserver holds for those types once they have (its apiserver_longrunning_requests: the
 * clients' own direct, the proxy's caches through it); 410s and relists the clients met; and,
 * through the proxy, the clients' requests it passed to the apiserver.
 */
import { Agent } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { seededRandom } from '../test/helpers/prng.ts';
import type { ReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import { startReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import { upstreamCounts } from './cluster.ts';
import type { Target } from './targets.ts';
import { apiserverTarget, proxyCounter, startCacheProxy } from './targets.ts';

/** The types each client's informers watch, cluster-wide. */
const TYPES = ['pods', 'configmaps', 'services', 'serviceaccounts'] as const;

export interface ColdSpec {
  readonly clients: number;
}

export interface ColdRow {
  readonly target: string;
  readonly informers: number;
  /** From the start of all informers to the last one's first watch answered, ms. */
  readonly syncedMs: number;
  /** Watches of TYPES open at the apiserver once all have synced. */
  readonly apiserverWatches: number;
  readonly expired: number;
  readonly relists: number;
  /** Through the proxy: the clients' LISTs and WATCHes it passed to the apiserver. */
  readonly passedThrough: number | undefined;
}

export async function runCold(
  state: ControlPlaneState,
  client: UpstreamClient,
  spec: ColdSpec,
  report: (line: string) => void,
): Promise<ColdRow[]> {
  const rows: ColdRow[] = [];
  for (const which of ['kube-cache-proxy (cold, lazy caches)', 'apiserver'] as const) {
    // A fresh proxy, started after the apiserver's watches of the last run have ended.
    const target: Target = which === 'apiserver' ? apiserverTarget(state) : await startCacheProxy(state, { resources: '' });
    // A connection per request: every informer holds one for its watch, as each client-go process does.
    const agent = new Agent(target.ca === undefined ? {} : { connect: { ca: target.ca } });
    const random = seededRandom(7);
    const watchers: ReflectorWatcher[] = [];
    try {
      report(`cold · ${which} · ${String(spec.clients)} clients × ${String(TYPES.length)} informers start at once`);
      const started = performance.now();
      for (let i = 0; i < spec.clients; i++) {
        for (const type of TYPES) {
          watchers.push(
            startReflectorWatcher({
              name: `client-${String(i)}/${type}`,
              url: target.url,
              path: `/api/v1/${type}`,
              dispatcher: agent,
              headers: target.headers,
              random,
              // client-go's: 5 to 10 minutes, longer than the run, so each informer keeps its first watch.
              watchTimeoutSeconds: [300, 600],
            }),
          );
        }
      }
      await Promise.all(watchers.map((w) => w.synced));
      const syncedMs = performance.now() - started;
      const counts = await upstreamCounts(client, [...TYPES]);
      const apiserverWatches = TYPES.reduce((n, type) => n + (counts[type]?.openWatches ?? 0), 0);
      const passedThrough =
        which === 'apiserver'
          ? undefined
          : (
              await Promise.all(
                TYPES.map((type) => proxyCounter(target, 'kube_cache_proxy_requests_total', { resource: type, served_from: 'apiserver' })),
              )
            ).reduce((a, b) => a + b, 0);
      const row: ColdRow = {
        target: which,
        informers: watchers.length,
        syncedMs,
        apiserverWatches,
        expired: watchers.reduce((n, w) => n + w.counts.expired, 0),
        relists: watchers.reduce((n, w) => n + w.counts.relists, 0),
        passedThrough,
      };
      report(
        `cold · ${which}: synced in ${(syncedMs / 1000).toFixed(2)} s, ${String(apiserverWatches)} watches at the apiserver, ${String(row.expired)} 410s`,
      );
      rows.push(row);
    } finally {
      await Promise.all(watchers.map((w) => w.stop()));
      await agent.close();
      if (which !== 'apiserver') await target.stop();
    }
  }
  return rows;
}

export function formatCold(rows: readonly ColdRow[], spec: ColdSpec): string {
  const lines = [
    `Cold start: ${String(spec.clients)} clients start informers of ${TYPES.join(', ')} at once (LIST, then WATCH from its RV), against a fresh proxy with lazy caches and against the apiserver`,
    '',
    '| target | informers | all synced s | watches at the apiserver after sync | 410s | relists | client requests passed through |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.target} | ${String(r.informers)} | ${(r.syncedMs / 1000).toFixed(2)} | ${String(r.apiserverWatches)} | ${String(r.expired)} | ${String(r.relists)} | ${r.passedThrough === undefined ? '–' : String(r.passedThrough)} |`,
    );
  }
  return lines.join('\n');
}
