/**
 * apimachinery's field.Error (pkg/util/validation/field/errors.go): the unit of a 422 Invalid
 * Status. `error()` is Error(), `body()` is ErrorBody(), as the Status message and causes show them.
 */
import { goQuote } from './go-format.ts';

/** field.ErrorType values (the `reason` of a StatusCause) used by the server. */
export type FieldErrorType = 'FieldValueForbidden' | 'FieldValueNotSupported' | 'FieldValueInvalid';

export interface FieldError {
  readonly type: FieldErrorType;
  /** The field path, e.g. `resourceVersionMatch`. */
  readonly field: string;
  /** ErrorBody(): `Forbidden: <detail>`, `Unsupported value: "x": supported values: "a", "b"`. */
  readonly body: string;
}

/** field.Error.Error(): `<field>: <body>`. */
export function fieldErrorString(e: FieldError): string {
  return `${e.field}: ${e.body}`;
}

/** field.Forbidden(path, detail). */
export function fieldForbidden(field: string, detail: string): FieldError {
  return { type: 'FieldValueForbidden', field, body: `Forbidden: ${detail}` };
}

/** field.NotSupported(path, value, validValues): the values are quoted and comma-joined. */
export function fieldNotSupported(field: string, value: string, validValues: readonly string[]): FieldError {
  const detail = validValues.length === 0 ? '' : `: supported values: ${validValues.map(goQuote).join(', ')}`;
  return { type: 'FieldValueNotSupported', field, body: `Unsupported value: ${goQuote(value)}${detail}` };
}

/** field.Invalid(path, value, detail) for a string value. */
export function fieldInvalid(field: string, value: string, detail: string): FieldError {
  return { type: 'FieldValueInvalid', field, body: `Invalid value: ${goQuote(value)}${detail === '' ? '' : `: ${detail}`}` };
}

/** ErrorList.ToAggregate().Error(): duplicates dropped, one error as is, several as `[a, b]`. */
export function aggregateString(errs: readonly FieldError[]): string {
  const messages = [...new Set(errs.map(fieldErrorString))];
  return messages.length === 1 ? (messages[0] ?? '') : `[${messages.join(', ')}]`;
}
