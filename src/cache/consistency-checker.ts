/**
 * The consistency checker of one watch cache: kube-apiserver's (storage/cacher/consistency/
 * checker.go, KEP-4988 DetectCacheInconsistency) one level up. Each period, jittered up to half
 * again and counted from the end of the last check (wait.JitterUntil, jitter 0.5, sliding), it
 * compares the cache's objects at its resourceVersion C with the upstream's LIST at exactly C
 * (resourceVersionMatch=Exact, paged: a continue token keeps the RV), both digested as the
 * apiserver digests them: a 64-bit FNV-1 hash of `namespace/name/resourceVersion` of each item,
 * in key order. The cache side is an O(1) snapshot walked page by page beside the upstream's
 * pages, so nothing is copied and the first differing item is named.
 *
 * - Cheap upstream: metadata only, in protobuf (metadata-list.ts reads the three fields of each
 *   item), CHECK_PAGE_SIZE items a page (client-go's pager default), the cache's own scope
 *   (namespace and selectors). The apiserver answers an exact RV from its cache's snapshots
 *   (ListFromCacheSnapshot) or from etcd within its compaction window.
 * - A quiet cache's C may be older than that window (410 Expired): the cache is then proven
 *   current first (a freshness proof moves C to a recent RV when nothing changed) and checked
 *   once more.
 * - Outcomes as the apiserver counts them: `success`; `failure` (the digests differ: a warning
 *   naming the type, the RV, both digests and the first difference, and a relist, which replaces
 *   the cache's state with a consistent LIST; the apiserver instead serves from etcd until a
 *   check passes); `error` (not synced or not watching, the upstream refused, or its list RV is
 *   not C: nothing is known).
 */
import type { Clock, Timer } from '../clock/clock.ts';
import { collectionPath } from '../informer/lister-watcher.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import { objectName } from '../informer/object.ts';
import type { KubeObject } from '../informer/object.ts';
import type { ItemIdentity } from '../protowire/metadata-list.ts';
import { readMetadataList } from '../protowire/metadata-list.ts';
import { ApiStatusError } from '../upstream/api-error.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { WatchCache } from './watch-cache.ts';

/** The apiserver's CheckPeriod: its etcd compaction period. */
export const DEFAULT_CONSISTENCY_CHECK_PERIOD_MS = 5 * 60_000;
/** Items per upstream page: client-go's pager default (the apiserver's checker reads etcd 10,000 at a time; a proxy's answer is held whole). */
export const CHECK_PAGE_SIZE = 500;
/** A page the upstream has not answered in this long fails the check (the apiserver's own LIST timeout). */
export const CHECK_PAGE_TIMEOUT_MS = 60_000;
/** What the apiserver's metadata client asks for. */
export const METADATA_PROTOBUF = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

export type CheckResult = 'success' | 'failure' | 'error';

export interface CheckRecord {
  readonly result: CheckResult;
  /** When it ended (clock ms). */
  readonly at: number;
  /** The RV compared (undefined when the check did not get that far). */
  readonly resourceVersion: string | undefined;
  /** What was found, in words: the digests, or the error. */
  readonly detail: string;
}

/** What every cache's checker shares (the registry's option). */
export interface ConsistencyChecks {
  readonly client: UpstreamClient;
  readonly clock: Clock;
  /** --consistency-check-period; 0: no checks. */
  readonly periodMs: number;
  /** Told of every check (the metric). */
  readonly checked?: (record: CheckRecord, cache: WatchCache) => void;
  readonly log?: (level: 'info' | 'warn', message: string) => void;
  readonly random?: () => number;
  readonly pageSize?: number;
}

export interface ConsistencyCheckerOptions extends ConsistencyChecks {
  readonly cache: WatchCache;
  /** Proves the cache current (a freshness proof; joins one running). */
  readonly prove: () => Promise<unknown>;
  /** Replaces the cache's state with a consistent LIST (its reflector relists). */
  readonly relist: (reason: string) => void;
}

/** Go's hash/fnv New64 (FNV-1, 64-bit), in two 32-bit halves. */
export class Fnv64 {
  #hi = 0xcbf29ce4;
  #lo = 0x84222325;

  write(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    let hi = this.#hi;
    let lo = this.#lo;
    for (const byte of bytes) {
      // h *= 0x100000001b3 (2^40 + 0x1b3), modulo 2^64.
      const low = lo * 0x1b3;
      const carry = Math.floor(low / 0x1_0000_0000);
      hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) % 0x1_0000_0000;
      lo = ((low % 0x1_0000_0000) ^ byte) >>> 0;
    }
    this.#hi = hi;
    this.#lo = lo;
  }

  /** As Go's fmt.Sprintf("%x", Sum64()). */
  hex(): string {
    return this.#hi === 0 ? this.#lo.toString(16) : this.#hi.toString(16) + this.#lo.toString(16).padStart(8, '0');
  }
}

function addItem(hash: Fnv64, item: ItemIdentity): void {
  hash.write(`${item.namespace}/${item.name}/${item.resourceVersion}`);
}

function identity(obj: KubeObject): ItemIdentity {
  return { namespace: obj.namespace, name: objectName(obj), resourceVersion: obj.resourceVersion };
}

function same(a: ItemIdentity, b: ItemIdentity): boolean {
  return a.namespace === b.namespace && a.name === b.name && a.resourceVersion === b.resourceVersion;
}

function describeItem(item: ItemIdentity | undefined): string {
  return item === undefined ? 'none' : `${item.namespace === '' ? '' : `${item.namespace}/`}${item.name} at ${item.resourceVersion}`;
}

export class ConsistencyChecker {
  readonly #options: ConsistencyCheckerOptions;
  #timer: Timer | undefined;
  #stopped = false;
  /** Ends the check running (stop()). */
  readonly #abort = new AbortController();
  #running: Promise<CheckRecord> | undefined;
  #last: CheckRecord | undefined;

  constructor(options: ConsistencyCheckerOptions) {
    this.#options = options;
  }

  /** Schedules the checks (the first one a jittered period from now); a period of 0 checks never. */
  start(): void {
    if (this.#options.periodMs > 0) this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#abort.abort();
  }

  /** The last check's record. */
  last(): CheckRecord | undefined {
    return this.#last;
  }

  /** Runs a check now (or joins the one running). */
  check(): Promise<CheckRecord> {
    this.#running ??= this.#check().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    const { periodMs, clock } = this.#options;
    const delay = periodMs * (1 + 0.5 * (this.#options.random ?? Math.random)());
    this.#timer = clock.setTimeout(() => {
      void this.check().finally(() => {
        this.#schedule();
      });
    }, delay);
    this.#timer.unref?.();
  }

  async #check(): Promise<CheckRecord> {
    let outcome = await this.#compare();
    if (outcome.expired) {
      // The cache's RV is older than the upstream keeps: prove it current, then once more.
      await this.#options.prove().catch(() => undefined);
      outcome = await this.#compare();
    }
    const record = { ...outcome.record, at: this.#options.clock.now() };
    if (this.#stopped) return record; // the cache is closing: nothing to repair or count
    this.#last = record;
    if (record.result === 'failure') {
      this.#options.log?.(
        'warn',
        `${this.#scope()}: the cache differs from the apiserver at resourceVersion ${record.resourceVersion ?? ''}: ${record.detail}; relisting`,
      );
      this.#options.relist('inconsistent');
    } else if (record.result === 'error') {
      this.#options.log?.('info', `${this.#scope()}: consistency check not made: ${record.detail}`);
    }
    this.#options.checked?.(record, this.#options.cache);
    return record;
  }

  #scope(): string {
    const { spec, namespace } = this.#options.cache;
    const type = qualifiedResource(spec.group, spec.resource);
    return namespace === undefined ? type : `${type} in ${namespace}`;
  }

  /** One comparison at the cache's current RV. */
  async #compare(): Promise<{ readonly record: Omit<CheckRecord, 'at'>; readonly expired: boolean }> {
    const { cache, client } = this.#options;
    const error = (detail: string, resourceVersion?: string, expired = false): { record: Omit<CheckRecord, 'at'>; expired: boolean } => ({
      record: { result: 'error', resourceVersion, detail },
      expired,
    });
    if (!cache.hasSynced() || !cache.watching()) return error('the cache is not ready');
    // One synchronous turn: the view is the state at rv.
    const rv = cache.resourceVersion();
    if (rv === undefined) return error('the cache is not ready');
    const view = cache.current();
    const at = String(rv);
    const cached = view.values();
    const cacheHash = new Fnv64();
    const upstreamHash = new Fnv64();
    let index = 0;
    let firstDiff: string | undefined;
    const path = collectionPath({ ...cache.spec, namespace: cache.namespace });
    const limit = String(this.#options.pageSize ?? CHECK_PAGE_SIZE);
    let continueToken = '';
    do {
      const query = new URLSearchParams();
      if (cache.selectors?.labelSelector) query.set('labelSelector', cache.selectors.labelSelector);
      if (cache.selectors?.fieldSelector) query.set('fieldSelector', cache.selectors.fieldSelector);
      if (continueToken === '') {
        query.set('resourceVersion', at);
        query.set('resourceVersionMatch', 'Exact');
      } else query.set('continue', continueToken);
      query.set('limit', limit);
      let page;
      try {
        const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(CHECK_PAGE_TIMEOUT_MS)]);
        const res = await client.request({
          method: 'GET',
          path: `${path}?${query.toString()}`,
          headers: { accept: METADATA_PROTOBUF },
          signal,
        });
        if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
        page = readMetadataList(res.body);
      } catch (e) {
        const expired = e instanceof ApiStatusError && e.code === 410;
        return error(`the exact LIST at ${at} failed: ${e instanceof Error ? e.message : String(e)}`, at, expired);
      }
      if (continueToken === '' && page.resourceVersion !== at)
        return error(`the upstream listed resourceVersion ${page.resourceVersion}, not ${at}`, at);
      for (const item of page.items) {
        addItem(upstreamHash, item);
        const next = cached.next();
        const mine = next.done === true ? undefined : identity(next.value);
        if (mine !== undefined) addItem(cacheHash, mine);
        if (firstDiff === undefined && (mine === undefined || !same(mine, item)))
          firstDiff = `item ${String(index)}: the apiserver's ${describeItem(item)}, the cache's ${describeItem(mine)}`;
        index++;
      }
      continueToken = page.continue;
    } while (continueToken !== '');
    for (const rest of cached) {
      addItem(cacheHash, identity(rest));
      firstDiff ??= `item ${String(index)}: the apiserver's none, the cache's ${describeItem(identity(rest))}`;
    }
    const digests = `cache digest ${cacheHash.hex()}, apiserver digest ${upstreamHash.hex()}, ${String(index)} items listed`;
    if (cacheHash.hex() === upstreamHash.hex())
      return { record: { result: 'success', resourceVersion: at, detail: digests }, expired: false };
    return {
      record: { result: 'failure', resourceVersion: at, detail: `${digests}; first difference: ${firstDiff ?? 'none'}` },
      expired: false,
    };
  }
}
