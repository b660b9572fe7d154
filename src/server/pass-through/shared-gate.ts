/**
 * Shared mode at the server's door (auth/shared-access.ts decides; this file answers): every
 * request is identified before anything else, as the apiserver's authentication filter comes
 * first, and a read the cache may answer is authorized before it is looked at, as the
 * apiserver's authorization filter comes before its handlers (so a denied request with a bad
 * query gets the 403, as from the apiserver).
 *
 * What is not the cache's to answer goes upstream as the client (its own token, or the proxy
 * impersonating a certificate's user, or no credentials for an anonymous client): the apiserver
 * decides and words it, and the proxy's own rights are never lent to anyone.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SharedAccess } from '../../auth/shared-access.ts';
import { unauthorized } from '../../auth/forbidden.ts';
import type { ForwardIdentity } from '../../upstream/client.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import { asksImpersonation } from './pass-through.ts';
import { StatusError, serviceUnavailable } from '../../kube/status.ts';

/** What the gate let through, or that it answered. */
export type Admission =
  /** Refused: this is the answer (the apiserver's 401 or 403). */
  | { readonly kind: 'refused'; readonly error: StatusError }
  /** The apiserver's to answer, as the client. */
  | { readonly kind: 'forward'; readonly as: ForwardIdentity }
  /** An authorized read: the cache may answer it; if it does not, it goes upstream as the client. */
  | { readonly kind: 'read'; readonly as: ForwardIdentity };

/** The verbs of the reads the cache answers (a GET of a resource, no subresource). */
const CACHEABLE_VERBS = new Set(['get', 'list', 'watch']);

/**
 * A request the cache could answer: only those are authorized here; the apiserver authorizes the
 * rest itself. Kept as wide as what cached-reads.ts may answer (tryServe, tryWatch: GETs of a
 * resource, no subresource): a read the cache answers must never miss this gate.
 */
export function cacheable(request: ParsedRequest): boolean {
  const info = request.info;
  return (
    request.method === 'GET' && info !== undefined && info.isResourceRequest && info.subresource === '' && CACHEABLE_VERBS.has(info.verb)
  );
}

/** The answer for a client known by its certificate that asks to impersonate someone. */
function impersonationRefused(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message:
      'impersonation through kube-cache-proxy needs a bearer token: a client known by its certificate is itself impersonated upstream, and cannot impersonate another user in turn',
    reason: 'Forbidden',
    code: 403,
  });
}

export function writeStatus(res: ServerResponse, error: StatusError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = error.body();
  res.writeHead(error.code, { ...error.headers, 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

/**
 * Identifies the client of `req` and, for a read the cache could answer (`request`, when given),
 * authorizes it. Upgrades (exec, port-forward) give none: they always go upstream.
 */
export async function admit(access: SharedAccess, req: IncomingMessage, request: ParsedRequest | undefined): Promise<Admission> {
  const who = await access.identify(req);
  if (who.kind !== 'user') return who.kind === 'refused' ? who : { kind: 'forward', as: who.as };
  // Impersonation: the cache would answer as the client, not as the one it impersonates.
  if (asksImpersonation(req.headers))
    return who.as.kind === 'impersonate' ? { kind: 'refused', error: impersonationRefused() } : { kind: 'forward', as: who.as };
  if (request === undefined || !cacheable(request)) return { kind: 'forward', as: who.as };
  const decision = await access.authorizeRead(who.user, request);
  switch (decision.kind) {
    case 'allowed':
      return { kind: 'read', as: who.as };
    case 'refused':
      return decision;
    case 'undecided':
      return { kind: 'forward', as: who.as };
  }
}

/**
 * The proxy's own pages (/metrics, the status page): only for an authenticated client that the
 * apiserver's authorizer lets `get` the path (a nonResourceURLs rule, as for the apiserver's own
 * /metrics). An anonymous client is refused with the 401: the proxy cannot tell what the
 * apiserver would let it see. Resolves true when the page may be served.
 */
export async function admitOwnPage(
  access: SharedAccess,
  req: IncomingMessage,
  res: ServerResponse,
  request: ParsedRequest,
): Promise<boolean> {
  const who = await access.identify(req);
  if (who.kind !== 'user') {
    // A token the review could not judge (the apiserver unreachable) is not refused as bad.
    const error =
      who.kind === 'refused'
        ? who.error
        : who.why === 'unreviewed'
          ? serviceUnavailable('the authentication of this request could not be reviewed; retry later')
          : unauthorized();
    writeStatus(res, error);
    return false;
  }
  const decision = await access.authorizeRead(who.user, request);
  if (decision.kind === 'allowed') return true;
  writeStatus(
    res,
    decision.kind === 'refused'
      ? decision.error
      : serviceUnavailable('the authorization of this request could not be reviewed; retry later'),
  );
  return false;
}
