/**
 * The bytes of encodings derived from cached objects and kept with them (their protobuf
 * messages, made on a type's first protobuf read: server/cached-protobuf.ts), process-wide, for
 * the memory budget's estimate of what the caches hold (memory-budget.ts). Each is counted as it
 * is made and taken off once its object has been collected (replaced by a newer version, deleted,
 * or its cache stopped), as the apiserver's caching_object.go keeps one serialization per encoder
 * for the object's lifetime.
 */
let bytes = 0;
const collected = new FinalizationRegistry<number>((made) => {
  bytes -= made;
});

/** `made` bytes derived from `obj` are kept for as long as it lives. */
export function noteDerivedEncoding(obj: object, made: number): void {
  bytes += made;
  collected.register(obj, made);
}

/** Bytes of derived encodings whose objects are alive (or not yet seen collected). */
export function derivedEncodingBytes(): number {
  return bytes;
}
