/**
 * Column descriptions the printers share, taken from the API's own documentation as the
 * apiserver takes them (metav1.ObjectMeta{}.SwaggerDoc()), byte for byte.
 */
import type { ColumnDefinition } from './model.ts';

export const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';

export const CREATION_TIMESTAMP_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

/** {Name: "Name", Type: "string", Format: "name", Description: ObjectMeta name doc}: every printer's first column. */
export const NAME_COLUMN: ColumnDefinition = { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 };

/** {Name: "Age", Type: "string", Description: ObjectMeta creationTimestamp doc}. */
export const AGE_COLUMN: ColumnDefinition = {
  name: 'Age',
  type: 'string',
  format: '',
  description: CREATION_TIMESTAMP_DESCRIPTION,
  priority: 0,
};

/** A column as printers.go declares one: format '' and priority 0 unless given. */
export function column(
  name: string,
  type: string,
  description: string,
  options: { format?: string; priority?: number } = {},
): ColumnDefinition {
  return { name, type, format: options.format ?? '', description, priority: options.priority ?? 0 };
}
