/**
 * The server's documentation as Markdown resources: the tools the caller may call (querygate://catalog),
 * the figures they return (querygate://metrics) and the views behind them (querygate://schema). The
 * engine knows no table: each pack declares its figures and views, and the engine renders them,
 * refusing at start-up a view documentation that names a personal column.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ContentContext, ResourceTemplate } from './declarations.js';
import { ArgumentError, ConfigError } from '../lib/errors.js';
import { describeScope, scopeOf, type DataScope } from '../lib/data-scope.js';
import type { Pack, PersonalColumn } from '../pack.js';

/** A resource whose URI never changes: listed by resources/list, read by resources/read. */
export interface StaticResource {
  readonly uri: string;
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly mimeType: string;
  /** True when the text follows the tools the caller sees, and so changes when the configuration is reloaded. */
  readonly followsTools: boolean;
  read(ctx: ContentContext): string;
}

const MARKDOWN = 'text/markdown';

/** The documentation resources of a server serving these packs; a pack's broken documentation stops it. */
export function documentationResources(packs: readonly Pack[]): StaticResource[] {
  for (const pack of packs) checkDocumentation(pack);
  const metrics = metricsMarkdown(packs);
  const schema = schemaMarkdown(packs);
  const examples = new Map(
    packs.flatMap((p) => [...p.templates, ...(p.reports ?? [])].map((t) => [t.name, t.examples[0]] as const)),
  );
  const guides = new Map(
    packs.flatMap((p) => p.templates.flatMap((t) => (t.guide ? [[t.name, t.guide] as const] : []))),
  );
  return [
    {
      uri: 'querygate://catalog',
      name: 'catalog',
      title: 'Tool catalog',
      description:
        'Every tool you may call, what it answers, its arguments (type, whether required, allowed values) and an example call.',
      mimeType: MARKDOWN,
      followsTools: true,
      read: (ctx) => catalogMarkdown(ctx.tools, examples, scopeOf(ctx.caller), guides),
    },
    {
      uri: 'querygate://metrics',
      name: 'metrics',
      title: 'Figure definitions',
      description:
        'How each figure the tools return is defined: what it counts or sums, what it leaves out, its unit, and how fresh it is.',
      mimeType: MARKDOWN,
      followsTools: false,
      read: () => metrics,
    },
    {
      uri: 'querygate://schema',
      name: 'schema',
      title: 'Reporting views',
      description:
        'The views the tools read and what each column means. Personal columns are left out: they never leave the server unmasked.',
      mimeType: MARKDOWN,
      followsTools: false,
      read: () => schema,
    },
  ];
}

/**
 * querygate://catalog/{tool}/{name}: one page of a tool's guide (query_metrics: one metric's meaning,
 * dimensions and example calls), for every template that declares `guidePages`. The tool's description
 * points here, so that a model reads the page of the metric it needs, not the whole catalog.
 */
export function guidePageTemplates(packs: readonly Pack[]): ResourceTemplate[] {
  return packs.flatMap((pack) =>
    pack.templates.flatMap((template) => {
      if (template.guidePages === undefined) return [];
      const { variable, pages } = template.guidePages;
      const names = Object.keys(pages);
      return [
        {
          uriTemplate: `querygate://catalog/${template.name}/{${variable}}`,
          name: `${template.name}_${variable}`,
          title: `${template.title}: one ${variable}`,
          description: `The part of querygate://catalog on one ${variable} of ${template.name}: ${names.join(', ')}.`,
          mimeType: MARKDOWN,
          tools: [template.name],
          completions: { [variable]: { values: names } },
          read: (variables) => {
            const page = Object.hasOwn(pages, variables[variable] ?? '') ? pages[variables[variable]!] : undefined;
            if (page === undefined) {
              throw new ArgumentError([
                {
                  field: variable,
                  rule: `${JSON.stringify(variables[variable] ?? '')} is not one of ${names.join(', ')}`,
                },
              ]);
            }
            return page;
          },
        },
      ];
    }),
  );
}

/** A pack's figures and views must be complete and name no personal column. */
function checkDocumentation(pack: Pack): void {
  const where = `pack ${pack.name}`;
  const names = new Set<string>();
  for (const metric of pack.metrics ?? []) {
    if (!/^[a-z][a-z0-9_]*$/.test(metric.name))
      throw new ConfigError(`${where}: metric ${metric.name}: name must be snake_case`);
    if (names.has(metric.name)) throw new ConfigError(`${where}: metric ${metric.name} is defined twice`);
    names.add(metric.name);
    for (const field of ['title', 'definition', 'unit'] as const) {
      if (metric[field].trim() === '') throw new ConfigError(`${where}: metric ${metric.name}: ${field} is empty`);
    }
  }
  const personal = new Map(Object.entries(pack.personalColumns as Readonly<Record<string, PersonalColumn>>));
  for (const [view, doc] of Object.entries(pack.views ?? {})) {
    if (doc === undefined) continue;
    const [schema, relation, ...rest] = view.split('.');
    if (relation === undefined || rest.length > 0 || !pack.readerSchemas.includes(schema!)) {
      throw new ConfigError(
        `${where}: views["${view}"]: name a view as schema.view, in a schema the reader reads (${pack.readerSchemas.join(', ')})`,
      );
    }
    if (doc.description.trim() === '') throw new ConfigError(`${where}: views["${view}"]: description is empty`);
    for (const [column, meaning] of Object.entries(doc.columns)) {
      const kind = personal.get(`${view}.${column}`)?.kind;
      if (kind !== undefined) {
        throw new ConfigError(
          `${where}: views["${view}"].columns.${column} is a personal column (${kind}); querygate://schema never documents one, so that it tells no one where personal data is: remove it`,
        );
      }
      if (meaning === undefined || meaning.trim() === '') {
        throw new ConfigError(`${where}: views["${view}"].columns.${column}: say what it means`);
      }
    }
  }
}

/** One table cell: no pipe or line break may end it early. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const code = (text: string): string => `\`${text}\``;

interface JsonProperty {
  type?: unknown;
  enum?: unknown;
  description?: unknown;
  minimum?: unknown;
  maximum?: unknown;
  default?: unknown;
}

/**
 * The tools one caller may call, in the order tools/list gives them, with an example call of each,
 * and the caller's data scope when it has one.
 */
export function catalogMarkdown(
  tools: readonly Tool[],
  examples: ReadonlyMap<string, Record<string, unknown>>,
  scope?: DataScope,
  guides: ReadonlyMap<string, string> = new Map(),
): string {
  const out = [
    '# Tool catalog',
    '',
    "The tools you may call on this server, in the order `tools/list` gives them. Every tool only reads, returns at most 100 rows with a `truncated` flag, and says how fresh its figures are in `data_as_of`. Arguments outside a tool's list are refused.",
  ];
  if (scope) {
    out.push(
      '',
      `Your data scope is ${describeScope(scope)}: every figure covers only those rows, and each result says so in \`data_scope\`. A tool that cannot keep to it is not listed.`,
    );
  }
  if (tools.length === 0) out.push('', 'No tool is open to you.');
  for (const tool of tools) {
    const properties = (tool.inputSchema.properties ?? {}) as Record<string, JsonProperty>;
    const required = new Set(tool.inputSchema.required ?? []);
    out.push('', `## ${tool.name}: ${tool.title ?? tool.name}`, '', tool.description ?? '', '');
    out.push('| argument | type | required | allowed values | meaning |', '| --- | --- | --- | --- | --- |');
    for (const [name, property] of Object.entries(properties)) {
      const allowed = Array.isArray(property.enum) ? property.enum.map((v) => code(String(v))).join(', ') : '';
      out.push(
        `| ${code(name)} | ${typeOf(property)} | ${required.has(name) ? 'yes' : 'no'} | ${allowed} | ${cell(String(property.description ?? ''))} |`,
      );
    }
    const example = examples.get(tool.name);
    if (example) {
      out.push(
        '',
        'Example call (`tools/call` params):',
        '',
        '```json',
        JSON.stringify({ name: tool.name, arguments: example }),
        '```',
      );
    }
    const guide = guides.get(tool.name);
    if (guide) out.push('', guide.trimEnd());
  }
  return `${out.join('\n')}\n`;
}

function typeOf(property: JsonProperty): string {
  const bounds = [
    property.minimum === undefined ? undefined : `from ${String(property.minimum)}`,
    property.maximum === undefined ? undefined : `to ${String(property.maximum)}`,
    property.default === undefined ? undefined : `default ${JSON.stringify(property.default)}`,
  ].filter((b) => b !== undefined);
  const type = typeof property.type === 'string' ? property.type : 'any';
  return bounds.length === 0 ? type : `${type}, ${bounds.join(', ')}`;
}

/** Every served pack's figures. */
export function metricsMarkdown(packs: readonly Pack[]): string {
  const out = ['# Figure definitions', '', 'What each figure the tools return means, pack by pack.'];
  for (const pack of packs) {
    out.push('', `## ${pack.subject}`);
    if ((pack.metrics ?? []).length === 0) out.push('', 'This pack defines no figures.');
    for (const metric of pack.metrics ?? []) {
      out.push('', `### ${metric.name}: ${metric.title}`, '', `Unit: ${metric.unit}.`, '', metric.definition);
    }
  }
  return `${out.join('\n')}\n`;
}

/** Every served pack's documented views, without their personal columns. */
export function schemaMarkdown(packs: readonly Pack[]): string {
  const out = [
    '# Reporting views',
    '',
    'The views the tools read, through a read-only role that may read nothing else, and what their columns mean. Personal columns (names, e-mail addresses, phone numbers, internal ids) are not listed: the tools return them only masked or as opaque tokens.',
  ];
  for (const pack of packs) {
    out.push('', `## ${pack.subject}`);
    const views = Object.entries(pack.views ?? {});
    if (views.length === 0) out.push('', 'This pack documents no views.');
    for (const [view, doc] of views) {
      if (doc === undefined) continue;
      out.push('', `### ${view}`, '', doc.description, '', '| column | meaning |', '| --- | --- |');
      for (const [column, meaning] of Object.entries(doc.columns))
        out.push(`| ${code(column)} | ${cell(String(meaning))} |`);
    }
  }
  return `${out.join('\n')}\n`;
}
