/**
 * What the node pool's e2e tests share: shared proxies in-process (members of a pool or not),
 * the pool's Lease written by the test, the members' own count of their watches per upstream,
 * clients' watches read as `TYPE name rv` lines, and paced writes of configmaps to watch.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { parseProxyOptions } from '../../src/cli/proxy-options.ts';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { splitLines } from '../../src/informer/lister-watcher.ts';
import type { RunningProxy } from '../../src/proxy/proxy.ts';
import { startProxy } from '../../src/proxy/proxy.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import type { UpstreamConfig } from '../../src/upstream/config.ts';
import { signedCertificate } from './certificates.ts';
import { upstreamConfigFor } from './control-plane.ts';
import { eventually } from './eventually.ts';
import { kube } from './kube.ts';
import { metricSum } from './metrics-text.ts';
import { clientFor } from './shared-proxy.ts';

/** A port free now, for a member that must advertise its URL before it serves. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface Seen {
  readonly events: string[];
  /** The highest RV seen (events only). */
  lastRv: number;
  ended: boolean;
}

/** Reads a JSON watch's events as `TYPE name rv` lines, as they arrive (bookmarks left out). */
export function collect(body: AsyncIterable<Buffer>): Seen {
  const seen: Seen = { events: [], lastRv: 0, ended: false };
  void (async () => {
    try {
      for await (const line of splitLines(body)) {
        const event = JSON.parse(line.toString()) as { type: string; object: { metadata: { name?: string; resourceVersion: string } } };
        if (event.type === 'BOOKMARK') continue;
        const rv = Number(event.object.metadata.resourceVersion);
        seen.events.push(`${event.type} ${event.object.metadata.name ?? ''} ${String(rv)}`);
        seen.lastRv = Math.max(seen.lastRv, rv);
      }
    } catch {
      // The stream was closed by the test (or broke: `ended` says so either way).
    }
    seen.ended = true;
  })();
  return seen;
}

export interface PoolProxyOptions {
  /** The namespace its caches hold (configmaps only). */
  readonly namespace: string;
  /** The port it serves on; default: a free one. */
  readonly port?: number;
  /** Join this pool (its Lease in `namespace`), advertising https://127.0.0.1:PORT; none: a shared proxy outside any pool. */
  readonly pool?: string;
  /** Serve a certificate of its own making (--tls-generate), which no member trusts; default: one of the control plane's CA. */
  readonly untrusted?: boolean;
  /** Its upstream (e.g. through a TCP proxy); default: the apiserver, as the admin. */
  readonly upstream?: UpstreamConfig;
  /** --pool-lease-duration in seconds (its retry period, how often a member reads the Lease, is 2/15 of it); default 15, client-go's. */
  readonly leaseSeconds?: number;
}

export interface PoolProxy {
  /** https://127.0.0.1:PORT: also its identity in the pool's Lease. */
  readonly url: string;
  readonly proxy: RunningProxy;
  /** Its /metrics text (its registry, read in-process). */
  metrics(): Promise<string>;
}

/**
 * A shared proxy in-process caching configmaps of one namespace: HTTPS with a certificate of the
 * control plane's CA for 127.0.0.1 (or one it makes itself), client certificates of that CA
 * accepted, the admin kubeconfig as its identity; ready (its cache synced) when it returns.
 */
export async function startPoolProxy(t: TestContext, cp: ControlPlaneState, options: PoolProxyOptions): Promise<PoolProxy> {
  const port = options.port ?? (await freePort());
  const url = `https://127.0.0.1:${String(port)}`;
  const serving = options.untrusted === true ? undefined : signedCertificate(t, cp, { cn: 'kube-cache-proxy', serving: true });
  const args = [
    ...['--port', String(port), '--shared', '--client-ca-file', cp.caFile, '--log-level', 'warn'],
    ...['--resources', 'configmaps', '--namespace', options.namespace],
    ...(serving === undefined ? ['--tls-generate'] : ['--tls-cert-file', serving.certFile, '--tls-private-key-file', serving.keyFile]),
    ...(options.pool === undefined
      ? []
      : [
          '--pool',
          options.pool,
          '--pool-namespace',
          options.namespace,
          '--pool-advertise',
          url,
          '--pool-lease-duration',
          `${String(options.leaseSeconds ?? 15)}s`,
        ]),
  ];
  const proxy = await startProxy(parseProxyOptions(args, {}), options.upstream ?? (await upstreamConfigFor(cp)));
  t.after(() => proxy.stop(0));
  // Its health, as a client trusting what signed its certificate: the control plane's CA, or its own.
  const probe = clientFor(t, serving === undefined ? (proxy.ca ?? '') : readFileSync(cp.caFile, 'utf8'), { kind: 'anonymous' });
  await eventually(
    `the proxy at ${url} to be ready`,
    async () => {
      const res = await request(`${url}/readyz`, { dispatcher: probe.dispatcher });
      await res.body.dump();
      return res.statusCode === 200;
    },
    60_000,
  );
  return { url, proxy, metrics: () => proxy.metrics.registry.metrics() };
}

/** The pool's Lease (kube-cache-proxy-pool-NAME) path in `namespace`. */
export function leasePath(namespace: string, pool: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/kube-cache-proxy-pool-${pool}`;
}

/** Go's metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * The test holds the pool's Lease for `holder`, renewed now, for an hour: no member takes it over,
 * every member follows `holder` (whatever it is: a member's URL, another proxy's, an http URL).
 */
export async function holdLease(admin: UpstreamClient, namespace: string, pool: string, holder: string): Promise<void> {
  const now = microTime(new Date());
  const spec = { holderIdentity: holder, leaseDurationSeconds: 3600, acquireTime: now, renewTime: now };
  const existing = await admin.request({ method: 'GET', path: leasePath(namespace, pool) });
  if (existing.statusCode === 404) {
    await kube(admin, 'POST', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: `kube-cache-proxy-pool-${pool}` },
      spec,
    });
    return;
  }
  await kube(admin, 'PATCH', leasePath(namespace, pool), { spec });
}

/** The Lease's holderIdentity now ('' for none). */
export async function leaseHolder(admin: UpstreamClient, namespace: string, pool: string): Promise<string> {
  const lease = await kube<{ spec?: { holderIdentity?: string } }>(admin, 'GET', leasePath(namespace, pool), undefined, [200, 404]);
  return lease.spec?.holderIdentity ?? '';
}

/** A member's own count of its informers' watches of `resource` open on `upstream` (kube_cache_proxy_pool_watches). */
export async function poolWatches(member: PoolProxy, pool: string, resource: string, upstream: 'leader' | 'apiserver'): Promise<number> {
  return metricSum(await member.metrics(), 'kube_cache_proxy_pool_watches', { pool, resource, upstream });
}

/** Every one of `members` watches `resource` on `upstream` only (one watch there, none on the other). */
export async function watchingOn(
  members: readonly PoolProxy[],
  pool: string,
  resource: string,
  upstream: 'leader' | 'apiserver',
): Promise<boolean> {
  const other = upstream === 'leader' ? 'apiserver' : 'leader';
  const each = await Promise.all(
    members.map(async (m) => (await poolWatches(m, pool, resource, upstream)) === 1 && (await poolWatches(m, pool, resource, other)) === 0),
  );
  return each.every(Boolean);
}

export interface Churn {
  /** Writes answered so far. */
  writes(): number;
  /** Stops writing; resolves with the highest RV written. */
  stop(): Promise<number>;
}

/**
 * Paced writes until stopped (or `t` ends): each step creates configmap w-i and updates w-(i-1)
 * (50 ms apart, a pace, not a wait). A failed write ends them; stop() rejects with it.
 */
export function startChurn(t: TestContext, admin: UpstreamClient, namespace: string): Churn {
  const collection = `/api/v1/namespaces/${namespace}/configmaps`;
  const state = { writing: true };
  let writes = 0;
  let lastRv = 0;
  const loop = (async () => {
    for (let i = 0; state.writing; i++) {
      const created = await kube(admin, 'POST', collection, { metadata: { name: `w-${String(i)}` }, data: { v: '0' } });
      lastRv = Math.max(lastRv, Number(created.metadata.resourceVersion));
      writes++;
      if (i > 0) {
        const updated = await kube(admin, 'PATCH', `${collection}/w-${String(i - 1)}`, { data: { v: '1' } });
        lastRv = Math.max(lastRv, Number(updated.metadata.resourceVersion));
        writes++;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  // Awaited by stop(); until then a failure waits there rather than being unhandled.
  loop.catch(() => undefined);
  t.after(() => {
    state.writing = false;
  });
  return {
    writes: () => writes,
    async stop() {
      state.writing = false;
      await loop;
      return lastRv;
    },
  };
}
