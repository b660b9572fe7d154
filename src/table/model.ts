/**
 * Tables as the apiserver prints them (k8s.io/apimachinery meta/v1 Table; the printers of
 * k8s.io/kubernetes pkg/printers/internalversion): column definitions, and rows of cells printed
 * from each object. Printers here read the object's JSON as the apiserver serves it (the
 * external version); where a Go printer reads an internal field of another name or default,
 * the port says so.
 */

/** A cell as the apiserver encodes it: a string, a number (int64 or float), a boolean, or null. */
export type Cell = string | number | boolean | null;

/** metav1.TableColumnDefinition, with every field the apiserver writes. */
export interface ColumnDefinition {
  readonly name: string;
  readonly type: string;
  /** '' when none. */
  readonly format: string;
  readonly description: string;
  /** 0: shown by default; 1: with `-o wide`. */
  readonly priority: number;
}

/** metav1.TableRowCondition (pods: Completed when succeeded or failed). */
export interface RowCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface TableRow {
  readonly cells: readonly Cell[];
  readonly conditions?: readonly RowCondition[];
}

/** An object as parsed from its JSON. */
export type KubeJson = Readonly<Record<string, unknown>>;

/**
 * One resource's printer: printX(obj, GenerateOptions{Wide: true}) of printers.go. `now` is the
 * wall clock in ms, read once per request (the apiserver's time.Now() while it prints).
 */
export interface Printer {
  /** API group ('' for core) and plural resource name. */
  readonly group: string;
  readonly resource: string;
  readonly columns: readonly ColumnDefinition[];
  print(obj: KubeJson, now: number): TableRow[];
  /**
   * printXList where a list prints otherwise than its items one by one (storageclasses mark the
   * effective default, flowschemas are ordered): the rows of a LIST's page, each with the index
   * of the item it was printed from. Absent: print() per item, in order.
   */
  printList?(items: readonly KubeJson[], now: number): { readonly index: number; readonly row: TableRow }[];
}

/** The value at `path` in `obj`, or undefined when any step is missing or not an object. */
export function at(obj: unknown, ...path: readonly (string | number)[]): unknown {
  let v: unknown = obj;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

/** The string at `path`, or '' (Go's zero value) when absent or not a string. */
export function str(obj: unknown, ...path: readonly (string | number)[]): string {
  const v = at(obj, ...path);
  return typeof v === 'string' ? v : '';
}

/** The number at `path`, or 0 (Go's zero value) when absent or not a number. */
export function num(obj: unknown, ...path: readonly (string | number)[]): number {
  const v = at(obj, ...path);
  return typeof v === 'number' ? v : 0;
}

/** The number at `path`, or undefined (a nil pointer in Go) when absent. */
export function optionalNum(obj: unknown, ...path: readonly (string | number)[]): number | undefined {
  const v = at(obj, ...path);
  return typeof v === 'number' ? v : undefined;
}

/** The boolean at `path`, or undefined when absent. */
export function optionalBool(obj: unknown, ...path: readonly (string | number)[]): boolean | undefined {
  const v = at(obj, ...path);
  return typeof v === 'boolean' ? v : undefined;
}

/** The array at `path`, or [] (a nil slice) when absent. */
export function arr(obj: unknown, ...path: readonly (string | number)[]): readonly unknown[] {
  const v = at(obj, ...path);
  return Array.isArray(v) ? v : [];
}

/** The string map at `path` (labels, selectors, data keys), or {} when absent. */
export function map(obj: unknown, ...path: readonly (string | number)[]): Readonly<Record<string, unknown>> {
  const v = at(obj, ...path);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
