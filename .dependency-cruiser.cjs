// The module shape `make lint` holds (docs: ARCHITECTURE.md's layers). `make depcheck` runs it.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
      name: 'store-imports-nothing-above-it',
      severity: 'error',
      comment: 'The store knows pets, its own errors, logging, redaction and its spans (the OpenTelemetry API only); not the command line, the HTTP app or the gateway.',
      from: { path: '^src/store/', pathNot: '\\.test\\.ts$' },
      to: {
        path: '^src/',
        pathNot: '^src/(store/|api/schemas\\.ts$|log\\.ts$|redact\\.ts$|clock\\.ts$|trace/(spans|scope|context)\\.ts$)',
      },
    },
    {
      name: 'instrumented-code-knows-only-the-api',
      severity: 'error',
      comment: 'Spans are made with the OpenTelemetry API; the SDK and the exporter are wired at start (src/trace/export.ts, loaded by src/serve/ only with an endpoint).',
      from: { path: '^src/', pathNot: '^src/(trace/export|serve/start)\\.ts$' },
      to: { path: '(^|/)node_modules/@opentelemetry/(sdk-|exporter-|resources|core)|^src/trace/export\\.ts$' },
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
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|generated)/|^clients/typescript/dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6', 'cjs'],
  },
};
