/**
 * Who the proxy is to the apiserver: a SelfSubjectReview (`kubectl auth whoami`), which the
 * apiserver answers for any authenticated user with the user info it authenticated. For the
 * status page: the proxy's credentials themselves are never shown.
 */
import type { UpstreamClient } from './client.ts';

export interface UpstreamIdentity {
  readonly username: string;
  readonly groups: readonly string[];
}

const REVIEW = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });

/** The proxy's user as the apiserver authenticates it; rejects with what the apiserver answered otherwise. */
export async function reviewSelf(client: UpstreamClient, signal?: AbortSignal): Promise<UpstreamIdentity> {
  const res = await client.request({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: REVIEW,
    ...(signal === undefined ? {} : { signal }),
  });
  if (res.statusCode !== 201 && res.statusCode !== 200) {
    throw new Error(`SelfSubjectReview answered ${String(res.statusCode)}: ${res.body.toString('utf8', 0, 200)}`);
  }
  const review = JSON.parse(res.body.toString('utf8')) as { status?: { userInfo?: { username?: unknown; groups?: unknown } } };
  const info = review.status?.userInfo;
  const username = typeof info?.username === 'string' ? info.username : '';
  const groups = Array.isArray(info?.groups) ? info.groups.filter((g): g is string => typeof g === 'string') : [];
  return { username, groups };
}
