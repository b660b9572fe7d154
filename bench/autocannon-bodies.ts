/**
 * Preloaded into each autocannon process (`node --import`): its client keeps no response body.
 *
 * autocannon appends each body chunk to a string (`req.body += data`, pipelinedRequestsQueue.js),
 * which decodes it as UTF-8, for the options that read bodies (expectBody, verifyBody,
 * requests' onResponse), none of which the bench uses. Decoding 10 MB of protobuf per response
 * (invalid UTF-8, the slow path) held its loop for longer than the proxy took to send it, so a
 * protobuf LIST measured the load generator; JSON (ASCII, the fast path) paid less. Bodies are
 * still read and counted (bytes and latency to the last byte are the parser's).
 */
import { createRequire } from 'node:module';

interface Queue {
  prototype: { addBody(data: Buffer): void };
}

const require = createRequire(import.meta.url);
const queue = require('autocannon/lib/pipelinedRequestsQueue.js') as Queue;
queue.prototype.addBody = () => undefined;
