/**
 * Tables from the cache: what the apiserver answers `kubectl get` (Accept `as=Table`), built from
 * the cached objects with the ported printers (src/table), byte for byte as the apiserver writes
 * them (handlers/response.go asTable over printerstorage's ConvertToTable):
 *
 *   {"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":…[,"continue":…]
 *    [,"remainingItemCount":…]},"columnDefinitions":[…],"rows":[{"cells":[…][,"conditions":[…]],
 *    "object":…}]}
 *
 * - every column, wide ones too (GenerateOptions{Wide: true}); kubectl hides priority > 0;
 * - a row's object per `includeObject`: Metadata (also when unset) a PartialObjectMetadata of
 *   the object's metadata as stored, Object the object as stored, None `null`;
 * - one object (a GET): the object's own resourceVersion, no continue;
 * - time-relative cells (ages, durations) computed now, at the request, as the apiserver does.
 */
import type { WatchRepresentation } from '../../cache/window-event.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectText } from '../../informer/object.ts';
import type { KubeJson, Printer, TableRow } from '../../table/model.ts';
import { goJsonString, goMarshal } from '../../kube/go-json.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { listMetaJson } from '../../kube/list-meta.ts';
import { metadataBytes, objectMetadataBytes, partialObjectMetadata, writePartialObjectMetadata } from './cached-metadata.ts';
import { PieceWriter } from '../../cache/piece-writer.ts';

export type TableVersion = 'v1' | 'v1beta1';
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** The `includeObject` query value as the apiserver reads it; undefined: its 400 to word. */
export function parseIncludeObject(value: string | null): IncludeObject | undefined {
  if (value === null || value === '' || value === 'Metadata') return 'Metadata';
  if (value === 'None' || value === 'Object') return value;
  return undefined;
}

/** The column definitions' JSON, made once per printer. */
const columnsJson = new WeakMap<Printer, string>();

function columnDefinitions(printer: Printer): string {
  let json = columnsJson.get(printer);
  if (json === undefined) {
    json = goMarshal(
      printer.columns.map((c) => ({ name: c.name, type: c.type, format: c.format, description: c.description, priority: c.priority })),
    );
    columnsJson.set(printer, json);
  }
  return json;
}

/** A row's object in a Table watch: the stored bytes, or a PartialObjectMetadata around the stored metadata. */
const INITIAL_EVENTS_END_TEXT = 'k8s.io/initial-events-end';
const INITIAL_EVENTS_END = Buffer.from(INITIAL_EVENTS_END_TEXT);

/**
 * asTable's rule for a row's object: with includeObject=None an object annotated
 * k8s.io/initial-events-end=true (the bookmark ending a WatchList's initial events, or any
 * object a user annotated so) still gets its metadata. A byte search first: the annotation is rare.
 */
function rowInclude(raw: Buffer, include: IncludeObject): IncludeObject {
  if (include !== 'None' || !raw.includes(INITIAL_EVENTS_END)) return include;
  const annotations = (JSON.parse(metadataBytes(raw).toString('utf8')) as { annotations?: Record<string, unknown> }).annotations;
  return annotations?.['k8s.io/initial-events-end'] === 'true' ? 'Metadata' : include;
}

/** rowInclude of a stored object. */
function objectRowInclude(obj: KubeObject, include: IncludeObject): IncludeObject {
  if (include !== 'None' || !obj.rest.includes(INITIAL_EVENTS_END_TEXT)) return include;
  const annotations = (JSON.parse(objectMetadataBytes(obj, false).toString('utf8')) as { annotations?: Record<string, unknown> })
    .annotations;
  return annotations?.['k8s.io/initial-events-end'] === 'true' ? 'Metadata' : include;
}

function rowObjectOf(raw: Buffer, wanted: IncludeObject, version: TableVersion, unstructured: boolean): string {
  const include = rowInclude(raw, wanted);
  if (include === 'None') return 'null';
  if (include === 'Object') return raw.toString('utf8');
  return partialObjectMetadata(raw, version, unstructured).toString('utf8');
}

function rowJson(row: TableRow, object: string): string {
  return `${rowPrefix(row)}${object}}`;
}

/** A row up to its object: `{"cells":[…]` and, if any, `,"conditions":[…]`, then `,"object":`. */
function rowPrefix(row: TableRow): string {
  const cells = goMarshal(row.cells);
  if (row.conditions === undefined || row.conditions.length === 0) return `{"cells":${cells},"object":`;
  const conditions = goMarshal(row.conditions.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })));
  return `{"cells":${cells},"conditions":${conditions},"object":`;
}

/**
 * Each object's rows as printed at one second of the wall clock. A Table is printed at the
 * second its request arrives (ages and durations have a resolution of a second), so the
 * requests of one second share the printing: of 8 clients listing 10,000 pods, the first parses
 * and prints them, the others copy bytes. Kept as long as the object (a new version is a new
 * object).
 */
const printed = new WeakMap<KubeObject, { readonly printer: Printer; readonly second: number; readonly prefixes: readonly Buffer[] }>();

function rowPrefixes(printer: Printer, obj: KubeObject, second: number): readonly Buffer[] {
  const memo = printed.get(obj);
  if (memo !== undefined && memo.second === second && memo.printer === printer) return memo.prefixes;
  const parsed = JSON.parse(objectText(obj)) as KubeJson;
  const prefixes = printer.print(parsed, second * 1000).map((row) => Buffer.from(rowPrefix(row)));
  printed.set(obj, { printer, second, prefixes });
  return prefixes;
}

const NULL_OBJECT = Buffer.from('null');
const CLOSE_BRACE = 0x7d;
const COMMA_BYTE = 0x2c;
const TABLE_TAIL = Buffer.from(']}\n');

function writeRowObject(out: PieceWriter, obj: KubeObject, wanted: IncludeObject, version: TableVersion, unstructured: boolean): void {
  const include = objectRowInclude(obj, wanted);
  if (include === 'None') out.bytes(NULL_OBJECT);
  else if (include === 'Object') out.object(obj, true);
  else writePartialObjectMetadata(out, obj, version, unstructured);
}

/**
 * The Table of `objects` (a page of a LIST, or the one object of a GET: `list` tells which, as a
 * few printers print a list otherwise than its items), printed at the second of `now` (wall
 * clock, ms), in large pieces. HOT PATH for `kubectl get`: per row, the printed prefix (parsed
 * and printed once per object per second) and the row's object are copied; nothing else.
 */
export function tableBody(
  printer: Printer,
  objects: readonly KubeObject[],
  meta: ListMeta,
  include: IncludeObject,
  version: TableVersion,
  now: number,
  list: boolean,
  unstructured: boolean,
): Buffer[] {
  const second = Math.floor(now / 1000);
  const out = new PieceWriter();
  out.bytes(
    Buffer.from(
      `{"kind":"Table","apiVersion":"meta.k8s.io/${version}","metadata":{${listMetaJson(meta)}},"columnDefinitions":${columnDefinitions(printer)},"rows":[`,
    ),
  );
  let first = true;
  const writeRow = (prefix: Buffer, obj: KubeObject): void => {
    if (!first) out.byte(COMMA_BYTE);
    first = false;
    out.bytes(prefix);
    writeRowObject(out, obj, include, version, unstructured);
    out.byte(CLOSE_BRACE);
  };
  if (list && printer.printList !== undefined) {
    // The few list printers (storageclasses, flowschemas) see the whole page: not shared per object.
    const parsed = objects.map((obj) => JSON.parse(objectText(obj)) as KubeJson);
    for (const { index, row } of printer.printList(parsed, second * 1000)) {
      const obj = objects[index];
      if (obj !== undefined) writeRow(Buffer.from(rowPrefix(row)), obj);
    }
  } else {
    for (const obj of objects) for (const prefix of rowPrefixes(printer, obj, second)) writeRow(prefix, obj);
  }
  out.bytes(TABLE_TAIL);
  return out.end();
}

/**
 * A Table watch (`kubectl get -w`), as the apiserver's watchEmbeddedEncoder writes one: each
 * event's object is a Table of one row printed from the event's object, at its resourceVersion;
 * the first event of the stream carries the column definitions, the later ones `null`. A
 * bookmark is printed too (a row of an empty object); its row object is the bookmark's metadata
 * when it ends the initial events, whatever includeObject says (asTable's rule). Printed when
 * the event is written, so ages are those of that moment.
 */
export function tableWatchRepresentation(
  printer: Printer,
  include: IncludeObject,
  version: TableVersion,
  wallNow: () => number,
  unstructured: boolean,
): WatchRepresentation {
  let headers = true;
  const table = (rv: string, row: TableRow, object: string): Buffer => {
    const columns = headers ? columnDefinitions(printer) : 'null';
    headers = false;
    const head = `{"kind":"Table","apiVersion":"meta.k8s.io/${version}","metadata":{"resourceVersion":${goJsonString(rv)}},"columnDefinitions":${columns},"rows":[`;
    return Buffer.from(`${head}${rowJson(row, object)}]}`);
  };
  const render = (raw: Buffer, include: IncludeObject): Buffer => {
    const parsed = JSON.parse(raw.toString('utf8')) as KubeJson;
    const rv = (parsed.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
    const [row = { cells: [] }] = printer.print(parsed, wallNow());
    return table(typeof rv === 'string' ? rv : '', row, rowObjectOf(raw, include, version, unstructured));
  };
  return {
    object: (raw) => render(raw, include),
    // The end bookmark carries the annotation: rowInclude gives it its metadata under None.
    bookmark: (raw) => render(raw, include),
  };
}
