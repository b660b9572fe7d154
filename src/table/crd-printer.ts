/**
 * Custom resources' Tables as the apiextensions-apiserver prints them
 * (k8s.io/apiextensions-apiserver@v0.37.2 pkg/registry/customresource/tableconvertor: New,
 * ConvertToTable, cellForJSONValue; the columns of a version from pkg/apiserver/helpers.go
 * getColumnsForVersion and serveDefaultColumnsIfEmpty).
 *
 * Cells are the JSON values Go's encoding/json writes for the apiserver's cells: an int64
 * (integer), a float64 (number), a bool, a string or null. The proxy's Go-JSON writer writes a
 * number with String(n), which is what encoding/json writes for every float64 but -0; an
 * integer cell here is never -0, and a number cell is -0 only for a path ending in a literal
 * `-0.0` (Go writes `-0`, String(-0) is `0`).
 *
 * Limits, both from the proxy holding objects as JS values: an integer beyond 2^53 has lost its
 * last digits before the printer sees it (the apiserver prints them); and where a path walks a
 * map with `*` or `..`, Go's random map order makes the apiserver's cell vary (see jsonpath.ts).
 */
import { CREATION_TIMESTAMP_DESCRIPTION, NAME_COLUMN } from './columns.ts';
import { humanDuration } from './duration.ts';
import type { JsonPath } from './jsonpath.ts';
import { GoScalar, JsonPathParseError, isInt64, parseJsonPath, printResult } from './jsonpath.ts';
import type { Cell, ColumnDefinition, KubeJson, Printer, TableRow } from './model.ts';
import { arr, num, str } from './model.ts';

/** apiextensionsv1.CustomResourceColumnDefinition as served (v1: per version; there is no top-level list in v1). */
interface CrdColumn {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
  readonly jsonPath: string;
}

/** serveDefaultColumnsIfEmpty: a version without columns prints its objects' Age. */
const DEFAULT_COLUMNS: readonly CrdColumn[] = [
  {
    name: 'Age',
    type: 'date',
    format: '',
    description: CREATION_TIMESTAMP_DESCRIPTION,
    priority: 0,
    jsonPath: '.metadata.creationTimestamp',
  },
];

/** getColumnsForVersion: the version's additionalPrinterColumns, or undefined when the CRD has no such version. */
function columnsForVersion(crd: KubeJson, version: string): readonly CrdColumn[] | undefined {
  const v = arr(crd, 'spec', 'versions').find((v) => str(v, 'name') === version);
  if (v === undefined) return undefined;
  const columns = arr(v, 'additionalPrinterColumns').map((c) => ({
    name: str(c, 'name'),
    type: str(c, 'type'),
    format: str(c, 'format'),
    description: str(c, 'description'),
    priority: num(c, 'priority'),
    jsonPath: str(c, 'jsonPath'),
  }));
  return columns.length > 0 ? columns : DEFAULT_COLUMNS;
}

const TWO_63 = 2 ** 63;

/**
 * Go's int64(f) on amd64 (CVTTSD2SQ): truncation toward zero, and 0x8000000000000000 for a value
 * out of int64's range (arm64 saturates instead; the apiserver here runs on amd64).
 */
function int64FromFloat(f: number): number {
  if (!(f >= -TWO_63 && f < TWO_63)) return -TWO_63;
  const t = Math.trunc(f);
  return t === 0 ? 0 : t;
}

/** time.Since saturates at Go's maxDuration/minDuration (±(2^63-1) ns): a year-1 timestamp prints 292y. */
const MAX_DURATION_MS = 9_223_372_036_854.775;

/** Days from 1970-01-01 to a proleptic Gregorian date (any year; Date.UTC maps years 0-99 to 19xx). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysIn(month: number, year: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * What time.Parse(time.RFC3339, s) accepts: its fast path (parseRFC3339), and where that fails
 * the layout parser, which is laxer in three ways the fast path is not: a one-digit hour, a
 * comma before the fraction, and zone offsets up to 24:60.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** The instant in ms since the epoch, with whether it is Go's zero time; undefined where Go's parse fails. */
function parseRfc3339(s: string): { readonly ms: number; readonly zero: boolean } | undefined {
  const m = RFC3339.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, min, sec] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || min > 59 || sec > 59) return undefined;
  let offset = 0;
  if (m[8] !== undefined) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 24 || om > 60) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om) * 60;
  }
  // parseNanoseconds keeps the first nine digits
  const nanos = Number((m[7] ?? '').slice(0, 9).padEnd(9, '0'));
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec - offset;
  // Go's zero Time is 0001-01-01T00:00:00Z, whatever zone names it
  const zero = seconds === daysFromCivil(1, 1, 1) * 86400 && nanos === 0;
  return { ms: seconds * 1000 + nanos / 1e6, zero };
}

/**
 * A `date` cell: metav1.Time.UnmarshalQueryParameter ("" and "null" are the zero time, else
 * RFC 3339), `<invalid>` where it fails, then metatable.ConvertToHumanReadableDateType:
 * `<unknown>` for the zero time, else HumanDuration(time.Since(t)).
 */
function dateCell(value: string, now: number): string {
  if (value === '' || value === 'null') return '<unknown>';
  const t = parseRfc3339(value);
  if (t === undefined) return '<invalid>';
  if (t.zero) return '<unknown>';
  return humanDuration(Math.min(MAX_DURATION_MS, Math.max(-MAX_DURATION_MS, now - t.ms)));
}

/** cellForJSONValue, for a column that is not `string` (those are printed with PrintResults). */
function cellForJsonValue(type: string, value: unknown, now: number): Cell {
  if (value === null) return null;
  const scalar = value instanceof GoScalar ? value : undefined;
  switch (type) {
    case 'integer':
      // int64 as it is, float64 converted; Go's int and uint8 (path literals, string bytes) match neither case
      if (typeof value === 'number') return isInt64(value) ? value + 0 : int64FromFloat(value);
      if (scalar?.kind === 'float64') return int64FromFloat(scalar.value);
      return null;
    case 'number':
      if (typeof value === 'number') return isInt64(value) ? value + 0 : value;
      if (scalar?.kind === 'float64') return scalar.value;
      return null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string' ? dateCell(value, now) : null;
    default:
      return null;
  }
}

class CrdPrinter implements Printer {
  readonly group: string;
  readonly resource: string;
  readonly columns: readonly ColumnDefinition[];
  readonly #paths: readonly JsonPath[];

  constructor(group: string, resource: string, columns: readonly ColumnDefinition[], paths: readonly JsonPath[]) {
    this.group = group;
    this.resource = resource;
    this.columns = columns;
    this.#paths = paths;
  }

  /** ConvertToTable's row function: the name, then each column's first result (results[0][0]). */
  print(obj: KubeJson, now: number): TableRow[] {
    const cells: Cell[] = [str(obj, 'metadata', 'name')];
    this.#paths.forEach((path, i) => {
      const found = path.findResults(obj);
      const first = found.ok ? found.results[0] : undefined;
      if (first === undefined || first.length === 0) {
        cells.push(null);
        return;
      }
      const value = first[0];
      const type = this.columns[i + 1]?.type ?? '';
      cells.push(type === 'string' ? printResult(value) : cellForJsonValue(type, value, now));
    });
    return [{ cells }];
  }
}

/**
 * The Printer the apiserver uses for `version` of `crd` (apiextensions.k8s.io/v1 JSON as served),
 * or undefined where it does not print a Table from these columns: the CRD has no such version,
 * or a column's path is one this port cannot evaluate as Go does (jsonpath.ts).
 *
 * A path Go cannot parse is not an error the client sees: New returns the columns before it,
 * the apiserver logs "invalid printer specification, falling back to default printing" and
 * prints Name and those columns, which is the printer returned here.
 */
export function crdPrinter(crd: KubeJson, version: string): Printer | undefined {
  const crdColumns = columnsForVersion(crd, version);
  if (crdColumns === undefined) return undefined;
  const columns: ColumnDefinition[] = [NAME_COLUMN];
  const paths: JsonPath[] = [];
  for (const col of crdColumns) {
    let path: JsonPath;
    try {
      path = parseJsonPath(`{${col.jsonPath}}`);
    } catch (err) {
      if (err instanceof JsonPathParseError) break;
      return undefined;
    }
    paths.push(path);
    columns.push({
      name: col.name,
      type: col.type,
      format: col.format,
      description: col.description.length > 0 ? col.description : `Custom resource definition column (in JSONPath format): ${col.jsonPath}`,
      priority: col.priority,
    });
  }
  return new CrdPrinter(str(crd, 'spec', 'group'), str(crd, 'spec', 'names', 'plural'), columns, paths);
}
