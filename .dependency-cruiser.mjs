/**
 * Every import points down (docs/development.md, "Imports point down"). `npm run lint:deps` runs these
 * rules over src/, pack/, queries/, reports/ and examples/; test/imports-point-down.test.ts runs them too,
 * so a new cycle or an import up a layer fails the suite.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No two modules import each other, even for a type: a type several rooms share lives below them all.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lib-is-the-floor',
      comment:
        'src/lib/ (the three kinds of error, the logger, who is calling, admission limits, dates, masking, result shapes, data scope) is what every room is built on: it imports nothing else of the engine.',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'render-above-lib-only',
      comment: "src/render/ (Markdown, HTML, SVG helpers) serves the reports' renderers and knows only src/lib/.",
      severity: 'error',
      from: { path: '^src/render/' },
      to: { path: '^src/', pathNot: ['^src/render/', '^src/lib/'] },
    },
    {
      name: 'db-below-the-server',
      comment:
        'src/db/ (connections, roles, migrations, SQL helpers) sits below the registry, the protocol and the transports. doctor is the exception for the registry: it builds one to EXPLAIN every template.',
      severity: 'error',
      from: { path: '^src/db/', pathNot: '^src/db/doctor' },
      to: {
        path: ['^src/(registry|protocol|transports|auth|jobs)/', '^src/(server|cli)\\.ts$', '^src/(app|commands)/'],
      },
    },
    {
      name: 'doctor-below-the-server',
      severity: 'error',
      from: { path: '^src/db/doctor' },
      to: { path: ['^src/(protocol|transports|auth)/', '^src/(server|cli)\\.ts$', '^src/(app|commands)/'] },
    },
    {
      name: 'registry-below-the-protocol',
      comment:
        'The registry is the only door to the data; the protocol and the transports call it, never the reverse. protocol/json-rpc.ts is the wire format, a leaf that imports nothing: the registry may hand a result already serialized.',
      severity: 'error',
      from: { path: '^src/registry/' },
      to: {
        path: ['^src/(protocol|transports)/', '^src/(server|cli)\\.ts$', '^src/(app|commands)/'],
        pathNot: '^src/protocol/json-rpc\\.ts$',
      },
    },
    {
      name: 'protocol-below-the-transports',
      comment: 'The dispatcher answers one message whatever carried it: it knows no transport and no assembly.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: { path: ['^src/transports/', '^src/cli\\.ts$', '^src/(app|commands)/'] },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'The command line is the top of the house.',
      severity: 'error',
      from: {},
      to: { path: '^src/cli\\.ts$' },
    },
    {
      name: 'engine-knows-no-pack',
      comment:
        'src/ is an engine that knows no table: it imports nothing of a pack (see also test/engine-purity.test.ts).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(pack|queries|reports|examples|migrations)/' },
    },
    {
      name: 'sales-pack-knows-no-other-pack',
      comment: 'A pack stands alone: the sales pack (pack/, queries/, reports/) imports no example pack.',
      severity: 'error',
      from: { path: '^(pack|queries|reports)/' },
      to: { path: '^examples/' },
    },
    {
      name: 'example-pack-stands-alone',
      comment:
        'An example pack imports the engine and its own folder only, as a stranger\u2019s pack would. Its tests may serve it beside the sales pack.',
      severity: 'error',
      from: { path: '^examples/([^/]+)/', pathNot: '^examples/[^/]+/test/' },
      to: { path: '^(pack|queries|reports|migrations|examples)/', pathNot: '^examples/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a cycle through a type is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
