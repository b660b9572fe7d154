/**
 * Printers of the core group (v1), ported from k8s.io/kubernetes
 * pkg/printers/internalversion/printers.go (v1.37.2).
 */
import { AGE_COLUMN, NAME_COLUMN, column } from '../columns.ts';
import { translateTimestampSince } from '../duration.ts';
import type { Printer } from '../model.ts';
import { at, map, str } from '../model.ts';

/** printConfigMap: the number of keys in data and binaryData. */
const CONFIG_MAPS: Printer = {
  group: '',
  resource: 'configmaps',
  columns: [
    NAME_COLUMN,
    column(
      'Data',
      'string',
      "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const keys = Object.keys(map(obj, 'data')).length + Object.keys(map(obj, 'binaryData')).length;
    return [{ cells: [str(obj, 'metadata', 'name'), keys, translateTimestampSince(at(obj, 'metadata', 'creationTimestamp'), now)] }];
  },
};

export const PRINTERS: readonly Printer[] = [CONFIG_MAPS];
