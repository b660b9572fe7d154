/**
 * HTTP versions as Go's server reads them. Go parses any `HTTP/d.d` in a request line
 * (net/http ParseHTTPVersion), serves every 1.x as HTTP/1.1 and refuses the other majors with a
 * 505 (http1ServerSupportsRequest). Node's parser (llhttp) knows only 0.9, 1.0, 1.1 and 2.0 and
 * refuses the rest before any handler runs, so `GET / HTTP/1.2`, which the apiserver serves, would
 * be a 505 here. llhttp's lenient-version flag makes it read any `d.d` (the flag changes nothing
 * else: llhttp's http.ts tests it only where it checks the version; framing stays strict), and
 * client-errors.ts goRequestRefusal then answers as Go: 1.x served, other majors 505.
 *
 * Node sets only all of llhttp's lenient flags at once (`insecureHTTPParser`, which would also
 * accept the framing ambiguities request smuggling is made of). The one flag is set where Node
 * initializes each connection's parser (`HTTPParser.prototype.initialize`, of the `_http_common`
 * module), for the connections of the servers named here only. Should a Node version no longer
 * have that shape, nothing is changed: those requests keep llhttp's refusal, and the malformed
 * requests test shows the difference.
 */
import type { Server } from 'node:http';

/** The part of Node's HTTPParser binding used here. */
interface ParserBinding {
  readonly REQUEST: number;
  readonly kLenientVersion: number;
  readonly prototype: { initialize: (this: unknown, ...args: unknown[]) => unknown };
}

/** Servers whose connections' parsers read any version. Weak: a closed server goes with its last reference. */
const servers = new WeakSet<object>();
let installed = false;

function parserBinding(): ParserBinding | undefined {
  const common = process.getBuiltinModule('_http_common') as { HTTPParser?: unknown } | undefined;
  const parser = common?.HTTPParser;
  if (typeof parser !== 'function') return undefined;
  const { REQUEST, kLenientVersion, prototype } = parser as Partial<Record<keyof ParserBinding, unknown>>;
  if (typeof REQUEST !== 'number' || typeof kLenientVersion !== 'number' || typeof prototype !== 'object' || prototype === null) {
    return undefined;
  }
  if (!('initialize' in prototype) || typeof prototype.initialize !== 'function') return undefined;
  return parser as unknown as ParserBinding;
}

/**
 * The server of the connection a request parser is initialized for: Node passes an async
 * resource holding the socket, and a socket accepted by a server (TLS included) names it.
 */
function serverOf(resource: unknown): unknown {
  if (typeof resource !== 'object' || resource === null || !('socket' in resource)) return undefined;
  const socket = resource.socket;
  return typeof socket === 'object' && socket !== null && 'server' in socket ? socket.server : undefined;
}

/** From now on, `server`'s connections read any `HTTP/d.d` request line (see the top of this file). Returns `server`. */
export function parseEveryHttpVersion<S extends Server>(server: S): S {
  const binding = parserBinding();
  if (binding === undefined) return server;
  servers.add(server);
  if (installed) return server;
  installed = true;
  const initialize = binding.prototype.initialize;
  // initialize(type, resource, maxHeaderSize, lenientFlags, connections): Node's _http_server.
  binding.prototype.initialize = function (this: unknown, ...args: unknown[]): unknown {
    const [type, resource, , flags] = args;
    if (type === binding.REQUEST && typeof flags === 'number') {
      const server = serverOf(resource);
      if (typeof server === 'object' && server !== null && servers.has(server)) args[3] = flags | binding.kLenientVersion;
    }
    return initialize.apply(this, args);
  };
  return server;
}
