/**
 * A request as the proxy sees it, parsed once when it arrives (app.ts) and handed down to what
 * decides how to answer it: the metrics label, the cache's reads and watches, read-your-writes.
 */
import type { RequestInfo } from './request-info.ts';
import { RequestInfoError, parseRequestInfo } from './request-info.ts';
import { qualifiedResource } from '../kube/group-resource.ts';

export interface ParsedRequest {
  readonly method: string;
  /** The request target as sent (path and query). */
  readonly url: string;
  /** The apiserver's reading of the path; undefined when it refuses it (its own words answer). */
  readonly info: RequestInfo | undefined;
  /** The kube verb, or the lower-case method of a path the apiserver refuses. */
  readonly verb: string;
  /** `resource.group` of a resource request; '' otherwise. */
  readonly typeName: string;
  /** The query string's parameters (parsed on first use). */
  query(): URLSearchParams;
}

export function parseRequest(method: string, url: string): ParsedRequest {
  let info: RequestInfo | undefined;
  try {
    info = parseRequestInfo(method, url);
  } catch (error) {
    // A path the apiserver refuses in its own words (request-info.ts): not a resource request here.
    if (!(error instanceof RequestInfoError)) throw error;
    info = undefined;
  }
  let query: URLSearchParams | undefined;
  return {
    method,
    url,
    info,
    verb: info?.verb ?? method.toLowerCase(),
    typeName: info?.isResourceRequest === true ? qualifiedResource(info.apiGroup, info.resource) : '',
    query() {
      query ??= new URL(url, 'http://proxy').searchParams;
      return query;
    },
  };
}
