/**
 * A Status the proxy answers itself, in the encoding the apiserver would write it
 * (endpoints/handlers/responsewriters/writers.go ErrorNegotiated → WriteObjectNegotiated with
 * negotiation.DefaultEndpointRestrictions): the client's Accept negotiated over the apiserver's
 * serializers (JSON, YAML, protobuf) with no conversion allowed (`as`, `g`, `v`), no server
 * version (`sv`), and `stream` only as `watch` on JSON and protobuf. So a kubelet refused a read
 * (it asks for protobuf first) gets the 403 in protobuf, as from the apiserver.
 *
 * - JSON: compact, or indented when pretty (`pretty=1` on the clause, or isPrettyPrint: the
 *   `pretty` query parameter, curl, Wget and browsers).
 * - protobuf: the Status enveloped (cached-protobuf.ts).
 * - nothing acceptable: WriteRawJSON of the error itself (indented JSON), as the apiserver.
 * - YAML: not written by the proxy (no YAML encoder here); the Status goes out in compact JSON.
 */
import type { ServerResponse } from 'node:http';
import { statusBody } from '../../kube/status.ts';
import type { StatusError } from '../../kube/status.ts';
import { parseAccept, prettyByRequest } from '../../request/negotiation.ts';
import type { AcceptClause } from '../../request/negotiation.ts';
import { protobufStatusBody } from './cached-protobuf.ts';

const JSON_CONTENT_TYPE = 'application/json';
const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

type StatusMediaType = 'json' | 'yaml' | 'protobuf';

/** The apiserver's serializers in its order: type, subtype, whether it streams (watch). */
const SERIALIZERS: readonly (readonly [StatusMediaType, string, string, boolean])[] = [
  ['json', 'application', 'json', true],
  ['yaml', 'application', 'yaml', false],
  ['protobuf', 'application', 'vnd.kubernetes.protobuf', true],
];

/** acceptMediaTypeOptions under DefaultEndpointRestrictions; undefined when the clause is refused. */
function clauseOptions(clause: AcceptClause, streams: boolean): { pretty: boolean } | undefined {
  const p = clause.params;
  if (p.has('as') || p.has('g') || p.has('v')) return undefined;
  const stream = p.get('stream');
  if (stream !== undefined && stream !== '' && (!streams || stream !== 'watch')) return undefined;
  const sv = p.get('sv');
  if (sv !== undefined && sv !== '') return undefined;
  return { pretty: p.get('pretty') === '1' };
}

/** NegotiateMediaTypeOptions: the first clause (by preference), then the first serializer it takes. */
function negotiate(accept: string | undefined): { readonly type: StatusMediaType; readonly pretty: boolean } | undefined {
  // An empty Accept gets the first serializer.
  if (accept === undefined || accept === '') return { type: 'json', pretty: false };
  // Past MAX_SORTED_CLAUSES the order is Go's pdqsort's, which parseAccept does not repeat: JSON,
  // the first serializer, which every client of the apiserver reads.
  const clauses = parseAccept(accept);
  if (clauses === undefined) return { type: 'json', pretty: false };
  for (const clause of clauses) {
    for (const [type, mediaType, subType, streams] of SERIALIZERS) {
      const matches =
        (clause.type === mediaType && (clause.subType === subType || clause.subType === '*')) ||
        (clause.type === '*' && clause.subType === '*');
      if (!matches) continue;
      const options = clauseOptions(clause, streams);
      if (options !== undefined) return { type, pretty: options.pretty };
    }
  }
  return undefined;
}

export interface NegotiatedStatus {
  readonly contentType: string;
  readonly body: Buffer;
}

/** `error`'s Status as the apiserver would write it for a request with `accept`, `query` and `userAgent`. */
export function negotiatedStatus(
  error: StatusError,
  accept: string | undefined,
  query: URLSearchParams,
  userAgent: string | undefined,
): NegotiatedStatus {
  const chosen = negotiate(accept);
  if (chosen === undefined) return { contentType: JSON_CONTENT_TYPE, body: statusBody(error.status, 'indent') };
  if (chosen.type === 'protobuf')
    return { contentType: PROTOBUF_CONTENT_TYPE, body: protobufStatusBody(statusBody(error.status, 'compact')) };
  const pretty = chosen.type === 'json' && (chosen.pretty || prettyByRequest(query, userAgent));
  return { contentType: JSON_CONTENT_TYPE, body: statusBody(error.status, pretty ? 'indent' : 'compact') };
}

/**
 * Writes `error` negotiated (see negotiatedStatus), with the headers it carries (Retry-After). A
 * 403 also gets `X-Content-Type-Options: nosniff`, as responsewriters.Forbidden's
 * RespondWithError sets it (the authentication filter's 401 goes out without).
 */
export function writeNegotiatedStatus(
  res: ServerResponse,
  error: StatusError,
  accept: string | undefined,
  query: URLSearchParams,
  userAgent: string | undefined,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { contentType, body } = negotiatedStatus(error, accept, query, userAgent);
  const nosniff = error.code === 403 ? { 'x-content-type-options': 'nosniff' } : {};
  res.writeHead(error.code, { ...error.headers, ...nosniff, 'content-type': contentType, 'content-length': body.length });
  res.end(body);
}
