/**
 * API discovery (client-go discovery/discovery_client.go and aggregated_discovery.go): what the
 * apiserver serves, as a ResourceMap, kept current so that informers can be started and stopped as
 * CRDs and APIServices come and go.
 *
 * Aggregated discovery first: GET /api and GET /apis asking for apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList, two requests for the whole cluster, revalidated with If-None-Match (the
 * apiserver answers 304 while its document is unchanged: apiserver/pkg/endpoints/discovery/
 * aggregated/etag.go). An apiserver that answers the plain APIVersions / APIGroupList instead is
 * read the legacy way: /api, /api/{v}, /apis, /apis/{g}/{v}.
 */
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import { ApiStatusError } from './api-error.ts';
import type { UpstreamClient, UpstreamResponse } from './client.ts';
import type { GroupVersionKind, ResourceInfo, ResourceMap, SubresourceInfo } from './resource-map.ts';
import { emptyResourceMap, isCacheable, newResourceMap, resourceKey } from './resource-map.ts';
import { groupVersionString } from '../kube/group-resource.ts';

/** discovery_client.go AcceptV2 + AcceptV1: aggregated if the server has it, else the legacy documents. */
export const AGGREGATED_DISCOVERY_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

/** How often start() re-reads discovery when nobody invalidates it (kubectl's disk cache keeps 6 h; CRDs need sooner). */
const DEFAULT_PERIOD_MS = 60_000;
/** After a failed refresh, retry sooner than the period: the map may be empty or missing a new CRD. */
const DEFAULT_RETRY_MS = 5_000;

export type DiscoveryLog = (level: 'debug' | 'info' | 'warn', message: string) => void;

/** Called after a refresh that changed the set of resources. A resource whose description changed is in both. */
export type DiscoveryChangeHandler = (added: readonly ResourceInfo[], removed: readonly ResourceInfo[]) => void;

export interface DiscoveryOptions {
  /** Time for start()'s timers. Default: the real clock. */
  readonly clock?: Clock;
  /** start()'s refresh period. Default 60 s. */
  readonly periodMs?: number;
  /** start()'s wait after a failed refresh. Default 5 s. */
  readonly retryMs?: number;
  readonly log?: DiscoveryLog;
}

export interface RefreshResult {
  /** Resources new since the previous map (all of them on the first refresh). */
  readonly added: readonly ResourceInfo[];
  /** Resources gone since the previous map. */
  readonly removed: readonly ResourceInfo[];
  /** Every document was answered 304 Not Modified: nothing was parsed. */
  readonly notModified: boolean;
  /** Aggregated (apidiscovery.k8s.io/v2) or legacy documents. */
  readonly mode: 'aggregated' | 'legacy';
}

export interface Discovery extends ResourceMap {
  /** The current map (empty before the first successful refresh); resolve/all/... read it. */
  current(): ResourceMap;
  /** True once a refresh has succeeded. */
  hasSynced(): boolean;
  /**
   * Fetches discovery and swaps in the new map, calling the change handlers if resources came or
   * went. Calls are serialized; a call made while one is running starts after it (so it sees
   * changes made after the running one's requests), and calls made meanwhile share that one.
   */
  refresh(signal?: AbortSignal): Promise<RefreshResult>;
  /** Refreshes at once, then every period and after each invalidate(), until `signal` aborts; resolves once stopped. */
  start(signal: AbortSignal): Promise<void>;
  /** Asks start()'s loop to refresh now (e.g. a CRD or APIService changed). A no-op when not started. */
  invalidate(): void;
  /** Registers a change handler; returns its unregistration. Handlers run synchronously, in order; a throw is logged. */
  onChange(handler: DiscoveryChangeHandler): () => void;
}

export function newDiscovery(client: UpstreamClient, options: DiscoveryOptions = {}): Discovery {
  return new DiscoveryClient(client, options);
}

export { isCacheable };

// ---- documents, as parsed: one shape for aggregated and legacy ----

interface VersionDoc {
  readonly version: string;
  /** Aggregated freshness "Stale", or a legacy /apis/{g}/{v} that failed: keep what we knew. */
  readonly stale: boolean;
  readonly resources: readonly Omit<ResourceInfo, 'preferredVersion'>[];
}

interface GroupDoc {
  readonly name: string;
  /** In order of preference. */
  readonly versions: readonly VersionDoc[];
  /** Legacy APIGroup.preferredVersion; aggregated: the first non-stale version. */
  readonly preferredVersion?: string | undefined;
}

/** The last answer for /api or /apis: its ETag (aggregated only) and what it said. */
interface RootDoc {
  readonly etag: string | undefined;
  readonly aggregated: boolean;
  readonly groups: readonly GroupDoc[];
}

const ROOTS = ['/api', '/apis'] as const;

class DiscoveryClient implements Discovery {
  readonly #client: UpstreamClient;
  readonly #clock: Clock;
  readonly #periodMs: number;
  readonly #retryMs: number;
  readonly #log: DiscoveryLog;
  readonly #handlers = new Set<DiscoveryChangeHandler>();
  #map: ResourceMap = emptyResourceMap;
  #synced = false;
  readonly #roots = new Map<string, RootDoc>();
  /** The refresh running now, if any. */
  #running: Promise<RefreshResult> | undefined;
  /** The refresh queued behind #running, shared by every caller until it starts. */
  #queued: Promise<RefreshResult> | undefined;
  /** Wakes start()'s loop; set while it waits. */
  #wake: (() => void) | undefined;
  /** invalidate() was called since the loop's last refresh started. */
  #invalidated = false;

  constructor(client: UpstreamClient, options: DiscoveryOptions) {
    this.#client = client;
    this.#clock = options.clock ?? realClock;
    this.#periodMs = options.periodMs ?? DEFAULT_PERIOD_MS;
    this.#retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    this.#log = options.log ?? (() => undefined);
  }

  current(): ResourceMap {
    return this.#map;
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  resolve(group: string, version: string, resource: string): ResourceInfo | undefined {
    return this.#map.resolve(group, version, resource);
  }

  all(): readonly ResourceInfo[] {
    return this.#map.all();
  }

  preferredVersion(group: string): string | undefined {
    return this.#map.preferredVersion(group);
  }

  staleGroupVersions(): readonly string[] {
    return this.#map.staleGroupVersions();
  }

  onChange(handler: DiscoveryChangeHandler): () => void {
    // A wrapper, so that registering the same function twice gives two registrations.
    const registered: DiscoveryChangeHandler = (a, r) => {
      handler(a, r);
    };
    this.#handlers.add(registered);
    return () => {
      this.#handlers.delete(registered);
    };
  }

  refresh(signal?: AbortSignal): Promise<RefreshResult> {
    if (this.#queued !== undefined) return this.#queued;
    const previous = this.#running ?? Promise.resolve();
    this.#queued = (async () => {
      // Always awaited, so the body runs after #queued is set.
      await previous.catch(() => undefined);
      const self = this.#queued;
      this.#queued = undefined;
      this.#running = self;
      try {
        return await this.#refreshNow(signal);
      } finally {
        if (this.#running === self) this.#running = undefined;
      }
    })();
    return this.#queued;
  }

  invalidate(): void {
    this.#invalidated = true;
    this.#wake?.();
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!isAborted(signal)) {
      this.#invalidated = false;
      let waitMs = this.#periodMs;
      try {
        await this.refresh(signal);
      } catch (error) {
        if (isAborted(signal)) break;
        this.#log('warn', `discovery refresh failed, retrying in ${this.#retryMs} ms: ${String(error)}`);
        waitMs = this.#retryMs;
      }
      if (isAborted(signal)) break;
      // Invalidated while the refresh ran: its requests may predate the change.
      if (this.#wasInvalidated()) continue;
      await this.#waitForWake(waitMs, signal);
    }
  }

  /** A call, not a property read: the field changes across the awaits above. */
  #wasInvalidated(): boolean {
    return this.#invalidated;
  }

  /** Resolves after `ms`, on invalidate(), or when `signal` aborts. */
  #waitForWake(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let timer: Timer | undefined = undefined;
      const done = (): void => {
        timer?.cancel();
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      timer = this.#clock.setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }

  async #refreshNow(signal: AbortSignal | undefined): Promise<RefreshResult> {
    const answers = await Promise.all(ROOTS.map((root) => this.#fetchRoot(root, signal)));
    const notModified = answers.every((a) => a.notModified);
    const mode = answers.every((a) => a.doc.aggregated) ? 'aggregated' : 'legacy';
    if (notModified && this.#synced) return { added: [], removed: [], notModified, mode };

    for (const [i, root] of ROOTS.entries()) {
      const answer = answers[i];
      if (answer !== undefined) this.#roots.set(root, answer.doc);
    }
    const groups = [...this.#roots.values()].flatMap((d) => d.groups);
    const next = buildMap(groups, this.#map);
    const { added, removed } = diff(this.#map, next);
    this.#map = next;
    const first = !this.#synced;
    this.#synced = true;
    if (first || added.length > 0 || removed.length > 0) {
      this.#log(
        first ? 'info' : 'debug',
        `discovery (${mode}): ${next.all().length} resources, ${added.length} added, ${removed.length} removed`,
      );
    }
    if (added.length > 0 || removed.length > 0) this.#notify(added, removed);
    return { added, removed, notModified, mode };
  }

  #notify(added: readonly ResourceInfo[], removed: readonly ResourceInfo[]): void {
    for (const handler of [...this.#handlers]) {
      try {
        handler(added, removed);
      } catch (error) {
        this.#log('warn', `discovery change handler failed: ${String(error)}`);
      }
    }
  }

  /** GET /api or /apis: aggregated (revalidated by ETag) or legacy, expanded to its group versions. */
  async #fetchRoot(root: '/api' | '/apis', signal: AbortSignal | undefined): Promise<{ doc: RootDoc; notModified: boolean }> {
    const cached = this.#roots.get(root);
    const headers: Record<string, string> = { accept: AGGREGATED_DISCOVERY_ACCEPT };
    if (cached?.etag !== undefined) headers['if-none-match'] = cached.etag;
    const res = await this.#client.request({ method: 'GET', path: root, headers, ...(signal === undefined ? {} : { signal }) });
    if (res.statusCode === 304 && cached !== undefined) return { doc: cached, notModified: true };
    const body = parseBody(res, root);
    if (isAggregated(body)) {
      const etag = headerValue(res, 'etag');
      return { doc: { etag, aggregated: true, groups: parseAggregated(body) }, notModified: false };
    }
    const groups = root === '/api' ? await this.#legacyCore(body, signal) : await this.#legacyGroups(body, signal);
    return { doc: { etag: undefined, aggregated: false, groups }, notModified: false };
  }

  /** /api's APIVersions, then /api/{v} for each. */
  async #legacyCore(body: unknown, signal: AbortSignal | undefined): Promise<GroupDoc[]> {
    const versions = strings(field(body, 'versions'));
    const docs = await Promise.all(versions.map((v) => this.#legacyVersion('', v, `/api/${v}`, signal)));
    return [{ name: '', versions: docs, preferredVersion: versions[0] }];
  }

  /** /apis's APIGroupList, then /apis/{g}/{v} for each. */
  async #legacyGroups(body: unknown, signal: AbortSignal | undefined): Promise<GroupDoc[]> {
    return Promise.all(
      objects(field(body, 'groups')).map(async (g) => {
        const name = str(field(g, 'name'));
        const versions = objects(field(g, 'versions')).map((v) => str(field(v, 'version')));
        const preferred = str(field(field(g, 'preferredVersion'), 'version'));
        const docs = await Promise.all(versions.map((v) => this.#legacyVersion(name, v, `/apis/${name}/${v}`, signal)));
        return { name, versions: docs, preferredVersion: preferred === '' ? undefined : preferred };
      }),
    );
  }

  /**
   * One APIResourceList. A failure (an aggregated APIService down answers 503) marks the version
   * stale, as discovery_client.go's ErrGroupDiscoveryFailed keeps the other groups.
   */
  async #legacyVersion(group: string, version: string, path: string, signal: AbortSignal | undefined): Promise<VersionDoc> {
    try {
      const res = await this.#client.request({ method: 'GET', path, ...(signal === undefined ? {} : { signal }) });
      return { version, stale: false, resources: parseLegacyResources(group, version, parseBody(res, path)) };
    } catch (error) {
      if (signal?.aborted === true) throw error;
      this.#log('warn', `discovery of ${groupVersionString(group, version)} failed: ${String(error)}`);
      return { version, stale: true, resources: [] };
    }
  }
}

/** A call, not a property read: TypeScript would otherwise keep a narrowing of `signal.aborted` across awaits. */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

// ---- building the map ----

/**
 * The map from every root's groups. A stale group version keeps the resources `previous` had for
 * it (client-go drops it and reports an error; the proxy must not stop informers because an
 * aggregated API blinked).
 */
function buildMap(groups: readonly GroupDoc[], previous: ResourceMap): ResourceMap {
  const resources: ResourceInfo[] = [];
  const preferredVersions = new Map<string, string>();
  const stale: string[] = [];
  for (const group of groups) {
    // aggregated_discovery.go convertAPIGroup: "PreferredVersion is first non-stale Version".
    const preferred =
      group.preferredVersion ?? group.versions.find((v) => !v.stale)?.version ?? previous.preferredVersion(group.name) ?? '';
    if (preferred !== '') preferredVersions.set(group.name, preferred);
    for (const v of group.versions) {
      if (v.stale) {
        stale.push(groupVersionString(group.name, v.version));
        const kept = previous.all().filter((r) => r.group === group.name && r.version === v.version);
        resources.push(...kept.map((r) => ({ ...r, preferredVersion: preferred })));
        continue;
      }
      for (const r of v.resources) resources.push({ ...r, preferredVersion: preferred });
    }
  }
  return newResourceMap({ resources, preferredVersions, staleGroupVersions: stale });
}

/** Added and removed resources, by key; a resource whose description changed (preferredVersion aside) is both. */
function diff(previous: ResourceMap, next: ResourceMap): { added: ResourceInfo[]; removed: ResourceInfo[] } {
  const before = new Map(previous.all().map((r) => [resourceKey(r), r]));
  const after = new Map(next.all().map((r) => [resourceKey(r), r]));
  const added: ResourceInfo[] = [];
  const removed: ResourceInfo[] = [];
  for (const [key, r] of after) {
    const old = before.get(key);
    if (old === undefined) added.push(r);
    else if (identity(old) !== identity(r)) {
      removed.push(old);
      added.push(r);
    }
  }
  for (const [key, r] of before) if (!after.has(key)) removed.push(r);
  return { added, removed };
}

function identity(r: ResourceInfo): string {
  return JSON.stringify({ ...r, preferredVersion: undefined });
}

// ---- parsing (JSON is unknown until a guard says otherwise) ----

function parseBody(res: UpstreamResponse, path: string): unknown {
  if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
  try {
    return JSON.parse(res.body.toString()) as unknown;
  } catch {
    throw new Error(`discovery: GET ${path} answered ${res.body.length} bytes that are not JSON`);
  }
}

function isAggregated(body: unknown): boolean {
  return field(body, 'kind') === 'APIGroupDiscoveryList' && field(body, 'apiVersion') === 'apidiscovery.k8s.io/v2';
}

function headerValue(res: UpstreamResponse, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** apidiscovery/v2 APIGroupDiscoveryList (api/apidiscovery/v2/types.go) to group docs. */
function parseAggregated(body: unknown): GroupDoc[] {
  return objects(field(body, 'items')).map((g) => {
    // metadata.name is "" (or absent) for the core group at /api.
    const name = str(field(field(g, 'metadata'), 'name'));
    const versions = objects(field(g, 'versions')).map((v): VersionDoc => {
      const version = str(field(v, 'version'));
      return {
        version,
        stale: field(v, 'freshness') === 'Stale',
        resources: objects(field(v, 'resources')).map((r) => parseAggregatedResource(name, version, r)),
      };
    });
    return { name, versions };
  });
}

/** aggregated_discovery.go convertAPIResource, keeping subresources on their parent. */
function parseAggregatedResource(group: string, version: string, r: unknown): Omit<ResourceInfo, 'preferredVersion'> {
  const responseKind = gvk(field(r, 'responseKind'), group, version);
  return {
    group,
    version,
    resource: str(field(r, 'resource')),
    kind: responseKind?.kind ?? '',
    responseKind,
    namespaced: field(r, 'scope') === 'Namespaced',
    verbs: strings(field(r, 'verbs')),
    singular: str(field(r, 'singularResource')),
    shortNames: strings(field(r, 'shortNames')),
    categories: strings(field(r, 'categories')),
    subresources: objects(field(r, 'subresources')).map((s): SubresourceInfo => ({
      subresource: str(field(s, 'subresource')),
      responseKind: gvk(field(s, 'responseKind'), group, version),
      verbs: strings(field(s, 'verbs')),
    })),
  };
}

/**
 * metav1.APIResourceList: "pods/log" entries become subresources of "pods".
 */
function parseLegacyResources(group: string, version: string, body: unknown): Omit<ResourceInfo, 'preferredVersion'>[] {
  const parents = new Map<string, Omit<ResourceInfo, 'preferredVersion'> & { subresources: SubresourceInfo[] }>();
  const subs: { parent: string; sub: SubresourceInfo }[] = [];
  for (const r of objects(field(body, 'resources'))) {
    const name = str(field(r, 'name'));
    const kind = str(field(r, 'kind'));
    const responseKind = gvk(r, group, version);
    const slash = name.indexOf('/');
    if (slash >= 0) {
      subs.push({
        parent: name.slice(0, slash),
        sub: { subresource: name.slice(slash + 1), responseKind, verbs: strings(field(r, 'verbs')) },
      });
      continue;
    }
    parents.set(name, {
      group,
      version,
      resource: name,
      kind,
      responseKind,
      namespaced: field(r, 'namespaced') === true,
      verbs: strings(field(r, 'verbs')),
      singular: str(field(r, 'singularName')),
      shortNames: strings(field(r, 'shortNames')),
      categories: strings(field(r, 'categories')),
      subresources: [],
    });
  }
  for (const { parent, sub } of subs) parents.get(parent)?.subresources.push(sub);
  return [...parents.values()];
}

/**
 * A responseKind, or undefined for none. The apiserver leaves group and version empty when they
 * are the containing list's own (seen on aggregated discovery too; meta/v1 types.go APIResource:
 * "Empty implies the group of the containing resource list"), so both empty means group/version.
 */
function gvk(value: unknown, group: string, version: string): GroupVersionKind | undefined {
  const kind = str(field(value, 'kind'));
  // aggregated_discovery.go: a nil or empty responseKind means "no kind".
  if (kind === '') return undefined;
  const g = str(field(value, 'group'));
  const v = str(field(value, 'version'));
  return g === '' && v === '' ? { group, version, kind } : { group: g, version: v, kind };
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function objects(value: unknown): unknown[] {
  return Array.isArray(value) ? value.filter((v) => typeof v === 'object' && v !== null) : [];
}
