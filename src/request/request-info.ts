/**
 * RequestInfoFactory.NewRequestInfo (apiserver/pkg/endpoints/request/requestinfo.go) for the
 * apiserver's prefixes: `api` (groupless) and `apis`. A path becomes verb, group, version,
 * namespace, resource, subresource and name exactly as the apiserver sees it, so the server can
 * pick the same handler and authorizer attributes.
 */

/** The kube verb: get/list/watch/create/update/patch/delete/deletecollection/proxy, or the lowercase HTTP method for a non-resource request. */
export type RequestVerb =
  'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'proxy' | '' | (string & {});

export interface RequestInfo {
  readonly isResourceRequest: boolean;
  /** The URL path, percent-decoded (Go's URL.Path). */
  readonly path: string;
  readonly verb: RequestVerb;
  readonly apiPrefix: string;
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly namespace: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
  /** The path parts from {resource}/{name} on. */
  readonly parts: readonly string[];
  /** The path was `/{prefix}/.../watch/...` (legacy watch): the handler watches whatever the query says. */
  readonly legacyWatch: boolean;
}

export interface RequestInfoOptions {
  /** Without leading and trailing slashes. Default: api, apis. */
  readonly apiPrefixes?: readonly string[];
  /** Prefixes with no group part. Default: api. */
  readonly grouplessApiPrefixes?: readonly string[];
}

/** Verbs spelled in the path: /api/v1/watch/..., /api/v1/proxy/... */
const SPECIAL_VERBS = new Set(['proxy', 'watch']);
/** Special verbs after which a third part is not a subresource. */
const SPECIAL_VERBS_NO_SUBRESOURCES = new Set(['proxy']);
/** Subresources of a namespace: /api/v1/namespaces/{ns}/status is not a resource "status" in {ns}. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** Thrown for `/api/v1/watch` and the like: a special verb with nothing after it (the apiserver answers 404... after this error). */
export class RequestInfoError extends Error {
  readonly partial: RequestInfo;
  constructor(message: string, partial: RequestInfo) {
    super(message);
    this.name = 'RequestInfoError';
    this.partial = partial;
  }
}

/** Go's url.PathUnescape-tolerant decode: invalid escapes are kept as written. */
function decodePath(raw: string): string {
  // Nothing to decode without an escape; a search, where decodeURIComponent copies every char.
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * splitPath: trims slashes, then splits; empty parts in the middle stay. By index: a regex
 * `\/+$` retries at every slash of a run inside the path, quadratic in the path's length.
 */
function splitPath(path: string): string[] {
  let start = 0;
  let end = path.length;
  while (start < end && path.charCodeAt(start) === 0x2f) start++;
  while (end > start && path.charCodeAt(end - 1) === 0x2f) end--;
  return start === end ? [] : path.slice(start, end).split('/');
}

/** The first `watch` query value (url.Values.Get), or undefined when absent. */
function firstQueryValue(query: string, name: string): string | undefined {
  const values = new URLSearchParams(query).getAll(name);
  return values[0];
}

/**
 * Parses a request line's method and target (`/api/v1/namespaces/ns/pods?watch=1`). Throws
 * RequestInfoError where NewRequestInfo returns an error, with the partial info it had.
 */
export function parseRequestInfo(method: string, url: string, options: RequestInfoOptions = {}): RequestInfo {
  const apiPrefixes = new Set(options.apiPrefixes ?? ['api', 'apis']);
  const groupless = new Set(options.grouplessApiPrefixes ?? ['api']);
  const q = url.indexOf('?');
  const path = decodePath(q < 0 ? url : url.slice(0, q));
  const query = q < 0 ? '' : url.slice(q + 1);

  const info = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [] as readonly string[],
    legacyWatch: false,
  };

  let parts = splitPath(path);
  if (parts.length < 3) return info;
  const prefix = parts[0] ?? '';
  if (!apiPrefixes.has(prefix)) return info;
  info.apiPrefix = prefix;
  parts = parts.slice(1);

  if (!groupless.has(prefix)) {
    // One part (the prefix) is consumed: this asks "are there four parts?".
    if (parts.length < 3) return info;
    info.apiGroup = parts[0] ?? '';
    parts = parts.slice(1);
  }

  info.isResourceRequest = true;
  info.apiVersion = parts[0] ?? '';
  parts = parts.slice(1);

  const first = parts[0] ?? '';
  if (SPECIAL_VERBS.has(first)) {
    if (parts.length < 2) {
      throw new RequestInfoError(`unable to determine kind and namespace from url, ${url}`, { ...info });
    }
    info.verb = first;
    info.legacyWatch = first === 'watch';
    parts = parts.slice(1);
  } else {
    switch (method.toUpperCase()) {
      case 'POST':
        info.verb = 'create';
        break;
      case 'GET':
      case 'HEAD':
        info.verb = 'get';
        break;
      case 'PUT':
        info.verb = 'update';
        break;
      case 'PATCH':
        info.verb = 'patch';
        break;
      case 'DELETE':
        info.verb = 'delete';
        break;
      default:
        info.verb = '';
    }
  }

  // URL forms: /namespaces/{namespace}/{resource}/*, parts made relative to the resource.
  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1] ?? '';
      // Another part that is not a namespace subresource is a resource in its own right.
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] ?? '')) parts = parts.slice(2);
    }
  }
  info.parts = parts;

  // parts: resource/name/subresource/other/stuff/not/interpreted
  if (parts.length >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.has(info.verb)) info.subresource = parts[2] ?? '';
  if (parts.length >= 2) info.name = parts[1] ?? '';
  if (parts.length >= 1) info.resource = parts[0] ?? '';

  // No name on a get: a list, or a watch when ?watch is anything but 0/false (Convert_Slice_string_To_bool).
  if (info.name === '' && info.verb === 'get') {
    const watch = firstQueryValue(query, 'watch');
    info.verb = watch === undefined ? 'list' : ['false', '0'].includes(watch.toLowerCase()) ? 'list' : 'watch';
  }
  // No name on a delete: deletecollection.
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';

  return info;
}
