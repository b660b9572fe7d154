/**
 * The proxy's own metrics (prom-client), served at the proxy's /metrics beside the informers'
 * and workqueues' metrics registered on the same registry. They answer the questions an
 * operator asks of a cache: how much of the read load it took off the apiserver
 * (served_from="cache" against "apiserver"), and what the consistency probes cost.
 */
import { readdir } from 'node:fs/promises';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Compressions } from '../serving/gzipped-response.ts';
import type { CacherMetrics } from '../../cache/cacher.ts';
import type { MemoryBudget } from '../../memory/memory-budget.ts';
import type { CollectionValve } from '../../memory/collection-valve.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import type { DelegatorMetrics } from '../../cache/delegator.ts';
import { noopDelegatorMetrics } from '../../cache/delegator.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { FaultSite } from '../../cache/faults.ts';
import type { CheckResult } from '../../cache/consistency-checker.ts';
import type { StateLoadResult } from '../../cache/state-dir.ts';
import type { Fairness } from '../pass-through/shared-gate.ts';
import { rejectedByReason } from '../pass-through/shared-gate.ts';
import type { HandshakePacing } from './tls-handshakes.ts';
import type { ClientConnections } from './http2-sessions.ts';
import type { IdleConnections } from './idle-connections.ts';
import { EXCESS_IDLE_MS, MAX_IDLE_CONNECTIONS_PER_FLOW } from './idle-connections.ts';

export type ServedFrom = 'cache' | 'apiserver';

export interface ProxyMetrics {
  readonly registry: Registry;
  /** One request answered; `resource` is '' for non-resource paths. */
  served(verb: string, resource: string, from: ServedFrom): void;
  /** One answer from the cache, by the Content-Type it was written in (a set the proxy itself writes: JSON, protobuf, their watch forms). */
  answeredIn(resource: string, contentType: string): void;
  /** A read passed through to the apiserver, and why (cache/pass-reason.ts); `resource` is '' for non-resource paths. */
  passedThrough(resource: string, reason: PassReason): void;
  /** A listener's or observer's failure (cache/faults.ts). */
  fault(site: FaultSite, resource: string): void;
  /** The read-decision and watch metrics of one resource's caches. */
  delegator(resource: string): DelegatorMetrics;
  /** One consistency check of a cache of `resource` (cache/consistency-checker.ts), by its result. */
  consistencyCheck(resource: string, result: CheckResult): void;
  /** A cache's state written to --state-dir (cache/state-dir.ts): its bytes and time, or a failed write. */
  stateSaved(outcome: { readonly bytes: number; readonly seconds: number } | 'failed'): void;
  /** A cache started with a saved state: restored from it, or refused it. */
  stateLoaded(result: StateLoadResult): void;
  /**
   * Serves the per-flow limits' seats and flows, the TokenReviews in flight, every refusal by
   * reason and, in shared mode, the reviews sent (read at each scrape).
   */
  fairness(fairness: Fairness, reviews?: () => { readonly tokenReviews: number; readonly subjectAccessReviews: number }): void;
  /** Serves the new TLS connections waiting for their handshake and those closed for too many waiting (tls-handshakes.ts). */
  handshakes(pacing: HandshakePacing): void;
  /** Serves the idle keep-alive connections and those let go past their address's bound (idle-connections.ts). */
  idleConnections(idle: IdleConnections): void;
  /** Serves the clients' connections by protocol, open and accepted (http2-sessions.ts). */
  clientConnections(connections: ClientConnections): void;
  /** Serves a chained proxy's fallback: whether its requests go to the apiserver now, and how often they did (fallback-client.ts). */
  upstreamFallback(state: () => { readonly target: 'upstream' | 'apiserver'; readonly fallbacks: number }): void;
  /** Serves the memory budget's sizes and use, the piece pool's, and the collection valve's collections (read at each scrape). */
  memory(budget: MemoryBudget, valve?: CollectionValve, pool?: PiecePool): void;
  /** Which types get a `resource` label of their own (KnownTypes); until told, every type is counted as `other`. */
  knowTypes(known: KnownTypes): void;
  /** What gzipping cached answers has cost and saved (serving/gzipped-response.ts), read at each scrape. */
  compressions(read: () => Readonly<Compressions>): void;
}

/**
 * The types the proxy knows (discovery's, which its caches are made from): for a request's
 * `resource[.group]`, the proxy's own copy of that name, or undefined for a name no type has.
 * Only these become `resource` label values: a path is the client's to invent, and a junk type
 * (or a label value that is a slice of a 1 MiB path, keeping the whole path alive) would take one
 * of the MAX_RESOURCE_LABELS slots for good.
 */
export type KnownTypes = (typeName: string) => string | undefined;

/** The apiserver's verbs (RequestInfo) and the lower-case HTTP methods of non-resource requests. */
const KNOWN_VERBS = new Set([
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
  'proxy',
  'head',
  'options',
  'post',
  'put',
  'connect',
  'trace',
]);
/**
 * Distinct `resource` labels of the request counters; later types are counted as "other". A
 * cluster's built-in types are about 60; the rest is room for its custom resources.
 */
const MAX_RESOURCE_LABELS = 256;

/**
 * Default series whose collection walks every open handle on the event loop, as many as the
 * proxy has connections: at 10,000 watches a scrape blocked the loop for 50-70 ms, delaying every
 * watcher's events that long at each scrape. The handle and resource counts go (the watcher and
 * request metrics count what matters); the open descriptors are counted off the event loop.
 */
const PER_HANDLE_SERIES = [
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
];
const OPEN_FDS_DIR = '/proc/self/fd';

function scrapeInConstantTime(registry: Registry): void {
  for (const name of PER_HANDLE_SERIES) registry.removeSingleMetric(name);
  // prom-client reads /proc/self/fd with readdirSync: 14-38 ms at 18,000 descriptors.
  if (registry.getSingleMetric('process_open_fds') === undefined) return; // not Linux
  registry.removeSingleMetric('process_open_fds');
  new Gauge({
    name: 'process_open_fds',
    help: 'Number of open file descriptors.',
    registers: [registry],
    async collect() {
      try {
        this.set((await readdir(OPEN_FDS_DIR)).length);
      } catch {
        // no /proc: the series keeps its last value
      }
    },
  });
}

export function newProxyMetrics(registry: Registry = new Registry()): ProxyMetrics {
  // process_* and nodejs_*: RSS, CPU, descriptors, heap spaces, GC, event-loop lag, as every Node
  // service serves them, with prom-client's defaults (its 10 ms lag sampling included: Node's
  // histogram counts the period in each sample, so another period would shift every figure).
  collectDefaultMetrics({ register: registry });
  scrapeInConstantTime(registry);
  const resources = new Set<string>();
  const requests = new Counter({
    name: 'kube_cache_proxy_requests_total',
    help: 'Requests answered by the proxy, by verb, resource and whether the cache or the apiserver answered.',
    labelNames: ['verb', 'resource', 'served_from'] as const,
    registers: [registry],
  });
  const answers = new Counter({
    name: 'kube_cache_proxy_cache_answers_total',
    help: 'Answers from the cache by resource and the Content-Type they were written in (JSON, protobuf, protobuf;stream=watch).',
    labelNames: ['resource', 'content_type'] as const,
    registers: [registry],
  });
  const probes = new Counter({
    name: 'kube_cache_proxy_consistency_probes_total',
    help: 'Consistency probes (an RV-unset LIST of one name that matches nothing) sent to the apiserver for RV-unset reads and freshness proofs, by resource.',
    labelNames: ['resource'] as const,
    registers: [registry],
  });
  const checks = new Counter({
    name: 'kube_cache_proxy_consistency_checks_total',
    help: "Consistency checks of the caches against an exact-RV LIST from the apiserver (the apiserver's storage_consistency_checks_total), by resource and result: success, failure (the cache differed and was relisted) or error (no comparison made).",
    labelNames: ['resource', 'result'] as const,
    registers: [registry],
  });
  const stateSaves = new Counter({
    name: 'kube_cache_proxy_state_saves_total',
    help: "Caches' states written to --state-dir, by result: saved or failed.",
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const stateSavedBytes = new Counter({
    name: 'kube_cache_proxy_state_saved_bytes_total',
    help: 'Bytes of the states written to --state-dir.',
    registers: [registry],
  });
  const stateSaveSeconds = new Counter({
    name: 'kube_cache_proxy_state_save_seconds_total',
    help: 'Time spent writing states to --state-dir (their writes are paced by the disk, a 4 MiB piece per turn of the event loop).',
    registers: [registry],
  });
  const stateLoads = new Counter({
    name: 'kube_cache_proxy_state_loads_total',
    help: 'Caches started with a state of their own in --state-dir, by result: restored, or refused (another cluster, proxy version or scope, a checksum that fails, older than 5 minutes).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const proofs = new Counter({
    name: 'kube_cache_proxy_freshness_proofs_total',
    help: 'Freshness proofs of quiet caches (a consistency probe, then at most a 3 s watch from the cache RV), by resource and result (proven, or why not).',
    labelNames: ['resource', 'result'] as const,
    registers: [registry],
  });
  const staleness = new Histogram({
    name: 'kube_cache_proxy_read_staleness_seconds',
    help: 'RV-unset reads answered from the cache: seconds since the cache last proved progress (an event, a bookmark, or a freshness proof as of when it asked), by resource.',
    labelNames: ['resource'] as const,
    // From a watch delivery (milliseconds) to the default bound (75 s: one bookmark period plus margin).
    buckets: [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 75, 120],
    registers: [registry],
  });
  const passedThrough = new Counter({
    name: 'kube_cache_proxy_consistency_pass_through_total',
    help: 'RV-unset reads the cache could not answer within its consistency mode, passed to the apiserver, by resource and reason.',
    labelNames: ['resource', 'reason'] as const,
    registers: [registry],
  });
  const passReasons = new Counter({
    name: 'kube_cache_proxy_pass_through_total',
    help: 'Reads (GET, LIST, WATCH, and any other request that is no write) passed to the apiserver, by resource and reason (the catalogue of src/cache/pass-reason.ts).',
    labelNames: ['resource', 'reason'] as const,
    registers: [registry],
  });
  const faults = new Counter({
    name: 'kube_cache_proxy_faults_total',
    help: 'Failures of a watch cache listener, a watcher or the read-your-writes observer (each a bug; the first of each site and resource is logged), by site and resource.',
    labelNames: ['site', 'resource'] as const,
    registers: [registry],
  });
  let known: KnownTypes = () => undefined;
  /** A bounded `resource` label: '' (no type), a known type's name, at most MAX_RESOURCE_LABELS of them, or `other`. */
  const resourceLabel = (resource: string): string => {
    if (resource === '') return '';
    const name = known(resource);
    if (name === undefined) return 'other';
    if (!resources.has(name)) {
      if (resources.size >= MAX_RESOURCE_LABELS) return 'other';
      resources.add(name);
    }
    return name;
  };
  const labelNames = ['resource'] as const;
  const watchers = new Gauge({
    name: 'kube_cache_proxy_watchers',
    help: 'Client watches served from the cache, by resource.',
    labelNames,
    registers: [registry],
  });
  const events = new Counter({
    name: 'kube_cache_proxy_watch_cache_events_total',
    help: 'Changes received by the watch cache (each serialized once, whatever the number of watchers), by resource.',
    labelNames,
    registers: [registry],
  });
  const framesSent = new Counter({
    name: 'kube_cache_proxy_watch_events_sent_total',
    help: 'Watch events written to clients, by resource.',
    labelNames,
    registers: [registry],
  });
  const bytesSent = new Counter({
    name: 'kube_cache_proxy_watch_sent_bytes_total',
    help: 'Bytes of watch events written to clients, by resource.',
    labelNames,
    registers: [registry],
  });
  const closedSlow = new Counter({
    name: 'kube_cache_proxy_watchers_closed_slow_total',
    help: 'Client watches closed because their connection stayed backed up past the per-watcher buffer, by resource.',
    labelNames,
    registers: [registry],
  });
  const expired = new Counter({
    name: 'kube_cache_proxy_watches_expired_total',
    help: 'Client watches answered 410 (too old resource version) at their start, as the apiserver answers a watch from before its window, by resource. Each is a relist to follow: after a restart, every client that watched re-lists from the new cache.',
    labelNames,
    registers: [registry],
  });
  const capacity = new Gauge({
    name: 'kube_cache_proxy_watch_cache_capacity',
    help: 'Capacity of the event window, by resource.',
    labelNames,
    registers: [registry],
  });
  const size = new Gauge({
    name: 'kube_cache_proxy_watch_cache_size',
    help: 'Events held in the event window, by resource.',
    labelNames,
    registers: [registry],
  });
  const oldest = new Gauge({
    name: 'kube_cache_proxy_watch_cache_oldest_resource_version',
    help: 'The resourceVersion of the oldest event in the window (a watch from an older one gets 410), by resource.',
    labelNames,
    registers: [registry],
  });
  const filters = new Gauge({
    name: 'kube_cache_proxy_watch_filters',
    help: 'Distinct selections (namespace, label and field selectors) the watches of a resource hold, each matched once per event.',
    labelNames,
    registers: [registry],
  });
  const filterBytes = new Gauge({
    name: 'kube_cache_proxy_watch_filter_bytes',
    help: 'What the distinct selections of the watches of a resource hold, estimated (each at most a few KiB: selectors are bounded, selector/selector-bounds.ts).',
    labelNames,
    registers: [registry],
  });
  const cacher = (resource: string): CacherMetrics => {
    const l = { resource };
    return {
      // The cachers report each start (+1) and end (-1): the gauge adds them up.
      watchers: (delta) => {
        watchers.inc(l, delta);
      },
      events: (count) => {
        events.inc(l, count);
      },
      sent: (bytes) => {
        framesSent.inc(l);
        bytesSent.inc(l, bytes);
      },
      closedSlow: () => {
        closedSlow.inc(l);
      },
      expired: () => {
        expired.inc(l);
      },
      window: (cap, held, oldestRv) => {
        capacity.set(l, cap);
        size.set(l, held);
        if (oldestRv !== undefined) oldest.set(l, Number(oldestRv));
      },
      filters: (delta, bytes) => {
        filters.inc(l, delta);
        filterBytes.inc(l, bytes);
      },
    };
  };
  return {
    registry,
    handshakes: (pacing) => {
      handshakeMetrics(registry, pacing);
    },
    idleConnections: (idle) => {
      idleConnectionMetrics(registry, idle);
    },
    clientConnections: (connections) => {
      clientConnectionMetrics(registry, connections);
    },
    upstreamFallback: (state) => {
      new Gauge({
        name: 'kube_cache_proxy_upstream_fallback',
        help: 'A chained proxy (--server): 1 while its upstream proxy cannot be reached and its requests go to the apiserver, 0 while they go to the upstream proxy.',
        registers: [registry],
        collect() {
          this.set(state().target === 'apiserver' ? 1 : 0);
        },
      });
      let counted = 0;
      new Counter({
        name: 'kube_cache_proxy_upstream_fallbacks_total',
        help: 'A chained proxy (--server): times its upstream proxy could not be reached and it turned to the apiserver.',
        registers: [registry],
        collect() {
          const now = state().fallbacks;
          this.inc(now - counted);
          counted = now;
        },
      });
    },
    fairness: (fairness, reviews) => {
      fairnessMetrics(registry, fairness, reviews);
    },
    memory: (budget, valve, pool) => {
      memoryMetrics(registry, budget, valve, pool);
    },
    knowTypes(types) {
      known = types;
    },
    compressions: (read) => {
      compressionMetrics(registry, read);
    },
    consistencyCheck(resource, result) {
      checks.inc({ resource, result });
    },
    stateSaved(outcome) {
      if (outcome === 'failed') {
        stateSaves.inc({ result: 'failed' });
        return;
      }
      stateSaves.inc({ result: 'saved' });
      stateSavedBytes.inc(outcome.bytes);
      stateSaveSeconds.inc(outcome.seconds);
    },
    stateLoaded(result) {
      stateLoads.inc({ result });
    },
    delegator(resource) {
      return {
        probe: () => {
          probes.inc({ resource });
        },
        staleness: (seconds) => {
          staleness.observe({ resource }, seconds);
        },
        passedThrough: (reason) => {
          passedThrough.inc({ resource, reason });
        },
        proof: (result) => {
          proofs.inc({ resource, result });
        },
        cacher: cacher(resource),
      };
    },
    answeredIn(resource, contentType) {
      answers.inc({ resource: resourceLabel(resource), content_type: contentType });
    },
    served(verb, resource, from) {
      // Labels come from request paths and methods, the client's to choose: only names a type or a
      // verb can have become label values, and a bounded set of them, so invented ones cannot grow it.
      if (!KNOWN_VERBS.has(verb)) verb = 'other';
      requests.inc({ verb, resource: resourceLabel(resource), served_from: from });
    },
    passedThrough(resource, reason) {
      passReasons.inc({ resource: resourceLabel(resource), reason });
    },
    fault(site, resource) {
      faults.inc({ site, resource: resourceLabel(resource) });
    },
  };
}

/** The memory budget's gauges and counters (memory-budget.ts), each read when scraped. */
function memoryMetrics(registry: Registry, budget: MemoryBudget, valve: CollectionValve | undefined, pool: PiecePool | undefined): void {
  const { sizes } = budget;
  const source = budget.limitSource;
  new Gauge({
    name: 'kube_cache_proxy_memory_limit_bytes',
    help: 'The memory limit the budget follows (--memory-limit, or the cgroup: memory.max, memory.limit_in_bytes), by where it was read; absent when none is known.',
    labelNames: ['source'] as const,
    registers: [registry],
    collect() {
      if (sizes.limitBytes !== undefined && source !== undefined) this.set({ source }, sizes.limitBytes);
    },
  });
  const uses = {
    bodies: { budget: sizes.bodiesBytes, used: () => budget.bodies.used() },
    piece_pool: { budget: sizes.piecePoolBytes, used: () => pool?.bytes() ?? 0 },
    unsent_watch: { budget: sizes.unsentWatchBytes, used: () => budget.unsentWatchBytes() },
    objects: { budget: sizes.objectsBytes, used: () => budget.measureObjects() },
    decision_caches: { budget: sizes.decisionCachesBytes, used: () => budget.decisionCachesBytes() },
  };
  new Gauge({
    name: 'kube_cache_proxy_memory_budget_bytes',
    help: 'What the proxy may hold, by use: response bodies made from the cache, pooled LIST pieces, unsent watch bytes, cached objects (estimated), kept review answers (shared mode); absent where unbounded (no limit known).',
    labelNames: ['use'] as const,
    registers: [registry],
    collect() {
      for (const [use, { budget: bytes }] of Object.entries(uses)) if (Number.isFinite(bytes)) this.set({ use }, bytes);
    },
  });
  new Gauge({
    name: 'kube_cache_proxy_memory_used_bytes',
    help: 'What the proxy holds, by use (as kube_cache_proxy_memory_budget_bytes; objects: an estimate from their JSON bytes).',
    labelNames: ['use'] as const,
    registers: [registry],
    collect() {
      for (const [use, { used }] of Object.entries(uses)) this.set({ use }, Math.round(used()));
    },
  });
  new Gauge({
    name: 'kube_cache_proxy_memory_pressure',
    help: '1 while the cached objects are near their budget: new caches are refused and their reads passed through.',
    registers: [registry],
    collect() {
      this.set(budget.underPressure() ? 1 : 0);
    },
  });
  let collected = 0;
  new Counter({
    name: 'kube_cache_proxy_memory_collections_total',
    help: 'Full garbage collections the proxy made because its anonymous memory neared the limit (collection-valve.ts).',
    registers: [registry],
    collect() {
      const now = valve?.collections() ?? 0;
      this.inc(now - collected);
      collected = now;
    },
  });
  const refused = { cache: 0, body: 0 };
  new Counter({
    name: 'kube_cache_proxy_memory_refused_total',
    help: 'What the memory budget refused: a new cache (cache), or room for a response body after waiting (body); the reads went to the apiserver.',
    labelNames: ['what'] as const,
    registers: [registry],
    collect() {
      const now = { cache: budget.refusedCaches(), body: budget.passedThrough() };
      this.inc({ what: 'cache' }, now.cache - refused.cache);
      this.inc({ what: 'body' }, now.body - refused.body);
      Object.assign(refused, now);
    },
  });
}

/**
 * The limits at the door (shared-gate.ts): refusals by reason, as APF counts its own
 * (apiserver_flowcontrol_rejected_requests_total{reason}), and what is held now.
 */
function fairnessMetrics(
  registry: Registry,
  fairness: Fairness,
  reviews: (() => { readonly tokenReviews: number; readonly subjectAccessReviews: number }) | undefined,
): void {
  const { flows, tokenReviews, turns } = fairness;
  const counted: Record<string, number> = {};
  new Counter({
    name: 'kube_cache_proxy_rejected_requests_total',
    help: "Requests answered with the apiserver's 429 (Retry-After) by the per-flow limits (requests-in-flight, watches, reviews-in-flight) and the limits on TokenReviews of unknown tokens (token-reviews-per-address, token-reviews, token-reviews-in-flight), on large request heads per address (large-request-heads) on anonymous requests the apiserver refuses per address (anonymous-refusals-per-address) and on an identified flow's refused requests (refusals-per-flow), by reason.",
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      const now = rejectedByReason(fairness);
      for (const [reason, count] of Object.entries(now)) {
        this.inc({ reason }, count - (counted[reason] ?? 0));
        counted[reason] = count;
      }
    },
  });
  new Gauge({
    name: 'kube_cache_proxy_requests_waiting_for_turn',
    help: "Requests waiting for a later turn of the event loop because their flow started its share of this one (shared mode's fair dispatch between flows).",
    registers: [registry],
    collect() {
      this.set(turns?.waiting() ?? 0);
    },
  });
  new Gauge({
    name: 'kube_cache_proxy_flows',
    help: 'Flows holding a seat now (shared mode: a user at an address, or an address; sidecar mode: a connection).',
    registers: [registry],
    collect() {
      this.set(flows.flows());
    },
  });
  new Gauge({
    name: 'kube_cache_proxy_flow_seats',
    help: 'Seats held now over every flow, by kind: requests in flight, open watches, SubjectAccessReviews waited on.',
    labelNames: ['kind'] as const,
    registers: [registry],
    collect() {
      for (const [kind, count] of Object.entries(flows.held())) this.set({ kind }, count);
    },
  });
  if (reviews !== undefined) {
    const sent = { token: 0, subject_access: 0 };
    new Counter({
      name: 'kube_cache_proxy_reviews_total',
      help: "Reviews the proxy sent to the apiserver with its own identity, by kind: TokenReview (token), SubjectAccessReview (subject_access); each is spent from the proxy's API Priority and Fairness share.",
      labelNames: ['kind'] as const,
      registers: [registry],
      collect() {
        const now = reviews();
        this.inc({ kind: 'token' }, now.tokenReviews - sent.token);
        this.inc({ kind: 'subject_access' }, now.subjectAccessReviews - sent.subject_access);
        sent.token = now.tokenReviews;
        sent.subject_access = now.subjectAccessReviews;
      },
    });
  }
  if (tokenReviews !== undefined) {
    new Gauge({
      name: 'kube_cache_proxy_token_reviews_in_flight',
      help: 'TokenReviews of unknown tokens in flight now (bounded by --max-token-reviews-inflight).',
      registers: [registry],
      collect() {
        this.set(tokenReviews.inflight());
      },
    });
  }
}

function handshakeMetrics(registry: Registry, pacing: HandshakePacing): void {
  new Gauge({
    name: 'kube_cache_proxy_tls_handshakes_waiting',
    help: 'New TLS connections waiting for their handshake (handed to TLS at --tls-handshakes-per-second, 200 by default).',
    registers: [registry],
    collect() {
      this.set(pacing.waiting());
    },
  });
  let counted = 0;
  new Counter({
    name: 'kube_cache_proxy_refused_connections_total',
    help: 'New TLS connections closed unread because their source address had 4,096 waiting for their handshake.',
    registers: [registry],
    collect() {
      const now = pacing.refused();
      this.inc(now - counted);
      counted = now;
    },
  });
}

function clientConnectionMetrics(registry: Registry, connections: ClientConnections): void {
  new Gauge({
    name: 'kube_cache_proxy_client_connections',
    help: "Clients' connections open now, by the protocol they speak (h2 or http/1.1, as ALPN chose; a plain listener's are all http/1.1).",
    labelNames: ['protocol'],
    registers: [registry],
    collect() {
      for (const [protocol, count] of Object.entries(connections.open())) this.set({ protocol }, count);
    },
  });
  const counted: Record<string, number> = {};
  new Counter({
    name: 'kube_cache_proxy_client_connections_total',
    help: "Clients' connections accepted since start, by the protocol they speak.",
    labelNames: ['protocol'],
    registers: [registry],
    collect() {
      for (const [protocol, count] of Object.entries(connections.accepted())) {
        this.inc({ protocol }, count - (counted[protocol] ?? 0));
        counted[protocol] = count;
      }
    },
  });
}

function idleConnectionMetrics(registry: Registry, idle: IdleConnections): void {
  new Gauge({
    name: 'kube_cache_proxy_idle_connections',
    help: 'Keep-alive connections of clients idle between requests now.',
    registers: [registry],
    collect() {
      this.set(idle.idle());
    },
  });
  let counted = 0;
  new Counter({
    name: 'kube_cache_proxy_idle_connections_shortened_total',
    help: `Idle keep-alive connections kept ${String(EXCESS_IDLE_MS / 1000)} s rather than the keep-alive timeout, their flow (a user at an address) having ${String(MAX_IDLE_CONNECTIONS_PER_FLOW)} idle already (shared mode).`,
    registers: [registry],
    collect() {
      const now = idle.shortened();
      this.inc(now - counted);
      counted = now;
    },
  });
}

/** Counters that follow a total read at each scrape. */
function followingCounter(registry: Registry, name: string, help: string, total: () => number): void {
  let counted = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = total();
      this.inc(now - counted);
      counted = now;
    },
  });
}

function compressionMetrics(registry: Registry, read: () => Readonly<Compressions>): void {
  followingCounter(
    registry,
    'kube_cache_proxy_gzip_answers_total',
    'Answers from the cache sent gzipped (Accept-Encoding: gzip, over 128 KiB, as the apiserver).',
    () => read().answers,
  );
  followingCounter(
    registry,
    'kube_cache_proxy_gzip_bodies_total',
    'Bodies the proxy compressed: a shared LIST body once for all its gzip readers.',
    () => read().bodies,
  );
  followingCounter(
    registry,
    'kube_cache_proxy_gzip_shared_bodies_total',
    'Of kube_cache_proxy_gzip_bodies_total, whole LISTs shared by their readers.',
    () => read().sharedBodies,
  );
  followingCounter(registry, 'kube_cache_proxy_gzip_input_bytes_total', 'Bytes the proxy compressed.', () => read().inputBytes);
  followingCounter(registry, 'kube_cache_proxy_gzip_output_bytes_total', 'What the compressed bytes became.', () => read().outputBytes);
  followingCounter(
    registry,
    'kube_cache_proxy_gzip_seconds_total',
    'Wall time from the first piece into the compressor to the last piece out, summed (the work runs on the threadpool).',
    () => read().seconds,
  );
}

/** No metrics (tests and embedders that do not scrape). */
export const noopProxyMetrics: Omit<ProxyMetrics, 'registry'> = {
  served: () => undefined,
  answeredIn: () => undefined,
  passedThrough: () => undefined,
  fault: () => undefined,
  fairness: () => undefined,
  handshakes: () => undefined,
  idleConnections: () => undefined,
  clientConnections: () => undefined,
  upstreamFallback: () => undefined,
  memory: () => undefined,
  knowTypes: () => undefined,
  compressions: () => undefined,
  delegator: () => noopDelegatorMetrics,
  consistencyCheck: () => undefined,
  stateSaved: () => undefined,
  stateLoaded: () => undefined,
};
