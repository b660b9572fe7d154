/** What the cache registry (cache-registry.ts) is given, and its defaults. */
import type { SharedInformerFactory } from '../informer/factory.ts';
import type { Discovery } from '../upstream/discovery.ts';
import type { Clock } from '../clock/clock.ts';
import type { CachedResourceSpec, ScopedResourceSpec } from './cached-resources.ts';
import type { DelegatorFactory } from './delegator.ts';
import type { Faults } from './faults.ts';
import type { ConsistencyChecks } from './consistency-checker.ts';
import type { StateDir } from './state-dir.ts';

export type CacheRegistryLog = (level: 'debug' | 'info' | 'warn', message: string, fields?: Readonly<Record<string, unknown>>) => void;

export interface CacheRegistryOptions {
  readonly factory: SharedInformerFactory;
  /** Makes the delegator (read decisions, watches, probes) of each cache the registry starts. */
  readonly delegate: DelegatorFactory;
  /** Refreshed at least once before start() (named types are resolved against it); kept current while running. */
  readonly discovery: Discovery;
  /** The `--resources` types; undefined: every cacheable type, cached on its first read. */
  readonly resources?: readonly CachedResourceSpec[] | undefined;
  /**
   * The `--resources` types named in a selector scope (`pods:spec.nodeName=n1`): each a cache
   * started with start(), as a named type's, that answers only the reads it covers. Scopes are
   * only named, never chosen by the registry; given any, the proxy caches named types only.
   */
  readonly scoped?: readonly ScopedResourceSpec[] | undefined;
  /** `--namespace`: namespaced types are cached in this namespace only; undefined: all namespaces. */
  readonly namespace?: string | undefined;
  /** A lazily started cache not read for this long is stopped. Default 10 min. */
  readonly idleTimeoutMs?: number;
  /** The most lazily started caches held at once. Default 64. */
  readonly maxLazyCaches?: number;
  /** How long a forbidden LIST is remembered before it is tried again. Default 5 min. */
  readonly forbiddenRetryMs?: number;
  /** clock allows tests to manipulate time (idleness, forbidden memory, the control loop's backoff). */
  readonly clock?: Clock;
  readonly log?: CacheRegistryLog;
  /**
   * Asked before a lazily started cache is made (memory-budget.ts: false while the cached objects
   * are near their budget): a refused type's reads pass through. Named caches are always made.
   */
  readonly admitsNewCache?: () => boolean;
  /** Snapshots each cache keeps for paging (memory-budget.ts); default watch-cache.ts MAX_SNAPSHOTS. */
  readonly maxSnapshots?: number;
  /** Where the caches' listener failures are reported (faults.ts); default: stderr, once each. */
  readonly faults?: Faults;
  /** Each running cache's consistency checks (consistency-checker.ts); default: none. */
  readonly consistencyChecks?: ConsistencyChecks;
  /** `--state-dir`: caches restored from it when they start, saved to it every `stateSavePeriodMs` and at stop(); default: none. */
  readonly stateDir?: StateDir;
  /** The period of the saves while running (state-dir.ts DEFAULT_STATE_SAVE_PERIOD_MS); 0: only at stop(). */
  readonly stateSavePeriodMs?: number;
}

/** Long enough that a controller's periodic relists (typically every few minutes) keep their cache. */
export const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
/** A bound on memory and upstream watches when clients read many types once (kubectl api-resources sweeps). */
export const DEFAULT_MAX_LAZY_CACHES = 64;
/** Permissions change rarely; one LIST per type and scope every 5 min is what a denial then costs. */
export const DEFAULT_FORBIDDEN_RETRY_MS = 5 * 60_000;
