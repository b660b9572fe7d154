/**
 * A secondary index of a watch cache by one selectable field: for each value, the objects that
 * have it, in key order (a persistent B+-tree per value, ordered-map.ts). The apiserver's cacher
 * indexes pods by spec.nodeName (pkg/registry/core/pod/storage: NodeNameIndexFunc), so that a
 * LIST with `fieldSelector=spec.nodeName=X` (every kubelet's, and every node agent's) reads only
 * that node's pods instead of the whole cache (watch_cache.go listItems: store.ByIndex).
 *
 * Invariant: after each change()/replace() the index holds exactly the cache's objects, each under
 * the value of `field` it has now (an object without the field is under ''). It is read in the same
 * synchronous turn as the cache it indexes, so its views are the state at the cache's RV.
 */
import type { KubeObject } from '../informer/object.ts';
import { fieldValue } from '../informer/object.ts';
import { newOrderedMap } from './ordered-map.ts';
import type { OrderedMap, OrderedView } from './ordered-map.ts';
import type { CachedResourceSpec } from './cached-resources.ts';

/**
 * The field a type's cache is indexed by, as the apiserver's: pods by spec.nodeName (its LIST
 * index and its watchers' trigger, pkg/registry/core/pod/storage NodeNameTriggerFunc and
 * NodeNameIndexFunc); none for other types.
 */
export function indexedFieldOf(spec: Pick<CachedResourceSpec, 'group' | 'resource'>): string | undefined {
  return spec.group === '' && spec.resource === 'pods' ? 'spec.nodeName' : undefined;
}

export interface FieldIndex {
  readonly field: string;
  /** The objects whose field is `value`, in key order; an immutable view of the current state. */
  view(value: string): OrderedView<KubeObject>;
  /** One change: `prev` (undefined when added) replaced by `next` (undefined when deleted). */
  change(prev: KubeObject | undefined, next: KubeObject | undefined): void;
  /** The whole state replaced (a relist). */
  replace(objects: readonly KubeObject[]): void;
}

const EMPTY: OrderedView<KubeObject> = newOrderedMap<KubeObject>().snapshot();

export function newFieldIndex(field: string): FieldIndex {
  /** Value -> its objects; a value with none left is removed, so the map holds no empty trees. */
  let byValue = new Map<string, OrderedMap<KubeObject>>();
  const valueOf = (obj: KubeObject): string => fieldValue(obj, field) ?? '';
  const remove = (obj: KubeObject): void => {
    const value = valueOf(obj);
    const tree = byValue.get(value);
    if (tree === undefined) return;
    tree.delete(obj.key);
    if (tree.size === 0) byValue.delete(value);
  };
  const add = (obj: KubeObject): void => {
    const value = valueOf(obj);
    let tree = byValue.get(value);
    if (tree === undefined) {
      tree = newOrderedMap();
      byValue.set(value, tree);
    }
    tree.set(obj.key, obj);
  };
  return {
    field,
    view(value) {
      return byValue.get(value)?.snapshot() ?? EMPTY;
    },
    change(prev, next) {
      // An update that keeps the value replaces the entry in place (one path copy, not two).
      if (prev !== undefined && (next === undefined || valueOf(prev) !== valueOf(next))) remove(prev);
      if (next !== undefined) add(next);
    },
    replace(objects) {
      const grouped = new Map<string, [string, KubeObject][]>();
      for (const obj of objects) {
        const value = valueOf(obj);
        let entries = grouped.get(value);
        if (entries === undefined) {
          entries = [];
          grouped.set(value, entries);
        }
        entries.push([obj.key, obj]);
      }
      byValue = new Map();
      for (const [value, entries] of grouped) {
        const tree = newOrderedMap<KubeObject>();
        tree.replace(entries);
        byValue.set(value, tree);
      }
    },
  };
}
