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
import type { WatchRepresentation } from '../cache/window-event.ts';
import type { KubeObject } from '../informer/object.ts';
import type { KubeJson, Printer, TableRow } from '../table/model.ts';
import { goJsonString, goMarshal } from './go-json.ts';
import { partialObjectMetadata } from './cached-metadata.ts';

export type TableVersion = 'v1' | 'v1beta1';
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** The `includeObject` query value as the apiserver reads it; undefined: its 400 to word. */
export function parseIncludeObject(value: string | null): IncludeObject | undefined {
  if (value === null || value === '' || value === 'Metadata') return 'Metadata';
  if (value === 'None' || value === 'Object') return value;
  return undefined;
}

export interface TableListMeta {
  readonly resourceVersion: string;
  readonly continue: string;
  readonly remainingItemCount: bigint | undefined;
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

/** A row's object: the stored bytes, or a PartialObjectMetadata around the stored metadata. */
function rowObject(obj: KubeObject, include: IncludeObject, version: TableVersion): string {
  return rowObjectOf(obj.raw, include, version);
}

function rowObjectOf(raw: Buffer, include: IncludeObject, version: TableVersion): string {
  if (include === 'None') return 'null';
  if (include === 'Object') return raw.toString('utf8');
  return partialObjectMetadata(raw, version).toString('utf8');
}

function rowJson(row: TableRow, object: string): string {
  const cells = goMarshal(row.cells);
  if (row.conditions === undefined || row.conditions.length === 0) return `{"cells":${cells},"object":${object}}`;
  const conditions = goMarshal(row.conditions.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })));
  return `{"cells":${cells},"conditions":${conditions},"object":${object}}`;
}

function listMetaJson(meta: TableListMeta): string {
  let json = `"resourceVersion":${goJsonString(meta.resourceVersion)}`;
  if (meta.continue !== '') json += `,"continue":${goJsonString(meta.continue)}`;
  if (meta.remainingItemCount !== undefined) json += `,"remainingItemCount":${String(meta.remainingItemCount)}`;
  return json;
}

/**
 * The Table of `objects` (a page of a LIST, or the one object of a GET: `list` tells which, as a
 * few printers print a list otherwise than its items), printed at `now` (wall clock, ms). Parses each object's JSON to print it: a Table costs a parse per row, which the
 * apiserver pays too (it converts each object to print it).
 */
export function tableBody(
  printer: Printer,
  objects: readonly KubeObject[],
  meta: TableListMeta,
  include: IncludeObject,
  version: TableVersion,
  now: number,
  list: boolean,
): Buffer {
  const rows: string[] = [];
  if (list && printer.printList !== undefined) {
    const parsed = objects.map((obj) => JSON.parse(obj.raw.toString('utf8')) as KubeJson);
    for (const { index, row } of printer.printList(parsed, now)) {
      const obj = objects[index];
      if (obj !== undefined) rows.push(rowJson(row, rowObject(obj, include, version)));
    }
  } else {
    for (const obj of objects) {
      const parsed = JSON.parse(obj.raw.toString('utf8')) as KubeJson;
      const object = rowObject(obj, include, version);
      for (const row of printer.print(parsed, now)) rows.push(rowJson(row, object));
    }
  }
  const head = `{"kind":"Table","apiVersion":"meta.k8s.io/${version}","metadata":{${listMetaJson(meta)}},"columnDefinitions":${columnDefinitions(printer)},"rows":[`;
  return Buffer.from(`${head}${rows.join(',')}]}\n`);
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
    return table(typeof rv === 'string' ? rv : '', row, rowObjectOf(raw, include, version));
  };
  return {
    object: (raw) => render(raw, include),
    bookmark: (raw, initialEventsEnd) => render(raw, initialEventsEnd && include === 'None' ? 'Metadata' : include),
  };
}
