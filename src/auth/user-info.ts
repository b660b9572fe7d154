/**
 * Who sent a request, as the apiserver's authenticators say it (k8s.io/apiserver/pkg/
 * authentication/user.Info): what TokenReview returns and SubjectAccessReview is asked about.
 */
export interface UserInfo {
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** The attributes of a request an authorizer decides on (authorizer.Attributes). */
export interface RequestAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  /** A resource request (under /api or /apis, with a resource); else a non-resource path. */
  readonly resourceRequest: boolean;
  readonly namespace: string;
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
  /** The request's path, for non-resource requests. */
  readonly path: string;
}
