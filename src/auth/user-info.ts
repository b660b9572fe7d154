import type { FieldRequirement } from '../selector/field-selector.ts';
import type { LabelRequirement } from '../selector/label-selector.ts';

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
  /**
   * The request's field selector as the authorizer sees it (GetFieldSelector: fields.ParseSelector
   * of the raw query value, no resource's conversion), for list, watch and deletecollection only;
   * absent or empty when there is none or it does not parse.
   */
  readonly fieldSelector?: readonly FieldRequirement[];
  /** The request's label selector likewise (GetLabelSelector: labels.Parse, requirements sorted by key). */
  readonly labelSelector?: readonly LabelRequirement[];
}
