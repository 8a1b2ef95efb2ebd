// The module shape `make lint` holds (ARCHITECTURE.md's "The layers" names them). `make depcheck` runs it.

/**
 * The units of src/ (a folder, or a file directly in it), from the ground up. A unit's code
 * imports only units below it, so no two units import each other through any chain, and a
 * reader can start at the bottom. A new unit gets its place here.
 */
const LAYERS = [
  'core/', // Reply, ApiError and the error codes, scopes, the operation ids, the clock, the pet records, decisions, client addresses: imports nothing of src/
  'redact.ts',
  'version.ts',
  'trace/', // the request state (AsyncLocalStorage), W3C trace context, the ring and its OTLP encoding; export.ts: the export
  'log.ts',
  'store/',
  'keys/', // the keys file, the keys in force and their reloads, key administration, the audit trail, plans
  'api/',
  'gateway/', // per request: identify, in-flight, decide, headers; limiter/; one entrance, gateway.ts
  'webhooks/',
  'metrics/',
  'app-env.ts',
  'pipeline/',
  'admin/',
  'reference/', // the contract and its reference page served at /docs
  'service-routes/',
  'cli/',
  'config.ts',
  'app.ts',
  'serve/',
  'main.ts',
];
const unitPattern = (units) => `^src/(${units.map((u) => u.replace(/\./g, '\\.')).join('|')})`;
const layerRules = LAYERS.slice(0, -1).map((unit, i) => ({
  name: `layer-${unit.replace(/[/.]/g, '-').replace(/-$/, '')}`,
  severity: 'error',
  comment: `src/${unit} imports only the units below it (${LAYERS.slice(0, i).join(', ') || 'none: the ground layer imports nothing of src/'}).`,
  from: { path: unitPattern([unit]), pathNot: '\\.test\\.ts$' },
  to: { path: unitPattern(LAYERS.slice(i + 1)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'every-unit-has-a-layer',
      severity: 'error',
      comment: 'A unit of src/ that LAYERS does not name: give it its place there.',
      from: { path: '^src/', pathNot: `${unitPattern(LAYERS)}|\\.test\\.ts$|^src/types\\.d\\.ts$` },
      to: {},
    },
    {
      name: 'gateway-through-its-entrance',
      severity: 'error',
      comment:
        'Whatever is outside src/gateway/ (tests included) reaches it through src/gateway/gateway.ts alone, so what the gateway holds can change behind one door. The door also passes the --workers protocol to src/serve/\'s supervisor and workers; gateway.ts names the users of each re-export.',
      from: { pathNot: '^src/gateway/' },
      to: { path: '^src/gateway/', pathNot: '^src/gateway/gateway\\.ts$' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: modules that cannot be understood (or loaded) one without the other.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'api-and-store-never-reach-the-gateway',
      severity: 'error',
      comment:
        'Handlers and the store serve whoever calls them, knowing nothing of keys or limits: no module under src/api/ or src/store/ reaches src/gateway/, directly or through another module. Only the pipeline and the wiring know the gateway.',
      from: { path: '^src/(api|store)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/gateway/', reachable: true },
    },
    {
      name: 'instrumented-code-knows-only-the-api',
      severity: 'error',
      comment: 'Spans are recorded with the OpenTelemetry API\'s types; the export and its transport are wired at start (src/trace/export.ts, loaded by src/serve/ only with an endpoint).',
      from: { path: '^src/', pathNot: '^src/(trace/export|serve/resources)\\.ts$|^src/trace/export\\.test\\.ts$' },
      to: { path: '(^|/)node_modules/@opentelemetry/(sdk-|exporter-|otlp-|resources|core)|^src/trace/export\\.ts$' },
    },
    {
      name: 'no-sdk-in-the-process',
      severity: 'error',
      comment: 'No OpenTelemetry SDK runs: src/trace/ records and encodes every span itself; the SDK is a test\'s oracle only.',
      from: { path: '^src/', pathNot: '\\.test\\.ts$' },
      to: { path: '(^|/)node_modules/@opentelemetry/(sdk-|exporter-|resources)' },
    },
    {
      name: 'src-without-test-helpers',
      severity: 'error',
      comment: 'What ships never loads test helpers; only *.test.ts files may (the contract documents are data, embedded).',
      from: { path: '^src/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(test|scripts|contract|bench)/', pathNot: '^contract/(admin\\.)?openapi\\.yaml$' },
    },
    {
      name: 'contract-not-scripts-insides',
      severity: 'error',
      comment: 'contract/ starts servers through test/harness.ts, not through scripts/ internals.',
      from: { path: '^contract/' },
      to: { path: '^scripts/' },
    },
    {
      name: 'scripts-not-contract-insides',
      severity: 'error',
      comment: 'scripts/ and contract/ share only test/ and src/ entry points.',
      from: { path: '^scripts/' },
      to: { path: '^contract/' },
    },
    {
      name: 'client-package-stands-alone',
      severity: 'error',
      comment: 'The published client (clients/typescript) is built from the contract alone and ships on its own: it imports nothing of the service.',
      from: { path: '^clients/typescript/(src|scripts)/' },
      to: { path: '^(src|test|scripts|contract|bench)/' },
    },
    {
      name: 'test-helpers-not-scripts-or-contract',
      severity: 'error',
      comment: 'test/ is what scripts/ and contract/ share: it must not reach back into either.',
      from: { path: '^test/' },
      to: { path: '^(scripts|contract)/' },
    },
  ],
  options: {
    // Packages are not followed but kept as the ends of imports, so rules on them see those imports.
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)generated/|^clients/typescript/dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6', 'cjs'],
  },
};
