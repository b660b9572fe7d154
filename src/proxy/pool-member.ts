/**
 * A node pool's member (--pool): the members elect a leader through the Lease
 * `kube-cache-proxy-pool-NAME` (leaderelection/, client-go's rules); the leader watches the
 * apiserver for the pool-wide types, the others list and watch them from the leader, as OpenYurt's
 * hubs do within a node pool, and from the apiserver while no leader answers.
 *
 * - Pool-wide types are the scopes without selectors (a type cached whole, in all namespaces or
 *   in --namespace): every member reads the same objects. A selector scope (pods of this node)
 *   differs per member and is always watched from the apiserver.
 * - A member's identity in the Lease is the URL it advertises: unique per member, and all a
 *   follower needs to reach the leader. A follower reaches it with the proxy's own credentials
 *   and TLS settings, as a proxy chained with --server does; the leader, in shared mode,
 *   authenticates and authorizes it as any client.
 * - When the leader changes or cannot be used, the route (upstream/pool-route.ts) moves and the
 *   routed ListerWatchers (informer/routed-lister-watcher.ts) end their watches, which resume
 *   from their last resourceVersion on the new target.
 * - Fail safe (protocol/pool-protocol.ts): a leader is contacted only at an https URL, verified
 *   against the pool's CA (--pool-certificate-authority, else the upstream's) for
 *   --pool-tls-server-name (else the URL's host), whatever the upstream's own TLS settings; its
 *   connections and response heads are timed out; and the follower's reads ask it for cached
 *   answers only (`Cache-Control: only-if-cached`), which it gives only over a live upstream
 *   watch, so that a leader that cannot serve a type says so instead of serving it stale.
 */
import { readFileSync } from 'node:fs';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { newLeaderElector, newLeaseLock, newPrometheusLeaderMetricsProvider } from '../leaderelection/index.ts';
import { newListerWatcher } from '../informer/lister-watcher.ts';
import type { ListerWatcher, ListWatchClient, ResourceScope } from '../informer/lister-watcher.ts';
import type { FieldExtractor } from '../informer/object.ts';
import { newRoutedListerWatcher } from '../informer/routed-lister-watcher.ts';
import { describeScope } from '../informer/lister-watcher.ts';
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';
import { newUpstreamClient } from '../upstream/client.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { UpstreamConfig } from '../upstream/config.ts';
import {
  LEADER_CONNECT_TIMEOUT_MS,
  LEADER_HEADERS_TIMEOUT_MS,
  ONLY_IF_CACHED,
  ONLY_IF_CACHED_HEADER,
  leaderIdentityProblem,
} from '../protocol/pool-protocol.ts';
import { newPoolRoute } from '../upstream/pool-route.ts';
import type { PoolRoute, PoolTarget } from '../upstream/pool-route.ts';
import type { PoolStatus } from '../status/status-report.ts';
import { CliError } from './cli-error.ts';
import type { PoolMembership } from './options.ts';
import { withServer } from './upstream.ts';

/** The Lease a pool elects its leader with. */
export function poolLeaseName(pool: string): string {
  return `kube-cache-proxy-pool-${pool}`;
}

/** resourcelock NewFromKubeconfig: each Lease request times out at max(1 s, renewDeadline / 2). */
const MIN_LEASE_REQUEST_TIMEOUT_MS = 1_000;

export type PoolLog = (level: 'debug' | 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;

export interface PoolMember {
  readonly route: PoolRoute;
  /** The informer factory's ListerWatcher for a scope: routed for a pool-wide one, the apiserver's otherwise. */
  readonly listerWatcherFor: (scope: ResourceScope, extract: FieldExtractor | undefined) => ListerWatcher;
  /**
   * Resolves once the first election round has told whether a leader exists (or after the renew
   * deadline, if the Lease cannot be read): informers started after it open their first watch on
   * the right target instead of moving at once.
   */
  readonly settled: Promise<void>;
  /** The member's state, for the status page. */
  readonly status: () => PoolStatus;
  /** Ends the election, releasing the Lease if this member holds it (so that another member leads at once). */
  stop(): Promise<void>;
  /**
   * Closes the connections to the leader, once the informers have stopped: closing waits for the
   * requests in flight, and a watch on the leader would hold it until the watch times out.
   */
  close(): Promise<void>;
}

export interface PoolMemberOptions {
  readonly pool: PoolMembership;
  /** The apiserver's client: the Lease, and the pool-wide types while no leader answers. */
  readonly client: UpstreamClient;
  /** The upstream's configuration: credentials and TLS a follower reaches the leader with. */
  readonly upstream: UpstreamConfig;
  readonly registry: Registry;
  readonly log: PoolLog;
  readonly clock?: Clock;
  /** The leader's connect and response-head timeouts (pool-protocol.ts); tests shorten them. */
  readonly leaderTimeouts?: { readonly connectMs: number; readonly headersMs: number };
}

export function startPoolMember(options: PoolMemberOptions): PoolMember {
  const { pool, client, log } = options;
  const clock = options.clock ?? realClock;
  const route = newPoolRoute({ self: pool.advertise, clock });
  const metrics = poolMetrics(options.registry, pool.name);
  metrics.route(route.target());
  const described = (target: PoolTarget): Record<string, unknown> => ({
    pool: pool.name,
    ...(target.kind === 'leader'
      ? { leader: target.url }
      : { reason: target.reason, ...(target.detail === undefined ? {} : { detail: target.detail }) }),
  });
  route.onChange((target) => {
    metrics.route(target);
    log(
      'info',
      target.kind === 'leader'
        ? 'pool: reading the pool-wide types from the leader'
        : 'pool: reading the pool-wide types from the apiserver',
      described(target),
    );
  });

  const timeouts = options.leaderTimeouts ?? { connectMs: LEADER_CONNECT_TIMEOUT_MS, headersMs: LEADER_HEADERS_TIMEOUT_MS };
  // Read once: a CA that cannot be read stops the proxy at its start, not each follower's reads later.
  const leaderTls = { ...options.upstream.tls, ca: readPoolCa(pool.certificateAuthority) ?? options.upstream.tls.ca };
  // One connection pool to the current leader, replaced when the leader changes (its watches end then).
  let leaderClient: { url: string; client: UpstreamClient } | undefined;
  const clientOf = (url: string): ListWatchClient => {
    if (leaderClient?.url !== url) {
      const old = leaderClient?.client;
      const config = withServer(options.upstream, url, undefined);
      // The leader is verified whatever the upstream's settings (insecure-skip-tls-verify
      // included): it is sent the follower's credentials.
      const tls = {
        ...leaderTls,
        rejectUnauthorized: true,
        ...(pool.tlsServerName === undefined ? { servername: undefined } : { servername: pool.tlsServerName }),
      };
      leaderClient = {
        url,
        client: newUpstreamClient({ ...config, tls }, { connectTimeout: timeouts.connectMs, headersTimeout: timeouts.headersMs }),
      };
      void old?.close();
    }
    const current = leaderClient.client;
    return {
      request: (request) => current.request({ ...request, headers: { ...request.headers, [ONLY_IF_CACHED_HEADER]: ONLY_IF_CACHED } }),
      stream: (request) => current.stream({ ...request, headers: { ...request.headers, [ONLY_IF_CACHED_HEADER]: ONLY_IF_CACHED } }),
    };
  };

  const stopping = new AbortController();
  /** A call, not a property read: TypeScript would keep a narrowing of `aborted` across awaits. */
  const stopped = (): boolean => stopping.signal.aborted;
  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });
  const settleTimer = clock.setTimeout(() => {
    settle();
  }, pool.renewDeadlineMs);
  settleTimer.unref?.();

  const elector = newLeaderElector({
    lock: newLeaseLock({
      client,
      namespace: pool.namespace,
      name: poolLeaseName(pool.name),
      identity: pool.advertise,
      requestTimeoutMs: Math.max(MIN_LEASE_REQUEST_TIMEOUT_MS, pool.renewDeadlineMs / 2),
    }),
    name: poolLeaseName(pool.name),
    leaseDurationMs: pool.leaseDurationMs,
    renewDeadlineMs: pool.renewDeadlineMs,
    retryPeriodMs: pool.retryPeriodMs,
    // A leader that stops hands over at once: its followers move on within a retry period.
    releaseOnCancel: true,
    // Every node proxy of every pool polls its Lease each retry period: from etcd, that is a
    // quorum read per node every 2 s fleet-wide.
    followersReadFromCache: true,
    metrics: newPrometheusLeaderMetricsProvider(options.registry),
    clock,
    callbacks: {
      onStartedLeading(signal) {
        log('info', 'pool: leading', { pool: pool.name });
        route.setLeading(true);
        settle();
        signal.addEventListener(
          'abort',
          () => {
            log('info', 'pool: stopped leading', {
              pool: pool.name,
              reason: signal.reason instanceof Error ? signal.reason.message : String(signal.reason),
            });
            route.setLeading(false);
          },
          { once: true },
        );
      },
      onStoppedLeading() {
        route.setLeading(false);
      },
      onNewLeader(identity) {
        // Called once per new holder: an identity no follower may contact is said once, at warn.
        const problem = identity === '' ? undefined : leaderIdentityProblem(identity);
        if (problem === undefined)
          log('info', identity === '' ? 'pool: no leader' : 'pool: new leader', { pool: pool.name, leader: identity });
        else
          log('warn', `pool: the Lease names a leader this member will not contact (${problem}): reading from the apiserver`, {
            pool: pool.name,
            leader: identity,
          });
        route.setLeader(identity);
        settle();
      },
    },
    log: (level, message) => {
      log(level, message, { pool: pool.name });
    },
  });

  // Compete for as long as the proxy runs: a member that lost its term (a failed renewal) competes again.
  const running = (async () => {
    while (!stopped()) {
      try {
        await elector.run(stopping.signal);
      } catch (error) {
        log('warn', `pool: election ended with an error: ${error instanceof Error ? error.message : String(error)}`, { pool: pool.name });
      }
      if (stopped()) break;
      await new Promise<void>((resolve) => {
        const timer = clock.setTimeout(resolve, pool.retryPeriodMs);
        stopping.signal.addEventListener(
          'abort',
          () => {
            timer.cancel();
            resolve();
          },
          { once: true },
        );
      });
    }
  })();

  /** A scope's own moves (the leader refused it, or serves it again) are logged once per move. */
  const logged = new Set<string>();
  const watchScope = (resource: string): void => {
    if (logged.has(resource)) return;
    logged.add(resource);
    let refused = false;
    route.scope(resource).onChange((target) => {
      const now = target.kind === 'apiserver' && target.reason === 'leader-refused';
      if (now) log('info', `pool: reading ${resource} from the apiserver: the leader refused it`, described(target));
      else if (refused && target.kind === 'leader') log('info', `pool: reading ${resource} from the leader again`, described(target));
      refused = now;
    });
  };

  return {
    route,
    settled,
    status: () => {
      const target = route.target();
      return {
        name: pool.name,
        lease: `${pool.namespace}/${poolLeaseName(pool.name)}`,
        leader: elector.getLeader(),
        role: target.kind === 'apiserver' && target.reason === 'leading' ? 'leader' : 'follower',
        readsFrom: target.kind,
      };
    },
    listerWatcherFor: (scope, extract) => {
      const apiserver = newListerWatcher(client, scope, extract);
      const wholeType = (scope.labelSelector ?? '') === '' && (scope.fieldSelector ?? '') === '';
      if (!wholeType) return apiserver;
      const resource = describeScope(scope);
      watchScope(resource);
      return newRoutedListerWatcher({
        route,
        scope: resource,
        apiserver,
        leader: (url) => newListerWatcher(clientOf(url), scope, extract),
        opened: (target) => metrics.watchOpened(resource, target),
        clock,
      });
    },
    async stop() {
      settleTimer.cancel();
      stopping.abort();
      await running;
      route.stop();
    },
    async close() {
      await leaderClient?.client.close();
    },
  };
}

/** The pool's CA (--pool-certificate-authority), or undefined for the upstream's. */
function readPoolCa(file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(
      `--pool-certificate-authority ${file}: cannot read it: ${detail}`,
      'Check the path given to --pool-certificate-authority.',
    );
  }
}

interface PoolMetrics {
  route(target: PoolTarget): void;
  /** Counts an open watch of `resource` on `target`; returns its end. */
  watchOpened(resource: string, target: PoolTarget): () => void;
}

/**
 * `kube_cache_proxy_pool_upstream{pool, upstream}`: 1 for the upstream the pool-wide types are
 * read from now (`leader` or `apiserver`), 0 for the other; `kube_cache_proxy_pool_watches{pool,
 * resource, upstream}`: the informers' watches open on each, per type (the apiserver's figure is
 * what the pool costs it: 1 per type on the leader, 0 on a follower once it reads from the leader).
 */
export function poolMetrics(registry: Registry, pool: string): PoolMetrics {
  const upstream = new Gauge<'pool' | 'upstream'>({
    name: 'kube_cache_proxy_pool_upstream',
    help: 'Node pool: 1 for the upstream the pool-wide types are read from now (leader or apiserver).',
    labelNames: ['pool', 'upstream'],
    registers: [registry],
  });
  const watches = new Gauge<'pool' | 'resource' | 'upstream'>({
    name: 'kube_cache_proxy_pool_watches',
    help: "Node pool: the informers' watches of pool-wide types open on the leader or on the apiserver.",
    labelNames: ['pool', 'resource', 'upstream'],
    registers: [registry],
  });
  return {
    route(target) {
      upstream.labels(pool, 'leader').set(target.kind === 'leader' ? 1 : 0);
      upstream.labels(pool, 'apiserver').set(target.kind === 'apiserver' ? 1 : 0);
    },
    watchOpened(resource, target) {
      const labels = { pool, resource, upstream: target.kind };
      watches.inc(labels);
      return () => {
        watches.dec(labels);
      };
    },
  };
}
