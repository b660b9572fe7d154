/**
 * The default Table (k8s.io/apiserver pkg/registry/rest/table.go, defaultTableConvertor): Name
 * and Created At, for the built-in types the apiserver registers no printer for. Which those are
 * was read from the apiserver itself (v1.37.2): limitranges, roles and clusterroles.
 */
import { CREATION_TIMESTAMP_DESCRIPTION, NAME_COLUMN, column } from '../columns.ts';
import type { Printer } from '../model.ts';
import { at, str } from '../model.ts';

/** creationTimestamp.Time.UTC().Format(time.RFC3339): the stored value (RFC 3339, UTC, seconds), or the zero time. */
function createdAt(obj: unknown): string {
  const value = at(obj, 'metadata', 'creationTimestamp');
  return typeof value === 'string' && value !== '' ? value : '0001-01-01T00:00:00Z';
}

function defaultTable(group: string, resource: string): Printer {
  return {
    group,
    resource,
    columns: [NAME_COLUMN, column('Created At', 'date', CREATION_TIMESTAMP_DESCRIPTION)],
    print: (obj) => [{ cells: [str(obj, 'metadata', 'name'), createdAt(obj)] }],
  };
}

export const DEFAULT_TABLE_PRINTERS: readonly Printer[] = [
  defaultTable('', 'limitranges'),
  defaultTable('rbac.authorization.k8s.io', 'roles'),
  defaultTable('rbac.authorization.k8s.io', 'clusterroles'),
];
