/**
 * Shared mode: every client is authenticated and authorized as the apiserver would, before the
 * proxy answers it from its caches (kube-rbac-proxy's shape, with the apiserver's own decisions).
 *
 * - Who: a client certificate verified against --client-ca-file (user from its CN, groups from
 *   its O, as the apiserver's x509 authenticator), else a bearer token reviewed by TokenReview.
 *   Credentials the apiserver does not accept: its 401. No credentials at all: the request goes
 *   upstream with none, and the apiserver answers it (anonymous or 401, as it is set up).
 * - What: a read the cache may answer (get, list, watch of a resource) is authorized by
 *   SubjectAccessReview first; a denial is the apiserver's own 403, word for word. A watch is
 *   authorized when it starts, as the apiserver does.
 * - Everything else goes to the apiserver as the client: its own token, or (a certificate cannot
 *   be forwarded) the proxy impersonating it. The proxy's own identity serves only its informers
 *   and these reviews.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { StatusError } from '../kube/status.ts';
import type { ParsedRequest } from '../request/parsed-request.ts';
import type { ForwardIdentity } from '../upstream/client.ts';
import { forbiddenFor, unauthorized } from './forbidden.ts';
import { requestAttributes } from './request-attributes.ts';
import type { Authorizer } from './subject-access-review.ts';
import type { TokenAuthenticator } from './token-review.ts';
import type { UserInfo } from './user-info.ts';

/** Added to every authenticated user by the apiserver's authenticator chain (AuthenticatedGroupAdder). */
const AUTHENTICATED_GROUP = 'system:authenticated';

/**
 * The longest request target (path and query) of a resource read the proxy reviews itself. A
 * longer one (a name, namespace or selector of many KiB, which no well-behaved client sends) is
 * left to the apiserver, as the client ('undecided'): the proxy neither parses its selectors
 * (~0.4 s a MiB of label selector) nor sends, quotes or keeps a review that large, and the request
 * is spent from the client's own API Priority and Fairness share rather than the proxy's.
 */
export const MAX_REVIEWED_TARGET_BYTES = 16 * 1024;

export type Identified =
  | { readonly kind: 'user'; readonly user: UserInfo; readonly as: ForwardIdentity }
  /**
   * Not known here, so the apiserver decides, the request going upstream as the client sent it:
   * - anonymous: no credentials at all. Whether the apiserver lets such a request in (as
   *   system:anonymous) is its setting (--anonymous-auth): it answers as it answers anyone so.
   * - unreviewed: the TokenReview failed (the apiserver unreachable, a 5xx); with the client's
   *   own token the apiserver authenticates it, or answers its own error.
   */
  | { readonly kind: 'forward'; readonly why: 'anonymous' | 'unreviewed'; readonly as: ForwardIdentity }
  | { readonly kind: 'refused'; readonly error: StatusError };

/** What a read may do: be answered (from the cache or, as the client, by the apiserver), or be refused. */
export type ReadDecision =
  { readonly kind: 'allowed' } | { readonly kind: 'refused'; readonly error: StatusError } | { readonly kind: 'undecided' };

export interface SharedAccess {
  identify(req: IncomingMessage): Promise<Identified>;
  /**
   * Whether `user` may read what `request` asks (a get, list or watch of a resource, or a
   * non-resource path the proxy answers itself); 'undecided' when the review failed, or a resource
   * read's target is longer than MAX_REVIEWED_TARGET_BYTES: the request then goes to the apiserver
   * as the client, which decides.
   */
  authorizeRead(user: UserInfo, request: ParsedRequest): Promise<ReadDecision>;
  /**
   * Whether identify(req) would send a TokenReview: a bearer token, no verified client certificate
   * before it, and no result kept for the token (the shared gate limits these reviews first).
   */
  needsTokenReview(req: IncomingMessage): boolean;
  /** TokenReviews and SubjectAccessReviews sent so far (the bench, the status page). */
  reviews(): { readonly tokenReviews: number; readonly subjectAccessReviews: number };
}

export interface SharedAccessOptions {
  readonly tokens: TokenAuthenticator;
  readonly authorizer: Authorizer;
}

/**
 * The bearer token of an Authorization header (request/bearertoken/bearertoken.go: `Bearer
 * <token>` once trimmed, the scheme case-insensitive); undefined when the header is not one.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const parts = header.trim().split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] ?? '';
  return token === '' ? undefined : token;
}

/**
 * The client certificate the connection presented: its user once verified against the client CA
 * (x509.CommonNameUserConversion), 'unverified' when it does not chain to it (x509.go answers
 * that with an error: a 401 unless another authenticator accepts the request), or undefined
 * when there is none.
 */
function certificateUser(req: IncomingMessage): UserInfo | 'unverified' | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const peer = socket.getPeerCertificate();
  // An empty object when the client sent none.
  if (Object.keys(peer).length === 0) return undefined;
  if (socket.authorized !== true) return 'unverified';
  const subject = peer.subject as Partial<Record<string, string | string[]>> | undefined;
  const cn = subject?.['CN'];
  // Go's pkix.Name keeps the last CommonName of the subject.
  const username = Array.isArray(cn) ? (cn.at(-1) ?? '') : (cn ?? '');
  // CommonNameUserConversion: "common name of user is empty" is an error as well.
  if (username === '') return 'unverified';
  const o = subject?.['O'];
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username, uid: '', groups: groups.includes(AUTHENTICATED_GROUP) ? groups : [...groups, AUTHENTICATED_GROUP], extra: {} };
}

export function newSharedAccess(options: SharedAccessOptions): SharedAccess {
  return {
    reviews: () => ({ tokenReviews: options.tokens.reviews(), subjectAccessReviews: options.authorizer.reviews() }),
    needsTokenReview(req) {
      const fromCertificate = certificateUser(req);
      if (fromCertificate !== undefined && fromCertificate !== 'unverified') return false;
      const token = bearerToken(req.headers.authorization);
      return token !== undefined && options.tokens.known?.(token) !== true;
    },
    async identify(req) {
      // The apiserver's union authenticator: the certificate first, then the token; the first
      // that accepts the request wins, and failures only count when none does.
      const fromCertificate = certificateUser(req);
      if (fromCertificate !== undefined && fromCertificate !== 'unverified') {
        const u = fromCertificate;
        return { kind: 'user', user: u, as: { kind: 'impersonate', username: u.username, uid: u.uid, groups: u.groups, extra: u.extra } };
      }
      const header = req.headers.authorization;
      const token = bearerToken(header);
      if (token === undefined || header === undefined) {
        if (fromCertificate === 'unverified') return { kind: 'refused', error: unauthorized() };
        return { kind: 'forward', why: 'anonymous', as: { kind: 'anonymous' } };
      }
      try {
        const result = await options.tokens.authenticate(token);
        if (!result.authenticated) return { kind: 'refused', error: unauthorized() };
        return { kind: 'user', user: result.user, as: { kind: 'bearer', authorization: header } };
      } catch {
        return { kind: 'forward', why: 'unreviewed', as: { kind: 'bearer', authorization: header } };
      }
    },
    async authorizeRead(user, request) {
      if (request.info?.isResourceRequest === true && request.url.length > MAX_REVIEWED_TARGET_BYTES) return { kind: 'undecided' };
      const attributes = requestAttributes(user, request);
      try {
        const decision = await options.authorizer.authorize(attributes);
        return decision.allowed ? { kind: 'allowed' } : { kind: 'refused', error: forbiddenFor(attributes, decision.reason) };
      } catch {
        return { kind: 'undecided' };
      }
    },
  };
}
