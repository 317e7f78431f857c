/**
 * What a server offers besides its tools: resources (the engine's documentation, and the packs'
 * resource templates), prompts, and where their arguments' completions come from. Built once from
 * the packs served, checked as the registry checks templates: a broken declaration stops the server.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { createLabelCache, type LabelCache } from './completions.js';
import type { ResourceTemplate } from './declarations.js';
import { documentationResources, guidePageTemplates, type StaticResource } from './docs.js';
import { ConfigError } from '../lib/errors.js';
import type { Pack } from '../pack.js';
import { servePrompt, type ServedPrompt } from './prompts.js';

export type { StaticResource } from './docs.js';

export interface ServedTemplate {
  readonly template: ResourceTemplate;
  readonly uriTemplate: UriTemplate;
  readonly variables: readonly string[];
}

export interface ServerContent {
  readonly resources: readonly StaticResource[];
  readonly resourceTemplates: readonly ServedTemplate[];
  readonly prompts: readonly ServedPrompt[];
  /** The labels completions read from tools lately. */
  readonly labels: LabelCache;
}

/** The content of a server serving these packs; throws a ConfigError for a broken declaration. */
export function contentOf(packs: readonly Pack[], now?: () => number): ServerContent {
  const resources = documentationResources(packs);
  const prompts: ServedPrompt[] = [];
  const resourceTemplates: ServedTemplate[] = [];
  for (const pack of packs) {
    for (const prompt of pack.prompts ?? []) {
      if (prompts.some((p) => p.template.name === prompt.name)) {
        throw new ConfigError(`pack ${pack.name}: prompt ${prompt.name} is offered twice`);
      }
      prompts.push(servePrompt(prompt, pack.name));
    }
    for (const template of pack.resourceTemplates ?? []) {
      resourceTemplates.push(serveTemplate(template, pack.name, resources, resourceTemplates));
    }
    // The engine's own: each template's guide one page at a time (querygate://catalog/{tool}/{...}).
    for (const template of guidePageTemplates([pack])) {
      resourceTemplates.push(serveTemplate(template, pack.name, resources, resourceTemplates));
    }
  }
  return { resources, resourceTemplates, prompts, labels: createLabelCache(now) };
}

function serveTemplate(
  template: ResourceTemplate,
  pack: string,
  resources: readonly StaticResource[],
  served: readonly ServedTemplate[],
): ServedTemplate {
  const where = `pack ${pack}: resource template ${template.uriTemplate}`;
  let uriTemplate: UriTemplate;
  try {
    uriTemplate = new UriTemplate(template.uriTemplate);
  } catch (err) {
    throw new ConfigError(`${where}: not a URI template (${(err as Error).message})`);
  }
  const variables = uriTemplate.variableNames;
  if (variables.length === 0)
    throw new ConfigError(`${where}: has no variable; a fixed URI is a resource, not a template`);
  if (served.some((s) => s.template.uriTemplate === template.uriTemplate || s.template.name === template.name)) {
    throw new ConfigError(`${where}: its URI template or name is taken by another template`);
  }
  const shadowed = resources.find((r) => uriTemplate.match(r.uri) !== null);
  if (shadowed) throw new ConfigError(`${where}: matches the URI of the resource ${shadowed.uri}`);
  if (!Array.isArray(template.tools) || !template.tools.every((tool) => typeof tool === 'string')) {
    throw new ConfigError(`${where}: declare tools, the tools its read calls ([] for none)`);
  }
  for (const name of Object.keys(template.completions ?? {})) {
    if (!variables.includes(name)) throw new ConfigError(`${where}: completions name ${name}, which is not a variable`);
  }
  return { template, uriTemplate, variables };
}

/** Whether a caller who may call these tools is offered the template: it may call every tool `read` calls. */
export function offers(template: ServedTemplate, tools: readonly Tool[]): boolean {
  return template.template.tools.every((name) => tools.some((tool) => tool.name === name));
}

/**
 * The resource a URI names: a fixed one, or one of a template with the variables the URI gives it.
 * Undefined when none does.
 */
export function resourceAt(
  content: ServerContent,
  uri: string,
):
  | { readonly resource: StaticResource }
  | { readonly template: ServedTemplate; readonly variables: Readonly<Record<string, string>> }
  | undefined {
  const resource = content.resources.find((r) => r.uri === uri);
  if (resource) return { resource };
  for (const template of content.resourceTemplates) {
    const matched = template.uriTemplate.match(uri);
    if (matched && Object.values(matched).every((v) => typeof v === 'string')) {
      return { template, variables: matched as Record<string, string> };
    }
  }
  return undefined;
}
