/**
 * What a pack declares of the content it offers besides tools (resource templates, and where an
 * argument's completions come from), and what their builders know of the request. Below content.ts,
 * prompts.ts, docs.ts, argument-completions.ts and pack.ts, which all use them, so none of those
 * imports another for a type.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from '../lib/caller.js';

/** What resources, prompts and completions know of the request they answer. */
export interface ContentContext {
  readonly caller: Caller;
  /** The day it is in the reporting time zone, YYYY-MM-DD. */
  readonly today: string;
  readonly timeZone: string;
  /** The tools this caller may see, as tools/list gives them but with their whole input schemas (the registry's argumentSchemas). */
  readonly tools: readonly Tool[];
  /** Runs one of the caller's tools through the registry, as the caller: the only way to the data. */
  callTool(name: string, args: Readonly<Record<string, unknown>>): Promise<CallToolResult>;
}

/** Where the values of a prompt argument or a resource template variable come from, for completion/complete. */
export type CompletionSource =
  /** A closed list of values, offered in its order. */
  | { readonly values: readonly string[] }
  /** The ISO weeks that have started, the most recent first (`2026-W48`), then last_week and this_week. */
  | { readonly recentWeeks: number }
  /** The labels of a tool's rows (below). */
  | ToolCompletionSource;

/**
 * The distinct values of `field` in the `rows` of a call of `tool` with `arguments`, alphabetically:
 * what the data holds now (the regions that sold in the last 90 days, say).
 */
export interface ToolCompletionSource {
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly field: string;
  /**
   * For a field with more values than one answer holds (the SKUs sold in 90 days): a call per value of
   * another source (each product group), `arguments` with `narrowTo(value)` merged in, so that every value
   * is offered.
   */
  readonly within?: {
    readonly source: ToolCompletionSource;
    readonly narrowTo: (value: string) => Readonly<Record<string, unknown>>;
  };
}

/**
 * Resources named by an RFC 6570 URI template, such as `querygate://reports/weekly/{week}`: listed
 * by resources/templates/list, read by resources/read with the variables matched from the URI, and
 * completed by completion/complete with `{"type": "ref/resource", "uri": <the template>}`.
 */
export interface ResourceTemplate {
  readonly uriTemplate: string;
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly mimeType: string;
  /**
   * The tools `read` calls ([] for none): a caller who may not call every one of them is not offered
   * the template (resources/templates/list, completions), and to it the template's URIs name nothing.
   */
  readonly tools: readonly string[];
  /** Where each variable's completions come from. */
  readonly completions?: Readonly<Record<string, CompletionSource>>;
  /**
   * The resource's text. Variables that break a rule are refused with an ArgumentError naming the
   * variable (-32602); the data comes through `ctx.callTool`.
   */
  read(variables: Readonly<Record<string, string>>, ctx: ContentContext): Promise<string> | string;
}
