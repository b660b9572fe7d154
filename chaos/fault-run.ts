/**
 * One fault of the chaos run, from a namespace of its own to its row of figures:
 *
 *   1. N reflector-style watchers of the namespace's pods, through the proxy, list and watch;
 *   2. the writer writes pods straight at the apiserver, the RV-unset reader reads through the
 *      proxy, the proxy's RSS is sampled;
 *   3. after a third of the writes the fault is injected; it returns when the upstream is back;
 *   4. writing goes on until every write is done and --settle has passed since the return;
 *   5. the apiserver's own LIST of the namespace is the truth: the watchers get until
 *      CATCH_UP_MS to reach it, then each is audited (test/helpers/watch-audit.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Agent } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { eventually } from '../test/helpers/eventually.ts';
import type { PodChurn } from '../test/helpers/pod-churn.ts';
import { newPodChurn } from '../test/helpers/pod-churn.ts';
import type { ReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import { startReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import type { TcpProxy } from '../test/helpers/tcp-proxy.ts';
import type { WatchAudit } from '../test/helpers/watch-audit.ts';
import { auditWatch, caughtUp } from '../test/helpers/watch-audit.ts';
import type { Fault } from './faults.ts';
import type { ChaosOptions } from './options.ts';
import type { ProxyChild } from './proxy.ts';
import { startRvUnsetReader } from './rv-unset-reader.ts';

export interface ChaosEnvironment {
  readonly state: ControlPlaneState;
  /** Straight to the apiserver: the writers, the namespaces, the truth. */
  readonly admin: UpstreamClient;
  readonly proxy: ProxyChild;
  readonly link: TcpProxy;
  /** The watchers' and the reader's connections to the proxy. */
  readonly dispatcher: Agent;
  readonly options: ChaosOptions;
  readonly random: () => number;
  readonly log: (line: string) => void;
}

export interface FaultRow {
  readonly fault: string;
  readonly watchers: number;
  /** From the fault's start to the upstream's return, ms; undefined without an outage. */
  readonly outageMs: number | undefined;
  readonly written: number;
  /** Summed over the watchers. */
  readonly delivered: number;
  readonly relisted: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly reordered: number;
  readonly expired: number;
  readonly rewatches: number;
  /** Client watches the proxy closed for not reading (kube_cache_proxy_watchers_closed_slow_total). */
  readonly closedSlow: number;
  /** The worst watcher's. */
  readonly firstAfterReturnMs: number | undefined;
  readonly longestSilenceMs: number;
  readonly reads: number;
  readonly failedReads: number;
  readonly staleReads: number;
  readonly rywMisses: number;
  readonly stalestReadMs: number;
  readonly maxRss: number;
  /** RV-unset reads of the pods the proxy passed through for staleness during the fault (a storm, where the upstream stayed). */
  readonly passedStale: number;
  readonly problems: readonly string[];
}

/**
 * How long the watchers may take to reach the apiserver's state once writes stop, before what
 * they lack counts as lost: past client-go's longest backoff (30 s, jittered up to 60 s), so that
 * a late client shows as a long silence, not as a loss.
 */
const CATCH_UP_MS = 90_000;
/** How long N watchers may take to list and open their watches on a busy machine. */
const SYNC_MS = 120_000;
/** A fault's writing gives up after this (the upstream never came back). */
const WRITING_LIMIT_MS = 300_000;
const RSS_SAMPLE_MS = 500;
/** slow-readers: pods this big (an annotation; the apiserver allows 256 KiB of them) at this rate make ~2 MB/s. */
const SLOW_POD_BYTES = 200_000;
const SLOW_WRITES_PER_SECOND = 10;
const SLOW_OBJECTS = 20;
/** A slow reader's pause after each chunk it reads (~64 KiB): ~128 KiB/s, far behind the writes. */
const SLOW_READ_DELAY_MS = 500;
const MAX_PROBLEMS = 12;
const CLOSED_SLOW = 'kube_cache_proxy_watchers_closed_slow_total';
const PASSED_STALE = 'kube_cache_proxy_consistency_pass_through_total';
/** A Lease renewed this often while the pods are quiet: the cluster's RV moves on, as a controller's leader election moves it. */
const LEASE_RENEW_MS = 2_000;

/** The watchers of one namespace and its writer. */
interface Scope {
  readonly namespace: string;
  readonly watchers: readonly ReflectorWatcher[];
  readonly churn: PodChurn;
  /** Counted in the silence figures (slow readers are slow by design). */
  readonly timed: boolean;
}

export async function runFault(fault: Fault, env: ChaosEnvironment): Promise<FaultRow> {
  const { options, admin, log } = env;
  const scopes: Scope[] = [];
  const stops: (() => Promise<void>)[] = [];
  let maxRss = env.proxy.rss();
  const logMark = env.proxy.logMark();
  const closedSlowBefore = await env.proxy.counter(CLOSED_SLOW);
  const passedStaleBefore = await env.proxy.counter(PASSED_STALE, { resource: 'pods', reason: 'stale' });
  const sampler = setInterval(() => {
    maxRss = Math.max(maxRss, env.proxy.rss());
  }, RSS_SAMPLE_MS);
  try {
    const namespace = await createNamespace(admin, fault.name);
    const watchers = await startWatchers(env, namespace, options.watchers, 'watcher', undefined);
    stops.push(() => stopAll(watchers));
    const churn = newPodChurn({
      client: admin,
      namespace,
      objects: options.objects,
      writesPerSecond: options.writeRate,
      random: env.random,
    });
    scopes.push({ namespace, watchers, churn, timed: true });
    const reader = startRvUnsetReader({
      url: env.proxy.url,
      dispatcher: env.dispatcher,
      namespace,
      writes: churn.writes,
      objects: options.objects,
      maxStalenessMs: options.maxStalenessMs,
      random: env.random,
    });
    stops.push(() => reader.stop());

    /** When the fault's injection returned, and the upstream's return (if something went away). */
    const injected: { done?: number; back?: number } = {};
    const writer = new AbortController();
    const writing = churn.run(
      () =>
        churn.writes.length >= options.writes &&
        injected.done !== undefined &&
        performance.now() >= (injected.back ?? injected.done) + options.settleMs,
      AbortSignal.any([writer.signal, AbortSignal.timeout(WRITING_LIMIT_MS)]),
    );
    // Handled here too: it may fail (the upstream never back) while the fault is still being injected.
    writing.catch(() => undefined);
    // If the fault fails, the writer stops with it.
    stops.push(async () => {
      writer.abort();
      await writing.catch(() => undefined);
    });
    await eventually('a third of the writes', () => churn.writes.length >= options.writes / 3, WRITING_LIMIT_MS);
    log(`  ${fault.name}: ${String(churn.writes.length)} writes acknowledged; injecting`);
    const at = performance.now();
    const back = await fault.inject({
      state: env.state,
      link: env.link,
      admin,
      outageMs: options.outageMs,
      log: (line) => {
        log(`  ${fault.name}: ${line}`);
      },
      slowReaders: async (durationMs) => {
        const scope = await startSlowScope(env, fault.name, durationMs);
        scopes.push(scope);
        stops.push(() => stopAll(scope.watchers));
      },
      maxStalenessMs: options.maxStalenessMs,
      proxy: env.proxy,
      wakeClients: () => {
        for (const scope of scopes) for (const watcher of scope.watchers) watcher.wake();
      },
      quietFor: async (durationMs) => {
        log(`  ${fault.name}: the pods are quiet for ${String(durationMs / 1000)} s`);
        await Promise.all([churn.pause(durationMs), renewLease(admin, namespace, durationMs)]);
      },
    });
    injected.back = back;
    injected.done = performance.now();
    if (back !== undefined) log(`  ${fault.name}: upstream back after ${((back - at) / 1000).toFixed(1)} s`);
    await writing;
    await reader.stop();
    const reads = reader.results();

    const audits: { audit: WatchAudit; timed: boolean }[] = [];
    for (const scope of scopes) {
      const final = await podsOf(admin, scope.namespace);
      await eventually(
        'every watcher to reach the apiserver’s state',
        () => scope.watchers.every((w) => caughtUp(w, final)),
        CATCH_UP_MS,
      ).catch(() => {
        log(
          `  ${fault.name}: ${String(scope.watchers.filter((w) => !caughtUp(w, final)).length)} watchers of ${scope.namespace} did not catch up`,
        );
      });
      await stopAll(scope.watchers);
      const writes = scope.churn.writes;
      const auditedAt = performance.now();
      for (const watcher of scope.watchers) {
        audits.push({ audit: auditWatch(watcher, { writes, final, recoveredAt: back, auditedAt }), timed: scope.timed });
      }
    }
    for (const message of env.proxy.logSince(logMark)) log(`  ${fault.name}: proxy: ${message}`);
    const checked = (await fault.check?.(env.proxy)) ?? [];
    const passedStale = Math.max(0, (await env.proxy.counter(PASSED_STALE, { resource: 'pods', reason: 'stale' })) - passedStaleBefore);
    const storm =
      fault.noStalePassThrough === true && passedStale > 0 ? [`${String(passedStale)} RV-unset reads passed through for staleness`] : [];
    const all = scopes.flatMap((s) => s.watchers);
    const timed = audits.filter((a) => a.timed).map((a) => a.audit);
    const sum = (f: (a: WatchAudit) => number): number => audits.reduce((total, a) => total + f(a.audit), 0);
    const firsts = timed.map((a) => a.firstAfterReturnMs).filter((ms) => ms !== undefined);
    return {
      fault: fault.name,
      watchers: all.length,
      outageMs: back === undefined ? undefined : back - at,
      written: scopes.reduce((total, s) => total + s.churn.writes.length, 0),
      delivered: sum((a) => a.delivered),
      relisted: sum((a) => a.relisted),
      lost: sum((a) => a.lost),
      duplicated: sum((a) => a.duplicated),
      reordered: sum((a) => a.reordered),
      expired: all.reduce((total, w) => total + w.counts.expired, 0),
      rewatches: all.reduce((total, w) => total + w.counts.rewatches, 0),
      // A restarted proxy's counters start again at 0.
      closedSlow: Math.max(0, (await env.proxy.counter(CLOSED_SLOW)) - closedSlowBefore),
      firstAfterReturnMs: firsts.length === 0 ? undefined : Math.max(...firsts),
      longestSilenceMs: timed.reduce((most, a) => Math.max(most, a.longestSilenceMs), 0),
      reads: reads.reads,
      failedReads: reads.failed,
      staleReads: reads.stale,
      rywMisses: reads.rywMisses,
      stalestReadMs: reads.maxStalenessMs,
      maxRss: Math.max(maxRss, env.proxy.rss()),
      passedStale,
      problems: [...checked, ...storm, ...audits.flatMap((a) => a.audit.problems), ...reads.problems].slice(0, MAX_PROBLEMS),
    };
  } finally {
    clearInterval(sampler);
    await Promise.all(stops.map((stop) => stop()));
  }
}

async function startWatchers(
  env: ChaosEnvironment,
  namespace: string,
  count: number,
  prefix: string,
  readDelayMs: (() => number) | undefined,
): Promise<ReflectorWatcher[]> {
  const watchers = Array.from({ length: count }, (_, i) =>
    startReflectorWatcher({
      name: `${namespace}/${prefix}-${String(i)}`,
      url: env.proxy.url,
      path: `/api/v1/namespaces/${namespace}/pods`,
      dispatcher: env.dispatcher,
      random: env.random,
      ...(readDelayMs === undefined ? {} : { readDelayMs }),
      ...(i === 0 && env.options.trace
        ? {
            trace: (line: string) => {
              env.log(`  trace ${namespace}/${prefix}-0: ${line}`);
            },
          }
        : {}),
    }),
  );
  try {
    await Promise.race([
      Promise.all(watchers.map((w) => w.synced)),
      new Promise((_, reject) => {
        setTimeout(() => {
          reject(new Error(`${String(count)} watchers did not sync within ${String(SYNC_MS / 1000)} s`));
        }, SYNC_MS).unref();
      }),
    ]);
  } catch (error) {
    await stopAll(watchers);
    throw error;
  }
  return watchers;
}

/** slow-readers: slow watchers of a namespace of their own, and a writer of big pods there for `durationMs`. */
async function startSlowScope(env: ChaosEnvironment, fault: string, durationMs: number): Promise<Scope> {
  const namespace = await createNamespace(env.admin, `${fault}-big`);
  let slow = true;
  const watchers = await startWatchers(env, namespace, env.options.slowReaders, 'slow', () => (slow ? SLOW_READ_DELAY_MS : 0));
  const churn = newPodChurn({
    client: env.admin,
    namespace,
    objects: SLOW_OBJECTS,
    writesPerSecond: SLOW_WRITES_PER_SECOND,
    random: env.random,
    padBytes: SLOW_POD_BYTES,
  });
  const until = performance.now() + durationMs;
  await churn.run(() => performance.now() >= until, AbortSignal.timeout(WRITING_LIMIT_MS));
  env.log(`  ${fault}: ${String(churn.writes.length)} big writes done; the slow watchers read at full speed now`);
  slow = false;
  return { namespace, watchers, churn, timed: false };
}

/** Renews a Lease in `namespace` every LEASE_RENEW_MS for `durationMs`. */
async function renewLease(admin: UpstreamClient, namespace: string, durationMs: number): Promise<void> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  const until = performance.now() + durationMs;
  const created = await admin.request({
    method: 'POST',
    path,
    body: JSON.stringify({ metadata: { name: 'quiet' }, spec: { holderIdentity: 'chaos' } }),
  });
  if (created.statusCode !== 201 && created.statusCode !== 409)
    throw new Error(`creating a Lease in ${namespace}: ${String(created.statusCode)}`);
  while (performance.now() < until) {
    const renewTime = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    await admin.request({
      method: 'PATCH',
      path: `${path}/quiet`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { renewTime } }),
    });
    await new Promise((resolve) => setTimeout(resolve, Math.min(LEASE_RENEW_MS, Math.max(0, until - performance.now()))));
  }
}

async function createNamespace(admin: UpstreamClient, label: string): Promise<string> {
  const name = `chaos-${label}-${randomBytes(3).toString('hex')}`;
  const res = await admin.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name } }) });
  if (res.statusCode !== 201) throw new Error(`creating namespace ${name}: ${String(res.statusCode)} ${res.body.toString().slice(0, 300)}`);
  return name;
}

/** The apiserver's own state of a namespace's pods (key → RV): the truth the watchers must reach. */
async function podsOf(admin: UpstreamClient, namespace: string): Promise<Map<string, number>> {
  const res = await admin.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods` });
  if (res.statusCode !== 200) throw new Error(`listing pods of ${namespace}: ${String(res.statusCode)}`);
  const list = JSON.parse(res.body.toString()) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  return new Map(list.items.map((p) => [`${namespace}/${p.metadata.name}`, Number(p.metadata.resourceVersion)]));
}

async function stopAll(watchers: readonly ReflectorWatcher[]): Promise<void> {
  await Promise.all(watchers.map((w) => w.stop()));
}
