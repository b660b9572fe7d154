/**
 * Compares a ported printer with the real apiserver's: the apiserver's Table of a resource
 * (with includeObject=Object, so each row carries the object it was printed from) against our
 * printer run on the same objects. Column definitions must be equal; cells equal, except that a
 * duration written at the apiserver's moment may differ from ours by the clock's tick (≤ 2 s),
 * wherever it stands in the cell (`5m`, `3 (10s ago)`).
 */
import assert from 'node:assert/strict';
import type { Cell, ColumnDefinition, KubeJson, Printer, RowCondition } from '../../src/table/model.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';

export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io';

export interface ApiserverTable {
  readonly columnDefinitions: readonly ColumnDefinition[];
  readonly rows: readonly { readonly cells: readonly Cell[]; readonly conditions?: readonly RowCondition[]; readonly object: KubeJson }[];
  /** The wall clock (ms) just after the answer arrived. */
  readonly receivedAt: number;
}

/** The apiserver's Table for `path` (a LIST or a GET), each row with its object. */
export async function apiserverTable(client: UpstreamClient, path: string): Promise<ApiserverTable> {
  const sep = path.includes('?') ? '&' : '?';
  const res = await client.request({ method: 'GET', path: `${path}${sep}includeObject=Object`, headers: { accept: TABLE_ACCEPT } });
  const receivedAt = Date.now();
  assert.equal(res.statusCode, 200, `GET ${path} as a Table: ${res.body.toString().slice(0, 300)}`);
  const table = JSON.parse(res.body.toString()) as Omit<ApiserverTable, 'receivedAt'>;
  return { ...table, receivedAt };
}

const DURATION = /(\d+y)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?/;
const DURATION_TOKEN = /\b(?:\d+[ydhms])+\b/g;

function durationMs(token: string): number {
  const m = DURATION.exec(token);
  if (m === null) return Number.NaN;
  const [, y = '0y', d = '0d', h = '0h', min = '0m', s = '0s'] = m;
  return (((parseInt(y) * 365 + parseInt(d)) * 24 + parseInt(h)) * 60 + parseInt(min)) * 60_000 + parseInt(s) * 1000;
}

/** True when `a` and `b` are the same but for durations within `toleranceMs` of each other. */
export function sameButForTick(a: Cell, b: Cell, toleranceMs = 2_000): boolean {
  if (a === b) return true;
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  if (a.replace(DURATION_TOKEN, '~') !== b.replace(DURATION_TOKEN, '~')) return false;
  const da = a.match(DURATION_TOKEN) ?? [];
  const db = b.match(DURATION_TOKEN) ?? [];
  return da.length === db.length && da.every((t, i) => Math.abs(durationMs(t) - durationMs(db[i] ?? '')) <= toleranceMs);
}

/** Asserts that `printer` prints the apiserver's table: the same columns, and the same rows but for the tick. */
export function assertPrintsAsApiserver(printer: Printer, table: ApiserverTable, what: string): void {
  assert.deepEqual(printer.columns, table.columnDefinitions, `${what}: column definitions`);
  assert.ok(table.rows.length > 0, `${what}: the apiserver printed rows to compare with`);
  for (const row of table.rows) {
    const name = String((row.object.metadata as { name?: unknown } | undefined)?.name);
    const printed = printer.print(row.object, table.receivedAt);
    assert.equal(printed.length, 1, `${what} ${name}: one row`);
    const ours = printed[0];
    assert.ok(ours !== undefined);
    assert.equal(ours.cells.length, row.cells.length, `${what} ${name}: cell count`);
    row.cells.forEach((cell, i) => {
      assert.ok(
        sameButForTick(ours.cells[i] ?? null, cell),
        `${what} ${name}: column ${table.columnDefinitions[i]?.name ?? i}: ours ${JSON.stringify(ours.cells[i])}, the apiserver's ${JSON.stringify(cell)}`,
      );
    });
    assert.deepEqual(ours.conditions ?? [], row.conditions ?? [], `${what} ${name}: row conditions`);
  }
}
