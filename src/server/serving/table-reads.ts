/**
 * Tables from the cache (cached-table.ts writes them): the printer of a type, the Table machinery
 * loaded on the first Table read, and a GET or LIST answered as a Table.
 */
import type { ReadPlan } from '../../cache/cacher.ts';
import { getList, objectKey, wholeListScope } from '../../cache/cacher.ts';
import type { WatchCacheSource } from '../../cache/cache-source.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import type { ReadRequest } from '../../cache/delegator.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';
import { listItemBytes } from '../../cache/watch-cache.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectText } from '../../informer/object.ts';
import type { KubeJson, Printer } from '../../table/model.ts';
import { METADATA_ITEM_FRAMING_BYTES, objectMetadataLength } from './cached-metadata.ts';
import type { BodyRoom, CachedResponse, NoRoom } from './cached-response.ts';
import { JSON_HEADERS, madeWhole, whole } from './cached-response.ts';
import type { SharedLists } from './shared-lists.ts';
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

/** A GET or a LIST answered as a Table (cached-table.ts); undefined: the apiserver answers. */
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

export function serveTable(
  cache: WatchCache,
  read: ReadRequest,
  plan: ReadPlan,
  table: {
    readonly printer: Printer;
    readonly include: IncludeObject;
    readonly version: TableVersion;
    readonly now: number;
    readonly body: Tables['tableBody'];
  },
  shared: SharedLists,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  const { printer, include, version, now, body: tableBody } = table;
  // Whole LISTs share their bodies, as the other encodings' do: a Table is printed at the second
  // of its request, so the requests of one second at one RV get the same bytes.
  const scope = read.verb === 'list' ? wholeListScope(read, plan) : undefined;
  const rv = cache.resourceVersion();
  const key =
    scope === undefined || rv === undefined
      ? undefined
      : `Table\u0001${String(printerId(printer))}\u0001${version}\u0001${include}\u0001${String(Math.floor(now / 1000))}\u0001${scope}`;
  if (key !== undefined && rv !== undefined) {
    const kept = shared.find(cache, key, rv, false);
    if (kept !== undefined) return { statusCode: 200, headers: JSON_HEADERS, length: kept.length, body: kept, written: kept.acquire() };
  }
  if (read.verb === 'get') {
    const obj = cache.get(objectKey(cache, read.namespace, read.name));
    // The 404's Status is negotiated without the Table conversion (indented when no plain-JSON
    // clause is left): the apiserver's to word.
    if (obj === undefined) return 'not-found-converted';
    const meta = { resourceVersion: obj.resourceVersion, continue: '', remainingItemCount: undefined };
    return whole(200, tableBody(printer, [obj], meta, include, version, now, false, cache.spec.unstructured));
  }
  const page = getList(cache, read, plan);
  if (typeof page === 'string') return page;
  const meta = { resourceVersion: String(page.resourceVersion), continue: page.continue, remainingItemCount: page.remainingItemCount };
  // A row is its cells and, as asked, nothing more, the object's metadata, or the object.
  const { unstructured } = cache.spec;
  const itemBytes = listItemBytes(cache.spec);
  const rowBytes =
    include === 'None'
      ? () => TABLE_ROW_CELLS_BYTES
      : include === 'Metadata'
        ? (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + METADATA_ITEM_FRAMING_BYTES + objectMetadataLength(obj, unstructured)
        : (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + itemBytes(obj);
  const make = (): Buffer[] => tableBody(printer, page.items, meta, include, version, now, true, unstructured);
  return madeWhole(
    page.items,
    rowBytes,
    room,
    make,
    key === undefined ? undefined : (length, body, take) => shared.keep(cache, key, page.resourceVersion, length, body, take),
  );
}

/** A Table row's cells and framing beyond what it embeds (kubectl's pod columns: ~150 bytes). */
const TABLE_ROW_CELLS_BYTES = 256;
