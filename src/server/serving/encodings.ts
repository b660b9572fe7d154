/**
 * The one place an answer's encoding is chosen, from what content negotiation gave
 * (request/negotiation.ts, the apiserver's negotiation.NegotiateOutputMediaType): for a GET or
 * LIST its ReadEncoding (read-encoding.ts), for a WATCH its WatchRepresentation (the cacher's
 * frames; undefined for JSON, the cache's own bytes); or why the apiserver answers instead.
 *
 *   JSON                     json-list.ts
 *   protobuf                 cached-protobuf.ts (the type's message)
 *   metadata, JSON           cached-metadata.ts
 *   metadata, protobuf       cached-protobuf.ts (PartialObjectMetadata's message)
 *   Table                    table-reads.ts, printed by the type's printer (the Table machinery loaded on first use)
 */
import type { WatchCacheSource } from '../../cache/cache-source.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { WatchRepresentation } from '../../cache/window-event.ts';
import type { Negotiated } from '../../request/negotiation.ts';
import { metadataEncoding, metadataWatchRepresentation } from './cached-metadata.ts';
import { metadataShape, protobufEncoding, protobufShape, protobufWatchRepresentation } from './cached-protobuf.ts';
import { jsonEncoding } from './json-list.ts';
import type { ReadEncoding } from './read-encoding.ts';
import { printerOf, tableEncoding, tables } from './table-reads.ts';

export interface Encoding {
  /** A GET's or LIST's encoding; a Table's is printed at `now` (wall clock, ms). */
  read(now: number): ReadEncoding;
  /** A WATCH's representation (undefined: JSON); a Table's rows are printed at `now()` of each event. */
  watch(now: () => number): WatchRepresentation | undefined;
  /** Whether JSON indenting may apply (isPrettyPrint is the JSON serializer's: not protobuf's). */
  readonly json: boolean;
}

/**
 * The encoding of a `verb` of a type cached as `spec` that negotiated `negotiated`; `query` gives
 * a Table's includeObject. Or why the apiserver answers: a type it alone prints, a protobuf form
 * it alone has, or a metadata kind that does not fit the verb (the item kind for a GET or a
 * WATCH, the list kind for a LIST: the other way round is the apiserver's 406, or for a watch an
 * empty stream of its own).
 */
export async function chooseEncoding(
  negotiated: Exclude<Negotiated, { kind: 'apiserver' }>,
  verb: 'get' | 'list' | 'watch',
  spec: CachedResourceSpec,
  query: URLSearchParams,
  source: WatchCacheSource,
): Promise<Encoding | PassReason> {
  switch (negotiated.kind) {
    case 'json':
      return { read: () => jsonEncoding(spec), watch: () => undefined, json: true };
    case 'protobuf': {
      const shape = protobufShape(spec);
      if (shape === undefined) return 'no-protobuf-schema';
      const watch = protobufWatchRepresentation(shape);
      const read = protobufEncoding(shape, false);
      return { read: () => read, watch: () => watch, json: false };
    }
    case 'metadata': {
      if (negotiated.list !== (verb === 'list')) return 'metadata-kind-mismatch';
      const { version } = negotiated;
      if (negotiated.protobuf) {
        const shape = metadataShape(version);
        const read = protobufEncoding(shape, true);
        return { read: () => read, watch: () => protobufWatchRepresentation(shape), json: false };
      }
      const read = metadataEncoding(version, spec.unstructured);
      return { read: () => read, watch: () => metadataWatchRepresentation(version, spec.unstructured), json: true };
    }
    case 'table': {
      // Types without a ported printer, and custom resources whose CRD is not at hand, are the apiserver's to print.
      const t = await tables();
      const printer = printerOf(t, spec, source);
      const include = t.parseIncludeObject(query.get('includeObject'));
      if (printer === undefined) return 'no-printer';
      if (include === undefined) return 'bad-include-object';
      const { version } = negotiated;
      return {
        read: (now) => tableEncoding(spec, { printer, include, version, now, body: t.tableBody }),
        watch: (now) => t.tableWatchRepresentation(printer, include, version, now, spec.unstructured),
        json: true,
      };
    }
  }
}
