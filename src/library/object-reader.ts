/**
 * How an informer's cached objects (JSON bytes, src/informer/object.ts) become the caller's at
 * each read and notification: decoded afresh every time (the default: each read a copy of the
 * caller's own), or decoded once per stored version and shared, frozen (`cacheDecoded`: cheap
 * reads, the price in memory).
 *
 * The shared form is client-go's: an Indexer read returns the object the cache holds, not a copy,
 * and the caller must not change it. Here it is frozen, deeply (objects and arrays; a Date's
 * internal time is beyond Object.freeze: do not call its setters), so a change throws (modules
 * are strict) instead of corrupting every other reader's view. Each stored version is decoded at
 * its first read and kept, weakly, with the version: a newer version of the object, or its
 * deletion, lets the decoded one go with the bytes. An object never read costs nothing more.
 */
import type { KubeObject } from '../informer/object.ts';
import type { ObjectDecoder } from './object-decoder.ts';
import { decodeCached } from './object-decoder.ts';

/** A cached object as the caller's `T`. */
export type ObjectReader<T> = (obj: KubeObject) => T;

/** Decodes at each call: a fresh copy, the caller's to change. */
export function copyingReader<T>(decode: ObjectDecoder<T>): ObjectReader<T> {
  return (obj) => decodeCached(obj, decode);
}

/**
 * Decodes each stored version once and hands out that one object, deeply frozen, at every read
 * and notification of that version (held weakly by the version: it goes when the version does).
 */
export function sharingReader<T>(decode: ObjectDecoder<T>): ObjectReader<T> {
  const decoded = new WeakMap<KubeObject, T>();
  return (obj) => {
    let out = decoded.get(obj);
    if (out === undefined) {
      out = deepFreeze(decodeCached(obj, decode));
      decoded.set(obj, out);
    }
    return out;
  };
}

/** Freezes `value` and every object and array it reaches; returns it. */
function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const field of Object.values(value)) deepFreeze(field);
  return value;
}
