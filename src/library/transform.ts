/**
 * client-go TransformFunc (tools/cache/delta_fifo.go; SharedIndexInformer.SetTransform,
 * shared_informer.go): what an informer does to each object before it stores it, typically to
 * drop what the program never reads (managedFields) and so hold less.
 *
 * The transform sees the wire JSON (as `jsonDecoder` hands it out: timestamps are strings), once
 * per object the apiserver sends, before the object is queued, stored, indexed or handed to any
 * handler; the informer stores its result as JSON and decodes that at each read.
 *
 * The resourceVersion pitfall, avoided by construction. Since client-go 0.33 an update whose
 * resourceVersion equals the stored one is delivered as a resync (shared_informer.go OnUpdate:
 * "Events that didn't change resourceVersion are treated as resync events and only propagated to
 * listeners that requested resync"), so in client-go a transform that blanks resourceVersion
 * makes every later update look like a resync, and handlers without a resync period never hear
 * of it. Here the informer judges that by the resourceVersion the apiserver sent, which it keeps
 * beside the stored JSON whatever the transform did: a transform may blank or drop
 * resourceVersion and no update is lost (the objects handed out then have none).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject } from '../informer/object.ts';
import { decodeObject, objectText } from '../informer/object.ts';
import type { ObjectTransform } from '../informer/shared-informer.ts';

/**
 * client-go TransformFunc: the object to store in place of `obj` (the wire JSON, the caller's to
 * change in place and return). Called once per object received, on the informer's path: keep it
 * quick. Must keep the object's namespace and name; should be idempotent (client-go's advice).
 * An object it throws for, or whose key it changes, is stored untransformed (and logged).
 */
export type TransformFunc = (obj: KubernetesObject) => KubernetesObject;

/**
 * controller-runtime's cache.TransformStripManagedFields: drops metadata.managedFields (the
 * field-ownership records of server-side apply, often half of a small object's bytes), which
 * controllers seldom read.
 */
export const transformStripManagedFields: TransformFunc = (obj) => {
  if (obj.metadata !== undefined) delete obj.metadata.managedFields;
  return obj;
};

/** The port's transform (over cached bytes) for the caller's `transform` over wire JSON; `log` hears of each object refused. */
export function cachedTransform(transform: TransformFunc, log: (message: string) => void): ObjectTransform {
  return (obj) => {
    let out: KubeObject;
    try {
      const json = JSON.parse(objectText(obj)) as KubernetesObject;
      out = decodeObject(Buffer.from(JSON.stringify(transform(json))));
    } catch (error) {
      log(`transform failed for ${obj.key}, stored untransformed: ${error instanceof Error ? error.message : String(error)}`);
      return obj;
    }
    if (out.key !== obj.key) {
      log(`transform changed the key of ${obj.key} to ${out.key}, stored untransformed: a transform must keep namespace and name`);
      return obj;
    }
    // The apiserver's resourceVersion, whatever the transform left in the JSON (see the header).
    return out.resourceVersion === obj.resourceVersion ? out : { ...out, resourceVersion: obj.resourceVersion };
  };
}
