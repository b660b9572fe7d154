/**
 * The apiserver's printers by resource (printers.go AddHandlers), for the built-in types, and the
 * default table for the few built-in types it prints that way (default-table.ts). A type with
 * no printer here is passed through: the apiserver prints it (aggregated APIs, custom resources,
 * or a printer not ported yet).
 */
import type { Printer } from '../model.ts';
import { PRINTERS as CLUSTER } from './cluster.ts';
import { PRINTERS as CORE } from './core.ts';
import { DEFAULT_TABLE_PRINTERS } from './default-table.ts';
import { PRINTERS as WORKLOADS } from './workloads.ts';

const BY_RESOURCE = new Map<string, Printer>();
for (const printer of [...CORE, ...WORKLOADS, ...CLUSTER, ...DEFAULT_TABLE_PRINTERS]) {
  const key = `${printer.resource}.${printer.group}`;
  if (BY_RESOURCE.has(key)) throw new Error(`two printers for ${key}`);
  BY_RESOURCE.set(key, printer);
}

/** The printer of a built-in resource, or undefined when the apiserver prints the default table for it. */
export function printerFor(group: string, resource: string): Printer | undefined {
  return BY_RESOURCE.get(`${resource}.${group}`);
}

/** Every registered printer (tests). */
export function allPrinters(): readonly Printer[] {
  return [...BY_RESOURCE.values()];
}
