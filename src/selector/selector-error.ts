/**
 * The error a label or field selector fails to parse with. Its message is byte-identical to the
 * `message` of the Status the apiserver answers for the same input; `code` is that Status' code.
 *
 * The apiserver wraps both in errors.NewBadRequest (endpoints/handlers/get.go listOpts: the parse
 * errors of ParameterCodec.DecodeParameters and the field label conversion errors of
 * FieldSelector.Transform), so every selector error is a 400 with reason BadRequest.
 */
export class SelectorParseError extends Error {
  readonly code = 400;
  readonly reason = 'BadRequest';
  /** Which query parameter failed. */
  readonly parameter: 'labelSelector' | 'fieldSelector';

  constructor(parameter: 'labelSelector' | 'fieldSelector', message: string) {
    super(message);
    this.name = 'SelectorParseError';
    this.parameter = parameter;
  }
}
