/** Reading Kubernetes protobuf in tests: the envelope, a message's fields, watch frames. */

export interface ProtoField {
  readonly number: number;
  /** A varint's value, or a length-delimited field's bytes. */
  readonly value: bigint | Buffer;
}

function varint(b: Buffer, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (let i = at; ; i++) {
    const byte = b[i];
    if (byte === undefined) throw new Error('truncated varint');
    result |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
    if (byte < 0x80) return [result, i + 1];
  }
}

/** The fields of one message, in the order written. */
export function fieldsOf(message: Buffer): ProtoField[] {
  const fields: ProtoField[] = [];
  let i = 0;
  while (i < message.length) {
    const [key, next] = varint(message, i);
    i = next;
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [value, after] = varint(message, i);
      fields.push({ number, value });
      i = after;
    } else if (wire === 2) {
      const [length, after] = varint(message, i);
      const end = after + Number(length);
      fields.push({ number, value: message.subarray(after, end) });
      i = end;
    } else if (wire === 1) {
      fields.push({ number, value: message.subarray(i, i + 8) });
      i += 8;
    } else throw new Error(`wire type ${String(wire)}`);
  }
  return fields;
}

export function bytesField(fields: readonly ProtoField[], number: number): Buffer | undefined {
  const value = fields.find((f) => f.number === number)?.value;
  return Buffer.isBuffer(value) ? value : undefined;
}

export function stringField(fields: readonly ProtoField[], number: number): string | undefined {
  return bytesField(fields, number)?.toString('utf8');
}

/** An enveloped object: `k8s\0` + runtime.Unknown. */
export function unenvelope(body: Buffer): { apiVersion: string; kind: string; raw: Buffer } {
  if (!body.subarray(0, 4).equals(Buffer.from([0x6b, 0x38, 0x73, 0x00])))
    throw new Error(`not a protobuf envelope: ${body.subarray(0, 16).toString('hex')}`);
  const unknown = fieldsOf(body.subarray(4));
  const typeMeta = fieldsOf(bytesField(unknown, 1) ?? Buffer.alloc(0));
  return {
    apiVersion: stringField(typeMeta, 1) ?? '',
    kind: stringField(typeMeta, 2) ?? '',
    raw: bytesField(unknown, 2) ?? Buffer.alloc(0),
  };
}

/** A list message's ListMeta fields and its items' bytes. */
export function listOf(raw: Buffer): {
  resourceVersion: string;
  continue: string;
  remainingItemCount: bigint | undefined;
  items: Buffer[];
} {
  const fields = fieldsOf(raw);
  const meta = fieldsOf(bytesField(fields, 1) ?? Buffer.alloc(0));
  const remaining = meta.find((f) => f.number === 4)?.value;
  return {
    resourceVersion: stringField(meta, 2) ?? '',
    continue: stringField(meta, 3) ?? '',
    remainingItemCount: typeof remaining === 'bigint' ? remaining : undefined,
    items: fields.filter((f) => f.number === 2).map((f) => f.value as Buffer),
  };
}

/** The events of a protobuf watch stream's bytes: each frame's type and enveloped object. */
export function watchFramesOf(stream: Buffer): { type: string; object: Buffer }[] {
  const events: { type: string; object: Buffer }[] = [];
  let i = 0;
  while (i + 4 <= stream.length) {
    const length = stream.readUInt32BE(i);
    const event = fieldsOf(stream.subarray(i + 4, i + 4 + length));
    const rawExtension = fieldsOf(bytesField(event, 2) ?? Buffer.alloc(0));
    events.push({ type: stringField(event, 1) ?? '', object: bytesField(rawExtension, 1) ?? Buffer.alloc(0) });
    i += 4 + length;
  }
  return events;
}
