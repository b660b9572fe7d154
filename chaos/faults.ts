/**
 * The faults of the chaos run, one each per run of fault-run.ts. Each does its damage and
 * resolves when the upstream answers again, with that moment (performance.now()): silences are
 * counted from it. The writer writes straight at the apiserver throughout, so a fault of the link
 * (the proxy's upstream connections only) leaves writes flowing that the proxy must catch up on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { killComponent, restartApiserver, startComponent } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { eventually } from '../test/helpers/eventually.ts';
import type { TcpProxy } from '../test/helpers/tcp-proxy.ts';
import { compactEtcd } from './etcd.ts';
import type { FaultName } from './options.ts';
import type { ProxyChild } from './proxy.ts';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FaultContext {
  readonly state: ControlPlaneState;
  /** The TCP link between the proxy and the apiserver. */
  readonly link: TcpProxy;
  /** Straight to the apiserver. */
  readonly admin: UpstreamClient;
  readonly outageMs: number;
  readonly log: (line: string) => void;
  /**
   * slow-readers: runs slow watchers and a writer of big events in a namespace of their own for
   * `durationMs`, then lets the watchers read at full speed; they are audited with the others.
   */
  readonly slowReaders: (durationMs: number) => Promise<void>;
  /** The bound the proxy runs with (--max-staleness), ms. */
  readonly maxStalenessMs: number;
  /**
   * The watched pods go quiet: no write for `durationMs` (a Lease elsewhere is renewed every
   * LEASE_RENEW_MS meanwhile, as a controller's leader election does, so the cluster's RV moves
   * on); resolves when writes resume.
   */
  readonly quietFor: (durationMs: number) => Promise<void>;
  /** The proxy under test (its restart keeps its URL and --state-dir). */
  readonly proxy: ProxyChild;
  /**
   * Ends the watchers' backoff waits (ReflectorWatcher.wake): after a restart of the proxy on
   * purpose, whose clients' backoff (grown to up to a minute while it was down) is theirs, not
   * what the silence figure measures.
   */
  readonly wakeClients: () => void;
}

export interface Fault {
  readonly name: FaultName;
  /** What it does (chaos/RESULTS.md's table says the same). */
  readonly description: string;
  /** Does the damage; resolves with the moment the upstream answers again, or undefined when nothing went away. */
  inject(ctx: FaultContext): Promise<number | undefined>;
  /**
   * The upstream stays answering throughout: an RV-unset read passed through for staleness is a
   * failure (a quiet type must be proven fresh by the proxy, never sent upstream wholesale).
   */
  readonly noStalePassThrough?: boolean;
  /** What else must hold once the watchers caught up, asked of the proxy then: the problems found. */
  check?(proxy: ProxyChild): Promise<readonly string[]>;
}

/** proxy-restart: as long as the chaos fault (a proxy down for a minute), past any client-go backoff. */
export const PROXY_DOWN_MS = 60_000;
const REFLECTOR_LISTS = 'kube_cache_proxy_reflector_lists_total';
const STATE_LOADS = 'kube_cache_proxy_state_loads_total';
/** The caches the chaos proxy runs (run.ts RESOURCES: pods, configmaps), each saved and restored. */
const CACHES = 2;

/** The slow link's delay of every byte from the apiserver (late-bookmark): a distant or congested apiserver. */
export const SLOW_LINK_MS = 3_000;

/** How long kube-apiserver may take to answer /readyz again once etcd is back. */
const READY_AFTER_ETCD_MS = 120_000;

export const FAULTS: Readonly<Record<FaultName, Fault>> = {
  'connection-cut': {
    name: 'connection-cut',
    description:
      'every connection of the proxy to the apiserver reset mid-stream, new ones refused for the outage; the apiserver stays up and writes go on',
    async inject(ctx) {
      ctx.link.setBlocked(true);
      ctx.link.cut();
      await sleep(ctx.outageMs);
      ctx.link.setBlocked(false);
      return performance.now();
    },
  },
  'apiserver-kill': {
    name: 'apiserver-kill',
    description:
      'kube-apiserver killed (SIGKILL), started again after the outage with the same flags: an empty watch cache at the newest RV',
    async inject(ctx) {
      await killComponent(ctx.state.dir, 'kube-apiserver');
      await sleep(ctx.outageMs);
      await startComponent(ctx.state.dir, 'kube-apiserver');
      return performance.now();
    },
  },
  'etcd-restart': {
    name: 'etcd-restart',
    description: 'etcd killed (SIGKILL) under a running apiserver, started again after the outage with its data',
    async inject(ctx) {
      await killComponent(ctx.state.dir, 'etcd');
      await sleep(ctx.outageMs);
      await startComponent(ctx.state.dir, 'etcd');
      await eventually(
        'kube-apiserver to be ready again',
        async () => (await ctx.admin.request({ method: 'GET', path: '/readyz' }).catch(() => undefined))?.statusCode === 200,
        READY_AFTER_ETCD_MS,
      );
      return performance.now();
    },
  },
  'compaction-outage': {
    name: 'compaction-outage',
    description:
      'kube-apiserver killed; while it is down etcd is compacted at its newest revision; then started again: every older RV is gone',
    async inject(ctx) {
      await killComponent(ctx.state.dir, 'kube-apiserver');
      await sleep(ctx.outageMs / 2);
      const revision = await compactEtcd(ctx.state.etcdUrl);
      ctx.log(`etcd compacted at revision ${String(revision)}`);
      await sleep(ctx.outageMs / 2);
      await startComponent(ctx.state.dir, 'kube-apiserver');
      return performance.now();
    },
  },
  '410-storm': {
    name: '410-storm',
    description:
      'the proxy cut off while kube-apiserver is restarted (a rollout) and etcd compacted, writes going on: back, its watch gets 410 and relists, every client watch ends and all re-watch into 410 and relist at once',
    async inject(ctx) {
      const started = performance.now();
      ctx.link.setBlocked(true);
      ctx.link.cut();
      await restartApiserver(ctx.state.dir);
      const revision = await compactEtcd(ctx.state.etcdUrl);
      ctx.log(`kube-apiserver restarted, etcd compacted at revision ${String(revision)}`);
      await sleep(Math.max(0, started + ctx.outageMs - performance.now()));
      ctx.link.setBlocked(false);
      return performance.now();
    },
  },
  'slow-readers': {
    name: 'slow-readers',
    description:
      'watchers that read a chunk every half second while ~2 MB/s of big pods is written to their namespace: the proxy closes them at its 16 MiB bound, they re-watch; the fast watchers beside them must not notice',
    async inject(ctx) {
      await ctx.slowReaders(2 * ctx.outageMs);
      return undefined;
    },
  },
  quiet: {
    name: 'quiet',
    description:
      'nothing written to the watched pods for twice the staleness bound and 10 s more (a Lease elsewhere renewed every 2 s moves the cluster RV on) while the RV-unset reader reads them: served from the cache throughout, none passed through for staleness',
    noStalePassThrough: true,
    async inject(ctx) {
      await ctx.quietFor(2 * ctx.maxStalenessMs + 10_000);
      return undefined;
    },
  },
  'late-bookmark': {
    name: 'late-bookmark',
    description: `a slow link: every byte from the apiserver arrives ${String(SLOW_LINK_MS / 1000)} s late while the pods are quiet for the staleness bound and 20 s more, so bookmarks and the proxy's freshness proofs come late: none passed through for staleness, none staler than the bound`,
    noStalePassThrough: true,
    async inject(ctx) {
      ctx.link.setDelay(SLOW_LINK_MS);
      try {
        await ctx.quietFor(ctx.maxStalenessMs + 20_000);
      } finally {
        ctx.link.setDelay(0);
      }
      return undefined;
    },
  },
  'silent-link': {
    name: 'silent-link',
    description:
      'the link holds every byte from the apiserver for the outage, no connection breaks: the proxy cannot tell, and RV-unset reads from its cache may be stale up to --max-staleness but not beyond',
    async inject(ctx) {
      ctx.link.setHeld(true);
      await sleep(ctx.outageMs);
      ctx.link.setHeld(false);
      return performance.now();
    },
  },
  'proxy-restart': {
    name: 'proxy-restart',
    description: `kube-cache-proxy stopped (SIGTERM, as a rollout stops it) for ${String(PROXY_DOWN_MS / 1000)} s while writes go on, then started again with its --state-dir: it lists nothing (its watches resume from the saved RVs) and its clients resume from the restored event window`,
    async inject(ctx) {
      await ctx.proxy.restart(PROXY_DOWN_MS);
      ctx.wakeClients();
      return performance.now();
    },
    async check(proxy) {
      const problems: string[] = [];
      const lists = await proxy.counter(REFLECTOR_LISTS);
      if (lists > 0) problems.push(`the restarted proxy listed ${String(lists)} times (it should have resumed its watches)`);
      const restored = await proxy.counter(STATE_LOADS, { result: 'restored' });
      if (restored !== CACHES) problems.push(`${String(restored)} of ${String(CACHES)} caches restored from their saved state`);
      return problems;
    },
  },
  'state-truncated': {
    name: 'state-truncated',
    description:
      'kube-cache-proxy stopped (SIGTERM) and each saved state cut to half its length while it is down (a write cut short), then started again: every state refused, never served; the caches list as at a first start, their clients relist and lose nothing',
    async inject(ctx) {
      await ctx.proxy.restart(ctx.outageMs, () => {
        for (const file of readdirSync(ctx.proxy.stateDir).filter((f) => f.endsWith('.state'))) {
          const path = join(ctx.proxy.stateDir, file);
          const bytes = readFileSync(path);
          writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
        }
      });
      ctx.wakeClients();
      return performance.now();
    },
    async check(proxy) {
      const problems: string[] = [];
      const refused = await proxy.counter(STATE_LOADS, { result: 'refused' });
      if (refused !== CACHES) problems.push(`${String(refused)} of ${String(CACHES)} cut states refused`);
      const restored = await proxy.counter(STATE_LOADS, { result: 'restored' });
      if (restored > 0) problems.push(`${String(restored)} cut states restored`);
      const lists = await proxy.counter(REFLECTOR_LISTS);
      if (lists < CACHES) problems.push(`the caches listed ${String(lists)} times, fewer than one each`);
      return problems;
    },
  },
};
