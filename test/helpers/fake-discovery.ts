/**
 * A fake apiserver's discovery endpoints, from one description the test edits: served as
 * aggregated apidiscovery.k8s.io/v2 documents (with an ETag and 304 on If-None-Match, as
 * apiserver/pkg/endpoints/discovery/aggregated/etag.go does) when the client asks for them, or
 * as the legacy /api, /api/v1, /apis, /apis/{g}/{v} documents.
 */
import { createHash } from 'node:crypto';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../src/upstream/client.ts';
import { jsonResponse, newFakeUpstream } from './fake-upstream-client.ts';

export interface FakeSubresource {
  readonly subresource: string;
  readonly responseKind?: { group: string; version: string; kind: string };
  readonly verbs: string[];
}

/** An apidiscovery/v2 APIResourceDiscovery. */
export interface FakeResource {
  readonly resource: string;
  readonly responseKind?: { group: string; version: string; kind: string };
  readonly scope: 'Namespaced' | 'Cluster';
  readonly singularResource: string;
  readonly verbs: string[];
  readonly shortNames?: string[];
  readonly categories?: string[];
  readonly subresources?: FakeSubresource[];
}

export interface FakeVersion {
  readonly version: string;
  readonly resources: FakeResource[];
  readonly freshness?: 'Current' | 'Stale';
}

export interface FakeGroup {
  /** "" for the core group (served at /api). */
  readonly name: string;
  /** In order of preference. */
  versions: FakeVersion[];
}

export interface FakeDiscoveryServer {
  readonly client: UpstreamClient;
  /** Edit freely between refreshes. */
  groups: FakeGroup[];
  /** false: answer only the legacy documents, as an apiserver before aggregated discovery. */
  aggregated: boolean;
  /** path -> status to answer instead (e.g. 503 for a broken aggregated API). */
  readonly failures: Map<string, number>;
  /** Every request: path, If-None-Match sent, status answered. */
  readonly seen: { path: string; ifNoneMatch: string | undefined; status: number }[];
}

/** A namespaced, fully-verbed resource in apidiscovery/v2 form. */
export function fakeResource(
  group: string,
  version: string,
  resource: string,
  kind: string,
  extra: Partial<FakeResource> = {},
): FakeResource {
  return {
    resource,
    responseKind: { group, version, kind },
    scope: 'Namespaced',
    singularResource: kind.toLowerCase(),
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    ...extra,
  };
}

export function newFakeDiscoveryServer(groups: FakeGroup[]): FakeDiscoveryServer {
  const server: FakeDiscoveryServer = {
    client: undefined as unknown as UpstreamClient,
    groups,
    aggregated: true,
    failures: new Map(),
    seen: [],
  };
  const respond = (req: UpstreamRequest): UpstreamResponse => {
    const ifNoneMatch = req.headers?.['if-none-match'];
    const res = answer(server, req);
    server.seen.push({ path: req.path, ifNoneMatch, status: res.statusCode });
    return res;
  };
  Object.assign(server, { client: newFakeUpstream({ respond }).client });
  return server;
}

function answer(server: FakeDiscoveryServer, req: UpstreamRequest): UpstreamResponse {
  const failure = server.failures.get(req.path);
  if (failure !== undefined) return jsonResponse(failure, { kind: 'Status', code: failure, message: 'fake failure' });
  const wantsAggregated = (req.headers?.accept ?? '').includes('as=APIGroupDiscoveryList');
  const core = server.groups.filter((g) => g.name === '');
  const named = server.groups.filter((g) => g.name !== '');
  if ((req.path === '/api' || req.path === '/apis') && server.aggregated && wantsAggregated) {
    const items = (req.path === '/api' ? core : named).map((g) => ({ metadata: { name: g.name }, versions: g.versions }));
    const body = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
    const etag = `"${createHash('sha512').update(body).digest('hex').slice(0, 32)}"`;
    if (req.headers?.['if-none-match'] === etag) return { statusCode: 304, headers: { etag }, body: Buffer.alloc(0) };
    return {
      statusCode: 200,
      headers: { etag, 'content-type': 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
      body: Buffer.from(body),
    };
  }
  if (req.path === '/api') {
    return jsonResponse(200, { kind: 'APIVersions', versions: core.flatMap((g) => g.versions.map((v) => v.version)) });
  }
  if (req.path === '/apis') {
    return jsonResponse(200, {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: named.map((g) => {
        const versions = g.versions.map((v) => ({ groupVersion: `${g.name}/${v.version}`, version: v.version }));
        return { name: g.name, versions, preferredVersion: versions[0] };
      }),
    });
  }
  const match = /^\/(?:api\/([^/]+)|apis\/([^/]+)\/([^/]+))$/.exec(req.path);
  const group = match?.[2] ?? '';
  const version = match?.[1] ?? match?.[3];
  const found = server.groups.find((g) => g.name === group)?.versions.find((v) => v.version === version);
  if (found === undefined || version === undefined) return jsonResponse(404, { kind: 'Status', code: 404, reason: 'NotFound' });
  return jsonResponse(200, {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources: found.resources.flatMap((r) => [
      {
        name: r.resource,
        singularName: r.singularResource,
        namespaced: r.scope === 'Namespaced',
        kind: r.responseKind?.kind ?? '',
        verbs: r.verbs,
        ...(r.shortNames === undefined ? {} : { shortNames: r.shortNames }),
        ...(r.categories === undefined ? {} : { categories: r.categories }),
      },
      ...(r.subresources ?? []).map((s) => ({
        name: `${r.resource}/${s.subresource}`,
        singularName: '',
        namespaced: r.scope === 'Namespaced',
        // APIResource.group/version: empty means the list's own.
        ...(s.responseKind !== undefined && (s.responseKind.group !== group || s.responseKind.version !== version)
          ? { group: s.responseKind.group, version: s.responseKind.version }
          : {}),
        kind: s.responseKind?.kind ?? '',
        verbs: s.verbs,
      })),
    ]),
  });
}
