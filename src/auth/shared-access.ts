/**
 * Shared mode: every client is authenticated and authorized as the apiserver would, before the
 * proxy answers it from its caches (kube-rbac-proxy's shape, with the apiserver's own decisions).
 *
 * - Who: a client certificate verified against --client-ca-file (user from its CN, groups from
 *   its O, as the apiserver's x509 authenticator), else a bearer token reviewed by TokenReview.
 *   No credentials, or credentials the apiserver does not accept: its 401.
 * - What: a read the cache may answer (get, list, watch of a resource) is authorized by
 *   SubjectAccessReview first; a denial is the apiserver's own 403, word for word. A watch is
 *   authorized when it starts, as the apiserver does.
 * - Everything else goes to the apiserver as the client: its own token, or (a certificate cannot
 *   be forwarded) the proxy impersonating it. The proxy's own identity serves only its informers
 *   and these reviews.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { StatusError } from '../server/status.ts';
import type { ParsedRequest } from '../server/parsed-request.ts';
import type { ForwardIdentity } from '../upstream/client.ts';
import { forbiddenFor, unauthorized } from './forbidden.ts';
import { requestAttributes } from './request-attributes.ts';
import type { Authorizer } from './subject-access-review.ts';
import type { TokenAuthenticator } from './token-review.ts';
import type { UserInfo } from './user-info.ts';

/** Added to every authenticated user by the apiserver's authenticator chain (AuthenticatedGroupAdder). */
const AUTHENTICATED_GROUP = 'system:authenticated';

export type Identified =
  | { readonly kind: 'user'; readonly user: UserInfo; readonly as: ForwardIdentity }
  | { readonly kind: 'refused'; readonly error: StatusError };

/** What a read may do: be answered (from the cache or, as the client, by the apiserver), or be refused. */
export type ReadDecision =
  { readonly kind: 'allowed' } | { readonly kind: 'refused'; readonly error: StatusError } | { readonly kind: 'undecided' };

export interface SharedAccess {
  identify(req: IncomingMessage): Promise<Identified>;
  /**
   * Whether `user` may read what `request` asks (a get, list or watch of a resource, or a
   * non-resource path the proxy answers itself); 'undecided' when the review failed: the request
   * then goes to the apiserver as the client, which decides.
   */
  authorizeRead(user: UserInfo, request: ParsedRequest): Promise<ReadDecision>;
}

export interface SharedAccessOptions {
  readonly tokens: TokenAuthenticator;
  readonly authorizer: Authorizer;
}

/** The bearer token of an Authorization header (request/bearertoken: `Bearer <token>`, scheme case-insensitive). */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const parts = header.split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] ?? '';
  return token === '' ? undefined : token;
}

/** The user of a verified client certificate (x509.CommonNameUserConversion), or undefined. */
function certificateUser(req: IncomingMessage): UserInfo | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.authorized !== true || typeof socket.getPeerCertificate !== 'function') return undefined;
  const subject = socket.getPeerCertificate().subject as Partial<Record<string, string | string[]>> | undefined;
  const cn = subject?.['CN'];
  const username = Array.isArray(cn) ? (cn[0] ?? '') : (cn ?? '');
  if (username === '') return undefined;
  const o = subject?.['O'];
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username, uid: '', groups: groups.includes(AUTHENTICATED_GROUP) ? groups : [...groups, AUTHENTICATED_GROUP], extra: {} };
}

export function newSharedAccess(options: SharedAccessOptions): SharedAccess {
  return {
    async identify(req) {
      const fromCertificate = certificateUser(req);
      if (fromCertificate !== undefined) {
        const u = fromCertificate;
        return { kind: 'user', user: u, as: { kind: 'impersonate', username: u.username, uid: u.uid, groups: u.groups, extra: u.extra } };
      }
      const header = req.headers.authorization;
      const token = bearerToken(header);
      if (token === undefined || header === undefined) return { kind: 'refused', error: unauthorized() };
      try {
        const result = await options.tokens.authenticate(token);
        if (!result.authenticated) return { kind: 'refused', error: unauthorized() };
        return { kind: 'user', user: result.user, as: { kind: 'bearer', authorization: header } };
      } catch {
        // The apiserver answers an authenticator's failure with its 401 as well.
        return { kind: 'refused', error: unauthorized() };
      }
    },
    async authorizeRead(user, request) {
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
