// Imports point down only (../shared/docs/design.md): `npm run check` runs dependency-cruiser with
// this configuration over src/ and fails on any import cycle (type-only imports included) or any
// import of a folder from a folder below it. A folder may import from its own layer's folder and
// from the layers below; folders on the same line are siblings and may not import each other.
// A new folder must be given its place here (an unplaced folder fails `not-in-a-layer`).

/** The layers, top to bottom. Each name is a folder of src/ (with its subfolders), or a file without `.ts`. */
const LAYERS = [
  ['cli', 'library'], // entry points: the command, and the installable library's entry points
  ['proxy'], // the composition root
  ['server/http'], // the HTTP shell
  ['status'], // the status page
  ['server/serving', 'server/pass-through', 'server/tls'], // answers from the cache; to the apiserver; the serving certificate
  ['auth'], // shared mode's authentication and authorization
  // The delegator decides, the cacher serves, the watch cache holds; beside it (never below it:
  // the cache never prints a Table nor encodes protobuf) the encodings its objects are printed in.
  ['cache', 'table', 'protobuf'],
  ['memory'], // what the proxy may hold: the container's limit, the budget sized to it, the valve near it
  ['request'], // reading the request
  ['informer', 'leaderelection'], // client-go's port
  ['workqueue'],
  ['upstream'], // the apiserver's side
  // Leaves: time, injected; the apiserver's JSON read as bytes; what proxies say to each other;
  // label and field selectors' grammar (the apiserver's, with its errors and bounds); protobuf's
  // wire format and envelope, written and read.
  ['clock', 'json', 'protocol', 'protowire', 'selector'],
  ['kube'], // the shared Kubernetes vocabulary: a leaf every layer may import
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const pathOf = (name) => `^src/${escape(name)}(/|\\.ts$)`;
const anyOf = (names) => names.map(pathOf).join('|');

const layerRules = LAYERS.flatMap((layer, rank) =>
  layer.map((name) => {
    const above = LAYERS.slice(0, rank).flat();
    const siblings = layer.filter((other) => other !== name);
    const forbidden = [...above, ...siblings];
    return {
      name: `layer-${name.replace('/', '-')}`,
      comment: `src/${name} may import only from its own folder and the layers below it (${forbidden.join(', ')} are not below it)`,
      severity: 'error',
      from: { path: pathOf(name) },
      to: { path: forbidden.length === 0 ? '^$' : anyOf(forbidden) },
    };
  }),
);

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'An import cycle: some module of it imports upward. Move the shared part down (a type to its own file, a word to src/kube/).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-in-a-layer',
      comment: 'Every folder of src/ has its place in LAYERS (.dependency-cruiser.mjs).',
      severity: 'error',
      from: { path: '^src/', pathNot: anyOf(LAYERS.flat()) },
      to: {},
    },
    {
      name: 'src-not-to-tests',
      comment: 'src/ never imports test helpers, bench or chaos code.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|chaos|examples)/' },
    },
    ...layerRules,
    {
      name: 'serving-not-to-upstream',
      comment:
        'src/server/serving answers from the cache: it never reaches the apiserver (pass-through does), so it imports nothing of src/upstream.',
      severity: 'error',
      from: { path: pathOf('server/serving') },
      to: { path: pathOf('upstream') },
    },
    {
      name: 'library-not-to-proxy',
      comment:
        'src/library is client-go for applications: it adapts informer, workqueue and leaderelection, and never pulls in the proxy, its server or its cache.',
      severity: 'error',
      from: { path: pathOf('library') },
      to: { path: anyOf(['proxy', 'server', 'cache']) },
    },
    {
      name: 'cli-not-to-cache',
      comment: 'src/cli reaches the cache through the composition root (src/proxy/options.ts re-exports what the command line reads).',
      severity: 'error',
      from: { path: pathOf('cli') },
      to: { path: pathOf('cache') },
    },
  ],
  options: {
    // Type-only imports are imports too: a cycle through types is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.(json|html)$' },
    moduleSystems: ['es6'],
  },
};
