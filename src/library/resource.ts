/**
 * A resource tied to the type of its objects, so that `factory.informerFor(pods)` is a
 * SharedIndexInformer<V1Pod> with no type argument: client-go's generated accessors
 * (`factory.Core().V1().Pods()`) as values. The built-in ones are generated (resources.ts);
 * typedResource names a custom resource's type once, where it is defined.
 */

/** A resource (group, version, plural name) whose objects are `T`. */
export interface Resource<T> {
  /** The API group: '' for the core group. */
  readonly group: string;
  /** The API version, e.g. `v1`. */
  readonly version: string;
  /** The plural name, as in the resource's URL: `pods`. */
  readonly resource: string;
  /** The objects' kind, e.g. `Pod`; '' when not given (typedResource). */
  readonly kind: string;
  /** True for a namespaced resource, false for a cluster-scoped one, undefined when not given. */
  readonly namespaced: boolean | undefined;
  /**
   * Never set: carries `T` for the compiler, so that informerFor infers it. (A phantom property:
   * it costs nothing at run time.)
   */
  readonly objectType?: T;
}

/** A built-in resource (resources.ts). */
export function builtInResource<T>(group: string, version: string, resource: string, kind: string, namespaced: boolean): Resource<T> {
  return Object.freeze({ group, version, resource, kind, namespaced });
}

/**
 * A resource whose objects the caller types once, e.g. a custom resource:
 * `const widgets = typedResource<Widget>({ group: 'example.com', version: 'v1', resource: 'widgets' })`;
 * then `factory.informerFor(widgets)` is a SharedIndexInformer<Widget>.
 */
export function typedResource<T>(gvr: {
  readonly group?: string;
  readonly version: string;
  readonly resource: string;
  readonly kind?: string;
  readonly namespaced?: boolean;
}): Resource<T> {
  return Object.freeze({
    group: gvr.group ?? '',
    version: gvr.version,
    resource: gvr.resource,
    kind: gvr.kind ?? '',
    namespaced: gvr.namespaced,
  });
}
