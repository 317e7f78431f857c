/** The content a server offers besides its tools, and the request as its resources, prompts and completions see it. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ContentContext } from '../content/declarations.js';
import { contentOf, type ServerContent } from '../content/index.js';
import { localToday } from '../lib/periods.js';
import type { DispatchDeps, HandlerContext } from './feature.js';

/** What the server offers besides its tools: the packs' content, or the engine's own. */
export function servedContent(deps: DispatchDeps): ServerContent {
  return deps.content ?? contentOf([]);
}

/** The URIs among `uris` of the resources whose text follows the tools the caller sees. */
export function followingTools(deps: DispatchDeps, uris: Iterable<string>): string[] {
  const following = new Set(
    servedContent(deps)
      .resources.filter((r) => r.followsTools)
      .map((r) => r.uri),
  );
  return [...uris].filter((uri) => following.has(uri));
}

const wholeInput = (deps: DispatchDeps, tool: Tool): Tool['inputSchema'] =>
  (deps.registry.argumentSchemas.get(tool.name) as Tool['inputSchema'] | undefined) ?? tool.inputSchema;

/** The content served, and what it may know of the request it answers. */
export function contentFor(ctx: HandlerContext): { content: ServerContent; context: ContentContext } {
  const { deps, caller, signal, traceparent, log } = ctx;
  const timeZone = deps.ctx.timeZone;
  return {
    content: servedContent(deps),
    context: {
      caller,
      timeZone,
      today: localToday(timeZone, (deps.now ?? Date.now)()),
      // With their whole input schemas: querygate://catalog and completions give every value a
      // listing leaves to the instructions (a period's names).
      tools: deps.registry.toolsFor(caller).map((tool) => ({ ...tool, inputSchema: wholeInput(deps, tool) })),
      callTool: (name, args) => deps.registry.call(name, args, deps, { caller, signal, traceparent, report: log }),
    },
  };
}
