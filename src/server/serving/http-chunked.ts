/**
 * HTTP/1.1 chunked transfer coding (RFC 9112 §7.1) as a watch encoding: a cached watch turns
 * Node's own chunked framing off and writes each event as one chunk built once per event by the
 * cache (cache/window-event.ts WatchEncoding), so a watcher costs one write per event instead of
 * Node framing the same bytes once per watcher.
 */
import type { WatchEncoding } from '../../cache/window-event.ts';

const CRLF = Buffer.from('\r\n');

/** The end of a chunked body: the last chunk and an empty trailer section. */
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

export const HTTP_CHUNKED: WatchEncoding = {
  wrap(pieces) {
    let length = 0;
    for (const piece of pieces) length += piece.length;
    return [Buffer.from(`${length.toString(16)}\r\n`), ...pieces, CRLF];
  },
  end: LAST_CHUNK,
};
