/**
 * What a hostile pod serves (ryw-poison): `node pod-answer.ts HOST PORT RV`, run inside the
 * suite's network namespace (pod-backend.ts). Every request, whatever its method and path, is
 * answered 200 with a JSON Pod claiming resourceVersion RV: the body a write through
 * `.../pods/NAME/proxy/...` brings back through the apiserver to the proxy.
 */
import { createServer } from 'node:http';

const [host, port, rv] = process.argv.slice(2);
if (host === undefined || port === undefined || rv === undefined) throw new Error('usage: pod-answer.ts HOST PORT RV');
const body = JSON.stringify({
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: { name: 'poison', namespace: 'poison', resourceVersion: rv },
});
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(port), host, () => {
  console.log(`Serving on ${host}:${port}`);
});
// The suite ends: so does the pod.
process.once('SIGTERM', () => {
  server.close();
  process.exit(0);
});
