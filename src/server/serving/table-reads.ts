/**
 * Tables from the cache (cached-table.ts writes them): the printer of a type, the Table machinery
 * loaded on the first Table read, and a GET or LIST answered as a Table.
 */
import type { WatchCacheSource } from '../../cache/cache-source.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import { listItemBytes } from '../../cache/watch-cache.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectText } from '../../informer/object.ts';
import type { KubeJson, Printer } from '../../table/model.ts';
import { METADATA_ITEM_FRAMING_BYTES, objectMetadataLength } from './cached-metadata.ts';
import { JSON_HEADERS, whole } from './cached-response.ts';
import type { ReadEncoding } from './read-encoding.ts';
import type * as CachedTable from './cached-table.ts';
import type { IncludeObject, TableVersion } from './cached-table.ts';

/** What Tables are made with: cached-table.ts and the printers of src/table. */
export interface Tables {
  readonly parseIncludeObject: typeof CachedTable.parseIncludeObject;
  readonly tableBody: typeof CachedTable.tableBody;
  readonly tableWatchRepresentation: typeof CachedTable.tableWatchRepresentation;
  readonly printerFor: (group: string, resource: string) => Printer | undefined;
  readonly crdPrinter: (crd: KubeJson, version: string) => Printer | undefined;
}

let tablesLoaded: Promise<Tables> | undefined;

/**
 * The Table machinery (~60 ported printers, a jsonpath port: about 0.2 MB of code), loaded by
 * the first Table read: a proxy nobody asks for a Table (a sidecar whose app is a controller)
 * never holds it.
 */
export function tables(): Promise<Tables> {
  tablesLoaded ??= Promise.all([
    import('./cached-table.ts'),
    import('../../table/printers/index.ts'),
    import('../../table/crd-printer.ts'),
  ]).then(([table, printers, crd]) => ({
    parseIncludeObject: table.parseIncludeObject,
    tableBody: table.tableBody,
    tableWatchRepresentation: table.tableWatchRepresentation,
    printerFor: printers.printerFor,
    crdPrinter: crd.crdPrinter,
  }));
  return tablesLoaded;
}

/** Per CRD object (a new version of it is a new object, so a changed CRD makes new printers), per served version. */
const crdPrinters = new WeakMap<KubeObject, Map<string, Printer | undefined>>();

function crdPrinterOf(t: Tables, crd: KubeObject, version: string): Printer | undefined {
  let byVersion = crdPrinters.get(crd);
  if (byVersion === undefined) {
    byVersion = new Map();
    crdPrinters.set(crd, byVersion);
  }
  if (!byVersion.has(version)) byVersion.set(version, t.crdPrinter(JSON.parse(objectText(crd)) as KubeJson, version));
  return byVersion.get(version);
}

/**
 * The printer of a type's Tables: a built-in type's ported printer, or for a custom resource
 * the one its CRD's printer columns make, the CRD read from the proxy's own cache of
 * customresourcedefinitions (started by this first read when every type is cached; when the
 * proxy caches named types only, or may not list CRDs, custom resources' Tables go to the
 * apiserver).
 */
export function printerOf(t: Tables, spec: CachedResourceSpec, source: WatchCacheSource): Printer | undefined {
  if (!spec.unstructured) return t.printerFor(spec.group, spec.resource);
  const crds = source.cacheFor('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', '');
  const crd = crds?.cache.get(`${spec.resource}.${spec.group}`);
  return crd === undefined ? undefined : crdPrinterOf(t, crd, spec.version);
}

/** A number per printer, for the shared bodies' keys (a CRD changed is a new printer). */
const printerIds = new WeakMap<Printer, number>();
let nextPrinterId = 0;

function printerId(printer: Printer): number {
  let id = printerIds.get(printer);
  if (id === undefined) {
    id = nextPrinterId++;
    printerIds.set(printer, id);
  }
  return id;
}

/**
 * Tables (read-encoding.ts, cached-table.ts), printed at the second of `now`: the requests of one
 * second at one RV get the same bytes, so whole LISTs are shared per printer, version,
 * includeObject and second. A GET of an object the cache does not hold is the apiserver's to
 * answer (its 404's Status is negotiated without the Table conversion, indented when no
 * plain-JSON clause is left).
 */
export function tableEncoding(
  spec: CachedResourceSpec,
  table: {
    readonly printer: Printer;
    readonly include: IncludeObject;
    readonly version: TableVersion;
    readonly now: number;
    readonly body: Tables['tableBody'];
  },
): ReadEncoding {
  const { printer, include, version, now, body: tableBody } = table;
  const { unstructured } = spec;
  // A row is its cells and, as asked, nothing more, the object's metadata, or the object.
  const itemBytes = listItemBytes(spec);
  const rowBytes =
    include === 'None'
      ? () => TABLE_ROW_CELLS_BYTES
      : include === 'Metadata'
        ? (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + METADATA_ITEM_FRAMING_BYTES + objectMetadataLength(obj, unstructured)
        : (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + itemBytes(obj);
  const second = String(Math.floor(now / 1000));
  return {
    headers: JSON_HEADERS,
    sharedKey: (scope) => `Table\u0001${String(printerId(printer))}\u0001${version}\u0001${include}\u0001${second}\u0001${scope}`,
    anyRv: false,
    object: (obj) => {
      const meta = { resourceVersion: obj.resourceVersion, continue: '', remainingItemCount: undefined };
      return whole(200, tableBody(printer, [obj], meta, include, version, now, false, unstructured));
    },
    missing: () => 'not-found-converted',
    list: (items, meta) => {
      const objects = Array.from(items.items);
      return {
        kind: 'made',
        items: objects,
        itemBytes: rowBytes,
        make: () => tableBody(printer, objects, meta, include, version, now, true, unstructured),
      };
    },
  };
}

/** A Table row's cells and framing beyond what it embeds (kubectl's pod columns: ~150 bytes). */
const TABLE_ROW_CELLS_BYTES = 256;
